"""A live agent run keeps the climber's events, so a run shows which rule acted."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from agents.climber import Climber, KnobSpace, Sample, make_climber
from agents.knobs import Engine
from benchmarks.live import climb_record
from benchmarks.live.agent_runs import event_lines, run_event_lines
from benchmarks.live.climb_record import record_inputs, replay

KNOB = "default_pool_size"


def _climb(start: int, samples: int) -> Climber:
    """A PgBouncer climb from ``start`` whose every other size runs at half its level."""
    space = KnobSpace.from_engine(Engine.PGBOUNCER, 2, names=[KNOB])
    climber = make_climber("pooltune", knob_space=space, cpu_count=2)
    climber.reset({KNOB: start})
    knobs = climber.current_tuple
    for _ in range(samples):
        throughput = 1000.0 if knobs[KNOB] == start else 500.0
        knobs = climber.step(Sample(throughput, 32, None, knobs))
    return climber


def test_a_rollback_reaches_the_live_record_with_its_step_size_and_reason() -> None:
    """A PgBouncer climb whose every probe runs at half the start's level rolls back; the
    line names the step, the event, the size in force and why."""
    lines = event_lines(_climb(20, 40).events, KNOB)
    rollbacks = [line for line in lines if " rollback " in line]
    assert rollbacks, lines
    assert re.fullmatch(r"\d+ rollback \d+: .*back to the best tuple", rollbacks[0])


def test_a_second_climb_in_one_run_keeps_the_first_ones_events() -> None:
    """The agent starts a new climber after a workload change: the run's record holds both
    climbs in order, the second headed by its number."""
    first, second = _climb(20, 40), _climb(8, 30)
    lines = run_event_lines([first, second], KNOB)
    assert lines == [*event_lines(first.events, KNOB), "climb 2", *event_lines(second.events, KNOB)]
    assert first.events and second.events
    assert run_event_lines([first], KNOB) == event_lines(first.events, KNOB)


def _recorded_climb(steps: int) -> tuple[Climber, dict[str, Any]]:
    """A PgBouncer climb of ``steps`` samples from 20 on a knee at 8, with CPU, lock and
    settling readings, and what it was fed."""
    space = KnobSpace.from_engine(Engine.PGBOUNCER, 2, names=[KNOB], bounds={KNOB: (1, 192)})
    climber = make_climber("pooltune", knob_space=space, cpu_count=2)
    record = record_inputs(climber)
    climber.reset({KNOB: 20})
    rng = random.Random(5)
    knobs = climber.current_tuple
    for index in range(steps):
        size = knobs[KNOB]
        level = 20000.0 * min(1.0, size / 8) * (1.0 - 0.004 * max(0, size - 8))
        sample = Sample(
            level * (1 + rng.gauss(0, 0.06)),
            32,
            5.0,
            knobs,
            cpu_busy=min(1.9, 0.25 * size),
            host_cpu_busy=min(2.0, 0.3 * size),
            stalled=False,
            settling=index % 17 == 0,
            lock_waits=0.01,
        )
        knobs = climber.step(sample)
    return climber, record


def test_a_recorded_climb_replays_exactly_from_its_json() -> None:
    """What the climber was fed (resets, samples with CPU, lock and stall readings) is
    kept; a new climber fed the JSON-read record asks for the same tuples and raises the
    same events, and one changed sample makes the replay differ, not before it."""
    climber, record = _recorded_climb(150)
    assert len({c["wanted"][KNOB] for c in record["calls"] if "wanted" in c}) > 2
    stored = json.loads(json.dumps(record))
    again = replay(stored, Engine.PGBOUNCER)
    assert again.agreed == again.steps == 150 and again.recorded is None
    assert event_lines(again.climber.events, KNOB) == event_lines(climber.events, KNOB)
    steps = [c for c in stored["calls"] if "sample" in c]
    moved = next(i for i, c in enumerate(steps) if c["wanted"] != c["sample"]["knobs"])
    steps[moved]["sample"]["throughput"] *= 0.3
    changed = replay(stored, Engine.PGBOUNCER)
    assert moved <= changed.agreed < 150
    assert changed.recorded == steps[changed.agreed]["wanted"] != changed.answered


def test_the_replay_command_says_where_a_climber_first_answers_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m benchmarks.live.climb_record FILE --engine E`` replays every climb a
    live run kept: the same climber answers every step as recorded; a record whose answer
    at one step was another (as from an older climber) is named with that step."""
    _, record = _recorded_climb(60)
    changed = json.loads(json.dumps(record))
    steps = [c for c in changed["calls"] if "wanted" in c]
    steps[40]["wanted"] = {KNOB: steps[40]["wanted"][KNOB] + 1}
    path = tmp_path / "live.json"
    path.write_text(
        json.dumps({"a": {"climber_inputs": [record]}, "b": {"climber_inputs": [changed]}, "c": {}})
    )
    assert climb_record.main([str(path), "--engine", "pgbouncer"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "a climb 1: 60 steps, every answer as recorded"
    assert lines[1].startswith("b climb 1: 60 steps, first differs at step 40: recorded ")
    assert lines[2] == "c: no climber inputs recorded"
    path.write_text("[1, 2]")
    with pytest.raises(SystemExit):
        climb_record.main([str(path), "--engine", "pgbouncer"])
    assert "json:" in capsys.readouterr().err
