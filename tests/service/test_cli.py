from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from service.cli import main


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_migrate_creates_the_sqlite_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database = tmp_path / "pooltune.db"
    monkeypatch.setenv("POOLTUNE_DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("POOLTUNE_ENVIRONMENT", "development")
    assert main(["migrate"]) == 0
    assert database.stat().st_size > 0


def test_invalid_settings_exit_with_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POOLTUNE_ENVIRONMENT", "production")
    monkeypatch.setenv("POOLTUNE_ADMIN_TOKEN", "change-me")
    assert main(["migrate"]) == 2


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_on_the_sqlite_default_answers_healthz_with_json_logs(
    tmp_path: Path, workers: int
) -> None:
    """One process, or worker processes spawned by uvicorn: every log line is JSON."""
    port = _free_port()
    env = {
        **os.environ,
        "POOLTUNE_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
        "POOLTUNE_ENVIRONMENT": "development",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port)]
        + ["--workers", str(workers)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.2)
        assert response.status_code == 200
        assert response.json() == {"status": "ready"}
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=15)
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert len(lines) == len(stderr.splitlines()), stderr
    access = [line for line in lines if line.get("route") == "/readyz"]
    assert access and access[0]["status"] == 200 and access[0]["request_id"]
