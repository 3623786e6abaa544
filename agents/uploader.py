"""Talking to the service: enrolment, recommendations and report uploads.

The HTTP client is injected (timeouts set by its owner; tests pass an
``httpx.MockTransport``). Requests and answers are the wire models of
:mod:`agents.wire`. 408, 425, 429, 5xx and network errors are retried with capped
exponential backoff (``Retry-After`` honoured up to the cap); other 4xx are final.

Reports go through the spool first (:meth:`Uploader.submit`): the report is on disk
before the first attempt and leaves the disk only when the service acknowledged it, so
no crash or outage loses it, and the idempotency key makes re-sends harmless.
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
    ClimbReport,
    HostFacts,
    RecommendationRequest,
    RecommendationResponse,
)

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 425, 429})

ModelT = TypeVar("ModelT", bound=BaseModel)


class UploadError(Exception):
    """A request to the service failed."""


class ServiceUnavailable(UploadError):
    """Network errors or retryable statuses until the attempts ran out: try again later."""


class RequestRejected(UploadError):
    """The service refused the request for good (4xx); re-sending will not help."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(f"service answered {status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail


class AuthenticationFailed(RequestRejected):
    """401/403: the agent token is missing, wrong or revoked (re-enrol)."""


class BadAnswer(UploadError):
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
        attempts = max_attempts or self.max_attempts
        headers = {}
        if authenticated:
            if not self.token:
                raise AuthenticationFailed(401, "no agent token: run `pooltune-agent enroll`")
            headers["Authorization"] = f"Bearer {self.token}"
        body = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else dict(payload)
        last_problem = ""
        for attempt in range(1, attempts + 1):
            retry_after: str | None = None
            try:
                response = self.client.post(path, json=body, headers=headers)
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
                "POST %s failed (%s), attempt %d/%d; retrying in %.1fs",
                path,
                last_problem,
                attempt,
                attempts,
                delay,
            )
            if not self._wait(delay):
                break
        raise ServiceUnavailable(f"POST {path}: {last_problem} after {attempts} attempt(s)")

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


class Uploader:
    """Reports through the spool to the service."""

    def __init__(self, service: ServiceClient | None, spool: Spool) -> None:
        self.service = service
        self.spool = spool
        self.delivered = 0
        self.failures = 0

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
                except UploadError as upload_exc:
                    logger.error("report %s lost: %s", report.idempotency_key, upload_exc)
        return self.drain()

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
                self.spool.reject(item.path, str(exc))
                continue
            except UploadError as exc:
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
