"""The console over HTTP on PostgreSQL: sign-in, cookies, CSRF, and what the pages list."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from pydantic import SecretStr
from sqlalchemy.orm import Session

from service.approvals import service as approval_service
from service.approvals.schemas import ApprovalCreate
from service.db import get_db_session
from tests.console.payloads import approval_request
from tests.console.signin import csrf_of, sign_in
from tests.fixtures.postgres import TEST_ADMIN_TOKEN
from tests.service.factories import create_agent, create_model_version, create_report

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def _bound_app(
    make_app: Callable[..., FastAPI], db_session: Session, **overrides: object
) -> FastAPI:
    application = make_app(**overrides)

    def override() -> Iterator[Session]:
        yield db_session
        db_session.flush()

    application.dependency_overrides[get_db_session] = override
    return application


async def test_the_root_sends_a_stranger_to_the_login_form(api_client: AsyncClient) -> None:
    response = await api_client.get("/")
    assert response.status_code == 303
    assert response.headers["location"] == "/console/login"
    page = await api_client.get("/console/fleet")
    assert page.status_code == 303
    assert page.headers["location"] == "/console/login?next=%2Fconsole%2Ffleet"


async def test_a_wrong_admin_token_is_refused_and_sets_no_session(
    api_client: AsyncClient,
) -> None:
    response = await sign_in(api_client, "not-the-admin-token")
    assert response.status_code == 401
    assert "not the admin token" in response.text
    assert "pooltune_session" not in api_client.cookies
    assert (await api_client.get("/console/fleet")).status_code == 303


async def test_a_login_without_its_csrf_nonce_is_refused(api_client: AsyncClient) -> None:
    response = await api_client.post(
        "/console/login", data={"token": TEST_ADMIN_TOKEN, "nonce": "forged"}
    )
    assert response.status_code == 403
    assert "pooltune_session" not in api_client.cookies


async def test_signing_in_sets_a_strict_httponly_cookie_and_keeps_the_token_out_of_logs(
    api_client: AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        response = await sign_in(api_client, TEST_ADMIN_TOKEN, next_path="/console/models")
    assert response.status_code == 303
    assert response.headers["location"] == "/console/models"
    cookie = next(
        value for value in response.headers.get_list("set-cookie") if "pooltune_session=" in value
    )
    flags = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    assert "secure" not in flags  # plain HTTP here
    assert TEST_ADMIN_TOKEN not in cookie
    assert TEST_ADMIN_TOKEN not in response.headers["location"]
    logged = " ".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert "console sign-in" in logged
    assert TEST_ADMIN_TOKEN not in logged
    assert (await api_client.get("/console/fleet")).status_code == 200


async def test_the_cookie_is_secure_behind_tls(
    make_app: Callable[..., FastAPI], db_session: Session
) -> None:
    app = _bound_app(make_app, db_session)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="https://console") as client:
        response = await sign_in(client, TEST_ADMIN_TOKEN)
    cookie = next(
        value for value in response.headers.get_list("set-cookie") if "pooltune_session=" in value
    )
    assert "secure" in {part.strip().lower() for part in cookie.split(";")}


async def test_a_changed_admin_token_ends_every_session(
    make_app: Callable[..., FastAPI], db_session: Session
) -> None:
    before = _bound_app(make_app, db_session)
    after = _bound_app(
        make_app, db_session, admin_token=SecretStr("a-brand-new-admin-token-0123456789")
    )
    async with AsyncClient(transport=ASGITransport(app=before), base_url="http://c") as client:
        await sign_in(client, TEST_ADMIN_TOKEN)
        assert (await client.get("/console/fleet")).status_code == 200
        cookies = dict(client.cookies)
    async with AsyncClient(
        transport=ASGITransport(app=after), base_url="http://c", cookies=cookies
    ) as client:
        response = await client.get("/console/fleet")
    assert response.status_code == 303
    assert response.headers["location"].startswith("/console/login")


async def test_signing_out_revokes_the_session_even_if_the_cookie_is_replayed(
    api_client: AsyncClient,
) -> None:
    await sign_in(api_client, TEST_ADMIN_TOKEN)
    page = await api_client.get("/console/fleet")
    stolen = dict(api_client.cookies)
    out = await api_client.post("/console/logout", data={"csrf_token": csrf_of(page.text)})
    assert out.status_code == 303
    assert out.headers["location"] == "/console/login"
    api_client.cookies.clear()
    api_client.cookies.update(stolen)
    assert (await api_client.get("/console/fleet")).status_code == 303


async def test_forms_without_the_right_csrf_token_are_refused(
    api_client: AsyncClient, db_session: Session
) -> None:
    version = create_model_version(db_session, name="csrf")
    await sign_in(api_client, TEST_ADMIN_TOKEN)
    url = f"/console/models/{version.id}/promote"
    missing = await api_client.post(url, data={"confirm": "yes"})
    wrong = await api_client.post(url, data={"confirm": "yes", "csrf_token": "x" * 43})
    assert (missing.status_code, wrong.status_code) == (403, 403)
    db_session.refresh(version)
    assert version.is_promoted is False
    page = await api_client.get(url)
    done = await api_client.post(url, data={"confirm": "yes", "csrf_token": csrf_of(page.text)})
    assert done.status_code == 303
    db_session.refresh(version)
    assert version.is_promoted is True


async def test_the_console_approves_with_an_edited_tuple(
    api_client: AsyncClient, db_session: Session
) -> None:
    agent, _, _ = create_agent(db_session)
    approval = approval_service.create_approval(
        db_session,
        ApprovalCreate.model_validate(approval_request()),
        agent_id=agent.id,
        host_id=agent.host_id,
        max_ttl_s=3600,
    ).approval
    await sign_in(api_client, TEST_ADMIN_TOKEN)
    page = await api_client.get("/console/approvals")
    assert f'data-approval-id="{approval.id}"' in page.text
    form = {
        "csrf_token": csrf_of(page.text),
        "knob:thread_pool_size": "300",
        "knob:thread_pool_oversubscribe": "3",
    }
    outside = await api_client.post(f"/console/approvals/{approval.id}/approve", data=form)
    assert outside.status_code == 422
    assert "thread_pool_size=300" in outside.text
    form["knob:thread_pool_size"] = "9"
    done = await api_client.post(f"/console/approvals/{approval.id}/approve", data=form)
    assert done.status_code == 303
    db_session.refresh(approval)
    assert (approval.state, approval.approved_tuple, approval.edited) == (
        "approved",
        {"thread_pool_size": 9, "thread_pool_oversubscribe": 3},
        True,
    )
    assert approval.decided_by == "console"


async def test_the_fleet_sorts_filters_and_paginates(
    api_client: AsyncClient, db_session: Session
) -> None:
    gains = [1.05, 1.40, 1.20]
    names = []
    for index, gain in enumerate(gains):
        agent, _, facts = create_agent(db_session, hostname=f"fleet-{index}.sort.test")
        names.append(facts.hostname)
        create_report(
            db_session,
            agent,
            facts,
            throughput_start=10_000.0,
            throughput_optimal=10_000.0 * gain,
            finished_at=(
                datetime(2026, 1, 5, 11, tzinfo=UTC) + timedelta(minutes=index)
            ).isoformat(),
        )
    await sign_in(api_client, TEST_ADMIN_TOKEN)
    page = await api_client.get("/console/fleet?q=sort.test&sort=gain&desc=true")
    positions = [page.text.index(name) for name in (names[1], names[2], names[0])]
    assert positions == sorted(positions)
    assert "+40.0 %" in page.text
    assert "3 hosts match" in page.text
    one = await api_client.get("/console/fleet?q=fleet-2.sort")
    assert names[2] in one.text and names[0] not in one.text
    assert "1 host match" in one.text
    datasets = await api_client.get("/console/fleet?q=sort.test&kind=dataset")
    assert "0 hosts match" in datasets.text


async def test_unknown_pages_render_the_console_error_page(api_client: AsyncClient) -> None:
    await sign_in(api_client, TEST_ADMIN_TOKEN)
    missing = await api_client.get("/console/hosts/999999")
    assert missing.status_code == 404
    assert "no host with id 999999" in missing.text
    assert missing.headers["content-security-policy"].startswith("default-src 'self'")
