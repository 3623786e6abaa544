"""Configuration: TOML + environment overrides, validated with actionable messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.cli import main
from agents.config import ConfigError, load_config, parse_config, read_agent_token, reloadable
from agents.console import EXIT_CONFIG

EXAMPLE = Path(__file__).parents[2] / "agents" / "packaging" / "pooltune-agent.toml"


def test_example_config_is_valid() -> None:
    config = load_config(EXAMPLE, env={})
    assert config.target.engine == "mariadb"
    assert config.knob_bounds("thread_pool_size") == (1, 64)
    assert config.tuned_knob_names == ["thread_pool_size"]


def test_defaults_need_no_file_content() -> None:
    config = parse_config({}, env={})
    assert config.agent.sample_period_s == 2.0
    assert config.agent.profile_window_s == 30.0
    assert config.target.extra_port is None
    assert config.knob_bounds("thread_pool_size") == (1, 128)
    assert config.tuned_knob_names[0] == "thread_pool_size"


def test_config_is_frozen() -> None:
    config = parse_config({}, env={})
    with pytest.raises(Exception, match="frozen"):
        config.agent.sample_period_s = 1.0  # type: ignore[misc]


def test_environment_overrides_secrets_and_url() -> None:
    config = parse_config(
        {"service": {"url": "http://file"}},
        env={
            "POOLTUNE_DB_PASSWORD": "s3cret",
            "POOLTUNE_SERVICE_URL": "http://env",
            "POOLTUNE_AGENT_TOKEN": "pta_x",
        },
    )
    assert config.target.password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(config)
    assert config.service.url == "http://env"
    assert read_agent_token(config) == "pta_x"


def test_token_in_the_file_is_refused() -> None:
    with pytest.raises(ConfigError, match="do not put the token in the file"):
        parse_config({"agent_token": "pta_x"}, env={})


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"agent": {"sample_period": 2}}, r"agent\.sample_period: unknown key"),
        ({"agent": {"sample_period_s": -1}}, r"agent\.sample_period_s: Input should be greater"),
        ({"target": {"engine": "oracle"}}, r"target\.engine: Input should be 'mariadb'"),
        ({"target": {"port": 70000}}, r"target\.port"),
        ({"target": {"throughput_metric": "tps"}}, r"throughput_metric"),
        ({"bounds": {"thread_pool_size": [0, 8]}}, r"must lie inside the server's \[1, 128\]"),
        ({"bounds": {"thread_pool_size": [8, 4]}}, r"low \(8\) is above high \(4\)"),
        ({"bounds": {"thread_pool_sise": [1, 4]}}, r"'thread_pool_sise' is not a knob"),
        ({"climber": {"knobs": ["max_connections"]}}, r"climber\.knobs: 'max_connections'"),
        ({"target": "mariadb"}, r"target: must be a \[target\] table"),
    ],
)
def test_invalid_values_are_named_with_what_is_accepted(
    document: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(document, source="agent.toml", env={})


def test_clip_keeps_values_inside_hard_bounds() -> None:
    config = parse_config({"bounds": {"thread_pool_size": [2, 6]}}, env={})
    assert config.clip({"thread_pool_size": 1}) == {"thread_pool_size": 2}
    assert config.clip({"thread_pool_size": 99}) == {"thread_pool_size": 6}
    assert config.clip({"thread_pool_oversubscribe": 5000}) == {"thread_pool_oversubscribe": 1000}


def test_broken_toml_and_missing_file(tmp_path: Path) -> None:
    broken = tmp_path / "agent.toml"
    broken.write_text("[agent\nsample_period_s = 2")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(broken, env={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml", env={})


@pytest.mark.parametrize("command", ["run", "test", "dry-run", "restore", "status"])
def test_cli_exits_2_with_the_reason_on_a_broken_config(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.toml"
    path.write_text("[target]\nprot = 3306\n")
    assert main([command, "--config", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"invalid configuration in {path}" in err
    assert "target.prot: unknown key" in err
    path.write_text("[bounds]\nthread_pool_size = [0, 500]\n")
    assert main([command, "--config", str(path)]) == EXIT_CONFIG
    assert "bounds.thread_pool_size = [0, 500] must lie inside" in capsys.readouterr().err


def test_cli_rejects_unknown_climber_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(f'[agent]\nstate_dir = "{tmp_path}"\n[climber]\nsettings = {{ wave = 3 }}\n')
    assert main(["run", "--config", str(path)]) == EXIT_CONFIG
    assert "unknown key(s) wave" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("tie_z = -1.0", "tie_z must be ≥ 0"),
        ("min_step = 3.0", "min_step ≤ initial_step ≤ max_step"),
        ("rollback_drop = 1.5", "rollback_drop must be between 0 and 1"),
    ],
)
def test_cli_rejects_climber_settings_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: str, message: str
) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(f'[agent]\nstate_dir = "{tmp_path}"\n[climber]\nsettings = {{ {settings} }}\n')
    assert main(["run", "--config", str(path)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "invalid [climber] settings" in err and message in err, err


def test_help_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ([], ["enroll"], ["run"], ["test"], ["dry-run"], ["restore"], ["status"]):
        with pytest.raises(SystemExit) as exit_info:
            main([*command, "--help"])
        assert exit_info.value.code == 0
    assert "--config" in capsys.readouterr().out


def test_status_and_restore_without_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(f'[agent]\nstate_dir = "{tmp_path}"\n')
    assert main(["status", "--config", str(path)]) == 0
    assert '"saved_original_tuple": null' in capsys.readouterr().out
    assert main(["restore", "--config", str(path)]) == 0
    assert "nothing to restore" in capsys.readouterr().out


def test_outside_bounds_names_the_values_beyond_the_hard_bounds() -> None:
    config = parse_config({"bounds": {"thread_pool_size": [2, 6]}}, env={})
    values = {"thread_pool_size": 8, "thread_pool_oversubscribe": 3}
    assert config.outside_bounds(values) == {"thread_pool_size": 8}
    assert config.clip(values, names=["thread_pool_size"]) == {"thread_pool_size": 6}


def test_a_reload_keeps_the_target_and_state_dir_and_takes_the_rest(tmp_path: Path) -> None:
    running = parse_config({"agent": {"state_dir": str(tmp_path / "a")}}, env={})
    new = parse_config(
        {
            "agent": {"state_dir": str(tmp_path / "b"), "climb_max_s": 60},
            "target": {"port": 3307},
            "bounds": {"thread_pool_size": [2, 6]},
        },
        env={},
    )
    reloaded = reloadable(running, new)
    assert reloaded.target == running.target
    assert reloaded.agent.state_dir == tmp_path / "a"
    assert reloaded.agent.climb_max_s == 60
    assert reloaded.bounds == {"thread_pool_size": (2, 6)}
