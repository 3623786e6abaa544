"""The service client: retry with capped backoff on 408/429/5xx and network errors;
reports through the spool."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from agents.service_client import (
    AuthenticationFailed,
    RequestRejected,
    ServiceClient,
    ServiceUnavailable,
    Uploader,
)
from agents.spool import Spool
from agents.wire import RecommendationRequest, RecommendationResponse
from tests.agents.reports import HOST, PROFILE, make_report


class Peer:
    """A scripted fake service: answers from a list, records what it got."""

    def __init__(self, *answers: int | Exception | tuple[int, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if self.answers else 201
        if isinstance(answer, Exception):
            raise answer
        headers: dict[str, str] = {}
        if isinstance(answer, tuple):
            answer, headers = answer
        body = {"error": "nope", "detail": "bad payload"} if answer >= 400 else {"id": 1}
        return httpx.Response(answer, json=body, headers=headers)


def client_for(peer: Peer, *, max_attempts: int = 4) -> tuple[ServiceClient, list[float]]:
    delays: list[float] = []
    client = ServiceClient(
        httpx.Client(transport=httpx.MockTransport(peer), base_url="http://service"),
        token="pta_test",
        max_attempts=max_attempts,
        backoff_initial_s=0.5,
        backoff_max_s=3.0,
        sleep=delays.append,
    )
    return client, delays


def test_retryable_statuses_are_retried_with_growing_capped_backoff() -> None:
    peer = Peer(503, 502, 408, 201)
    client, delays = client_for(peer, max_attempts=5)
    assert client.upload(make_report()) is True
    assert len(peer.requests) == 4
    assert delays == [0.5, 1.0, 2.0]
    request = peer.requests[0]
    assert request.url.path == "/v1/reports"
    assert request.headers["Authorization"] == "Bearer pta_test"


def test_backoff_is_capped_and_honours_retry_after() -> None:
    client, _ = client_for(Peer())
    assert [client.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert client.backoff(1, "2") == 2.0
    assert client.backoff(1, "120") == 3.0  # capped
    assert client.backoff(2, "Wed, 21 Oct 2015 07:28:00 GMT") == 1.0


def test_429_uses_retry_after() -> None:
    peer = Peer((429, {"Retry-After": "2"}), 201)
    client, delays = client_for(peer)
    client.upload(make_report())
    assert delays == [2.0]


def test_network_errors_are_retried_then_reported_as_unavailable() -> None:
    peer = Peer(*(httpx.ConnectError("refused") for _ in range(3)))
    client, delays = client_for(peer, max_attempts=3)
    with pytest.raises(ServiceUnavailable, match="ConnectError"):
        client.upload(make_report())
    assert len(delays) == 2


def test_client_errors_are_final_and_not_retried() -> None:
    peer = Peer(422)
    client, delays = client_for(peer)
    with pytest.raises(RequestRejected, match="422: nope: bad payload"):
        client.upload(make_report())
    assert delays == []
    with pytest.raises(AuthenticationFailed):
        client_for(Peer(401))[0].upload(make_report())


def test_service_down_keeps_the_report_spooled_then_drain_delivers_it_once(
    tmp_path: Path,
) -> None:
    spool = Spool(tmp_path)
    peer = Peer(*(httpx.ConnectError("refused") for _ in range(4)))
    client, _ = client_for(peer)
    uploader = Uploader(client, spool)
    report = make_report()
    result = uploader.submit(report)
    assert result.remaining == 1 and result.error
    (item,) = spool.pending()
    assert item.attempts == 1
    # The service is back: the next drain delivers and empties the spool.
    result = uploader.drain()
    assert (result.delivered, result.remaining) == (1, 0)
    assert len(spool) == 0
    sent = json.loads(peer.requests[-1].content)
    assert sent["idempotency_key"] == report.idempotency_key
    assert uploader.drain().delivered == 0  # nothing is sent twice


def test_duplicate_answer_counts_as_delivered(tmp_path: Path) -> None:
    uploader = Uploader(client_for(Peer(200))[0], Spool(tmp_path))
    result = uploader.submit(make_report())
    assert (result.delivered, result.duplicates, result.remaining) == (0, 1, 0)


def test_rejected_reports_leave_the_queue_and_the_rest_still_go(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.put(make_report())
    spool.put(make_report())
    uploader = Uploader(client_for(Peer(422, 201))[0], spool)
    result = uploader.drain()
    assert (result.rejected, result.delivered, result.remaining) == (1, 1, 0)
    assert len(list(spool.rejected_dir.iterdir())) == 1


def test_auth_failure_stops_the_drain_and_keeps_everything(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.put(make_report())
    spool.put(make_report())
    result = Uploader(client_for(Peer(401))[0], spool).drain()
    assert result.remaining == 2
    assert "401" in result.error


def test_without_a_service_reports_stay_spooled(tmp_path: Path) -> None:
    uploader = Uploader(None, Spool(tmp_path))
    result = uploader.submit(make_report())
    assert result.remaining == 1


def test_recommendation_answer_is_parsed_into_the_wire_model() -> None:
    answer = {
        "schema_version": 1,
        "start_tuple": {"engine": "mariadb", "values": {"thread_pool_size": 6}},
        "ranges": {"thread_pool_size": {"low": 3, "high": 12}},
        "source": "model",
        "model_version": "pool:3",
    }

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/recommendations"
        RecommendationRequest.model_validate_json(request.content)
        return httpx.Response(200, json=answer)

    client = ServiceClient(
        httpx.Client(transport=httpx.MockTransport(handler), base_url="http://s"), token="t"
    )
    response = client.recommend(RecommendationRequest(host=HOST, profile=PROFILE))
    assert isinstance(response, RecommendationResponse)
    assert response.start_tuple["thread_pool_size"] == 6
    assert response.model_version == "pool:3"
