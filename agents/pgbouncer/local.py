"""Finding PgBouncer's and PostgreSQL's processes when they run on the agent's host, for
their CPU time (``/proc``; see :mod:`agents.hostcpu`)."""

from __future__ import annotations

from pathlib import Path

from agents.hostcpu import PROC, stat_fields

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", ""})


def is_local(host: str) -> bool:
    """Whether ``host`` (a name, an address or a Unix socket directory) is this host."""
    return host in _LOCAL_HOSTS or host.startswith("/")


def command_name(pid: int, proc_root: Path = PROC) -> str:
    try:
        return (proc_root / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def postmaster_pid(backend_pid: int, proc_root: Path = PROC) -> int | None:
    """The postmaster of a PostgreSQL backend visible here (its parent), else None."""
    fields = stat_fields(backend_pid, proc_root) or []  # [] when it is gone
    try:
        parent = int(fields[1])
    except (ValueError, IndexError):
        return None
    if command_name(backend_pid, proc_root) != "postgres":
        return None
    return parent if command_name(parent, proc_root) == "postgres" else None


def pgbouncer_pid(pidfile: str, conffile: str, proc_root: Path = PROC) -> int | None:
    """PgBouncer's pid here: the one in its pidfile, else the process running ``conffile``."""
    try:
        pid = int(Path(pidfile).read_text().split()[0]) if pidfile else 0
        if pid and command_name(pid, proc_root) == "pgbouncer":
            return pid
    except (OSError, ValueError, IndexError):
        pass
    if not conffile:
        return None
    for entry in proc_root.iterdir():
        if entry.name.isdigit() and command_name(int(entry.name), proc_root) == "pgbouncer":
            try:
                arguments = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if conffile.encode() in arguments:
                return int(entry.name)
    return None
