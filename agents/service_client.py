"""The service client: enrolment, recommendations, approval requests and report uploads.

The HTTP client is injected; requests and answers are the wire models of :mod:`agents.wire`.
Retryable failures (408, 425, 429, 5xx, network) are retried with capped backoff; reports go
through the spool first, so no crash or outage loses one. Details: docs/agent.md, "Reports,
the service client and the spool".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from agents.spool import Spool, SpoolError
from agents.wire import (
    ApprovalCreate,
    ApprovalRead,
    ClimbReport,
    HostFacts,
    RecommendationRequest,
    RecommendationResponse,
)

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 425, 429})

ModelT = TypeVar("ModelT", bound=BaseModel)


class ServiceError(Exception):
    """A request to the service (enrol, recommend, upload) failed."""


class ServiceUnavailable(ServiceError):
    """Network errors or retryable statuses until the attempts ran out: try again later."""


class RequestRejected(ServiceError):
    """The service refused the request for good (4xx); re-sending will not help."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(f"service answered {status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail


class AuthenticationFailed(RequestRejected):
    """401/403: the agent token is missing, wrong or revoked (re-enrol)."""


class BadAnswer(ServiceError):
    """The service answered 2xx with something that is not the expected payload."""


def _is_retryable(status_code: int) -> bool:
    return status_code in RETRYABLE_STATUS or status_code >= 500


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        parts = [str(body.get(key)) for key in ("error", "detail") if body.get(key)]
        if parts:
            return ": ".join(parts)[:500]
    return str(body)[:500]


@dataclass(frozen=True, slots=True)
class Credentials:
    agent_id: int
    host_id: int
    agent_token: str


class ServiceClient:
    """Typed calls to the pooltune service with retry and capped backoff."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        token: str | None = None,
        max_attempts: int = 4,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        stop: threading.Event | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.client = client
        self.token = token
        self.max_attempts = max_attempts
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self._stop = stop
        self._sleep = sleep

    def backoff(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        delay = self.backoff_initial_s * 2.0 ** (attempt - 1)
        if retry_after is not None:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass  # an HTTP date: keep our own backoff
        return min(self.backoff_max_s, delay)

    def _wait(self, seconds: float) -> bool:
        """Wait; False when the agent is stopping (give up at once)."""
        if self._sleep is not None:
            self._sleep(seconds)
            return not (self._stop is not None and self._stop.is_set())
        if self._stop is not None:
            return not self._stop.wait(seconds)
        time.sleep(seconds)
        return True

    def _post(
        self,
        path: str,
        payload: BaseModel | dict[str, Any],
        *,
        authenticated: bool = True,
        max_attempts: int | None = None,
    ) -> httpx.Response:
        return self._send(
            "POST", path, payload, authenticated=authenticated, max_attempts=max_attempts
        )

    def _send(
        self,
        method: str,
        path: str,
        payload: BaseModel | dict[str, Any] | None,
        *,
        authenticated: bool = True,
        max_attempts: int | None = None,
    ) -> httpx.Response:
        """One request with retries: the 2xx response, else a :class:`ServiceError`."""
        attempts = max_attempts or self.max_attempts
        headers = {}
        if authenticated:
            if not self.token:
                raise AuthenticationFailed(401, "no agent token: run `pooltune-agent enroll`")
            headers["Authorization"] = f"Bearer {self.token}"
        body: dict[str, Any] | None = None
        if isinstance(payload, BaseModel):
            body = payload.model_dump(mode="json")
        elif payload is not None:
            body = dict(payload)
        last_problem = ""
        for attempt in range(1, attempts + 1):
            retry_after: str | None = None
            try:
                response = self.client.request(method, path, json=body, headers=headers)
            except httpx.TransportError as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.is_success:
                    return response
                if not _is_retryable(response.status_code):
                    detail = _detail(response)
                    if response.status_code in (401, 403):
                        raise AuthenticationFailed(response.status_code, detail)
                    raise RequestRejected(response.status_code, detail)
                last_problem = f"HTTP {response.status_code}"
                retry_after = response.headers.get("Retry-After")
            if attempt == attempts:
                break
            delay = self.backoff(attempt, retry_after)
            logger.info(
                "%s %s failed (%s), attempt %d/%d; retrying in %.1fs",
                method,
                path,
                last_problem,
                attempt,
                attempts,
                delay,
            )
            if not self._wait(delay):
                break
        raise ServiceUnavailable(f"{method} {path}: {last_problem} after {attempts} attempt(s)")

    @staticmethod
    def _parse(response: httpx.Response, model: type[ModelT]) -> ModelT:
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise BadAnswer(f"unexpected answer from the service: {exc}") from exc

    def enroll(self, enrollment_token: str, host: HostFacts) -> Credentials:
        response = self._post(
            "/v1/agents/enroll",
            {"enrollment_token": enrollment_token, "host": host.model_dump(mode="json")},
            authenticated=False,
        )
        try:
            body = response.json()
            return Credentials(
                agent_id=int(body["agent_id"]),
                host_id=int(body["host_id"]),
                agent_token=str(body["agent_token"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise BadAnswer(f"unexpected enrolment answer: {exc}") from exc

    def recommend(
        self, request: RecommendationRequest, *, max_attempts: int | None = None
    ) -> RecommendationResponse:
        response = self._post("/v1/recommendations", request, max_attempts=max_attempts)
        return self._parse(response, RecommendationResponse)

    def request_approval(
        self, request: ApprovalCreate, *, max_attempts: int | None = None
    ) -> ApprovalRead:
        """Ask for an approval (idempotent on the request's key: a retry answers the same
        stored request)."""
        response = self._post("/v1/approvals", request, max_attempts=max_attempts)
        return self._parse(response, ApprovalRead)

    def get_approval(self, approval_id: int, *, max_attempts: int | None = None) -> ApprovalRead:
        """The approval request ``approval_id`` as the service has it now."""
        response = self._send(
            "GET", f"/v1/approvals/{approval_id}", None, max_attempts=max_attempts
        )
        return self._parse(response, ApprovalRead)

    def upload(self, report: ClimbReport, *, max_attempts: int | None = None) -> bool:
        """Send one report; True if the service stored it now, False if it already had it."""
        response = self._post("/v1/reports", report, max_attempts=max_attempts)
        return response.status_code == 201


@dataclass(frozen=True, slots=True)
class DrainResult:
    delivered: int
    duplicates: int
    rejected: int
    remaining: int
    error: str = ""

    @property
    def delivered_all(self) -> bool:
        """Something was acknowledged and nothing is left in the spool."""
        return bool(self.delivered or self.duplicates) and not self.remaining


class Uploader:
    """Reports through the spool to the service."""

    def __init__(self, service: ServiceClient | None, spool: Spool) -> None:
        self.service = service
        self.spool = spool
        self.delivered = 0
        self.failures = 0
        #: When the last delivery was tried (the loop's clock).
        self.last_drain = float("-inf")

    def submit(self, report: ClimbReport) -> DrainResult:
        """Spool ``report``, then try to deliver everything pending."""
        try:
            self.spool.put(report)
        except (SpoolError, OSError) as exc:
            logger.error("cannot spool report %s: %s", report.idempotency_key, exc)
            if self.service is not None:
                # Last resort: send it directly so an unwritable disk loses nothing.
                try:
                    self.service.upload(report)
                except ServiceError as upload_exc:
                    logger.error("report %s lost: %s", report.idempotency_key, upload_exc)
        return self.drain()

    def drain_when_due(self, now: float, *, every_s: float) -> DrainResult | None:
        """:meth:`drain` (one attempt per report) when ``every_s`` passed since the last
        try and something waits; None otherwise."""
        if self.service is None or not len(self.spool) or now - self.last_drain < every_s:
            return None
        self.last_drain = now
        result = self.drain(max_attempts=1)
        if result.delivered or result.duplicates:
            logger.info(
                "spool drained: %d delivered, %d remaining",
                result.delivered + result.duplicates,
                result.remaining,
            )
        return result

    def drain(self, *, max_attempts: int | None = None) -> DrainResult:
        """Send spooled reports oldest first; stop at the first transient failure."""
        delivered = duplicates = rejected = 0
        if self.service is None:
            return DrainResult(0, 0, 0, len(self.spool), "no service configured")
        for item in self.spool.pending():
            try:
                created = self.service.upload(item.report, max_attempts=max_attempts)
            except AuthenticationFailed as exc:
                self.failures += 1
                logger.error("report upload refused: %s (re-enrol the agent)", exc)
                return DrainResult(delivered, duplicates, rejected, len(self.spool), str(exc))
            except RequestRejected as exc:
                rejected += 1
                self.spool.reject_item(item, str(exc))
                continue
            except ServiceError as exc:
                self.failures += 1
                self.spool.record_attempt(item)
                logger.warning(
                    "service unreachable, %d report(s) stay spooled: %s", len(self.spool), exc
                )
                return DrainResult(delivered, duplicates, rejected, len(self.spool), str(exc))
            self.spool.remove(item)
            if created:
                delivered += 1
            else:
                duplicates += 1
            self.delivered += 1
            logger.info(
                "report %s delivered (%s)",
                item.report.idempotency_key,
                "stored" if created else "already stored",
            )
        return DrainResult(delivered, duplicates, rejected, len(self.spool))


def make_http_client(base_url: str, *, timeout_s: float) -> httpx.Client:
    return httpx.Client(
        base_url=base_url,
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0)),
        headers={"User-Agent": "pooltune-agent"},
    )


def enroll_agent(
    url: str, enrollment_token: str, host: HostFacts, *, timeout_s: float, max_attempts: int
) -> Credentials:
    """Exchange ``enrollment_token`` for an agent token at the service at ``url``."""
    with make_http_client(url, timeout_s=timeout_s) as client:
        return ServiceClient(client, max_attempts=max_attempts).enroll(enrollment_token, host)
