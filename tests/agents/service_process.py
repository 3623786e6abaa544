"""The real service (``pooltune-service serve``) as a subprocess for the agent tests: on its
own PostgreSQL database, stoppable and restartable on the same port."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from lab.processes import stop_process
from lab.service import start_service, wait_until_serving
from service.migrate import upgrade
from tests.fixtures.mariadb import free_port
from tests.fixtures.postgres import TEST_ADMIN_TOKEN, scratch_database

ADMIN = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}


class ServiceProcess:
    """``pooltune-service serve`` on a fixed port, stoppable and restartable."""

    def __init__(
        self,
        database_url: str,
        port: int,
        log_path: Path,
        *,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.database_url = database_url
        self.extra_env = extra_env or {}
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            "POOLTUNE_DATABASE_URL": self.database_url,
            "POOLTUNE_ADMIN_TOKEN": TEST_ADMIN_TOKEN,
            "POOLTUNE_ENVIRONMENT": "test",
        } | self.extra_env
        with self.log_path.open("a") as log:
            self.process = start_service(self.port, env=env, log=log, migrate=False)
        wait_until_serving(
            self.process,
            self.url,
            path="/healthz",
            details=lambda: self.log_path.read_text()[-3000:],
        )

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, timeout_s=20)
        self.process = None

    def admin(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One admin request to the running service."""
        return httpx.request(method, f"{self.url}{path}", headers=ADMIN, timeout=10, **kwargs)

    def enrollment_token(self) -> str:
        created = self.admin("POST", "/v1/enrollment-tokens", json={"description": "agent test"})
        assert created.status_code == 201, created.text
        return str(created.json()["token"])


@contextmanager
def service_on_scratch_database(
    log_path: Path, *, prefix: str, extra_env: dict[str, str] | None = None
) -> Iterator[ServiceProcess]:
    """A started service on its own migrated database (the service commits for real, and
    the suite's shared database stays empty for the tests that count rows in it)."""
    with scratch_database(prefix) as database_url:
        upgrade(database_url)
        service = ServiceProcess(database_url, free_port(), log_path, extra_env=extra_env)
        try:
            service.start()
            yield service
        finally:
            service.stop()
