"""The agent's one loop: profile → recommendation → climb → report → hold → …

One thread, one stop event, one sample per ``sample_period_s`` with a deadline per
iteration. Expected database errors (connection lost, server restart, lock waits) are
warnings with counters and a capped backoff; anything else is logged with its traceback
and survived: the loop never dies on one bad sample. On stop (SIGTERM/SIGINT) the
original tuple is restored before the loop returns; a crash leaves the state file, and
the next start restores it before anything else.

Phases (``status``): ``profiling`` (observe the workload for ``profile_window_s``, longer
while its throughput is unsteady), ``climbing`` (the climber moves the knobs inside the hard
bounds), ``holding`` (OPTIMIZED: the best tuple is held and the workload watched; a change
means profiling again).
"""

from __future__ import annotations

import enum
import faulthandler
import logging
import statistics
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents import knobs as knob_catalog
from agents.climber.base import Climber, KnobSpace, Sample
from agents.config import AgentConfig
from agents.heuristic import heuristic_recommendation
from agents.profile import (
    Interval,
    ProfileError,
    ThroughputMetric,
    build_profile,
    interval,
    throughput_cv,
    trailing_window,
    workload_changed,
)
from agents.state import OriginalTupleFile, StatusFile, restore_original
from agents.targets.base import (
    KnobApplyError,
    Snapshot,
    Target,
    TargetMisconfigured,
    TargetUnavailable,
)
from agents.uploader import ServiceClient, Uploader, UploadError
from agents.wire import (
    MAX_TRACE_SAMPLES,
    ClimberInfo,
    ClimbReport,
    HostFacts,
    KnobTuple,
    RecommendationRequest,
    RecommendationResponse,
    Source,
    TraceSample,
    WorkloadProfile,
    utcnow,
)

logger = logging.getLogger(__name__)

ClimberFactory = Callable[[KnobSpace, int], Climber]


class Phase(enum.StrEnum):
    STARTING = "starting"
    PROFILING = "profiling"
    CLIMBING = "climbing"
    HOLDING = "holding"
    #: A DBA set a value outside the agent's bounds: change nothing until it is back.
    PAUSED = "paused"
    STOPPED = "stopped"


@dataclass(slots=True)
class Counters:
    samples: int = 0
    failed_samples: int = 0
    unexpected_errors: int = 0
    knob_changes: int = 0
    manual_changes: int = 0
    rollbacks: int = 0
    climbs: int = 0
    reports: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)

    def count_error(self, kind: str) -> None:
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1


@dataclass(slots=True)
class Climb:
    """What the loop remembers about the climb in progress."""

    started_at: datetime
    started_mono: float
    profile: WorkloadProfile
    start_tuple: dict[str, int]
    source: Source
    model_version: str | None
    trace: deque[TraceSample]
    start_throughputs: list[float] = field(default_factory=list)
    fed_samples: int = 0
    converged_after: int | None = None
    reported: bool = False
    timed_out: bool = False


def recommend(
    service: ServiceClient | None,
    *,
    host: HostFacts,
    profile: WorkloadProfile,
    current: Mapping[str, int],
) -> RecommendationResponse:
    """The service's recommendation, else the same heuristic computed locally."""
    if service is not None:
        request = RecommendationRequest(
            host=host,
            profile=profile,
            current_tuple=KnobTuple(engine=host.engine, values=dict(current)),
        )
        try:
            answer = service.recommend(request, max_attempts=2)
        except UploadError as exc:
            logger.warning(
                "no recommendation from the service (%s): using the local heuristic", exc
            )
        else:
            logger.info(
                "service recommends %s (%s%s)",
                answer.start_tuple.values,
                answer.source.value,
                f", model {answer.model_version}" if answer.model_version else "",
            )
            return answer
    else:
        logger.info("no service configured: using the local heuristic")
    start, ranges = heuristic_recommendation(host, profile)
    return RecommendationResponse(
        start_tuple=start, ranges=ranges, source=Source.LOCAL_HEURISTIC, model_version=None
    )


