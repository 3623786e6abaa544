"""Approval and recommend modes: ask a person before any knob changes, or only report.

``mode = "approve"``: after profiling, the agent asks for its recommendation, posts it as an
approval request (``POST /v1/approvals``) and waits, changing nothing, polling the request
with backoff until an admin approves it (then the loop applies ``approved_tuple`` inside the
agent's bounds and climbs), rejects it, or it expires or is superseded (then nothing changes
until ``[approval] retry_after_s`` has passed). ``mode = "recommend"``: the agent reports what
it would apply and never changes a knob. The request, its idempotency key and its outcome are
kept in ``state_dir/approval.json``, so a restarted agent polls the same request and keeps
the same quiet period. Docs: docs/agent.md, "Modes".
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agents.approval_record import (
    NOTHING_DONE,
    WAITING,
    GateFile,
    GateRecord,
    RecordState,
    record_summary,
    stamp,
)
from agents.config import AgentConfig, Mode
from agents.phase import Phase
from agents.profile import Interval, workload_changed
from agents.recommendation import bounded_recommendation, recommend
from agents.service_client import AuthenticationFailed, RequestRejected, ServiceError, Uploader
from agents.wire import (
    ApprovalCreate,
    ApprovalRead,
    ApprovalState,
    HostFacts,
    KnobRange,
    KnobTuple,
    RecommendationResponse,
    WorkloadProfile,
)

logger = logging.getLogger(__name__)

_FROM_SERVICE = {
    ApprovalState.REJECTED: RecordState.REJECTED,
    ApprovalState.EXPIRED: RecordState.EXPIRED,
    ApprovalState.SUPERSEDED: RecordState.SUPERSEDED,
}


@dataclass(frozen=True, slots=True)
class ApprovedStart:
    """An approved start: the loop applies ``answer.start_tuple`` (inside its bounds) and
    climbs with ``answer.ranges`` from ``profile``."""

    profile: WorkloadProfile
    answer: RecommendationResponse


#: What the gate tells the loop: a phase to enter, a start to apply, or None (stay).
Outcome = Phase | ApprovedStart | None


def make_gate(
    config: Callable[[], AgentConfig],
    uploader: Uploader,
    names: Sequence[str],
    *,
    wall_clock: Callable[[], float],
) -> ApprovalGate | None:
    """The gate of ``config()``'s mode; None in auto mode (nobody is asked)."""
    if config().agent.mode is Mode.AUTO:
        return None
    return ApprovalGate(config=config, uploader=uploader, names=names, wall_clock=wall_clock)


