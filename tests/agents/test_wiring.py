"""Assembling an agent from its configuration, as ``pooltune-agent run`` and the benchmarks do."""

from __future__ import annotations

from pathlib import Path

from agents.config import parse_config
from agents.loop import Phase
from agents.service_client import ServiceClient
from agents.targets.simulated import SimulatedTarget
from agents.wire import Source
from agents.wiring import assemble_agent, make_target


class OtherClient(ServiceClient):
    """A client class of the benchmark's choosing."""


def _document(tmp_path: Path, url: str = "") -> dict[str, object]:
    return {
        "agent": {"state_dir": str(tmp_path), "profile_window_s": 10.0},
        "target": {"simulated": {"seed": 3, "workload": "io", "cores": 4}},
        "climber": {"knobs": ["thread_pool_size"]},
        "service": {"url": url, "max_attempts": 2},
    }


def test_a_simulated_agent_without_a_service_profiles_then_climbs(tmp_path: Path) -> None:
    config = parse_config(_document(tmp_path), env={})
    target = make_target(config)
    assert isinstance(target, SimulatedTarget)
    loop = assemble_agent(config, target=target, clock=lambda: target.now)
    assert loop.uploader.service is None
    assert loop.uploader.spool.directory == tmp_path / "spool"
    loop.start()
    for _ in range(10):
        loop.iterate()
    assert loop.phase is Phase.CLIMBING
    assert loop.climb is not None and loop.climb.source is Source.LOCAL_HEURISTIC
    loop.shutdown()
    assert not (tmp_path / "original-tuple.json").exists()


def test_the_service_client_is_built_with_the_given_token_and_class(tmp_path: Path) -> None:
    config = parse_config(_document(tmp_path, "http://127.0.0.1:9"), env={})
    loop = assemble_agent(config, agent_token="abc", client_class=OtherClient)
    client = loop.uploader.service
    assert isinstance(client, OtherClient)
    assert client.token == "abc" and client.max_attempts == 2
    assert str(client.client.base_url) == "http://127.0.0.1:9"
    client.client.close()


def test_a_reload_reads_the_file_again_and_replaces_the_service_client(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(f'[agent]\nstate_dir = "{tmp_path}"\n[service]\nurl = "http://127.0.0.1:9"\n')
    config = parse_config({"agent": {"state_dir": str(tmp_path)}}, env={})
    loop = assemble_agent(config, agent_token="abc", config_path=path)
    assert loop.uploader.service is None and loop.config_loader is not None
    reloaded = loop.config_loader()
    client = loop.uploader.service
    assert reloaded.service.url == "http://127.0.0.1:9"
    assert client is not None and client.token == "abc"
    client.client.close()
