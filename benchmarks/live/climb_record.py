"""What a live run's climber was fed, kept so the climb can be replayed offline, exactly.

A live record's events say which rule acted, not why: the rules read the CPU, the lock
signal and the stall and settling flags of every sample, which the throughput series does
not keep. :func:`record_inputs` keeps each ``reset`` and each :class:`Sample` the agent's
loop gave a climber; :func:`replay` feeds them to a new climber of the same kind, which
(climbers being pure) asks for the same tuples and raises the same events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from agents.climber import Climber, KnobSpace, Sample, make_climber
from agents.knobs import Engine


def record_inputs(climber: Climber) -> dict[str, Any]:
    """Wrap ``climber``'s ``reset`` and ``step`` so that every call is appended to the
    returned record (JSON-ready): the space, the cores and the calls in order."""
    record: dict[str, Any] = {
        "climber": climber.name,
        "cpu_count": climber.cpu_count,
        "bounds": {d.name: [d.low, d.high] for d in climber.space.dims},
        "calls": [],
    }
    calls: list[dict[str, Any]] = record["calls"]
    reset, step = climber.reset, climber.step

    def recording_reset(
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        ranges = {k: list(v) for k, v in plausible_range.items()} if plausible_range else None
        calls.append({"reset": dict(start), "plausible_range": ranges})
        reset(start, plausible_range=plausible_range)

    def recording_step(sample: Sample) -> dict[str, int]:
        wanted = step(sample)
        calls.append({"sample": asdict(sample), "wanted": dict(wanted)})
        return wanted

    climber.reset = recording_reset  # type: ignore[method-assign]
    climber.step = recording_step  # type: ignore[method-assign]
    return record


def replay(record: Mapping[str, Any], engine: Engine | str) -> tuple[Climber, int]:
    """A new climber fed ``record``'s calls (default settings, as the live agent runs it);
    it and the index of the first step whose answer differs from the recorded one (the
    number of steps when none does)."""
    names = list(record["bounds"])
    bounds = {name: (low, high) for name, (low, high) in record["bounds"].items()}
    space = KnobSpace.from_engine(engine, record["cpu_count"], bounds=bounds, names=names)
    climber = make_climber(record["climber"], knob_space=space, cpu_count=record["cpu_count"])
    steps = 0
    first_difference: int | None = None
    for call in record["calls"]:
        if "reset" in call:
            ranges = call["plausible_range"]
            climber.reset(
                call["reset"],
                plausible_range={k: (v[0], v[1]) for k, v in ranges.items()} if ranges else None,
            )
            continue
        wanted = climber.step(Sample(**call["sample"]))
        if wanted != call["wanted"] and first_difference is None:
            first_difference = steps
        steps += 1
    return climber, steps if first_difference is None else first_difference
