"""Races on real PostgreSQL: requests run concurrently in the app's worker threads, each on
its own pooled connection, with real commits (``live_client``)."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta
from typing import Any

import pytest
from httpx import AsyncClient

from tests.service.factories import STARTED, auth, climb_report, host_facts, recommendation_request

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]

TRIALS = 20
WRITERS = 20
ROTATIONS = 10


async def _enrol(client: AsyncClient, admin: dict[str, str], **facts: Any) -> dict[str, Any]:
    created = await client.post("/v1/enrollment-tokens", json={}, headers=admin)
    host = host_facts(**facts)
    enrolled = await client.post(
        "/v1/agents/enroll", json={"enrollment_token": created.json()["token"], "host": host}
    )
    assert enrolled.status_code == 201, enrolled.text
    body: dict[str, Any] = enrolled.json()
    body["host"] = host
    return body


async def test_the_newest_report_wins_whatever_the_arrival_order(
    live_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    rng = random.Random(17)
    outcomes = []
    for trial in range(TRIALS):
        agent = await _enrol(live_client, admin_headers)
        reports = [
            climb_report(
                agent["host"],
                optimal_tuple={"engine": "mariadb", "values": {"thread_pool_size": 1 + i}},
                finished_at=(STARTED + timedelta(seconds=60 + i)).isoformat(),
                trace_samples=2,
            )
            for i in range(WRITERS)
        ]
        # The newest report must not simply arrive last.
        order = list(range(WRITERS))
        rng.shuffle(order)
        order.remove(WRITERS - 1)
        order.insert(rng.randrange(WRITERS // 2), WRITERS - 1)
        headers = auth(agent["agent_token"])
        responses = await asyncio.gather(
            *(live_client.post("/v1/reports", json=reports[i], headers=headers) for i in order)
        )
        assert [r.status_code for r in responses] == [201] * WRITERS, trial
        host = await live_client.get(f"/v1/hosts/{agent['host_id']}", headers=admin_headers)
        state = host.json()
        newest = responses[order.index(WRITERS - 1)].json()
        outcomes.append(
            state["current_tuple"] == {"thread_pool_size": WRITERS}
            and state["last_report_id"] == newest["id"]
            and state["last_report_at"] == newest["finished_at"]
        )
    assert outcomes == [True] * TRIALS, f"{outcomes.count(True)} of {TRIALS} trials"


async def test_an_older_report_never_rolls_host_facts_back(
    live_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    agent = await _enrol(live_client, admin_headers, cpu_count=8)
    headers = auth(agent["agent_token"])
    newer = climb_report(agent["host"] | {"cpu_count": 16})
    older = climb_report(
        agent["host"] | {"cpu_count": 4},
        finished_at=(STARTED + timedelta(seconds=1)).isoformat(),
        trace_samples=0,
        samples_to_converge=0,
    )
    assert (await live_client.post("/v1/reports", json=newer, headers=headers)).status_code == 201
    assert (await live_client.post("/v1/reports", json=older, headers=headers)).status_code == 201
    host = (await live_client.get(f"/v1/hosts/{agent['host_id']}", headers=admin_headers)).json()
    assert host["cpu_count"] == 16


async def _works(client: AsyncClient, token: str, host: dict[str, Any]) -> bool:
    response = await client.post(
        "/v1/recommendations", json=recommendation_request(host), headers=auth(token)
    )
    assert response.status_code in (200, 401), response.text
    return response.status_code == 200


async def test_concurrent_rotations_leave_exactly_one_new_token(
    live_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    agent = await _enrol(live_client, admin_headers)
    old = agent["agent_token"]
    rotations = await asyncio.gather(
        *(
            live_client.post(f"/v1/agents/{agent['agent_id']}/rotate", headers=auth(old))
            for _ in range(ROTATIONS)
        )
    )
    assert [r.status_code for r in rotations] == [200] * ROTATIONS
    new_tokens = [r.json()["agent_token"] for r in rotations]
    assert len(set(new_tokens)) == ROTATIONS
    # The old token is still good while no new one has been used.
    assert await _works(live_client, old, agent["host"])
    working = [token for token in new_tokens if await _works(live_client, token, agent["host"])]
    assert len(working) == 1
    # Once the new token is used, the old one stops.
    assert not await _works(live_client, old, agent["host"])
    assert await _works(live_client, working[0], agent["host"])


async def test_a_lost_rotation_answer_is_recovered_by_retrying(
    live_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    agent = await _enrol(live_client, admin_headers)
    old = agent["agent_token"]
    path = f"/v1/agents/{agent['agent_id']}/rotate"
    lost = await live_client.post(path, headers=auth(old))
    assert lost.status_code == 200
    retried = await live_client.post(path, headers=auth(old))
    assert retried.status_code == 200
    assert await _works(live_client, retried.json()["agent_token"], agent["host"])
    assert not await _works(live_client, lost.json()["agent_token"], agent["host"])
    assert not await _works(live_client, old, agent["host"])


async def test_concurrent_enrolments_of_one_new_host_enrol_it_once(
    live_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    created = await live_client.post(
        "/v1/enrollment-tokens", json={"max_uses": 10}, headers=admin_headers
    )
    host = host_facts()
    responses = await asyncio.gather(
        *(
            live_client.post(
                "/v1/agents/enroll",
                json={"enrollment_token": created.json()["token"], "host": host},
            )
            for _ in range(10)
        )
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] + [409] * 9, [r.text for r in responses]