class AgentLoop:
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
    ) -> None:
        self.config = config
        self.target = target
        self.climber_factory = climber_factory
        self.uploader = uploader
        self.stop = stop or threading.Event()
        self.reload_requested = threading.Event()
        self.config_loader = config_loader
        self.clock = clock
        self.original = OriginalTupleFile(config.state_file)
        self.status_file = StatusFile(config.status_file)
        self.counters = Counters()
        self.phase = Phase.STARTING
        self.names = config.tuned_knob_names
        self.host: HostFacts | None = None
        self.climber: Climber | None = None
        self.climb: Climb | None = None
        self.applied: dict[str, int] = {}
        self.last_report: dict[str, Any] = {}
        self._previous: Snapshot | None = None
        self._profile_snapshots: list[Snapshot] = []
        self._profile: WorkloadProfile | None = None
        self._consecutive_failures = 0
        self._low_samples = 0
        self._level_at: dict[tuple[tuple[str, int], ...], deque[float]] = {}
        self._last_drain = 0.0
        self._last_uptime = 0.0
        self._clip_pending = False
        #: The throughput metric of the current climb (see :meth:`_choose_metric`).
        self.metric: ThroughputMetric = config.target.throughput_metric

    # -- start and stop ---------------------------------------------------------------

    def start(self) -> None:
        """Connect, restore a tuple a crash left behind, check the server. Raises on a
        server that cannot be tuned (:class:`TargetMisconfigured`)."""
        self.target.connect()
        restored = restore_original(self.target, self.original)
        if restored is not None:
            logger.warning("restored the original tuple %s left by an earlier run", restored)
        info = self.target.check()
        for note in info.notes:
            logger.warning("%s", note)
        self.host = self.target.host_facts()
        self.applied = self.target.current_tuple(self.names)
        logger.info(
            "agent started on %s %s; tuple in force %s; bounds %s",
            info.engine.value,
            info.version,
            self.applied,
            {name: self.config.knob_bounds(name) for name in self.names},
        )
        self._enter_profiling()

    def shutdown(self) -> None:
        """Put the original tuple back (several tries), then close the connection."""
        self.phase = Phase.STOPPED
        for attempt in range(1, 6):
            try:
                restored = restore_original(self.target, self.original)
            except TargetUnavailable as exc:
                logger.warning("restore attempt %d failed: %s", attempt, exc)
                time.sleep(min(5.0, 0.5 * attempt))
                try:
                    self.target.connect()
                except TargetUnavailable:
                    continue
                continue
            if restored is not None:
                logger.info("original tuple restored: %s", restored)
            break
        else:
            logger.error(
                "could not restore the original tuple; it stays in %s and the next start "
                "restores it (or run `pooltune-agent restore`)",
                self.original.path,
            )
        self._write_status()
        self.target.close()

    def run(self, *, max_iterations: int | None = None) -> None:
        """Loop until the stop event is set (or ``max_iterations`` ran: tests)."""
        iterations = 0
        next_deadline = self.clock()
        while not self.stop.is_set():
            if self.reload_requested.is_set():
                self.reload_requested.clear()
                self._reload()
            period = self.config.agent.sample_period_s
            next_deadline += period
            # A stuck iteration (a hung socket, a blocked disk) dumps every thread's stack
            # to stderr, so the operator sees where it hangs.
            faulthandler.dump_traceback_later(max(30.0, 10 * period), repeat=False)
            try:
                self.iterate()
            finally:
                faulthandler.cancel_dump_traceback_later()
            iterations += 1
            if max_iterations is not None and iterations >= max_iterations:
                break
            now = self.clock()
            if now > next_deadline:
                overrun = now - next_deadline
                if overrun > period:
                    logger.warning("iteration overran its deadline by %.2fs", overrun)
                next_deadline = now
            else:
                self.stop.wait(next_deadline - now)

    def _reload(self) -> None:
        if self.config_loader is None:
            return
        try:
            new = self.config_loader()
        except Exception as exc:  # a broken file must not stop a running agent
            logger.error("configuration not reloaded, keeping the running one: %s", exc)
            return
        if new.target != self.config.target or new.agent.state_dir != self.config.agent.state_dir:
            logger.warning("[target] and state_dir changes take effect after a restart")
            new = new.model_copy(
                update={
                    "target": self.config.target,
                    "agent": new.agent.model_copy(
                        update={"state_dir": self.config.agent.state_dir}
                    ),
                }
            )
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

    def iterate(self) -> None:
        """Take one sample and act on it; never raises for a database error."""
        try:
            self._iterate()
            self._consecutive_failures = 0
        except TargetMisconfigured:
            raise
        except (TargetUnavailable, KnobApplyError) as exc:
            self._failed(type(exc).__name__, exc)
        except Exception as exc:  # the loop survives anything one sample can throw
            self.counters.unexpected_errors += 1
            logger.exception("unexpected error in the agent loop (survived): %s", exc)
            self._failed(type(exc).__name__, exc)
        finally:
            self._maybe_drain()
            self._write_status()

    def _failed(self, kind: str, exc: BaseException) -> None:
        self.counters.failed_samples += 1
        self.counters.count_error(kind)
        self._consecutive_failures += 1
        self._previous = None  # no delta may span the gap
        backoff = min(
            30.0, self.config.agent.sample_period_s * 2 ** min(self._consecutive_failures - 1, 5)
        )
        logger.warning(
            "sample failed (%s: %s); %d in a row, next try in %.1fs",
            kind,
            exc,
            self._consecutive_failures,
            backoff,
        )
        self.stop.wait(backoff)

    def _iterate(self) -> None:
        if self._clip_pending:
            self._apply(self.applied)  # clipped into the (new) bounds
            self._clip_pending = False
        snapshot = self.target.read_counters()
        in_force = self.target.current_tuple(self.names)
        previous, self._previous = self._previous, snapshot
        restarted = snapshot.uptime_s < self._last_uptime
        self._last_uptime = snapshot.uptime_s
        if restarted:
            # The server came back with its configured tuple: nothing of ours is in force.
            logger.warning("the server restarted; its tuple is now %s: profiling again", in_force)
            self.applied = dict(in_force)
            self._previous = snapshot
            self._enter_profiling()
            return
        if in_force != self.applied:
            self._manual_change(in_force)
            return
        if previous is None:
            return
        try:
            rates = interval(previous, snapshot)
        except ProfileError as exc:
            logger.warning("sample dropped: %s", exc)
            if self.phase is not Phase.PROFILING:
                self._enter_profiling()
            return
        self.counters.samples += 1
        if self.phase is Phase.PROFILING:
            self._profiling_sample(snapshot)
        elif self.phase is Phase.CLIMBING:
            self._climbing_sample(rates, in_force)
        elif self.phase is Phase.HOLDING:
            self._holding_sample(rates, in_force)

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
        outside = {
            n: v
            for n, v in in_force.items()
            if not self.config.knob_bounds(n)[0] <= v <= self.config.knob_bounds(n)[1]
        }
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
        if self.climber is None or self.climb is None or self.phase is Phase.PROFILING:
            return
        # Climb again from the DBA's tuple; a finished climb starts a new report.
        baseline = dict(in_force)
        self.climber.reset(baseline)
        self._level_at.clear()
        self._low_samples = 0
        if self.phase is Phase.HOLDING:
            self.climb = Climb(
                started_at=utcnow(),
                started_mono=self.clock(),
                profile=self.climb.profile,
                start_tuple=baseline,
                source=Source.CURRENT,
                model_version=None,
                trace=deque(maxlen=MAX_TRACE_SAMPLES),
            )
            self.counters.climbs += 1
            self.phase = Phase.CLIMBING
        logger.info("climbing again from the adopted tuple %s", baseline)

    # -- profiling --------------------------------------------------------------------

    def _enter_profiling(self) -> None:
        self.phase = Phase.PROFILING
        self._profile_snapshots = []
        if self._previous is not None:
            self._profile_snapshots.append(self._previous)
        logger.info("profiling the workload for %.0fs", self.config.agent.profile_window_s)

    def _profiling_sample(self, snapshot: Snapshot) -> None:
        if not self._profile_snapshots:
            self._profile_snapshots.append(snapshot)
            return
        self._profile_snapshots.append(snapshot)
        settings = self.config.agent
        observed = snapshot.taken_at - self._profile_snapshots[0].taken_at
        if observed < settings.profile_window_s:
            return
        # A profile taken in a stall (a flush storm, a backup) would describe a workload that
        # is not there: wait for a steady window, for a while.
        window = trailing_window(self._profile_snapshots, settings.profile_window_s)
        cv = throughput_cv(window)
        if cv > settings.profile_steady_cv:
            if observed < settings.profile_longest_window_s:
                return
            logger.warning(
                "throughput still unsteady after %.0fs (variation %.2f of the mean over the "
                "last %.0fs): profiling over all of it",
                observed,
                cv,
                settings.profile_window_s,
            )
            window = self._profile_snapshots
        elif observed > settings.profile_window_s + settings.sample_period_s:
            logger.info(
                "throughput steady after %.0fs: profiling the last %.0fs",
                observed,
                settings.profile_window_s,
            )
        profile = build_profile(window)
        self._profile = profile
        if profile.qps <= 0 or profile.connections == 0:
            logger.info(
                "no load to tune (qps %.1f, %d connections); profiling again",
                profile.qps,
                profile.connections,
            )
            self._profile_snapshots = [snapshot]
            return
        logger.info(
            "profile: %d connections (%.1f active), %.0f qps, %.0f tps, latency %s ms, "
            "cpu %s ms/request",
            profile.connections,
            profile.active_connections,
            profile.qps,
            profile.tps,
            _fmt(profile.latency_ms),
            _fmt(profile.cpu_ms_per_request),
        )
        self._start_climb(profile)

    # -- climbing ---------------------------------------------------------------------

    def _inside_bounds(self, values: Mapping[str, int]) -> dict[str, int]:
        return self.config.clip({n: v for n, v in values.items() if n in self.names})

    def _apply(self, values: Mapping[str, int]) -> None:
        wanted = self._inside_bounds(values)
        for name, value in wanted.items():
            low, high = self.config.knob_bounds(name)
            # Defence in depth: never send a value outside the hard bounds.
            assert low <= value <= high, (name, value, low, high)
        changes = {n: v for n, v in wanted.items() if self.applied.get(n) != v}
        if not changes:
            return
        # A DBA may have set a knob since this sample was read: never overwrite that.
        in_force = self.target.current_tuple(self.names)
        if in_force != self.applied:
            self._manual_change(in_force)
            return
        if not self.original.exists():
            self.original.save(self.target.engine, self.applied)
        started = time.monotonic()
        read_back = self.target.apply(changes)
        self.applied.update(read_back)
        self.counters.knob_changes += 1
        took = time.monotonic() - started
        if took > self.config.agent.sample_period_s:
            logger.warning("applied %s, which took %.1fs", changes, took)
        else:
            logger.info("applied %s", changes)

    def _choose_metric(self, profile: WorkloadProfile) -> ThroughputMetric:
        """The configured metric, except that a workload without transactions (autocommit
        statements only: Com_commit does not move) is climbed on queries per second."""
        configured = self.config.target.throughput_metric
        if configured == "transactions" and profile.tps <= 0 < profile.qps:
            logger.warning(
                "no transactions in the profile (autocommit workload): climbing on "
                "queries per second instead"
            )
            return "queries"
        return configured

    def _start_climb(self, profile: WorkloadProfile) -> None:
        assert self.host is not None
        self.metric = self._choose_metric(profile)
        answer = recommend(self._service(), host=self.host, profile=profile, current=self.applied)
        start = self._inside_bounds({**self.applied, **answer.start_tuple.values})
        ranges: dict[str, tuple[int, int]] = {}
        for name, knob_range in answer.ranges.items():
            if name in self.names:
                low, high = self.config.knob_bounds(name)
                ranges[name] = (
                    max(low, min(knob_range.low, high)),
                    min(high, max(knob_range.high, low)),
                )
        space = KnobSpace.from_engine(
            self.host.engine, self.host.cpu_count, bounds=self._bounds(), names=self.names
        )
        self.climber = self.climber_factory(space, self.host.cpu_count)
        self._apply(start)
        self.climber.reset(dict(self.applied), plausible_range=ranges or None)
        self.climb = Climb(
            started_at=utcnow(),
            started_mono=self.clock(),
            profile=profile,
            start_tuple=dict(self.applied),
            source=Source(answer.source),
            model_version=answer.model_version,
            trace=deque(maxlen=MAX_TRACE_SAMPLES),
        )
        self._previous = None  # the first sample after a change mixes two tuples
        self._level_at.clear()
        self._low_samples = 0
        self.counters.climbs += 1
        self.phase = Phase.CLIMBING
        logger.info("climbing from %s (%s), ranges %s", self.applied, answer.source.value, ranges)

    def _bounds(self) -> dict[str, tuple[int, int]]:
        return {name: self.config.knob_bounds(name) for name in self.names}

    def _record(self, rates: Interval, in_force: dict[str, int]) -> float:
        assert self.climb is not None and self.climber is not None
        throughput = rates.throughput(self.metric)
        self.climb.trace.append(
            TraceSample(
                t_s=max(0.0, self.clock() - self.climb.started_mono),
                knobs=dict(in_force),
                throughput=throughput,
                latency_ms=rates.latency_ms,
                connections=rates.connections,
                state=self.climber.state[:32],
            )
        )
        key = _key(in_force)
        self._level_at.setdefault(key, deque(maxlen=5)).append(throughput)
        if in_force == self.climb.start_tuple and len(self.climb.start_throughputs) < 10:
            self.climb.start_throughputs.append(throughput)
        return throughput

    def _climbing_sample(self, rates: Interval, in_force: dict[str, int]) -> None:
        assert self.climb is not None and self.climber is not None
        throughput = self._record(rates, in_force)
        if self._guard_rollback(throughput, in_force):
            return
        sample = Sample(
            throughput=throughput,
            connections=rates.connections,
            latency_ms=rates.latency_ms,
            knobs=dict(in_force),
            cpu_busy=rates.cpu_busy,
        )
        wanted = self.climber.step(sample)
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
        levels = self._level_at.get(_key(good))
        if good == in_force or not levels:
            self._low_samples = 0
            return False
        reference = statistics.median(levels)
        if throughput >= self.config.safety.rollback_below * reference:
            self._low_samples = 0
            return False
        self._low_samples += 1
        if self._low_samples < self.config.safety.rollback_samples:
            return False
        self.counters.rollbacks += 1
        logger.warning(
            "throughput %.0f below %.0f%% of the last good tuple's %.0f for %d samples: "
            "rolling back to %s",
            throughput,
            100 * self.config.safety.rollback_below,
            reference,
            self._low_samples,
            good,
        )
        self._low_samples = 0
        self._apply(good)
        self.climber.reset(dict(self.applied))
        self._previous = None
        return True

    def _finish_climb(self) -> None:
        assert self.climb is not None and self.climber is not None
        self.phase = Phase.HOLDING
        if not self.climb.reported:
            self.climb.reported = True
            report = self._build_report()
            self.counters.reports += 1
            result = self.uploader.submit(report)
            self._last_drain = self.clock()
            self.last_report = {
                "idempotency_key": report.idempotency_key,
                "finished_at": report.finished_at.isoformat(),
                "optimal_tuple": report.optimal_tuple.values,
                "throughput_optimal": report.throughput_optimal,
                "converged": report.converged,
                "delivered": result.remaining == 0 and not result.error,
            }

    def _build_report(self) -> ClimbReport:
        climb, climber = self.climb, self.climber
        assert climb is not None and climber is not None and self.host is not None
        engine = self.host.engine
        optimal = self._inside_bounds(climber.best_tuple)
        levels = self._level_at.get(_key(optimal))
        at_optimum = statistics.fmean(levels) if levels else 0.0
        at_start = (
            statistics.fmean(climb.start_throughputs) if climb.start_throughputs else at_optimum
        )
        defaults = knob_catalog.default_tuple(engine, self.host.cpu_count)
        default_values = {n: defaults[n] for n in self.names if n in defaults}
        at_default = at_start if default_values == climb.start_tuple else None
        return ClimbReport(
            idempotency_key=str(uuid.uuid4()),
            host=self.host,
            profile=climb.profile,
            start_tuple=KnobTuple(engine=engine, values=climb.start_tuple),
            start_source=climb.source,
            start_model_version=climb.model_version,
            optimal_tuple=KnobTuple(engine=engine, values=optimal),
            default_tuple=KnobTuple(engine=engine, values=default_values)
            if default_values
            else None,
            throughput_start=at_start,
            throughput_optimal=at_optimum,
            throughput_default=at_default,
            converged=not climb.timed_out,
            samples_to_converge=climb.converged_after,
            trace=list(climb.trace),
            climber=ClimberInfo(
                name=type(climber).name,
                settings={**climber.settings(), "throughput_metric": self.metric},
            ),
            started_at=climb.started_at,
            finished_at=utcnow(),
        )

    # -- holding ----------------------------------------------------------------------

    def _holding_sample(self, rates: Interval, in_force: dict[str, int]) -> None:
        assert self.climb is not None and self.climber is not None
        if self.climb.timed_out:
            # The climber was stopped: watch the connections against the profile.
            if workload_changed(self.climb.profile, rates):
                logger.info("workload changed (connections %d): profiling again", rates.connections)
                self._enter_profiling()
            return
        throughput = rates.throughput(self.metric)
        wanted = self.climber.step(
            Sample(
                throughput=throughput,
                connections=rates.connections,
                latency_ms=rates.latency_ms,
                knobs=dict(in_force),
                cpu_busy=rates.cpu_busy,
            )
        )
        if not self.climber.converged:
            logger.info("the climber saw a workload change: profiling again")
            self._enter_profiling()
            return
        self._apply(wanted)

    # -- uploads and status -----------------------------------------------------------

    def _service(self) -> ServiceClient | None:
        return self.uploader.service

    def _maybe_drain(self) -> None:
        if self.uploader.service is None or not len(self.uploader.spool):
            return
        if self.clock() - self._last_drain < self.config.service.drain_every_s:
            return
        self._last_drain = self.clock()
        result = self.uploader.drain(max_attempts=1)
        if result.delivered or result.duplicates:
            logger.info(
                "spool drained: %d delivered, %d remaining",
                result.delivered + result.duplicates,
                result.remaining,
            )
            if self.last_report and result.remaining == 0:
                self.last_report["delivered"] = True

    def status(self) -> dict[str, Any]:
        original: dict[str, int] | str | None = None
        try:
            saved = self.original.load()
            original = saved.values if saved else None
        except Exception:  # status must never fail the loop
            original = "unreadable"
        return {
            "phase": self.phase.value,
            "climber_state": self.climber.state if self.climber is not None else None,
            "current_tuple": self.applied,
            "original_tuple": original,
            "best_tuple": self.climber.best_tuple if self.climber is not None else None,
            "last_report": self.last_report or None,
            "spooled_reports": len(self.uploader.spool),
            "spool_dropped": self.uploader.spool.dropped,
            "collectors": self._collector_health(),
            "counters": {
                "samples": self.counters.samples,
                "failed_samples": self.counters.failed_samples,
                "unexpected_errors": self.counters.unexpected_errors,
                "knob_changes": self.counters.knob_changes,
                "manual_changes": self.counters.manual_changes,
                "rollbacks": self.counters.rollbacks,
                "climbs": self.counters.climbs,
                "reports": self.counters.reports,
                "errors_by_kind": dict(self.counters.errors_by_kind),
            },
        }

    def _collector_health(self) -> dict[str, dict[str, float | int | str]]:
        """Per-collector successes, failures and last duration, when the target keeps them."""
        collector_set = getattr(self.target, "collector_stats", None)
        stats = getattr(collector_set, "stats", None)
        if not isinstance(stats, dict):
            return {}
        return {
            name: {
                "successes": entry.successes,
                "failures": entry.failures,
                "last_duration_s": round(entry.last_duration_s, 4),
                "last_error": entry.last_error,
            }
            for name, entry in stats.items()
        }

    def _write_status(self) -> None:
        try:
            self.status_file.write(self.status())
        except OSError as exc:
            logger.warning("cannot write the status file: %s", exc)


def _key(values: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(values.items()))


def _fmt(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.2f}"
