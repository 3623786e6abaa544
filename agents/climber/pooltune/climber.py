"""pooltune's own climber: noise-aware line searches in log space, then hold and watch.

This file is the per-sample loop: a knob changed outside restarts the climb, no load
suspends it, the samples right after a change are discarded (actuation lag), the rest are
evidence for the :class:`Search` in progress or for the hold's :class:`ChangeDetector`.
How the climber works and why: docs/climber.md ("pooltune").
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from agents.climber.base import Climber, EventKind, KnobSpace, Sample
from agents.climber.pooltune.change import ChangeDetector
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Evidence, tuple_key
from agents.climber.pooltune.search import Search


class PooltuneState(enum.StrEnum):
    SEARCH_SIZE = "search-size"
    SEARCH_TUPLE = "search-tuple"
    HOLD = "hold"
    SUSPENDED = "suspended"


class PooltuneClimber(Climber):
    name = "pooltune"

    def __init__(
        self, space: KnobSpace, cpu_count: int, config: PooltuneConfig | None = None
    ) -> None:
        super().__init__(space, cpu_count)
        self.config = config or PooltuneConfig()
        self._evidence = Evidence(self.config)
        #: The climb in progress, or the one whose result is held.
        self._search: Search | None = None
        #: Watches the held tuple (None while searching).
        self._change: ChangeDetector | None = None
        self._suspended = False
        self._converged = False
        self._range: dict[str, tuple[int, int]] = {}
        #: Samples still to discard after a knob change, and how many more may be while
        #: the target says the change is still taking effect.
        self._lag_left = 0
        self._settling_left = 0
        #: Samples still to measure for the search's request.
        self._pending = 0
        #: Samples in a row with connections but throughput at or below min_throughput.
        self._low_streak = 0
        #: The level of the sample discarded right after the last change (old and new
        #: tuple blended): with the first sample after it, it can show a collapse.
        self._lag_level: float | None = None
        #: The search's noise estimate when the hold began (the hold learns its own).
        self._hold_noise = 0.0

    # ----------------------------------------------------------------- interface
    @property
    def state(self) -> str:
        if self._suspended:
            return PooltuneState.SUSPENDED.value
        if self._change is not None:
            return PooltuneState.HOLD.value
        if self._search is None or self._search.searching_size:
            return PooltuneState.SEARCH_SIZE.value
        return PooltuneState.SEARCH_TUPLE.value

    @property
    def converged(self) -> bool:
        return self._converged

    @property
    def best_tuple(self) -> dict[str, int]:
        """The held tuple; while searching, the best one measured so far (the search's
        top), not the start: what the agent rolls back to on a sustained drop and holds
        when a climb runs out of time."""
        if self._change is None and self._search is not None:
            return dict(self._search.top)
        return dict(self._best)

    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        self._current = self.space.clip(start)
        self._best = dict(self._current)
        self._range = dict(plausible_range or {})
        self._after_change()
        self._start_climb(cold=not self._range)

    def step(self, sample: Sample) -> dict[str, int]:
        self.steps += 1
        self._evidence.now = self.steps
        in_force = {n: sample.knobs.get(n, v) for n, v in self._current.items()}
        if in_force != self._current:
            self._current = self.space.clip(in_force)
            self._event(EventKind.MANUAL_CHANGE, f"knobs changed outside the climber: {in_force}")
            self._range = {}
            self._lag_left = 0
            self._start_climb(cold=True)
            return dict(self._current)
        if self._waits(sample):
            return dict(self._current)
        level = self._evidence.level(sample.throughput, self._level_reference())
        if self._discard_as_lag(sample):
            self._lag_level = level
            return dict(self._current)
        if level is None:
            return dict(self._current)  # a stall with nothing measured yet to weigh it by
        self._evidence.record(
            self._current,
            level,
            sample.cpu_busy,
            sample.stalled,
            sample.lock_waits,
            host_cpu_busy=sample.host_cpu_busy,
        )
        if self._change is not None:
            if not sample.stalled:  # a stall the target saw says nothing of the workload
                self._hold(level, sample.connections)
        else:
            self._measure(sample.connections)
        return dict(self._current)

    # ----------------------------------------------------------------- rules
    def _after_change(self) -> None:
        self._lag_left = self.config.lag_samples
        self._settling_left = self.config.settling_samples
        self._lag_level = None

    def _discard_as_lag(self, sample: Sample) -> bool:
        """Whether ``sample`` still shows the last change taking effect: one of the
        ``lag_samples`` after it, or a sample the target flags as settling, in a row right
        after the lag and at most ``settling_samples`` of them."""
        if self._lag_left > 0:
            self._lag_left -= 1
            return True
        if sample.settling and self._settling_left > 0:
            self._settling_left -= 1
            return True
        self._settling_left = 0
        return False

    def _waits(self, sample: Sample) -> bool:
        """Suspend without connections, or after ``suspend_after`` samples in a row at or
        below ``min_throughput``; on resuming, discard one sample."""
        low = sample.throughput <= self.config.min_throughput
        self._low_streak = self._low_streak + 1 if low else 0
        if sample.connections <= 0 or (
            low and (self._low_streak >= self.config.suspend_after or self._suspended)
        ):
            if not self._suspended:
                self._suspended = True
                self._event(EventKind.SUSPENDED, "no connections or throughput too low")
            return True
        if self._suspended:
            self._event(EventKind.RESUMED, "load is back")
            self._suspended = False
            if self._change is not None:
                self._change.resume()
            self._lag_left = 1
        return False

    def _level_reference(self) -> list[float]:
        """What a stall is weighed against: the best tuple's recent levels, else the held
        level."""
        baseline = self._change.baseline if self._change is not None else None
        return self._evidence.recent(self._top) or ([baseline] if baseline is not None else [])

    @property
    def _top(self) -> dict[str, int]:
        return self._search.top if self._search is not None else self._current

    # ----------------------------------------------------------------- search
    def _start_climb(self, *, cold: bool, chosen: bool = False) -> None:
        """A new search from the tuple in force (``chosen``: one this climber chose, not
        a start or a DBA's setting)."""
        self._evidence.forget()
        self._converged = False
        self._suspended = False
        self._change = None
        self._search = Search(
            self.config,
            self.space,
            self.cpu_count,
            self._evidence,
            self._event,
            start=self._current,
            cold=cold,
            chosen=chosen,
            plausible_range=self._range,
        )
        self._pending = 0
        self._advance()

    def _measure(self, connections: int) -> None:
        """One sample for the search's request; a collapse or a sharp drop ends the probe
        at once."""
        assert self._search is not None
        self._search.note_connections(connections)
        self._pending -= 1
        top = self._search.top
        if self._search.probing != self._current:
            pass  # a known tuple (a reference, a re-test): nothing to roll back from
        elif self._evidence.collapsed(
            self._lag_level,
            self._current,
            top,
            again=tuple_key(self._current) in self._search.collapsed,
        ):
            self._roll_back("collapse at a probe: back to the best tuple")
        elif self._evidence.sharp_drop(self._current, top):
            self._roll_back("sharp drop at a probe: back to the best tuple")
        if self._pending <= 0:
            self._advance()

    def _roll_back(self, reason: str) -> None:
        assert self._search is not None
        self._pending = 0
        self._search.abort()
        self._event(EventKind.ROLLBACK, reason)

    def _advance(self) -> None:
        assert self._search is not None
        request = self._search.next_request()
        if self._search.changed is not None:
            self._event(EventKind.WORKLOAD_CHANGE, self._search.changed)
            # The tuple in force is one this climber chose only once the size was located
            # there: a start far above the cores not yet verified stays a guess.
            chosen = self._search.located and self._current == self._search.top
            self._start_climb(cold=True, chosen=chosen)
            return
        if request is None:
            self._enter_hold()
            return
        target, count = request
        if target != self._current:
            self._current = target
            self._after_change()
        self._pending = count

    # ----------------------------------------------------------------- hold
    def _enter_hold(self) -> None:
        assert self._search is not None
        self._best = dict(self._current)
        recent = self._evidence.recent(self._current)
        self._change = ChangeDetector(
            self.config,
            baseline=self._evidence.location(recent) if recent else None,
            connections=self._search.connections,
        )
        self._hold_noise = self._evidence.noise()
        if not self._converged:
            self._converged = True
            self._event(EventKind.CONVERGED, f"holding {self._current}")

    def _hold(self, level: float, connections: int) -> None:
        assert self._change is not None
        reason = self._change.observe(level, connections, self._hold_noise)
        if reason is not None:
            self._event(EventKind.WORKLOAD_CHANGE, reason)
            self._start_climb(cold=True, chosen=True)
