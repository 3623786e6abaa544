"""Run the real ``pooltune-agent`` as a subprocess against the suite's MariaDB."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.fixtures.mariadb import MariaDBServer

AGENT = [sys.executable, "-m", "agents.cli"]


def write_config(
    directory: Path,
    server: MariaDBServer,
    *,
    bounds: dict[str, tuple[int, int]] | None = None,
    service_url: str = "",
    extra: str = "",
    climb_max_s: float = 60.0,
    profile_window_s: float = 2.0,
    sample_period_s: float = 0.5,
    climber_settings: str = "",
    mode: str = "auto",
) -> Path:
    bounds = bounds if bounds is not None else {"thread_pool_size": (1, 12)}
    bound_lines = "\n".join(f"{name} = [{low}, {high}]" for name, (low, high) in bounds.items())
    text = f"""
[agent]
mode = "{mode}"
state_dir = "{directory / "state"}"
sample_period_s = {sample_period_s}
profile_window_s = {profile_window_s}
climb_max_s = {climb_max_s}
log_level = "INFO"

[target]
engine = "mariadb"
host = "{server.host}"
port = {server.port}
user = "{server.user}"
throughput_metric = "transactions"

[climber]
knobs = ["thread_pool_size"]
{climber_settings}

[bounds]
{bound_lines}

[service]
url = "{service_url}"
max_attempts = 2
backoff_initial_s = 0.1
backoff_max_s = 0.5
drain_every_s = 1.0
timeout_s = 3.0
{extra}
"""
    path = directory / "agent.toml"
    path.write_text(text)
    return path


def agent_env(server: MariaDBServer, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["POOLTUNE_DB_PASSWORD"] = server.password
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_cli(
    config: Path, *args: str, env: dict[str, str], timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENT, *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


class AgentProcess:
    """``pooltune-agent run`` in the background, its log in a file."""

    def __init__(
        self,
        config: Path,
        env: dict[str, str],
        log_path: Path,
        *,
        command: Sequence[str] = AGENT,
    ) -> None:
        self.config = config
        self.log_path = log_path
        self._log = log_path.open("w")
        self.process = subprocess.Popen(
            [*command, "run", "--config", str(config)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def status(self) -> dict[str, Any] | None:
        path = self.config.parent / "state" / "status.json"
        try:
            document: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return document

    def wait_for(self, predicate: Callable[[], bool], *, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.process.poll() is not None:
                raise AssertionError(
                    f"agent exited ({self.process.returncode}) while waiting for {what}:\n"
                    f"{self.log()[-4000:]}"
                )
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}:\n{self.log()[-4000:]}")

    def wait_for_log(self, text: str, *, timeout: float) -> None:
        self.wait_for(lambda: text in self.log(), timeout=timeout, what=repr(text))

    def terminate(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait(timeout=10)
        self._log.close()
