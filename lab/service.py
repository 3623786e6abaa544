"""The real service (``pooltune-service serve``) as a subprocess on 127.0.0.1, for the
benchmarks and the tests that drive it over HTTP. It is started as a command, never
imported, so the lab depends on nothing of the service."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import httpx

from lab.processes import LOCALHOST, wait_until_ready


class NotServing(Exception):
    """The service answered, but not 200."""


def start_service(
    port: int,
    *,
    env: Mapping[str, str],
    log: IO[Any] | None = None,
    migrate: bool = True,
    args: Sequence[str] = (),
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """``pooltune-service serve`` on 127.0.0.1:``port`` with ``env`` over this process's
    environment (``POOLTUNE_DATABASE_URL``, ``POOLTUNE_ADMIN_TOKEN``, …); its output to
    ``log``. Without ``migrate`` it serves the database as it is."""
    command = [sys.executable, "-m", "service.cli", "serve"]
    command += [] if migrate else ["--no-migrate"]
    command += ["--host", LOCALHOST, "--port", str(port), *args]
    return subprocess.Popen(
        command, env=dict(os.environ) | dict(env), stdout=log, stderr=subprocess.STDOUT, cwd=cwd
    )


def wait_until_serving(
    process: subprocess.Popen[bytes],
    url: str,
    *,
    path: str = "/readyz",
    timeout_s: float = 60.0,
    details: Callable[[], str] = lambda: "",
) -> None:
    """Until ``url + path`` answers 200; a RuntimeError ending with ``details()`` (e.g. the
    log) when the service exits first or ``timeout_s`` passes."""

    def probe() -> None:
        status = httpx.get(f"{url}{path}", timeout=1.0).status_code
        if status != 200:
            raise NotServing(f"{path} answered {status}")

    wait_until_ready(
        probe,
        process=process,
        name="the service",
        timeout_s=timeout_s,
        not_ready=(httpx.HTTPError, NotServing),
        details=details,
    )
