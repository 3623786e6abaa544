"""docker/agent-entrypoint.sh against the real service and the suite's MariaDB (no container
engine here): it enrols, and after the agent's state volume was lost it enrols again, where a
plain enrolment token now gets 409 and the earlier script retried forever.

The script's last step, ``exec pooltune-agent run``, is replaced by a command that prints
and exits: the daemon is tested in tests/agents/.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.agents.agent_process import agent_env, run_cli, write_config
from tests.agents.service_process import ServiceProcess, service_on_scratch_database
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.postgres import TEST_ADMIN_TOKEN

pytestmark = [pytest.mark.slow, pytest.mark.mariadb, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parent.parent
ENTRYPOINT = ROOT / "docker" / "agent-entrypoint.sh"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with service_on_scratch_database(tmp_path / "service.log", prefix="pooltune_entry") as svc:
        yield svc


def _bin_dir(tmp_path: Path) -> Path:
    """``python`` and ``pooltune-agent`` as the image has them, but ``run`` only prints."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A script, not a symlink: a virtualenv's python finds its packages from its own path.
    commands = {
        "python": f'exec {sys.executable} "$@"\n',
        "pooltune-agent": 'if [ "$1" = run ]; then echo "would run: $*"; exit 0; fi\n'
        f'exec {sys.executable} -m agents.cli "$@"\n',
    }
    for name, body in commands.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _agent_answers(service: ServiceProcess, token: str) -> int:
    """The status of an agent-authenticated request: 404 (no such approval) when the token
    works, 401 when it does not."""
    return httpx.get(
        f"{service.url}/v1/approvals/999999",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    ).status_code


def test_entrypoint_enrols_and_enrols_again_after_the_state_is_lost(
    mariadb_server: MariaDBServer, service: ServiceProcess, tmp_path: Path
) -> None:
    config = write_config(tmp_path, mariadb_server, service_url=service.url)
    state_dir = tmp_path / "state"
    env = agent_env(
        mariadb_server,
        PATH=f"{_bin_dir(tmp_path)}:{os.environ['PATH']}",
        PYTHONPATH=str(ROOT),
        POOLTUNE_AGENT_CONFIG=str(config),
        POOLTUNE_SERVICE_URL=service.url,
        POOLTUNE_STATE_DIR=str(state_dir),
        POOLTUNE_ADMIN_TOKEN=TEST_ADMIN_TOKEN,
    )

    def entrypoint() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=120
        )

    first = entrypoint()
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"would run: run --config {config}" in first.stdout
    token_file = state_dir / "agent-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    first_token = token_file.read_text().strip()
    assert _agent_answers(service, first_token) == 404

    # A restarted container keeps its token: no new enrolment.
    again = entrypoint()
    assert again.returncode == 0 and "enrolled as agent" not in again.stdout
    assert token_file.read_text().strip() == first_token

    # The host is enrolled: a plain enrolment token is refused now.
    plain = run_cli(config, "enroll", "--token", service.enrollment_token(), env=env)
    assert plain.returncode == 6 and "409" in plain.stderr, plain.stderr

    # The volume is lost: the scoped token enrols the host again, the old agent is revoked.
    token_file.unlink()
    lost = entrypoint()
    assert lost.returncode == 0, lost.stdout + lost.stderr
    assert "enrolled as agent" in lost.stdout
    assert "enrolment failed" not in lost.stdout
    new_token = token_file.read_text().strip()
    assert new_token != first_token
    assert _agent_answers(service, new_token) == 404
    assert _agent_answers(service, first_token) == 401
