"""A live agent run keeps the climber's events, so a run shows which rule acted."""

from __future__ import annotations

import re

from agents.climber import Climber, KnobSpace, Sample, make_climber
from agents.knobs import Engine
from benchmarks.live.agent_runs import event_lines, run_event_lines

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
