"""One climb of the pooltune climber: the pool size, then the other knobs, then the size again.

The climb is a generator of measurement requests (a tuple and how many samples to take
there); the climber applies each request and feeds the samples to :class:`Evidence`
before asking for the next. A probe is compared with fresh samples of its reference (the
best tuple measured so far): the reference is measured again when its samples are stale,
and while the evidence is split the probe and the reference alternate (A/B/A/B), which
also watches the reference for a workload change during the search. Why this order and
these guards: docs/climber.md ("Search").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping

import agents.climber.pooltune.guards as guards
from agents.climber.base import EventKind, KnobDim, KnobSpace
from agents.climber.pooltune.change import moved
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.economy import EconomyWalk, floor_below
from agents.climber.pooltune.evidence import Comparison, Evidence, Rules, Verdict
from agents.climber.pooltune.far_end import look_a_step_above, look_at_far_end
from agents.climber.pooltune.line_search import LineSearch, Program, Request
from agents.climber.pooltune.retests import Retests
from agents.climber.pooltune.warm_start import verify_warm_start


class Search(Retests):
    """A climb from the tuple in force; cold, or warm from a recommended start whose
    ``plausible_range`` sizes the first steps."""

    def __init__(
        self,
        config: PooltuneConfig,
        space: KnobSpace,
        cpu_count: int,
        evidence: Evidence,
        event: Callable[[EventKind, str], None],
        *,
        start: Mapping[str, int],
        cold: bool,
        plausible_range: Mapping[str, tuple[int, int]],
        chosen: bool = False,
    ) -> None:
        self._config = config
        self._space = space
        self._cpu_count = cpu_count
        self._evidence = evidence
        self._event = event
        self._range = plausible_range
        self._warm = not cold
        #: The start was recommended (the service's model aims at the smallest size near
        #: the best already).
        self._recommended = not cold
        #: The start is where this climber held before the workload changed (not a guess
        #: to verify downwards).
        self._chosen = chosen
        #: The size was located once already (a later search starts from a measured best).
        self.located = False
        #: The best tuple measured so far (the chosen one once the climb is over).
        self.top = dict(start)
        #: The tuple last requested: in force while its samples come in.
        self.in_force = dict(start)
        #: Searching the pool size (else another knob).
        self.searching_size = True
        #: Connections at the climb's first measured sample: the pool size's ceiling.
        self.connections: float | None = None
        #: Why the climb must start again (the reference moved during the search), if so.
        self.changed: str | None = None
        #: The tuple being probed while its samples come in (the climber rolls back from it
        #: when it collapses); None while a known tuple is measured.
        self.probing: dict[str, int] | None = None
        self._start = dict(start)
        self._start_level: float | None = None
        self._aborted = False
        #: Tuples whose probe collapsed once (a second collapse makes them lose).
        self.collapsed: set[tuple[tuple[str, int], ...]] = set()
        #: Tuples whose probe was rolled back (a collapse or a sharp drop).
        self.rolled_back: list[dict[str, int]] = []
        #: Every tuple probed in this climb.
        self._probed: list[dict[str, int]] = []
        #: The step the climb began at (the economy walk must end in time to settle).
        self._began = evidence.now
        #: The step at which the server itself was last seen to fall (a rollback whose
        #: reference fell with the probe); None if never in this climb.
        self._fell_at: int | None = None
        self._program = self._climb(cold=cold)

    def next_request(self) -> Request | None:
        """The next tuple to apply and how many samples it needs; None once the climb is
        over (``top`` is then in force). Check :attr:`changed` after each call."""
        try:
            target, count = next(self._program)
        except StopIteration:
            return None
        self.in_force = self._space.clip(target)
        return dict(self.in_force), count

    def note_connections(self, connections: int) -> None:
        if self.connections is None:
            self.connections = float(connections)

    def abort(self) -> None:
        """The probe in force collapsed: the climber rolled back; the probe loses."""
        self._aborted = True
        if self.probing is not None:
            self.rolled_back.append(dict(self.probing))

    def _settling(self) -> bool:
        """The server itself fell less than ``change_window`` steps ago: it may be coming
        back, and a probe measured later than its reference reads the rise as a gain."""
        return (
            self._fell_at is not None
            and self._evidence.now - self._fell_at <= self._config.change_window
        )

    # ----------------------------------------------------------------- program
    def _climb(self, *, cold: bool) -> Program:
        size = self._space.size
        yield from self._fresh(self.top)
        self._start_level = self._level(self.top)
        line = yield from self._locate_size(
            self._initial_step(size, self.top[size.name], cold=cold)
        )
        # The far end before the other knobs: they are then searched at the size they serve.
        if (yield from self._gain_at_far_end()):
            line = (yield from self._locate_size(2 * self._config.min_step)).after(line)
        if self._config.tune_secondary and len(self._space.dims) > 1:
            self.searching_size = False
            moved = False
            for dim in self._space.dims[1:]:
                before = self.top[dim.name]
                yield from self._secondary_search(dim, self._initial_step(dim, before, cold=cold))
                moved = moved or self.top[dim.name] != before
            self.searching_size = True
            if moved:
                line = yield from self._locate_size(2 * self._config.min_step)
            elif (yield from self._gain_above()):
                line = (yield from self._locate_size(2 * self._config.min_step)).after(line)
        # Thread economy last: it saves threads, the other knobs may gain throughput.
        yield from self._economy(line)
        if self.in_force != self.top:
            yield (dict(self.top), self._config.min_samples)

    def _gain_above(self) -> Generator[Request, None, bool]:
        """The other knobs took tens of samples: one look a step above the size (the
        economy walk looks below) shows whether the best moved up meanwhile, which the
        level of the tuple in force need not show (True: it did, and ``top`` is there).
        Only if the look and its re-test can end before the climb is due to settle."""
        dim, cfg = self._space.size, self._config
        if not self._time_for(2 * cfg.confirm_samples + cfg.max_samples):
            return False
        ceiling = guards.size_ceiling(dim, self._cpu_count, self.connections)
        return (yield from look_a_step_above(self, dim, ceiling))

    def _gain_at_far_end(self) -> Generator[Request, None, bool]:
        """One look at one group per connection past a shelf (:mod:`far_end`; True: it
        gained, and ``top`` is there)."""
        dim, cfg = self._space.size, self._config
        if not self._time_for(cfg.economy_budget):
            return False  # the economy walk needs its budget before the climb settles
        return (
            yield from look_at_far_end(
                self,
                cfg,
                dim,
                measured=[k for k in self._probed if self._level(k) is not None],
                connections=self.connections,
                ceiling=guards.size_ceiling(dim, self._cpu_count, self.connections),
                # The host's busy cores where they are known: threads of the server's own
                # can only queue for CPUs that a pooler or co-tenant keeps busy.
                cpu_used=max(
                    self._evidence.signal("cpu", self.top),
                    self._evidence.signal("host_cpu", self.top),
                ),
                cpu_count=self._cpu_count,
                queues_on_locks=lambda knobs: guards.queues_on_locks(self._evidence, cfg, knobs),
            )
        )

    def _time_for(self, samples: int) -> bool:
        """``samples`` more end before the climb is due to settle (``settle_steps``)."""
        return self._evidence.now - self._began + samples <= self._config.settle_steps

    def _initial_step(self, dim: KnobDim, value: int, *, cold: bool) -> float:
        """The first step (log2): large far above the cores, the plausible range's width
        over ``range_steps`` when warm, else the configured one."""
        cfg = self._config
        if dim is self._space.size and cold and self._far_above(value):
            # Far above the cores: the flat tail of a falling curve looks like a plateau
            # at small steps, so the first steps are large.
            return max(cfg.initial_step, 1.5)
        if not cold and dim.name in self._range:
            low, high = self._range[dim.name]
            span = dim.to_unit(max(high, 1)) - dim.to_unit(max(low, 1))
            return min(cfg.max_step, max(cfg.min_step, span / cfg.range_steps))
        return cfg.initial_step if dim is self._space.size else cfg.secondary_step

    def _far_above(self, size: int) -> bool:
        """A pool size far above the cores (8×) of a server that keeps its cores busy at
        ``top``: where a falling curve's tail looks flat. Where statements wait off the CPU
        the pool may be what limits throughput: nothing says it is too large."""
        return size >= 8 * self._cpu_count and not self._waits_off_cpu(self.top)

    def _locate_size(self, step: float) -> Generator[Request, None, LineSearch]:
        """Locate the best pool size (``top``); the line search, for the economy walk."""
        dim = self._space.size
        yield from self._fresh(self.top)
        high_cap = guards.size_ceiling(dim, self._cpu_count, self.connections)
        if self.top[dim.name] > high_cap:
            self.top = {**self.top, dim.name: high_cap}
            self._event(EventKind.GUARD, f"{dim.name} cut to {high_cap}: connections")
            yield from self._witness(self.top)
        line = LineSearch(
            self,
            self._config,
            dim,
            high_cap=high_cap,
            rules=Rules(gain_only=True),
            look_farther=not self._warm,
        )
        if self._warm:
            self._warm = False
            high = self._range.get(dim.name, (0, self.top[dim.name]))[1]
            yield from verify_warm_start(
                self, self._config, line, step, cpu_count=self._cpu_count, range_high=high
            )
        elif self._far_above(self.top[dim.name]) and not self._chosen:
            # A pool set far above the cores is someone's guess, as a recommendation is:
            # verified against smaller sizes the same way, down to twice the cores (a falling
            # curve's tail is flat above its knee; the economy walk looks lower on ties).
            yield from verify_warm_start(
                self,
                self._config,
                line,
                step,
                cpu_count=self._cpu_count,
                range_high=high_cap,
                cold=True,
            )
        else:
            # Over-provisioned pools are checked downwards first, unless statements wait
            # off the CPU at the start (idle cores, no row-lock queue: more may gain).
            busy = self.located or not self._waits_off_cpu(self.top)
            first_side = -1 if self.top[dim.name] > 2 * self._cpu_count and busy else 1
            yield from line.run(step, first_side)
        self.top = dict(line.center)
        # A climb that must start again unwinds without measuring: it located nothing new.
        self.located = self.located or self.changed is None
        return line

    def _economy(self, line: LineSearch) -> Program:
        """Walk down from the best size to the smallest that ties with it, if the noise lets
        a probe show a tie within its samples at all (else the walk could only cost). On a
        plateau (a tie a large step away) a smaller pool may lose up to economy_epsilon;
        near a peak, ε, and only from a cold start (a recommended one already aims at the
        smallest size near the best); either less what a larger size level with the best
        measured above it (:meth:`_tie_excess`)."""
        dim = self._space.size
        cfg = self._config
        tolerance = (cfg.economy_epsilon if line.flat_votes else cfg.epsilon) - self._tie_excess(
            line
        )
        capped = self._evidence.noise() * math.sqrt(2.0 / cfg.economy_samples)
        if cfg.tie_z * capped >= tolerance or (self._recommended and not line.flat_votes):
            return
        yield from self._fresh(self.top)
        center = dim.to_unit(self.top[dim.name])
        walk = EconomyWalk(
            self,
            cfg,
            dim,
            floor=floor_below(line.worse, center),
            cpu_count=self._cpu_count,
            tolerance=tolerance,
            tie_z=cfg.tie_z,
            clock=lambda: self._evidence.now,
            climb_began=self._began,
        )
        # Bisect down to the nearest size known to lose (a whole step if none is known).
        yield from walk.run(min(1.0, (center - walk.floor) / 2.0))
        self.top = dict(walk.chosen)

    def _tie_excess(self, line: LineSearch) -> float:
        """How far (log, paired in time) the largest size the line search found level with
        ``top`` measured above it (0 if it did not, or either lacks recent samples): a tie
        kept may hide that much loss, and the walk's own losses come on top of it, so it
        leaves the walk that much less. The largest size only, not the luckiest of several
        ties on a plateau."""
        name = self._space.size.name
        above = [
            knobs
            for knobs in line.tied_above
            if knobs[name] > self.top[name]
            and all(knobs[k] == v for k, v in self.top.items() if k != name)
        ]
        largest = max(above, key=lambda k: k[name], default=None)
        paired = None if largest is None else self.paired_gain(largest, self.top)
        return 0.0 if paired is None else max(0.0, paired[0])

    def _secondary_search(self, dim: KnobDim, step: float) -> Program:
        """Search another knob (ties keep the value). Its first gain is re-tested before the
        search builds on it, and a value other than the default is kept only if a fresh
        A/B/A re-test against the default shows the gain."""
        yield from self._fresh(self.top)
        line = LineSearch(
            self, self._config, dim, high_cap=dim.high, rules=Rules(stay=True, gain_only=True)
        )
        # Downwards first: a longer stall limit keeps a stalled group blocked longer and more
        # oversubscription lets more threads fight for the cores; the risky side comes
        # second, and only if the first did not improve.
        yield from line.run(step, -1)
        self.top = dict(line.center)
        default = {**self.top, dim.name: dim.default}
        # Each later move was a proven gain over a value whose gain over the default was
        # re-tested, so the default is beaten beyond the noise: no second re-test needed.
        proven = line.confirmed is not None and line.confirmed[0] == default and not line.unproven
        if self.top != default and not proven:
            kept = yield from self.confirm(dim, default, self.top)
            if not kept:
                self.top = default
        if self.in_force != self.top:
            yield (dict(self.top), self._config.min_samples)

    # ----------------------------------------------------------------- reference
    def _level(self, knobs: Mapping[str, int]) -> float | None:
        recent = self._evidence.recent(knobs)
        return self._evidence.location(recent) if recent else None

    def _fresh(self, reference: Mapping[str, int]) -> Program:
        """Measure ``reference`` again when its samples are too few or too old."""
        cfg = self._config
        last = self._evidence.last_seen(reference)
        if (
            last is None
            or self._evidence.now - last > cfg.fresh_steps
            or len(self._evidence.recent(reference)) < cfg.min_samples
        ):
            yield from self._witness(reference)

    def _headroom(self, dim: KnobDim, base: Mapping[str, int] | None = None) -> float | None:
        """How far ``base`` (default and unmeasured: ``top``) measured above the start (log),
        for the pool size (else None)."""
        level = self._level(base) if base is not None else None
        if level is None:
            level = self._level(self.top)
        if dim is not self._space.size or self._start_level is None or level is None:
            return None
        return level - self._start_level

    def max_step(self, dim: KnobDim, side: int) -> float:
        """The largest step from ``top``: down, :func:`guards.step_down_limit`."""
        if side > 0 or (headroom := self._headroom(dim)) is None:
            return self._config.max_step
        return guards.step_down_limit(self._config, headroom)

    def lowest_below(self, dim: KnobDim, base: Mapping[str, int]) -> int:
        """The smallest value a probe below ``base`` may take (:func:`guards.lowest_probe`)."""
        if (headroom := self._headroom(dim, base)) is None:
            return dim.low
        return guards.lowest_probe(
            self._evidence, self._config, dim, self._cpu_count, base, headroom
        )

    def gain(self, knobs: Mapping[str, int], reference: Mapping[str, int]) -> float:
        there, here = self._level(knobs), self._level(reference)
        return there - here if there is not None and here is not None else 0.0

    def paired_gain(
        self, knobs: Mapping[str, int], reference: Mapping[str, int]
    ) -> tuple[float, float] | None:
        if not (self._evidence.recent(knobs) and self._evidence.recent(reference)):
            return None  # Evidence.difference needs recent samples of both
        return self._evidence.difference(reference, knobs)

    def loss_shown(self, knobs: Mapping[str, int], reference: Mapping[str, int]) -> float:
        # After one sample (a collapse: its lag sample was the second witness), the plain loss.
        gain = self._evidence.gain_without_lowest(reference, knobs)
        return max(0.0, -(self.gain(knobs, reference) if gain is None else gain))

    def _waits_off_cpu(self, knobs: Mapping[str, int]) -> bool:
        """The cores are idle at ``knobs`` and statements do not queue on row locks (where
        fewer threads gain): they wait off the CPU, and a larger pool may gain."""
        locks = self._evidence.signal("locks", knobs)
        return self.cores_idle(knobs) and not 0 < self._config.lock_contention <= locks

    def cores_idle(self, knobs: Mapping[str, int]) -> bool:
        share = self._config.idle_cpu_share
        used = self._evidence.signal("cpu", knobs)
        return 0 < used < share * self._cpu_count

    # ----------------------------------------------------------------- probe
    def probe(
        self, knobs: dict[str, int], *, rules: Rules, reference: dict[str, int] | None = None
    ) -> Generator[Request, None, Comparison]:
        """Measure ``knobs`` until the test tells it from ``reference`` (default ``top``) or
        the sample cap forces a verdict; split evidence alternates probe and reference."""
        cfg = self._config
        reference = dict(reference or self.top)
        yield from self._fresh(reference)
        if self.changed is not None:
            return Comparison(Verdict.UNSURE)
        if knobs == reference:
            return Comparison(Verdict.EQUAL)
        guard = guards.cpu_bound_below_cores(
            self._evidence, self._config, self._space.size.name, self._cpu_count, knobs, reference
        )
        if guard is not None:
            self._event(EventKind.GUARD, guard)
            return Comparison(Verdict.WORSE)
        self.probing = dict(knobs)
        self._probed.append(dict(knobs))
        probed_from = self._evidence.now
        yield (knobs, cfg.min_samples)
        in_visit = cfg.min_samples
        # A probe measured earlier in the climb is a second witness of a workload change.
        self._note_move(moved(self._evidence, knobs))
        first_visit = True
        while True:
            if self._aborted:
                self._aborted = False
                self.probing = None
                yield from self._witness(reference)
                fell = guards.fell_with_probe(self._evidence, self._config, reference, probed_from)
                if fell:
                    self._fell_at = self._evidence.now
                # The server fell, or dipped at a size that tied before the drop: the size
                # did not lose, and does not bound the walk down.
                lost = guards.lost_before_the_drop(self._evidence, self._config, reference, knobs)
                if knobs in self.rolled_back and (fell or not lost):
                    self.rolled_back.remove(knobs)
                key = tuple(sorted(knobs.items()))
                if (
                    key in self.collapsed
                    or self.changed is not None
                    or (lost and not self._evidence.stalls_seen())
                ):
                    return Comparison(Verdict.WORSE)
                # On a server seen to stall, two stalls in a row look like a collapse; after
                # a visit level with the reference, two low samples are the server dipping:
                # one more look decides.
                self.collapsed.add(key)
                self.probing = dict(knobs)
                yield (knobs, cfg.min_samples)
                in_visit = cfg.min_samples
            samples = self._evidence.recent(knobs)
            taken = max(len(samples), len(self._evidence.since(knobs, probed_from)))
            comparison = self._evidence.compare(
                self._evidence.readings(reference),
                self._evidence.readings(knobs),
                final=taken >= (rules.max_samples or cfg.max_samples),
                rules=rules,
            )
            accepted = comparison.verdict is not Verdict.UNSURE and guards.plausible(
                self._evidence, self._config, self._space.size, knobs, reference, probed_from
            )
            # Inside a bracket, or while the server may be coming back from a fall, a gain
            # counts on A/B/A only: a server that moved while the probe was measured then
            # shows as a change (or the gain fades), not as a gain.
            unwitnessed = (
                (rules.witness_gain or self._settling())
                and comparison.verdict is Verdict.BETTER
                and not guards.measured_since(self._evidence, reference, probed_from)
            )
            if accepted and not unwitnessed:
                self.probing = None
                return comparison
            if rules.gain_only and comparison.verdict is Verdict.UNSURE and first_visit:
                # No gain even without the probe's lowest sample (a stall never stops it).
                gain = self._evidence.gain_without_lowest(reference, knobs)
                if gain is not None and gain <= 0:
                    self.probing = None
                    return Comparison(Verdict.EQUAL, forced=True)
            if comparison.verdict is not Verdict.UNSURE or in_visit >= (
                rules.visit_samples or cfg.visit_samples
            ):
                first_visit = False
                self.probing = None
                yield from self._witness(reference)
                if self.changed is not None:
                    return Comparison(Verdict.UNSURE)
                self.probing = dict(knobs)
                if accepted:  # the gain's witness came: it decides if the test now tells
                    in_visit = 0
                    continue
                yield (knobs, cfg.min_samples)
                in_visit = cfg.min_samples
            else:
                more = 1 if in_visit else cfg.min_samples
                yield (knobs, more)
                in_visit += more
