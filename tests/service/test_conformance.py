"""HTTP conformance: Allow on 405, bodies that are not UTF-8 JSON, duplicate keys, the
documented error statuses; and the last-resort handler for values the database refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from sqlalchemy import insert

from service.db import SessionDep, utcnow
from service.hosts.models import Host

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/reports", "GET, POST"),
        ("DELETE", "/healthz", "GET"),
        ("GET", "/v1/agents/enroll", "POST"),
        ("PATCH", "/v1/models/3", "GET"),
    ],
)
async def test_405_names_every_allowed_method(
    api_client: AsyncClient, method: str, path: str, allowed: str
) -> None:
    response = await api_client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json()["error"] == "method_not_allowed"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"description": "caf\xe9"}', "not UTF-8"),
        ('{"description": "x"}'.encode("utf-16"), "not UTF-8"),
        (b'{"description": ', "not JSON"),
        (b'{"max_uses": ' + b"1" * 5000 + b"}", "not readable JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not readable JSON"),
    ],
    ids=["latin-1", "utf-16", "truncated", "5000-digit-integer", "deep-nesting"],
)
async def test_a_body_that_is_not_utf8_json_is_a_documented_422(
    api_client: AsyncClient, admin_headers: dict[str, str], body: bytes, expected: str
) -> None:
    response = await api_client.post(
        "/v1/enrollment-tokens", content=body, headers={**admin_headers, **JSON}
    )
    assert response.status_code == 422, response.text
    error = response.json()["detail"][0]
    assert error["loc"][0] == "body"
    assert error["type"] == "json_invalid"
    assert expected in error["msg"]
    openapi = (await api_client.get("/openapi.json")).json()
    assert "422" in openapi["paths"]["/v1/enrollment-tokens"]["post"]["responses"]


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ('{"ttl_hours": 1, "ttl_hours": 2}', ["body", "ttl_hours"]),
        (
            '{"enrollment_token": "x", "host": {"hostname": "a", "hostname": "b"}}',
            ["body", "host", "hostname"],
        ),
        ('{"a": [{"t_s": 1}, {"t_s": 1, "t_s": 2}]}', ["body", "a", 1, "t_s"]),
    ],
)
async def test_a_key_given_twice_is_refused_with_its_path(
    api_client: AsyncClient, admin_headers: dict[str, str], body: str, loc: list[Any]
) -> None:
    response = await api_client.post(
        "/v1/enrollment-tokens", content=body, headers={**admin_headers, **JSON}
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == [
        {
            "loc": loc,
            "msg": f"the key {loc[-1]!r} is given twice in one object",
            "type": "duplicate_key",
        }
    ]


async def test_equal_values_under_different_keys_are_fine(
    api_client: AsyncClient, admin_headers: dict[str, str]
) -> None:
    body = json.dumps({"description": "x", "max_uses": 1, "ttl_hours": 1})
    response = await api_client.post(
        "/v1/enrollment-tokens", content=body, headers={**admin_headers, **JSON}
    )
    assert response.status_code == 201


async def test_every_database_route_documents_503_with_retry_after(
    api_client: AsyncClient,
) -> None:
    openapi = (await api_client.get("/openapi.json")).json()
    checked = 0
    for path, operations in openapi["paths"].items():
        if not path.startswith("/v1") and path != "/readyz":
            continue
        for operation in operations.values():
            response = operation["responses"]["503"]
            assert "Retry-After" in response["headers"], path
            checked += 1
    assert checked >= 15


@pytest.fixture
def app_with_bad_writes(live_app: FastAPI) -> FastAPI:
    """The live app plus a route that writes, unvalidated, what the database refuses."""

    def bad_write(session: SessionDep, kind: str) -> dict[str, str]:
        now = utcnow()
        row: dict[str, Any] = {
            "hostname": "h.example.net",
            "engine": "mariadb",
            "engine_version": "10.11",
            "cpu_count": 4,
            "memory_bytes": 1,
            "created_at": now,
            "updated_at": now,
        }
        row |= {
            "long": {"hostname": "h" * 254},
            "nul": {"engine_version": "10\x00"},
            "int": {"cpu_count": 2**31},
            "duplicate": {},
        }[kind]
        session.execute(insert(Host).values(**row))
        if kind == "duplicate":
            session.execute(insert(Host).values(**row))
        return {}

    live_app.add_api_route("/test/bad-write/{kind}", bad_write, methods=["POST"])
    return live_app


@pytest.mark.parametrize(
    ("kind", "status", "loc"),
    [
        ("long", 422, ["hosts", "hostname"]),
        ("nul", 422, ["hosts", "engine_version"]),
        ("int", 422, ["hosts", "cpu_count"]),
        ("duplicate", 409, ["hosts", "hostname", "engine"]),
    ],
)
async def test_a_value_the_database_refuses_is_a_4xx_naming_the_column(
    app_with_bad_writes: FastAPI, kind: str, status: int, loc: list[str]
) -> None:
    transport = ASGITransport(app=app_with_bad_writes)
    async with AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.post(f"/test/bad-write/{kind}")
        assert response.status_code == status, response.text
        assert response.json()["detail"][0]["loc"] == loc
        # The app goes on serving on the same connection pool.
        assert (await client.get("/readyz")).status_code == 200
