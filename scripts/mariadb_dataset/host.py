"""The facts of the machine a case is measured on, and which of them must match for the
cases of one dataset to be comparable (docs/datasets.md, "Resuming")."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any

from lab.mariadb import server_version
from lab.sysbench import sysbench_version
from scripts.sweep_rows import machine_facts

#: Facts that must be equal for two cases to share a dataset: the hardware, the engine and
#: the load generator. ``memory_bytes`` is compared with :data:`MEMORY_TOLERANCE`.
SAME_MACHINE_FACTS = (
    "hostname",
    "cpu_model",
    "cpu_count",
    "memory_bytes",
    "engine_version",
    "sysbench_version",
)
#: Relative difference of MemTotal still counted as the same machine (the kernel's
#: reservations move it by a few KiB between boots).
MEMORY_TOLERANCE = 0.02
#: Facts recorded and reported when they differ, without refusing (a kernel update between
#: sessions on the same machine).
NOTED_FACTS = ("kernel", "machine_id")


def _machine_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/etc/machine-id").read_text().strip()
    return ""


def host_facts() -> dict[str, Any]:
    """Host name, cores, CPU model, memory, kernel, machine id, and the versions of the
    installed MariaDB server (as its VERSION() says) and sysbench."""
    return machine_facts() | {
        "hostname": socket.gethostname(),
        "machine_id": _machine_id(),
        "sysbench_version": sysbench_version(),
        "engine_version": server_version(),
    }


def machine_differences(
    recorded: dict[str, Any],
    current: dict[str, Any],
    *,
    facts: tuple[str, ...] = SAME_MACHINE_FACTS,
) -> list[str]:
    """``"fact: recorded → current"`` for each of ``facts`` that differs; a fact missing on
    either side (e.g. the engine version before a server runs) is not compared."""
    differences = []
    for name in facts:
        old, new = recorded.get(name), current.get(name)
        if old in (None, "") or new in (None, ""):
            continue
        if name == "memory_bytes":
            if abs(int(old) - int(new)) <= MEMORY_TOLERANCE * max(int(old), int(new)):
                continue
        elif old == new:
            continue
        differences.append(f"{name}: {old} → {new}")
    return differences
