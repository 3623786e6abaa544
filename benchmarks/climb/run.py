"""One run: a climber against one scenario's world, scored on the true throughput.

Scores (DESIGN.md, "Benchmark vocabulary"; issue 15): the true throughput of the tuple in
force over the best of the tuple space at that moment (``normalised``), and from it T95,
final quality, regret, safety, whether the run reached 0.95 of the best and stayed there,
whether it changed the size in its last third, where its secondary knobs ended.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from agents.climber import RESTART_EVENTS, KnobSpace, make_climber
from benchmarks.climb.metrics import longest_streak, reach_and_stay, t95
from benchmarks.climb.scenarios import SAMPLES_PER_MINUTE, Scenario
from benchmarks.climb.worlds import World, build_world

#: Final quality is the mean over this many last samples.
FINAL_SAMPLES = 60


@dataclass(frozen=True, slots=True)
class RunResult:
    climber: str
    scenario: Scenario
    t95: float
    quality: float
    regret: float
    safety: float
    #: Most consecutive samples below half the start's true throughput.
    below_half_streak: int
    economy: float | None
    changes_per_min: float
    restarts: int
    reconvergence: float | None
    quality_after_switch: float | None
    reached_and_stayed: bool
    #: No pool-size change in the last third of the (stationary part of the) run.
    settled: bool
    #: The secondary knobs at their defaults at the end (None: only the size is tuned).
    secondary_at_default: bool | None
    #: Share of a stall limit's gain found (family "secondary").
    secondary_gain: float | None
    final_size: int
    seconds: float


def start_tuple(
    scenario: Scenario, space: KnobSpace, world: World, rng: np.random.Generator
) -> tuple[dict[str, int], dict[str, tuple[int, int]] | None]:
    """The tuple the run starts from, and the plausible range of a warm start."""
    start = space.defaults()
    size = space.size.name
    kind = scenario.start
    if kind == "left":
        start[size] = space.size.low
    elif kind == "right":
        start[size] = space.size.high
    elif kind == "4cores":
        start[size] = space.size.clip(4 * world.cores)
    elif kind.startswith("warm"):
        optimum = world.optimum_size()
        if kind == "warm":
            factor = rng.uniform(0.7, 1.3)
        elif kind == "warm-high":
            factor = rng.uniform(4.0, 5.0)
        else:
            factor = 0.25
        start[size] = space.size.clip(optimum * factor)
        plausible = {
            size: (
                space.size.clip(start[size] / 1.5),
                space.size.clip(start[size] * 1.5),
            )
        }
        return start, plausible
    return start, None


def run_one(args: tuple[str, Scenario]) -> RunResult:
    climber_name, scenario = args
    began = time.perf_counter()
    rng = np.random.default_rng(scenario.seed_sequence)
    world = build_world(scenario, rng)
    cores = world.cores
    space = KnobSpace.from_engine(world.engine, cores, bounds=world.bounds)
    start, plausible = start_tuple(scenario, space, world, rng)
    climber = make_climber(climber_name, knob_space=space, cpu_count=cores)
    climber.reset(start, plausible_range=plausible)
    knobs = climber.current_tuple
    start_truth = world.truth(start)
    total = scenario.samples
    switch_at = total // 2 if scenario.switch else total
    truth = np.empty(total)
    peaks = np.empty(total)
    sizes = np.empty(total)
    changes = np.zeros(total, dtype=bool)
    restarts_before_switch = 0
    previous = knobs
    for index in range(total):
        if index == switch_at:
            restarts_before_switch = sum(1 for e in climber.events if e.kind in RESTART_EVENTS)
        seen = world.observe(index, knobs)
        truth[index], peaks[index] = seen.truth, seen.peak
        sizes[index] = knobs[space.size.name]
        changes[index] = knobs != previous
        previous = knobs
        knobs = climber.step(seen.sample())
    normalised = truth / peaks
    first = normalised[:switch_at]
    reached = t95(first)
    stationary = truth[:switch_at] if world.change_at is None else truth[: world.change_at]
    safety = float(np.min(stationary) / max(start_truth, 1e-9))
    after = int(reached) if math.isfinite(reached) else switch_at // 2
    minutes = (switch_at - after) / SAMPLES_PER_MINUTE
    changes_per_min = float(np.sum(changes[after:switch_at]) / minutes) if minutes > 0 else 0.0
    reconvergence = quality_after = None
    restarts = sum(1 for e in climber.events if e.kind in RESTART_EVENTS)
    if scenario.switch:
        post = normalised[switch_at:]
        reconvergence = t95(post)
        quality_after = float(np.mean(post[-FINAL_SAMPLES:]))
        restarts = restarts_before_switch
    elif world.change_at is not None:
        reconvergence = t95(normalised[world.change_at :])
    final_size = int(sizes[switch_at - 1])
    end_knobs = climber.current_tuple if not scenario.switch else None
    secondary_default = None
    if len(space.dims) > 1 and end_knobs is not None:
        defaults = space.defaults()
        secondary_default = all(end_knobs[d.name] == defaults[d.name] for d in space.dims[1:])
    gain = world.secondary_gain_share(end_knobs) if end_knobs is not None else None
    last_third = sizes[switch_at - switch_at // 3 : switch_at]
    return RunResult(
        climber=climber_name,
        scenario=scenario,
        t95=reached,
        quality=float(np.mean(first[-FINAL_SAMPLES:])),
        regret=float(np.mean(1.0 - first)),
        safety=safety,
        below_half_streak=longest_streak(stationary < 0.5 * start_truth),
        economy=final_size / world.knee if world.knee else None,
        changes_per_min=changes_per_min,
        restarts=restarts,
        reconvergence=reconvergence,
        quality_after_switch=quality_after,
        reached_and_stayed=reach_and_stay(first),
        settled=bool(np.all(last_third == last_third[-1])),
        secondary_at_default=secondary_default,
        secondary_gain=gain,
        final_size=final_size,
        seconds=time.perf_counter() - began,
    )


__all__ = ["RunResult", "run_one"]
