"""The agent's one loop: profile → recommendation → climb → report → hold → …

One thread, one stop event, one sample per ``sample_period_s`` with a deadline per
iteration; the loop never dies on one bad sample, and on stop the original tuple is
restored before it returns. In approve and recommend modes the step from recommendation to
climb goes through :class:`agents.approval.ApprovalGate`. The phases and the error handling
are described in docs/agent.md ("The loop", "Modes").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from agents.approval import ApprovedStart, Outcome, make_gate
from agents.climber import Climber, KnobSpace
from agents.clock import utc_datetime
from agents.config import AgentConfig, reload_config
from agents.faults import FaultHandling
from agents.periodic import PeriodicLoop
from agents.phase import GATED_PHASES, Phase
from agents.profile import (
    Interval,
    ProfileError,
    ThroughputMetric,
    change_passed,
    climb_metric,
    describe_profile,
    profiling_window,
    workload_changed,
)
from agents.profilers import target_profiler
from agents.recommendation import recommend, start_ranges, start_tuple
from agents.report import Climb, build_report, report_summary
from agents.rollback import RollbackGuard, ThroughputLevels
from agents.server_watch import ServerWatch
from agents.service_client import Uploader
from agents.state import OriginalTupleFile, StatusFile, restore_original_retrying, take_over
from agents.status import Counters, status_document
from agents.targets.base import (
    KnobApplyError,
    Snapshot,
    Target,
    TargetMisconfigured,
    TargetUnavailable,
)
from agents.wire import HostFacts, RecommendationResponse, Source, WorkloadProfile

logger = logging.getLogger(__name__)

ClimberFactory = Callable[[KnobSpace, int], Climber]

__all__ = ["AgentLoop", "ClimberFactory", "Phase"]


class AgentLoop(FaultHandling, PeriodicLoop):
    """Drives one target with one climber; see the module docstring."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        target: Target,
        climber_factory: ClimberFactory,
        uploader: Uploader,
        stop: threading.Event | None = None,
        config_loader: Callable[[], AgentConfig] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(stop=stop, clock=clock, counters=Counters())
        self.config = config
        self.target = target
        self.profiler = target_profiler(target)
        self.climber_factory = climber_factory
        self.uploader = uploader
        self.config_loader = config_loader
        self.original = OriginalTupleFile(config.state_file)
        self.status_file = StatusFile(config.status_file, fallback=config.status_fallback_file)
        self.phase = Phase.STARTING
        self.names = config.tuned_knob_names
        self.host: HostFacts | None = None
        self.climber: Climber | None = None
        self.climb: Climb | None = None
        self.applied: dict[str, int] = {}
        self.last_report: dict[str, Any] = {}
        self._previous: Snapshot | None = None
        self._profile_snapshots: list[Snapshot] = []
        #: The tuple held when the climber saw a workload change, and the climb's levels
        #: there: the profile that follows tells whether the change lasted.
        self._held: tuple[dict[str, int], tuple[float, ...]] | None = None
        self._levels = ThroughputLevels()
        self._rollback = RollbackGuard()
        self.watch = ServerWatch()  # restarts, clock steps, half-applied changes
        self.wall_clock = wall_clock  # dates only; every duration is on ``clock``
        self._clip_pending = False
        #: The throughput metric of the current climb (see :func:`climb_metric`).
        self.metric: ThroughputMetric = config.target.throughput_metric
        #: Approve and recommend modes: who decides whether a start tuple is applied.
        self.gate = make_gate(lambda: self.config, uploader, self.names, wall_clock=wall_clock)

    # -- start and stop ---------------------------------------------------------------

    def start(self) -> None:
        """Connect, restore a tuple a crash left behind, check the server. Raises on a
        server that cannot be tuned (:class:`TargetMisconfigured`)."""
        info = take_over(self.target, self.original, what="tuple")
        self.host = self.target.host_facts()
        self.applied = self.target.current_tuple(self.names)
        logger.info(
            "agent started on %s %s; tuple in force %s; bounds %s",
            info.engine.value,
            info.version,
            self.applied,
            {name: self.config.knob_bounds(name) for name in self.names},
        )
        # Approve and recommend modes carry on with the request they had, if any.
        self._follow((self.gate.resume() if self.gate is not None else None) or Phase.PROFILING)

    def shutdown(self) -> None:
        """Put the original tuple back (several tries), then close the connection."""
        self.phase = Phase.STOPPED
        restore_original_retrying(self.target, self.original)
        self._write_status()
        self.target.close()

    def _reload(self) -> None:
        if self.config_loader is None:
            return
        new = reload_config(self.config, self.config_loader)
        if new is None:
            return
        if new.tuned_knob_names != self.names:
            logger.warning("[climber] knobs changes take effect after a restart")
        old, self.config = self.config, new
        logging.getLogger("agents").setLevel(new.agent.log_level)
        logger.info("configuration reloaded")
        if (old.bounds != new.bounds or old.climber != new.climber) and self.phase in (
            Phase.CLIMBING,
            Phase.HOLDING,
        ):
            # The climber's space changed: move inside the new bounds and start afresh.
            logger.info("bounds or climber changed: profiling again")
            self._clip_pending = True
            self._enter_profiling()

    # -- one iteration ----------------------------------------------------------------

    expected_errors = (TargetUnavailable, KnobApplyError)
    fatal_errors = (TargetMisconfigured,)

    @property
    def period_s(self) -> float:
        return self.config.agent.sample_period_s

    def _after_failure(self) -> None:
        self._previous = None  # no delta may span the gap
        self.watch.connection_lost()

    def _after_iteration(self) -> None:
        every_s = self.config.service.drain_every_s
        drained = self.uploader.drain_when_due(self.clock(), every_s=every_s)
        if self.last_report and drained and drained.delivered_all:
            self.last_report["delivered"] = True
        self._write_status()

    def _iterate(self) -> None:
        if self._clip_pending:
            self._apply(self.applied)  # clipped into the (new) bounds
            self._clip_pending = False
        snapshot = self.target.read_counters()
        in_force = self.target.current_tuple(self.names)
        previous, self._previous = self._previous, snapshot
        if self._server_event(snapshot, in_force):  # a restart or a clock step (faults.py)
            return
        if in_force != self.applied:
            self._manual_change(in_force)
            return
        if previous is None:
            return
        try:
            rates = self.profiler.interval(previous, snapshot)
        except ProfileError as exc:
            logger.warning("sample dropped: %s", exc)
            if self.phase is not Phase.PROFILING and self.phase not in GATED_PHASES:
                self._enter_profiling()
            return
        self.counters.samples += 1
        if self.phase is Phase.PROFILING:
            self._profiling_sample(snapshot)
        elif self.phase is Phase.CLIMBING:
            self._climbing_sample(rates, in_force)
        elif self.phase is Phase.HOLDING:
            self._holding_sample(rates, in_force)
        elif self.phase in GATED_PHASES and self.gate is not None:
            self._follow(self.gate.step(self.phase, rates))
        elif self.phase is Phase.BLOCKED:
            self._blocked_sample()

    def _manual_change(self, in_force: dict[str, int]) -> None:
        """Someone changed a knob: adopt it as the baseline, never fight it."""
        changed = {n: v for n, v in in_force.items() if self.applied.get(n) != v}
        self.counters.manual_changes += 1
        logger.warning(
            "knobs changed outside the agent: %s (agent had %s); adopting them as the new baseline",
            changed,
            {n: self.applied.get(n) for n in changed},
        )
        self.applied = dict(in_force)
        if self.original.exists():
            self.original.adopt(changed)
        self._previous = None
        outside = self.config.outside_bounds(in_force)
        if outside:
            logger.warning(
                "%s is outside the agent's bounds %s: changing nothing until the knobs are "
                "back inside them",
                outside,
                {n: self.config.knob_bounds(n) for n in outside},
            )
            self.phase = Phase.PAUSED
            return
        if self.phase is Phase.PAUSED:
            logger.info("knobs back inside the bounds: resuming")
            self._enter_profiling()
            return
        if self.phase not in (Phase.CLIMBING, Phase.HOLDING) or self.climb is None:
            return
        assert self.climber is not None
        # Climb again from the DBA's tuple; a finished climb starts a new report.
        baseline = dict(in_force)
        self.climber.reset(baseline)
        self._levels.clear()
        self._rollback = RollbackGuard()
        if self.phase is Phase.HOLDING:
            self._begin_climb(self.climb.profile, Source.CURRENT)
        logger.info("climbing again from the adopted tuple %s", baseline)

    # -- profiling --------------------------------------------------------------------

    def _enter_profiling(self) -> None:
        self.phase = Phase.PROFILING
        self._held = None
        self._profile_snapshots = []
        if self._previous is not None:
            self._profile_snapshots.append(self._previous)
        logger.info("profiling the workload for %.0fs", self.config.agent.profile_window_s)

    def _profiling_sample(self, snapshot: Snapshot) -> None:
        self._profile_snapshots.append(snapshot)
        settings = self.config.agent
        window = profiling_window(
            self._profile_snapshots,
            window_s=settings.profile_window_s,
            longest_s=settings.profile_longest_window_s,
            steady_cv=settings.profile_steady_cv,
            sample_period_s=settings.sample_period_s,
            cv=self.profiler.throughput_cv,
        )
        if window is None:
            return
        profile = self.profiler.build_profile(window)
        if profile.qps <= 0 or profile.connections == 0:
            logger.info(
                "no load to tune (qps %.1f, %d connections); profiling again",
                profile.qps,
                profile.connections,
            )
            self._profile_snapshots = [snapshot]
            return
        logger.info("profile: %s", describe_profile(profile))
        held, self._held = self._held, None
        if self.gate is None and held is not None and self._climb_on(*held, profile):
            return
        if self.gate is None:
            self._start_climb(profile)
        else:
            assert self.host is not None
            self._follow(self.gate.begin(self.host, profile, self.applied))

    def _climb_on(
        self, knobs: dict[str, int], levels: tuple[float, ...], profile: WorkloadProfile
    ) -> bool:
        """After a change the climber saw while holding at ``knobs``: when it did not last
        (:func:`agents.profile.change_passed`), the climber, which restarted itself there,
        goes on under a new report with this profile. False: take a new start."""
        if self.climb is None or self.climber is None or knobs != self.applied:
            return False
        if not change_passed(self.climb.profile, levels, profile, self.metric):
            return False
        self._begin_climb(profile, Source.CURRENT)
        logger.info("the change did not last (%s as held): climbing on from there", knobs)
        return True

    def _follow(self, outcome: Outcome) -> None:
        """Do what the approval gate says: climb from an approved start, or enter a phase."""
        if isinstance(outcome, ApprovedStart):
            self._start_climb(outcome.profile, outcome.answer)
            assert self.gate is not None
            if self.phase is Phase.CLIMBING:
                self.gate.applied(self.applied)
        elif outcome is Phase.PROFILING:
            self._enter_profiling()
        elif outcome is not None:
            self.phase = outcome

    # -- climbing ---------------------------------------------------------------------

    def _inside_bounds(self, values: Mapping[str, int]) -> dict[str, int]:
        return self.config.clip(values, names=self.names)

    def _apply(self, values: Mapping[str, int]) -> None:
        wanted = self._inside_bounds(values)
        # Defence in depth: never send a value outside the hard bounds.
        assert not self.config.outside_bounds(wanted), wanted
        changes = {n: v for n, v in wanted.items() if self.applied.get(n) != v}
        if not changes:
            return
        if self.gate is not None and not self.gate.may_change_knobs():
            logger.error("%s mode, no approval: not applying %s", self.gate.mode.value, changes)
            return
        # A DBA may have set a knob since this sample was read: never overwrite that.
        in_force = self.target.current_tuple(self.names)
        if in_force != self.applied:
            self._manual_change(in_force)
            return
        if not self._original_saved():
            return
        started = time.monotonic()
        read_back = self.watch.send(self.target, changes)  # half-applied: see faults.py
        self.applied.update(read_back)
        self.counters.knob_changes += 1
        took = time.monotonic() - started
        if took > self.config.agent.sample_period_s:
            logger.warning("applied %s, which took %.1fs", changes, took)
        else:
            logger.info("applied %s", changes)

    def _start_climb(
        self, profile: WorkloadProfile, answer: RecommendationResponse | None = None
    ) -> None:
        """Apply ``answer`` (default: ask for a recommendation now) and climb from there."""
        assert self.host is not None
        if not self._original_saved():
            return
        self.metric = climb_metric(self.config.target.throughput_metric, profile)
        answer = answer or recommend(
            self.uploader.service, host=self.host, profile=profile, current=self.applied
        )
        start = start_tuple(self.config, answer, current=self.applied, names=self.names)
        ranges = start_ranges(self.config, answer, names=self.names)
        space = KnobSpace.from_engine(
            self.host.engine, self.host.cpu_count, bounds=self._bounds(), names=self.names
        )
        self.climber = self.climber_factory(space, self.host.cpu_count)
        self._apply(start)
        self.climber.reset(dict(self.applied), plausible_range=ranges or None)
        self._begin_climb(profile, Source(answer.source), answer.model_version)
        self._previous = None  # the first sample after a change mixes two tuples
        logger.info("climbing from %s (%s), ranges %s", self.applied, answer.source.value, ranges)

    def _begin_climb(
        self, profile: WorkloadProfile, source: Source, model_version: str | None = None
    ) -> None:
        """A new climb record from the tuple in force: every climb starts here."""
        self.climb = Climb.begin(
            started_at=utc_datetime(self.wall_clock()),
            started_mono=self.clock(),
            profile=profile,
            start_tuple=self.applied,
            source=source,
            model_version=model_version,
        )
        self._levels.clear()
        self._rollback = RollbackGuard()
        self.counters.climbs += 1
        self.phase = Phase.CLIMBING

    def _bounds(self) -> dict[str, tuple[int, int]]:
        return {name: self.config.knob_bounds(name) for name in self.names}

    def _record(self, rates: Interval, in_force: dict[str, int]) -> float:
        assert self.climb is not None and self.climber is not None
        throughput = rates.throughput(self.metric)
        self.climb.record(
            t_s=self.clock() - self.climb.started_mono,
            knobs=in_force,
            throughput=throughput,
            latency_ms=rates.latency_ms,
            connections=rates.connections,
            climber_state=self.climber.state,
        )
        self._levels.add(in_force, throughput)
        return throughput

    def _climbing_sample(self, rates: Interval, in_force: dict[str, int]) -> None:
        assert self.climb is not None and self.climber is not None
        throughput = self._record(rates, in_force)
        if self._guard_rollback(throughput, in_force):
            return
        wanted = self.climber.step(rates.climber_sample(in_force, throughput))
        self.climb.fed_samples += 1
        self._apply(wanted)
        if self.climber.converged:
            self.climb.converged_after = self.climb.fed_samples
            logger.info(
                "converged at %s after %d samples", self.climber.best_tuple, self.climb.fed_samples
            )
            self._finish_climb()
        elif self.clock() - self.climb.started_mono >= self.config.agent.climb_max_s:
            logger.warning(
                "climb not converged after %.0fs: holding the best tuple so far %s",
                self.config.agent.climb_max_s,
                self.climber.best_tuple,
            )
            self.climb.timed_out = True
            self._apply(self.climber.best_tuple)
            self._finish_climb()

    def _guard_rollback(self, throughput: float, in_force: dict[str, int]) -> bool:
        """Backstop of the climber's own rollback: a sustained sharp drop below the last
        good tuple's level sends the server back to that tuple."""
        assert self.climber is not None
        good = self._inside_bounds(self.climber.best_tuple)
        safety = self.config.safety
        if not self._rollback.due(
            throughput,
            good,
            self._levels.at(good) if good != in_force else (),
            below=safety.rollback_below,
            samples=safety.rollback_samples,
        ):
            return False
        self.counters.rollbacks += 1
        self._apply(good)
        self.climber.reset(dict(self.applied))
        self._previous = None
        return True

    def _finish_climb(self) -> None:
        assert self.climb is not None and self.climber is not None
        self.phase = Phase.HOLDING
        if not self.climb.reported:
            self.climb.reported = True
            optimal = self._inside_bounds(self.climber.best_tuple)
            assert self.host is not None
            report = build_report(
                self.climb,
                host=self.host,
                climber=self.climber,
                optimal=optimal,
                levels_at_optimum=self._levels.at(optimal),
                names=self.names,
                metric=self.metric,
                now_mono=self.clock(),
            )
            self.counters.reports += 1
            delivery = self.uploader.submit(report)
            self.uploader.last_drain = self.clock()
            self.last_report = report_summary(report, delivery)

    # -- holding ----------------------------------------------------------------------

    def _holding_sample(self, rates: Interval, in_force: dict[str, int]) -> None:
        assert self.climb is not None and self.climber is not None
        if self.climb.timed_out:
            # The climber was stopped: watch the connections against the profile.
            if workload_changed(self.climb.profile, rates):
                logger.info("workload changed (connections %d): profiling again", rates.connections)
                self._enter_profiling()
            return
        wanted = self.climber.step(rates.climber_sample(in_force, rates.throughput(self.metric)))
        if not self.climber.converged:
            logger.info("the climber saw a workload change: profiling again")
            self._enter_profiling()
            self._held = (dict(in_force), tuple(self._levels.at(in_force)))
            return
        self._apply(wanted)

    # -- uploads and status -----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return status_document(
            phase=self.phase.value,
            mode=self.config.agent.mode.value,
            approval=self.gate.status() if self.gate is not None else None,
            climber=self.climber,
            applied=self.applied,
            original=self.original,
            last_report=self.last_report,
            spool=self.uploader.spool,
            target=self.target,
            counters=self.counters,
        )
