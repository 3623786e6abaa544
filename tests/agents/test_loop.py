"""The agent loop against an in-memory server: no database, thousands of samples a second."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from agents.climber import Climber, KnobSpace, Sample
from agents.config import AgentConfig, ConfigError, parse_config
from agents.loop import AgentLoop, ClimberFactory, Phase
from agents.service_client import Uploader
from agents.spool import Spool
from agents.state import OriginalTupleFile
from agents.targets.base import TargetUnavailable
from agents.wire import Source
from agents.wiring import make_climber_factory
from tests.agents.fakes import FakeTarget, knee_curve

SIZE = "thread_pool_size"


class RogueClimber(Climber):
    """Always asks for ``wanted``, whatever the bounds: the loop must not obey blindly."""

    name = "rogue"

    def __init__(self, space: KnobSpace, cpu_count: int, wanted: dict[str, int]) -> None:
        super().__init__(space, cpu_count)
        self.wanted = wanted
        self.resets: list[dict[str, int]] = []

    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        self._current = dict(start)
        self._best = dict(start)
        self.resets.append(dict(start))

    def step(self, sample: Sample) -> dict[str, int]:
        self.steps += 1
        return dict(self.wanted)

    @property
    def state(self) -> str:
        return "rogue"

    @property
    def converged(self) -> bool:
        return False


def config_for(tmp_path: Path, **sections: dict[str, object]) -> AgentConfig:
    document: dict[str, object] = {
        "agent": {
            "state_dir": str(tmp_path),
            "sample_period_s": 0.001,
            "profile_window_s": 4.0,
            "climb_max_s": 1e6,
        },
        "climber": {"knobs": [SIZE]},
        "bounds": {SIZE: [2, 6]},
    }
    for name, section in sections.items():
        merged = dict(document.get(name, {}))  # type: ignore[call-overload]
        merged.update(section)
        document[name] = merged
    return parse_config(document, env={})


def make_loop(
    tmp_path: Path,
    target: FakeTarget,
    factory: ClimberFactory,
    config: AgentConfig | None = None,
) -> AgentLoop:
    config = config or config_for(tmp_path)
    loop = AgentLoop(
        config,
        target=target,
        climber_factory=factory,
        uploader=Uploader(None, Spool(config.spool_dir)),
        clock=lambda: target.now,
    )
    loop.start()
    return loop


def rogue(wanted: dict[str, int]) -> tuple[ClimberFactory, list[RogueClimber]]:
    built: list[RogueClimber] = []

    def factory(space: KnobSpace, cpu_count: int) -> Climber:
        climber = RogueClimber(space, cpu_count, wanted)
        built.append(climber)
        return climber

    return factory, built


def run_until(loop: AgentLoop, phase: Phase, *, limit: int) -> None:
    """Iterate until the loop reaches ``phase`` (at most ``limit`` iterations)."""
    for _ in range(limit):
        loop.iterate()
        if loop.phase is phase:
            return


def test_values_outside_the_bounds_are_clipped_never_applied(tmp_path: Path) -> None:
    target = FakeTarget()
    target.knobs[SIZE] = 9
    factory, _ = rogue({SIZE: 100})
    loop = make_loop(tmp_path, target, factory)
    for _ in range(20):
        loop.iterate()
    assert loop.phase is Phase.CLIMBING
    assert target.applied
    assert all(2 <= values[SIZE] <= 6 for values in target.applied)
    assert target.knobs[SIZE] == 6
    loop.shutdown()
    assert target.knobs[SIZE] == 9  # the original, outside the bounds, comes back


def test_original_tuple_is_saved_before_the_first_change(tmp_path: Path) -> None:
    target = FakeTarget()
    seen_state: list[bool] = []
    state = OriginalTupleFile(tmp_path / "original-tuple.json")
    original_apply = target.apply

    def apply(values: Mapping[str, int]) -> dict[str, int]:
        seen_state.append(state.exists())
        return original_apply(values)

    target.apply = apply  # type: ignore[method-assign]
    factory, _ = rogue({SIZE: 5})
    loop = make_loop(tmp_path, target, factory)
    for _ in range(6):
        loop.iterate()
    assert seen_state and all(seen_state)
    saved = state.load()
    assert saved is not None and saved.values == {SIZE: 2}


def test_one_bad_sample_never_kills_the_loop(tmp_path: Path) -> None:
    target = FakeTarget()
    factory, _ = rogue({SIZE: 3})
    loop = make_loop(tmp_path, target, factory)
    target.failures = [TargetUnavailable("connection lost"), RuntimeError("bug in a collector")]
    loop.iterate()
    loop.iterate()
    for _ in range(10):
        loop.iterate()
    counters = loop.counters
    assert counters.failed_samples == 2
    assert counters.unexpected_errors == 1
    assert counters.errors_by_kind == {"TargetUnavailable": 1, "RuntimeError": 1}
    assert loop.phase is Phase.CLIMBING
    assert counters.samples >= 8


def test_sharp_sustained_drop_rolls_back_to_the_last_good_tuple(tmp_path: Path) -> None:
    target = FakeTarget()
    # Above 2 the server collapses to 10% of its throughput (a sharp drop).
    target.curve = lambda knobs: 1000.0 if knobs[SIZE] <= 2 else 100.0
    factory, built = rogue({SIZE: 6})
    loop = make_loop(tmp_path, target, factory)
    for _ in range(12):
        loop.iterate()
    assert loop.counters.rollbacks >= 1
    # Start at 2 (the heuristic: 2 cores), the climber's jump to 6, then back to 2.
    assert target.applied[:2] == [{SIZE: 6}, {SIZE: 2}]
    assert built[-1].resets[-1] == {SIZE: 2}


def test_manual_change_is_adopted_as_baseline(tmp_path: Path) -> None:
    target = FakeTarget()
    factory, built = rogue({SIZE: 3})
    loop = make_loop(tmp_path, target, factory)
    for _ in range(6):
        loop.iterate()
    assert loop.phase is Phase.CLIMBING
    target.knobs[SIZE] = 5  # a DBA's SET GLOBAL
    loop.iterate()
    assert loop.counters.manual_changes == 1
    assert built[-1].resets[-1] == {SIZE: 5}
    saved = OriginalTupleFile(tmp_path / "original-tuple.json").load()
    assert saved is not None and saved.values == {SIZE: 5}
    loop.shutdown()
    assert target.knobs[SIZE] == 5


def test_manual_change_outside_bounds_pauses_the_agent(tmp_path: Path) -> None:
    target = FakeTarget()
    factory, _ = rogue({SIZE: 3})
    loop = make_loop(tmp_path, target, factory)
    for _ in range(6):
        loop.iterate()
    target.knobs[SIZE] = 40
    changes = len(target.applied)
    for _ in range(5):
        loop.iterate()
    assert loop.phase is Phase.PAUSED
    assert len(target.applied) == changes
    assert target.knobs[SIZE] == 40


def test_real_climber_converges_reports_and_holds(tmp_path: Path) -> None:
    target = FakeTarget()
    config = config_for(tmp_path, bounds={SIZE: [1, 16]})
    loop = make_loop(tmp_path, target, make_climber_factory(config), config)
    run_until(loop, Phase.HOLDING, limit=400)
    assert loop.phase is Phase.HOLDING
    assert loop.counters.reports == 1
    (item,) = loop.uploader.spool.pending()
    report = item.report
    assert report.converged
    assert report.start_source == "local-heuristic"
    assert report.optimal_tuple[SIZE] >= 4  # the knee of the fake curve
    assert report.throughput_optimal == pytest.approx(1000.0)
    assert all(1 <= s.knobs[SIZE] <= 16 for s in report.trace)
    status = loop.status()
    assert status["phase"] == "holding"
    assert status["last_report"]["idempotency_key"] == report.idempotency_key


def test_bounded_climb_stops_at_climb_max(tmp_path: Path) -> None:
    target = FakeTarget()
    factory, _ = rogue({SIZE: 3})
    config = config_for(tmp_path, agent={"climb_max_s": 20.0})
    loop = make_loop(tmp_path, target, factory, config)
    for _ in range(30):
        loop.iterate()
    assert loop.phase is Phase.HOLDING
    (item,) = loop.uploader.spool.pending()
    assert item.report.converged is False


def test_sighup_reload_takes_new_bounds_and_survives_a_broken_file(tmp_path: Path) -> None:
    target = FakeTarget()
    factory, _ = rogue({SIZE: 100})
    configs: list[AgentConfig | Exception] = [
        config_for(tmp_path, bounds={SIZE: [2, 3]}),
        ValueError("broken file"),
    ]

    def loader() -> AgentConfig:
        next_config = configs.pop(0)
        if isinstance(next_config, Exception):
            raise next_config
        return next_config

    loop = make_loop(tmp_path, target, factory)
    loop.config_loader = loader
    loop.run(max_iterations=6)
    assert target.knobs[SIZE] == 6  # climbing inside the old bounds [2, 6]
    applied_before = len(target.applied)
    loop.reload_requested.set()
    loop.run(max_iterations=15)
    assert loop.config.knob_bounds(SIZE) == (2, 3)
    assert target.knobs[SIZE] == 3
    assert all(values[SIZE] <= 3 for values in target.applied[applied_before:])
    assert loop.counters.climbs == 2  # the new bounds started a new climb
    loop.reload_requested.set()
    loop.run(max_iterations=2)  # the broken file is logged, the running config kept
    assert loop.config.knob_bounds(SIZE) == (2, 3)


def test_status_reports_phase_tuple_and_counters(tmp_path: Path) -> None:
    target = FakeTarget()
    factory, _ = rogue({SIZE: 4})
    loop = make_loop(tmp_path, target, factory)
    for _ in range(6):
        loop.iterate()
    status = loop.status_file.read()
    assert status is not None
    assert status["phase"] == "climbing"
    assert status["current_tuple"] == {SIZE: 4}
    assert status["original_tuple"] == {SIZE: 2}
    assert status["counters"]["knob_changes"] == 1


def test_server_restart_is_survived_and_triggers_a_new_profile(tmp_path: Path) -> None:
    target = FakeTarget()
    factory, _ = rogue({SIZE: 4})
    loop = make_loop(tmp_path, target, factory)
    for _ in range(6):
        loop.iterate()
    assert loop.phase is Phase.CLIMBING
    # The server goes away for three samples and comes back with fresh counters and
    # its my.cnf tuple.
    target.failures = [TargetUnavailable("server has gone away")] * 3
    for _ in range(3):
        loop.iterate()
    target.uptime = 1.0
    target.transactions = 0.0
    target.knobs[SIZE] = 2
    for _ in range(3):
        loop.iterate()
    assert loop.counters.failed_samples == 3
    assert loop.counters.errors_by_kind == {"TargetUnavailable": 3}
    assert loop.counters.manual_changes == 0  # a restart is not a DBA's change
    for _ in range(10):
        loop.iterate()
    assert loop.phase is Phase.CLIMBING
    assert loop.counters.climbs == 2


def test_workload_change_while_holding_means_profiling_again(tmp_path: Path) -> None:
    target = FakeTarget()
    config = config_for(tmp_path, bounds={SIZE: [1, 16]})
    loop = make_loop(tmp_path, target, make_climber_factory(config), config)
    run_until(loop, Phase.HOLDING, limit=400)
    assert loop.phase is Phase.HOLDING
    target.connections = 64
    target.curve = lambda knobs: 3000.0
    for _ in range(20):
        loop.iterate()
        if loop.phase is not Phase.HOLDING:
            break
    assert loop.phase in (Phase.PROFILING, Phase.CLIMBING)


def test_autocommit_workload_is_climbed_on_queries(tmp_path: Path) -> None:
    target = FakeTarget(autocommit=True)
    config = config_for(tmp_path, bounds={SIZE: [1, 16]})
    loop = make_loop(tmp_path, target, make_climber_factory(config), config)
    run_until(loop, Phase.HOLDING, limit=400)
    assert loop.metric == "queries"
    (item,) = loop.uploader.spool.pending()
    assert item.report.climber.settings["throughput_metric"] == "queries"
    assert item.report.throughput_optimal == pytest.approx(10_000.0)
    assert item.report.optimal_tuple[SIZE] >= 4


def rates_then(rates: list[float], after: float) -> Callable[[Mapping[str, int]], float]:
    """A curve that ignores the knobs: ``rates`` one per sample, then ``after`` for ever."""
    pending = list(rates)
    return lambda knobs: pending.pop(0) if pending else after


def test_profile_waits_out_a_stall_and_describes_the_steady_workload(tmp_path: Path) -> None:
    """The live IO-bound server stalled for 12 s at the agent's start (59-277 tps against
    ~330 steady): a profile over those samples sent the warm agent to size 20. The agent now
    keeps observing until a whole window is steady and profiles that window."""
    stall = [60.0, 90.0, 100.0, 120.0, 280.0, 40.0]
    target = FakeTarget(curve=rates_then(stall, after=1000.0))
    factory, _ = rogue({SIZE: 3})
    config = config_for(tmp_path, agent={"profile_window_s": 10.0})
    loop = make_loop(tmp_path, target, factory, config)
    samples = 0
    while loop.phase is Phase.PROFILING and samples < 100:
        loop.iterate()
        samples += 1
    assert loop.phase is Phase.CLIMBING
    assert loop.climb is not None
    assert loop.climb.profile.tps == pytest.approx(1000.0)
    # The stall, then one whole steady window (5 samples): not the 3x window limit.
    assert len(stall) + 5 <= samples <= len(stall) + 7


def test_an_unsteady_workload_is_profiled_over_the_longest_window(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = FakeTarget(curve=rates_then([200.0, 1000.0] * 100, after=1000.0))
    factory, _ = rogue({SIZE: 3})
    config = config_for(tmp_path, agent={"profile_window_s": 10.0, "profile_max_window_s": 30.0})
    loop = make_loop(tmp_path, target, factory, config)
    samples = 0
    with caplog.at_level("WARNING", logger="agents.profile"):
        while loop.phase is Phase.PROFILING and samples < 100:
            loop.iterate()
            samples += 1
    assert loop.phase is Phase.CLIMBING
    assert loop.climb is not None
    assert 15 <= samples <= 17  # 30 s of 2-s samples
    assert loop.climb.profile.tps == pytest.approx(600.0, rel=0.05)  # the mean over all of it
    assert "throughput still unsteady after 30s" in caplog.text


def test_the_longest_profile_window_cannot_be_shorter_than_the_window(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="profile_max_window_s .20. must be at least"):
        config_for(tmp_path, agent={"profile_window_s": 30.0, "profile_max_window_s": 20.0})
    steady = config_for(tmp_path, agent={"profile_window_s": 30.0})
    assert steady.agent.profile_longest_window_s == 90.0


def dip_then(
    curve: Callable[[Mapping[str, int]], float],
    *,
    factor: float,
    samples: int,
    lasting: bool = False,
) -> tuple[Callable[[Mapping[str, int]], float], Callable[[], None]]:
    """``curve``, and a switch that scales it by ``factor`` for the next ``samples`` reads
    (for ever if ``lasting``): the server dips, or the workload changes, at the same clients."""
    left = [0]

    def scaled(knobs: Mapping[str, int]) -> float:
        if left[0] > 0:
            left[0] -= 0 if lasting else 1
            return factor * curve(knobs)
        return curve(knobs)

    def start() -> None:
        left[0] = samples

    return scaled, start


def _held_then(tmp_path: Path, *, lasting: bool) -> tuple[AgentLoop, dict[str, int]]:
    """Hold on the knee curve, then a 40% fall of throughput at the same 16 clients for six
    samples, 12 s as live (or for good), until the loop climbs again."""
    curve, fall = dip_then(knee_curve, factor=0.6, samples=6, lasting=lasting)
    target = FakeTarget(curve=curve)
    config = config_for(tmp_path, bounds={SIZE: [1, 16]})
    loop = make_loop(tmp_path, target, make_climber_factory(config), config)
    run_until(loop, Phase.HOLDING, limit=400)
    assert loop.phase is Phase.HOLDING
    held = dict(loop.applied)
    fall()
    run_until(loop, Phase.PROFILING, limit=40)
    assert loop.phase is Phase.PROFILING  # the climber saw the fall
    run_until(loop, Phase.CLIMBING, limit=40)
    assert loop.phase is Phase.CLIMBING
    return loop, held


def test_a_dip_while_holding_that_passes_climbs_on_from_the_held_tuple(tmp_path: Path) -> None:
    """Live, PgBouncer under 20 ms sleeps × 32 held its best, 32, until a 20% dip of the
    server (12 s, the same clients) read as a workload change; the profile after it asked
    the heuristic for a start and the agent ended on 19, 0.62 of the best. The profile
    after a dip that passed shows the same clients at the held level: the climb goes on
    from the held tuple, under a new report."""
    loop, held = _held_then(tmp_path, lasting=False)
    assert loop.climb is not None
    assert loop.climb.source is Source.CURRENT
    assert loop.climb.start_tuple == held
    assert loop.applied == held
    assert loop.counters.climbs == 2


def test_a_fall_that_lasts_while_holding_asks_for_a_new_start(tmp_path: Path) -> None:
    """The same fall for good is another workload at the same clients: a new start."""
    loop, _ = _held_then(tmp_path, lasting=True)
    assert loop.climb is not None
    assert loop.climb.source is not Source.CURRENT
    assert loop.counters.climbs == 2
