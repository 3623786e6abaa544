"""Helpers every real server of the lab needs: a free port, waiting until a process answers,
stopping a process (or its whole process group), pinning a process to one CPU."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)

LOCALHOST = "127.0.0.1"


def free_port(host: str = LOCALHOST) -> int:
    """A TCP port nobody listens on right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def free_ports(count: int, host: str = LOCALHOST) -> list[int]:
    """``count`` distinct free ports."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(host)
        if port not in ports:
            ports.append(port)
    return ports


def wait_until_ready(
    probe: Callable[[], object],
    *,
    process: subprocess.Popen[bytes],
    name: str,
    timeout_s: float = 60.0,
    not_ready: tuple[type[Exception], ...] = (OSError,),
    details: Callable[[], str] = lambda: "",
    poll_s: float = 0.2,
) -> None:
    """Call ``probe`` until it returns without raising one of ``not_ready``.

    Fails with a RuntimeError naming ``name`` and ending with ``details()`` (e.g. the tail of
    the server's log) when ``process`` exits first or ``timeout_s`` passes.
    """
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{details()}")
        try:
            probe()
            return
        except not_ready as exc:
            last_error = exc
            time.sleep(poll_s)
    raise RuntimeError(f"{name} not ready after {timeout_s:g}s ({last_error}):\n{details()}")


def stop_process(process: subprocess.Popen[bytes], *, timeout_s: float = 30.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s``; returns once the process has exited."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def stop_process_group(process: subprocess.Popen[bytes], *, timeout_s: float = 10.0) -> None:
    """Stop a process started with ``start_new_session=True`` and every child it forked:
    SIGTERM to its process group, then SIGKILL after ``timeout_s``."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextlib.contextmanager
def pinned_to_one_cpu(pid: int, *, enabled: bool = True) -> Iterator[None]:
    """Pin every thread of ``pid`` to CPU 0 (new threads inherit it); unpin at the end."""
    if not enabled:
        yield
        return
    all_cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(pid)))
    subprocess.run(["taskset", "-a", "-p", "-c", "0", str(pid)], check=True, capture_output=True)
    logger.info("process %d pinned to CPU 0", pid)
    try:
        yield
    finally:
        subprocess.run(
            ["taskset", "-a", "-p", "-c", all_cpus, str(pid)], check=True, capture_output=True
        )
        logger.info("process %d unpinned (CPUs %s)", pid, all_cpus)


class MissingBinaries(RuntimeError):
    """A program the lab needs is not installed; the message says how to install it."""


def require_binaries(*paths: str, hint: str) -> None:
    """Raise :class:`MissingBinaries` naming every path of ``paths`` that does not exist."""
    missing = [path for path in paths if not os.path.exists(path)]
    if missing:
        raise MissingBinaries(f"missing {', '.join(missing)}: {hint}")
