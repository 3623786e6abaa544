"""A live agent run keeps the climber's events, so a run shows which rule acted."""

from __future__ import annotations

import re

from agents.climber import KnobSpace, Sample, make_climber
from agents.knobs import Engine
from benchmarks.live.agent_runs import event_lines

KNOB = "default_pool_size"


def test_a_rollback_reaches_the_live_record_with_its_step_size_and_reason() -> None:
    """A PgBouncer climb whose every probe runs at half the start's level rolls back; the
    line names the step, the event, the size in force and why."""
    space = KnobSpace.from_engine(Engine.PGBOUNCER, 2, names=[KNOB])
    climber = make_climber("pooltune", knob_space=space, cpu_count=2)
    climber.reset({KNOB: 20})
    knobs = climber.current_tuple
    for _ in range(40):
        throughput = 1000.0 if knobs[KNOB] == 20 else 500.0
        knobs = climber.step(Sample(throughput, 32, None, knobs))
    lines = event_lines(climber.events, KNOB)
    rollbacks = [line for line in lines if " rollback " in line]
    assert rollbacks, lines
    assert re.fullmatch(r"\d+ rollback \d+: .*back to the best tuple", rollbacks[0])
