"""What a live run's climber was fed, kept so the climb can be replayed offline, exactly.

A live record's events say which rule acted, not why: the rules read the CPU, the lock
signal and the stall and settling flags of every sample, which the throughput series does
not keep. :func:`record_inputs` keeps each ``reset`` and each :class:`Sample` the agent's
loop gave a climber; :func:`replay` feeds them to a new climber of the same kind, which
(climbers being pure) asks for the same tuples and raises the same events; fed to a changed
climber, it says at which step the change first acts (``python -m
benchmarks.live.climb_record FILE --engine E``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
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


@dataclass(frozen=True, slots=True)
class Replayed:
    """A record fed to a new climber: how far it answered as the recorded one did."""

    climber: Climber
    #: Steps answered as recorded before the first that differs (all of them if none does).
    agreed: int
    steps: int
    #: At the first step that differs: the recorded answer and the new climber's.
    recorded: dict[str, int] | None = None
    answered: dict[str, int] | None = None


def replay(record: Mapping[str, Any], engine: Engine | str) -> Replayed:
    """A new climber fed ``record``'s calls (default settings, as the live agent runs it),
    and the first step whose answer differs from the recorded one."""
    names = list(record["bounds"])
    bounds = {name: (low, high) for name, (low, high) in record["bounds"].items()}
    space = KnobSpace.from_engine(engine, record["cpu_count"], bounds=bounds, names=names)
    climber = make_climber(record["climber"], knob_space=space, cpu_count=record["cpu_count"])
    steps = 0
    first: tuple[int, dict[str, int], dict[str, int]] | None = None
    for call in record["calls"]:
        if "reset" in call:
            ranges = call["plausible_range"]
            climber.reset(
                call["reset"],
                plausible_range={k: (v[0], v[1]) for k, v in ranges.items()} if ranges else None,
            )
            continue
        wanted = climber.step(Sample(**call["sample"]))
        if wanted != call["wanted"] and first is None:
            first = (steps, dict(call["wanted"]), dict(wanted))
        steps += 1
    if first is None:
        return Replayed(climber, steps, steps)
    return Replayed(climber, first[0], steps, recorded=first[1], answered=first[2])


def replay_lines(cases: Mapping[str, Any], engine: Engine | str) -> list[str]:
    """One line per climb of a live benchmark's ``--json`` output: does this code's climber
    answer every step as the recorded one did, and if not, where it first differs."""
    lines = []
    for case, result in cases.items():
        records = result.get("climber_inputs") or []
        for number, record in enumerate(records, start=1):
            done = replay(record, engine)
            head = f"{case} climb {number}: {done.steps} steps"
            if done.recorded is None:
                lines.append(f"{head}, every answer as recorded")
            else:
                lines.append(
                    f"{head}, first differs at step {done.agreed}: recorded {done.recorded}, "
                    f"this climber {done.answered}"
                )
        if not records:
            lines.append(f"{case}: no climber inputs recorded")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Replay the climbs a live benchmark kept (its --json output, "
        "climber_inputs) into this code's climber and say where it first answers "
        "otherwise: which step a rule change acts on, on a real run's own samples."
    )
    parser.add_argument("json", type=Path, help="a --json file of mariadb_live or pgbouncer_live")
    parser.add_argument(
        "--engine", required=True, choices=[e.value for e in Engine], help="the run's engine"
    )
    args = parser.parse_args(argv)
    try:
        cases = json.loads(args.json.read_text())
    except (OSError, json.JSONDecodeError) as error:
        parser.error(f"json: cannot read {args.json}: {error}")
    if not isinstance(cases, dict):
        parser.error(f"json: {args.json} does not hold a live benchmark's cases")
    print("\n".join(replay_lines(cases, args.engine)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
