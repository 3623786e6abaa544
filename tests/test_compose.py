"""docker-compose.yml cannot run here (no Docker engine): check that everything it names
exists in the project — files, console scripts, their subcommands and options, and the
commands the entrypoint scripts run."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
EXPECTED_SERVICES = {"postgres", "service", "mariadb", "sysbench", "agent"}
#: The PgBouncer pair next to the MariaDB one.
PGBOUNCER_PAIR = {"pg-app", "pgbouncer", "pgbench", "pgbouncer-agent"}
#: `pooltune-x sub --opt` in a script or a command.
POOLTUNE_CALL = re.compile(r"\b(pooltune-(?:agent|service|trainer))\s+([a-z][a-z-]*)([^\n]*)")


def _compose() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(document, dict)
    return document


def _console_scripts() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(project["project"]["scripts"])


def _scripts_dir() -> Path:
    return Path(sys.executable).parent


def _help(script: str, subcommand: str) -> str:
    result = subprocess.run(
        [str(_scripts_dir() / script), subcommand, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"{script} {subcommand} --help: {result.stderr}"
    return result.stdout


def _dockerfile_copies(dockerfile: Path) -> list[str]:
    sources: list[str] = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if words and words[0] == "COPY":
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def _calls_in(text: str) -> list[tuple[str, str, list[str]]]:
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return [
        (script, sub, re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest))
        for script, sub, rest in POOLTUNE_CALL.findall(text)
    ]


def _entry_scripts(document: dict[str, Any]) -> list[Path]:
    scripts = []
    for service in document["services"].values():
        command = service.get("command") or []
        words = command if isinstance(command, list) else shlex.split(command)
        for word in words:
            if word.endswith(".sh"):
                scripts.append(ROOT / "docker" / word)
    return scripts


def test_compose_has_the_whole_loop() -> None:
    services = _compose()["services"]
    assert EXPECTED_SERVICES <= set(services)
    assert "healthcheck" in services["postgres"]
    assert services["service"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["agent"]["depends_on"]["service"]["condition"] == "service_healthy"


def test_the_service_reaches_postgresql_through_pgbouncer_in_transaction_mode() -> None:
    services = _compose()["services"]
    environment = services["service"]["environment"]
    assert "@service-pgbouncer:6432/" in environment["POOLTUNE_DATABASE_URL"]
    # Transaction pooling: no prepared statements, no startup options (service/db_deadline.py).
    assert environment["POOLTUNE_DB_PGBOUNCER"] == "true"
    assert services["service"]["depends_on"]["service-pgbouncer"]["condition"] == "service_healthy"
    ini = (ROOT / "docker" / "service-pgbouncer" / "pgbouncer.ini").read_text()
    assert re.search(r"^pool_mode = transaction$", ini, re.MULTILINE)
    assert re.search(r"^ignore_startup_parameters = .*\boptions\b", ini, re.MULTILINE)
    # The statement timeout the service cannot set behind PgBouncer is the role's.
    init = (ROOT / "docker" / "postgres" / "init.sql").read_text()
    assert "ALTER ROLE pooltune SET statement_timeout" in init


def test_every_file_named_exists() -> None:
    document = _compose()
    for name, service in document["services"].items():
        build = service.get("build")
        if isinstance(build, dict):
            dockerfile = ROOT / build.get("context", ".") / build.get("dockerfile", "Dockerfile")
            assert dockerfile.is_file(), f"{name}: {dockerfile}"
            for source in _dockerfile_copies(dockerfile):
                assert (ROOT / source).exists(), f"{dockerfile.name} copies {source}"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name} mounts {source}"


def test_entrypoint_scripts_exist_and_are_executable() -> None:
    scripts = _entry_scripts(_compose())
    assert {p.name for p in scripts} >= {"service-entrypoint.sh", "agent-entrypoint.sh"}
    extra = [ROOT / "docker" / name for name in ("sysbench-entrypoint.sh", "pgbench-entrypoint.sh")]
    for script in scripts + extra:
        assert script.is_file(), script
        assert script.stat().st_mode & 0o111, f"{script} is not executable"
        assert script.read_text().startswith("#!/bin/sh")
        result = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_every_pooltune_command_exists_with_its_options() -> None:
    scripts = _console_scripts()
    texts = [COMPOSE.read_text()] + [p.read_text() for p in (ROOT / "docker").glob("*.sh")]
    calls = [call for text in texts for call in _calls_in(text)]
    named = {(script, sub) for script, sub, _ in calls}
    assert ("pooltune-agent", "enroll") in named and ("pooltune-agent", "run") in named
    assert ("pooltune-service", "serve") in named
    for script, subcommand, options in calls:
        assert script in scripts, f"{script} is not a console script of the project"
        help_text = _help(script, subcommand)
        for option in options:
            assert option in help_text, f"{script} {subcommand} has no {option}"


@pytest.mark.parametrize(
    ("name", "host"), [("agent.toml", "mariadb"), ("pgbouncer/agent.toml", "pgbouncer")]
)
def test_agent_config_in_the_image_is_valid(name: str, host: str) -> None:
    from agents.config import load_config

    config = load_config(ROOT / "docker" / name, env={"POOLTUNE_DB_PASSWORD": "x"})
    assert config.target.host == host
    assert config.service.url == "http://service:8000"


def test_the_pgbouncer_pair_is_wired_like_the_mariadb_one() -> None:
    import configparser

    from agents.config import load_config

    services = _compose()["services"]
    assert PGBOUNCER_PAIR <= set(services)
    assert "healthcheck" in services["pg-app"] and "healthcheck" in services["pgbouncer"]
    assert services["pgbouncer"]["depends_on"]["pg-app"]["condition"] == "service_healthy"
    assert services["pgbench"]["depends_on"]["pgbouncer"]["condition"] == "service_healthy"
    agent = services["pgbouncer-agent"]
    assert agent["depends_on"]["service"]["condition"] == "service_healthy"
    assert agent["depends_on"]["pgbouncer"]["condition"] == "service_healthy"
    assert agent["command"] == services["agent"]["command"]  # the same enrolling entrypoint
    # The agent reads the config mounted where POOLTUNE_AGENT_CONFIG says, with the
    # passwords from the environment, and its state in a volume of its own.
    mounted = dict(volume.split(":")[:2] for volume in agent["volumes"])
    environment = agent["environment"]
    config_file = ROOT / next(
        source for source, path in mounted.items() if path == environment["POOLTUNE_AGENT_CONFIG"]
    )
    config = load_config(
        config_file,
        env={
            "POOLTUNE_DB_PASSWORD": environment["POOLTUNE_DB_PASSWORD"],
            "POOLTUNE_PG_PASSWORD": environment["POOLTUNE_PG_PASSWORD"],
        },
    )
    assert config.target.engine == "pgbouncer" and config.target.port == 6432
    assert config.target.pgbouncer.postgres_host == "pg-app"
    assert mounted.get("pgbouncer-agent-state") == str(config.agent.state_dir)
    # PgBouncer lets that user change pool sizes, knows its password, and points at pg-app.
    ini = configparser.ConfigParser()
    ini.read(ROOT / "docker" / "pgbouncer" / "pgbouncer.ini")
    assert config.target.user in ini["pgbouncer"]["admin_users"].split(",")
    assert "host=pg-app" in ini["databases"]["bench"]
    userlist = (ROOT / "docker" / "pgbouncer" / "userlist.txt").read_text()
    password = environment["POOLTUNE_DB_PASSWORD"]
    assert f'"{config.target.user}" "{password}"' in userlist
    # The agent's bounds stay under PgBouncer's own cap.
    assert config.knob_bounds("default_pool_size")[1] <= int(ini["pgbouncer"]["max_db_connections"])
    # PostgreSQL gives the agent's role pg_monitor and loads pg_stat_statements.
    init = (ROOT / "docker" / "pgbouncer" / "init.sql").read_text()
    role = config.target.pgbouncer.postgres_user
    assert f"CREATE ROLE {role} LOGIN PASSWORD '{environment['POOLTUNE_PG_PASSWORD']}'" in init
    assert "IN ROLE pg_monitor" in init
    assert "shared_preload_libraries=pg_stat_statements" in services["pg-app"]["command"]
    assert "pgbench-entrypoint.sh" in services["pgbench"]["entrypoint"][0]


def test_mariadb_is_configured_for_the_thread_pool() -> None:
    cnf = (ROOT / "docker" / "mariadb" / "pooltune.cnf").read_text()
    assert re.search(r"^thread_handling\s*=\s*pool-of-threads", cnf, re.M)
    assert re.search(r"^extra_port\s*=\s*3307", cnf, re.M)
    init = (ROOT / "docker" / "mariadb" / "init.sql").read_text()
    assert "'pooltune'@'%'" in init