class ApprovalGate:
    """The approve / recommend workflow the loop consults; see the module docstring."""

    def __init__(
        self,
        *,
        config: Callable[[], AgentConfig],
        uploader: Uploader,
        names: Sequence[str],
        wall_clock: Callable[[], float],
    ) -> None:
        self._config = config
        self.uploader = uploader
        self.names = list(names)
        self.wall_clock = wall_clock
        self.file = GateFile(config().approval_file)
        self.record: GateRecord | None = None
        self._poll_interval_s = 0.0
        self._next_poll = 0.0

    @property
    def mode(self) -> Mode:
        return self._config().agent.mode

    def may_change_knobs(self) -> bool:
        """Only after an approval, in approve mode; never in recommend mode."""
        return (
            self.mode is Mode.APPROVE
            and self.record is not None
            and self.record.state in (RecordState.APPROVED, RecordState.APPLIED)
        )

    # -- the loop's hooks -------------------------------------------------------------

    def resume(self) -> Outcome:
        """At start: carry on with the request ``approval.json`` holds, if any."""
        record = self.file.load()
        if record is None:
            return None
        if record.mode is not self.mode:
            logger.info(
                "ignoring the %s-mode record in %s (now in %s mode)",
                record.mode.value,
                self.file.path,
                self.mode.value,
            )
            return None
        self.record = record
        now = self.wall_clock()
        if record.state in WAITING:
            logger.info(
                "resuming: waiting for approval request %s (asked %s); changing nothing",
                record.approval_id if record.approval_id is not None else "(not sent yet)",
                record.requested_at.isoformat(timespec="seconds"),
            )
            self._schedule(now, first=True)
            return Phase.AWAITING_APPROVAL
        if record.state is RecordState.APPROVED:
            logger.info("resuming: approval request %s was approved", record.approval_id)
            return self._approved_start()
        if record.state is RecordState.APPLIED:
            self.record = None  # used up: the next start tuple needs a new approval
            return None
        if record.idle_until is not None and now < record.idle_until.timestamp():
            logger.info(
                "resuming: %s %s; changing nothing until %s",
                "request" if record.state in NOTHING_DONE else "recommendation",
                record.state.value,
                record.idle_until.isoformat(timespec="seconds"),
            )
            if record.state is RecordState.RECOMMENDED:
                return Phase.RECOMMENDED
            return Phase.IDLE
        return None

    def begin(
        self, host: HostFacts, profile: WorkloadProfile, current: Mapping[str, int]
    ) -> Outcome:
        """After profiling: ask for the recommendation, then post it for approval (approve
        mode) or report it (recommend mode). Nothing changes on the server."""
        config = self._config()
        answer = recommend(self.uploader.service, host=host, profile=profile, current=current)
        proposal = bounded_recommendation(config, answer, current=current, names=self.names)
        clipped = {
            n: (v, proposal.start_tuple.values[n])
            for n, v in answer.start_tuple.values.items()
            if n in proposal.start_tuple.values and proposal.start_tuple.values[n] != v
        }
        if clipped:
            logger.info("recommendation clipped into the agent's bounds: %s", clipped)
        now = self.wall_clock()
        key_prefix = "approval" if self.mode is Mode.APPROVE else "recommendation"
        request = ApprovalCreate(
            idempotency_key=f"{key_prefix}-{uuid.uuid4()}",
            profile=profile,
            current_tuple=_knob_tuple(host, current),
            recommendation=proposal,
            ttl_s=int(config.approval.wait_max_s) if self.mode is Mode.APPROVE else None,
        )
        if self.mode is Mode.RECOMMEND:
            self.record = GateRecord(
                mode=Mode.RECOMMEND,
                state=RecordState.RECOMMENDED,
                request=request,
                requested_at=stamp(now),
                idle_until=stamp(now + config.approval.retry_after_s),
            )
            self._save()
            logger.info(
                "recommend mode: would apply %s (now %s; %s%s); changing nothing",
                proposal.start_tuple.values,
                {n: current[n] for n in proposal.start_tuple.values if n in current},
                proposal.source.value,
                f", model {proposal.model_version}" if proposal.model_version else "",
            )
            return Phase.RECOMMENDED
        # The key is on disk before the first POST: after a crash the same request is found.
        self.record = GateRecord(
            mode=Mode.APPROVE,
            state=RecordState.UNSENT,
            request=request,
            requested_at=stamp(now),
            deadline=stamp(now + config.approval.wait_max_s),
        )
        self._save()
        logger.info(
            "asking for approval to apply %s (now %s; %s%s); changing nothing until an admin "
            "decides (at most %.0fs)",
            proposal.start_tuple.values,
            {n: current[n] for n in proposal.start_tuple.values if n in current},
            proposal.source.value,
            f", model {proposal.model_version}" if proposal.model_version else "",
            config.approval.wait_max_s,
        )
        self._schedule(now, first=True)
        return self._poll() or Phase.AWAITING_APPROVAL

    def step(self, phase: Phase, rates: Interval) -> Outcome:
        """One sample in a gated phase: poll the request, or see whether to ask again."""
        if phase is Phase.AWAITING_APPROVAL:
            return self._poll()
        record = self.record
        if record is None or record.idle_until is None:
            return Phase.PROFILING
        if self.wall_clock() >= record.idle_until.timestamp():
            logger.info("%s: profiling and asking again", record.state.value)
            return Phase.PROFILING
        if phase is Phase.RECOMMENDED and workload_changed(record.request.profile, rates):
            logger.info("workload changed (connections %d): recommending again", rates.connections)
            return Phase.PROFILING
        return None

    def applied(self, values: Mapping[str, int]) -> None:
        """The loop applied the approved start: the approval is used up."""
        if self.record is None:
            return
        self.record.state = RecordState.APPLIED
        self.record.applied_tuple = dict(values)
        self._save()
        logger.info("approved tuple applied: %s; climbing from there", dict(values))

    def status(self) -> dict[str, Any] | None:
        """What ``pooltune-agent status`` shows of the request (or recommendation)."""
        return record_summary(self.record) if self.record is not None else None

    # -- approve mode -----------------------------------------------------------------

    def _poll(self) -> Outcome:
        record = self.record
        if record is not None and record.state is RecordState.APPROVED:
            return self._approved_start()  # applying it failed (the server was away): again
        if record is None or record.state not in WAITING:
            return Phase.PROFILING
        now = self.wall_clock()
        deadline = record.deadline.timestamp() if record.deadline else float("inf")
        # A wall clock set back must not postpone the next poll beyond poll_max_s.
        self._next_poll = min(self._next_poll, now + self._config().approval.poll_max_s)
        if now < self._next_poll and now < deadline:
            return None
        service = self.uploader.service
        try:
            if service is None:
                raise ServiceError("no service configured")
            if record.approval_id is None:
                answer = service.request_approval(record.request, max_attempts=1)
            else:
                answer = service.get_approval(record.approval_id, max_attempts=1)
        except AuthenticationFailed as exc:
            self._failed(now, f"{exc} (enrol the agent, then `systemctl reload`)")
        except RequestRejected as exc:
            if exc.status_code == 404 and record.approval_id is not None:
                # The service lost it (a restored database): post it again, same key.
                logger.warning(
                    "approval request %s unknown to the service: asking again", record.approval_id
                )
                record.approval_id, record.state = None, RecordState.UNSENT
                self._save()
                self._schedule(now, first=True)
                return None
            return self._nothing_done(RecordState.REFUSED, f"the service refused it: {exc}")
        except ServiceError as exc:
            self._failed(now, str(exc))
        else:
            outcome = self._answered(answer, now)
            if outcome is not None:
                return outcome
        if now >= deadline:
            return self._nothing_done(
                RecordState.EXPIRED,
                f"no decision within the agent's wait_max_s "
                f"({self._config().approval.wait_max_s:.0f}s)",
            )
        return None

    def _answered(self, answer: ApprovalRead, now: float) -> Outcome:
        record = self.record
        assert record is not None
        first = record.approval_id is None
        if record.last_error:
            logger.info("approval request %d: the service answers again", answer.id)
        record.approval_id = answer.id
        record.expires_at = answer.expires_at
        record.last_error = ""
        if answer.state is ApprovalState.PENDING:
            if first or record.state is not RecordState.PENDING:
                record.state = RecordState.PENDING
                self._save()
                logger.info(
                    "approval request %d pending (the service expires it at %s)",
                    answer.id,
                    answer.expires_at.isoformat(timespec="seconds"),
                )
            self._schedule(now, factor=1.5)
            return None
        record.decided_at = answer.decided_at
        record.decided_by = answer.decided_by
        if answer.state is ApprovalState.APPROVED and answer.approved_tuple:
            record.state = RecordState.APPROVED
            record.approved_tuple = dict(answer.approved_tuple)
            record.edited = answer.edited
            record.reason = answer.reason
            self._save()
            logger.info(
                "approval request %d approved by %s%s: %s",
                answer.id,
                answer.decided_by or "an admin",
                " (edited)" if answer.edited else "",
                answer.approved_tuple,
            )
            return self._approved_start()
        final = _FROM_SERVICE.get(answer.state, RecordState.REFUSED)
        return self._nothing_done(final, answer.reason or f"{answer.state.value} on the service")

    def _approved_start(self) -> Outcome:
        """The approved tuple as the loop's start: the tuned knobs, inside the bounds (the
        log says what the bounds changed), its ranges widened to hold it."""
        record = self.record
        assert record is not None and record.approved_tuple is not None
        config = self._config()
        approved = {n: v for n, v in record.approved_tuple.items() if n in self.names}
        ignored = sorted(set(record.approved_tuple) - set(approved))
        if ignored:
            logger.warning("approved knobs this agent does not tune are ignored: %s", ignored)
        if not approved:
            return self._nothing_done(RecordState.REFUSED, "approved none of the tuned knobs")
        inside = config.clip(approved)
        record.clipped = {n: [v, inside[n]] for n, v in approved.items() if inside[n] != v}
        if record.clipped:
            logger.warning(
                "approved tuple %s clipped into the agent's bounds %s: applying %s",
                approved,
                {n: list(config.knob_bounds(n)) for n in record.clipped},
                inside,
            )
        self._save()
        proposal = record.request.recommendation
        ranges = {}
        for name, value in inside.items():
            known = proposal.ranges.get(name)
            low, high = (known.low, known.high) if known else (value, value)
            ranges[name] = KnobRange(low=min(low, value), high=max(high, value))
        try:
            answer = RecommendationResponse(
                start_tuple=KnobTuple(engine=proposal.start_tuple.engine, values=inside),
                ranges=ranges,
                source=proposal.source,
                model_version=proposal.model_version,
            )
        except ValidationError as exc:
            return self._nothing_done(RecordState.REFUSED, f"approved tuple unusable: {exc}")
        return ApprovedStart(profile=record.request.profile, answer=answer)

    def _nothing_done(self, state: RecordState, reason: str) -> Phase:
        record = self.record
        assert record is not None
        now = self.wall_clock()
        retry_s = self._config().approval.retry_after_s
        record.state = state
        record.reason = reason
        record.idle_until = stamp(now + retry_s)
        self._save()
        logger.warning(
            "approval request %s %s (%s): the knobs stay as they are; asking again after %s",
            record.approval_id if record.approval_id is not None else "(not sent)",
            state.value,
            reason,
            record.idle_until.isoformat(timespec="seconds"),
        )
        return Phase.IDLE

    def _failed(self, now: float, problem: str) -> None:
        """The service did not answer: keep waiting (a warning when the problem is new)."""
        assert self.record is not None
        level = logging.DEBUG if problem == self.record.last_error else logging.WARNING
        self.record.last_error = problem
        logger.log(
            level,
            "approval request %s: service not reachable (%s); still waiting, changing nothing",
            self.record.approval_id if self.record.approval_id is not None else "(not sent)",
            problem,
        )
        self._schedule(now, factor=2.0)

    def _schedule(self, now: float, *, factor: float = 1.0, first: bool = False) -> None:
        settings = self._config().approval
        if first:
            self._poll_interval_s = settings.poll_initial_s
            self._next_poll = now
            return
        self._next_poll = now + self._poll_interval_s
        self._poll_interval_s = min(settings.poll_max_s, self._poll_interval_s * factor)

    def _save(self) -> None:
        assert self.record is not None
        try:
            self.file.save(self.record)
        except OSError as exc:
            logger.error("cannot write %s: %s", self.file.path, exc)


def _knob_tuple(host: HostFacts, values: Mapping[str, int]) -> KnobTuple | None:
    with contextlib.suppress(ValidationError):
        return KnobTuple(engine=host.engine, values=dict(values))
    return None
