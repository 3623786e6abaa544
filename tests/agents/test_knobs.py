import pytest

from agents import knobs
from agents.knobs import Engine


@pytest.mark.parametrize("engine", list(Engine))
def test_every_catalog_has_a_tuned_pool_size_knob_first(engine: Engine) -> None:
    tuned = knobs.tuned_knobs(engine)
    assert tuned[0].name == knobs.POOL_SIZE_KNOB[engine]
    assert all(k.tuned and k.dynamic for k in tuned)


@pytest.mark.parametrize("engine", list(Engine))
def test_defaults_lie_inside_bounds(engine: Engine) -> None:
    for knob in knobs.catalog(engine).values():
        assert knob.minimum <= knob.maximum
        for cpus in (1, 2, 64, 4096):
            assert knob.contains(knob.default_for(cpus)), knob.name


def test_mariadb_pool_size_defaults_to_cpu_count_and_is_capped_at_runtime_maximum() -> None:
    size = knobs.knob("mariadb", "thread_pool_size")
    assert size.default_for(16) == 16
    assert size.default_for(512) == 128  # the server cuts runtime values to 128
    assert knobs.default_tuple("mariadb", 4) == {
        "thread_pool_size": 4,
        "thread_pool_oversubscribe": 3,
        "thread_pool_stall_limit": 500,
    }


def test_mariadb_facts_match_the_server_documentation() -> None:
    over = knobs.knob(Engine.MARIADB, "thread_pool_oversubscribe")
    assert (over.minimum, over.maximum, over.default) == (1, 1000, 3)
    stall = knobs.knob(Engine.MARIADB, "thread_pool_stall_limit")
    assert (stall.default, stall.unit) == (500, "ms")
    assert knobs.knob(Engine.MARIADB, "thread_pool_idle_timeout").default == 60
    assert knobs.knob(Engine.MARIADB, "thread_pool_prio_kickup_timer").default == 1000


def test_pgbouncer_pool_size_default() -> None:
    assert knobs.default_tuple("pgbouncer", 8)["default_pool_size"] == 20


def test_clip_rounds_and_bounds() -> None:
    size = knobs.knob("mariadb", "thread_pool_size")
    assert size.clip(0) == 1
    assert size.clip(7.6) == 8
    assert size.clip(1e9) == 128


def test_pool_size_ceiling_is_the_connections_inside_the_bounds() -> None:
    assert knobs.pool_size_ceiling(12, 1, 128) == 12
    assert knobs.pool_size_ceiling(500, 1, 128) == 128
    assert knobs.pool_size_ceiling(3, 4, 64) == 4  # never below the low bound
    assert knobs.pool_size_ceiling(0, 1, 64) == 64  # connections unknown: no ceiling


def test_unknown_engine_and_knob_errors_name_the_alternatives() -> None:
    with pytest.raises(ValueError, match="known engines: mariadb, percona, pgbouncer"):
        knobs.catalog("oracle")
    with pytest.raises(knobs.UnknownKnobError, match="thread_pool_size"):
        knobs.knob("mariadb", "thread_pool_sise")
