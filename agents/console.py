"""What ``pooltune-agent``'s commands print and the exit codes they return.

Shared by :mod:`agents.cli` and :mod:`agents.sweep.cli`: output to the operator goes to
stdout, errors to stderr, logs through logging.
"""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_UNEXPECTED = 1
#: A configuration or usage error.
EXIT_CONFIG = 2
#: The database cannot be reached.
EXIT_UNREACHABLE = 3
#: The server cannot be tuned as configured (no thread pool, missing rights).
EXIT_MISCONFIGURED = 4
#: The state file cannot be read or written.
EXIT_STATE = 5
#: The service refused or could not be reached (enroll).
EXIT_SERVICE = 6
#: Interrupted by SIGINT / SIGTERM (any changed knob was restored).
EXIT_INTERRUPTED = 130


def out(text: str) -> None:
    """A line of the command's output to the operator."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def err(text: str) -> None:
    """A line to the operator on stderr (progress, notes, questions)."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def fail(code: int, message: str, *, command: str = "pooltune-agent") -> int:
    """Print ``message`` as ``command``'s error and return ``code``."""
    err(f"{command}: error: {message}")
    return code
