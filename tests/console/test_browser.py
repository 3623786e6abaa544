"""The console in a real browser: Debian's Chromium, headless, against a live service on
PostgreSQL seeded through the API. Screenshots of each page go to the artifacts folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import BrowserContext, ConsoleMessage, Page

from tests.console.live import ADMIN_TOKEN, TRACE_SAMPLES, LiveServer, Seeded

pytestmark = [pytest.mark.postgres, pytest.mark.browser]


@pytest.fixture
def page(chromium: BrowserContext) -> Iterator[Page]:
    """A fresh tab with no session; fails the test on any script error or CSP violation
    (the 401 of a refused sign-in is the page's answer, not a fault)."""
    chromium.clear_cookies()
    tab = chromium.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and "status of 401" not in message.text:
            problems.append(f"console {message.type}: {message.text}")

    tab.on("console", on_console)
    yield tab
    tab.close()
    assert problems == []


def sign_in(page: Page, base_url: str, token: str = ADMIN_TOKEN) -> None:
    page.goto(f"{base_url}/")
    assert page.url.endswith("/console/login")
    page.fill("#token", token)
    page.click("#sign-in")


def shot(page: Page, artifacts: Path, name: str) -> None:
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")


def test_a_wrong_token_is_refused_and_the_right_one_shows_the_fleet(
    page: Page, live_console: LiveServer, seeded: Seeded, artifacts: Path
) -> None:
    sign_in(page, live_console.base_url, token="wrong-token-wrong-token")
    assert page.locator("#login-error").inner_text() == "That is not the admin token."
    assert page.context.cookies() == [] or all(
        cookie["name"] != "pooltune_session" for cookie in page.context.cookies()
    )
    shot(page, artifacts, "login-refused")
    page.fill("#token", ADMIN_TOKEN)
    page.click("#sign-in")
    assert page.url.endswith("/console/fleet")
    session = next(c for c in page.context.cookies() if c["name"] == "pooltune_session")
    assert session["httpOnly"] is True and session["sameSite"] == "Strict"
    rows = page.locator("#fleet tbody tr[data-host-id]")
    assert rows.count() == len(seeded.host_ids)
    assert page.locator("#fleet").inner_text().count("+32.0 %") == 1
    assert "awaiting approval" in page.locator("#fleet").inner_text()
    page.click("a.sort[data-sort=gain]")  # highest measured gain first
    first = page.locator("#fleet tbody tr[data-host-id]").first
    assert "db-1.console.test" in first.inner_text()
    shot(page, artifacts, "fleet")


def test_the_host_page_draws_the_climb_and_its_curve(
    page: Page, live_console: LiveServer, seeded: Seeded, artifacts: Path
) -> None:
    sign_in(page, live_console.base_url)
    page.click("text=db-1.console.test")
    assert page.url.endswith(f"/console/hosts/{seeded.host_ids['db-1.console.test']}")
    chart = page.locator("#trace-chart")
    chart.locator("canvas").wait_for()
    page.wait_for_function("document.getElementById('trace-chart').dataset.drawn !== undefined")
    assert chart.get_attribute("data-drawn") == str(TRACE_SAMPLES)
    drawn = page.evaluate(
        "() => { const u = window.pooltuneCharts['trace-chart'];"
        " return [u.data[0].length, u.data[3].filter(v => v !== null).length,"
        " u.data[4].filter(v => v !== null).length]; }"
    )
    assert drawn == [TRACE_SAMPLES, 8, 1]  # 9 sizes: 8 knob changes; one rollback
    assert page.locator("#curve-chart").get_attribute("data-drawn") == "9"
    assert "+32.0 %" in page.locator("#measured-gain").inner_text()
    assert page.locator("#recommendations tbody tr").count() == 1
    shot(page, artifacts, "host")


def test_approving_in_the_console_is_what_the_agent_then_reads(
    page: Page, live_console: LiveServer, seeded: Seeded, artifacts: Path
) -> None:
    sign_in(page, live_console.base_url)
    page.click("#pending-badge")
    card = page.locator(f"#approval-{seeded.approval_id}")
    assert "+15.0 %" in card.inner_text()  # the predicted gain, with its interval
    shot(page, artifacts, "approvals")
    card.locator("input[name='knob:thread_pool_size']").fill("10")
    card.locator("form.approve input[name=reason]").fill("start lower")
    card.locator("form.approve button").click()
    assert page.locator("#no-approvals").is_visible()
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    listed = httpx.get(
        f"{live_console.base_url}/v1/approvals", params={"state": "approved"}, headers=admin
    ).json()
    assert [item["id"] for item in listed["items"]] == [seeded.approval_id]
    agent = {"Authorization": f"Bearer {seeded.agent_tokens['db-2.console.test']}"}
    polled = httpx.get(
        f"{live_console.base_url}/v1/approvals/{seeded.approval_id}", headers=agent
    ).json()
    assert polled["state"] == "approved"
    assert polled["approved_tuple"] == {"thread_pool_size": 10, "thread_pool_oversubscribe": 3}
    assert (polled["edited"], polled["decided_by"], polled["reason"]) == (
        True,
        "console",
        "start lower",
    )


def test_promoting_a_model_needs_the_confirmation_and_its_csrf_token(
    page: Page, live_console: LiveServer, seeded: Seeded, artifacts: Path
) -> None:
    sign_in(page, live_console.base_url)
    candidate = seeded.model_ids[1]
    page.goto(f"{live_console.base_url}/console/models")
    shot(page, artifacts, "models")
    forged = page.request.post(
        f"{live_console.base_url}/console/models/{candidate}/promote",
        form={"confirm": "yes"},
        max_redirects=0,
    )
    assert forged.status == 403
    page.click(f"tr[data-version-id='{candidate}'] a.promote")
    page.check("#confirm-box")
    page.fill("#confirm-form input[name=reason]", "lower regret")
    page.click("#confirm-button")
    assert page.url.endswith(f"/console/models/{candidate}")
    assert page.locator("#promoted").is_visible()
    assert page.locator("#regret-bars rect").count() == 6
    shot(page, artifacts, "model-card")
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    version = httpx.get(f"{live_console.base_url}/v1/models/{candidate}", headers=admin).json()
    assert version["is_promoted"] is True
    assert version["history"][-1]["reason"] == "[console] lower regret"
    page.goto(f"{live_console.base_url}/console/models")
    assert "[console] lower regret" in page.locator("#audit").inner_text()


def test_signing_out_ends_the_session_and_no_token_reaches_the_log(
    page: Page, live_console: LiveServer, seeded: Seeded
) -> None:
    sign_in(page, live_console.base_url)
    stolen = [c for c in page.context.cookies() if c["name"] == "pooltune_session"]
    page.click("#logout")
    assert page.url.endswith("/console/login")
    page.goto(f"{live_console.base_url}/console/fleet")
    assert "/console/login" in page.url
    page.context.add_cookies(stolen)  # replaying the old cookie does not bring it back
    page.goto(f"{live_console.base_url}/console/fleet")
    assert "/console/login" in page.url
    log = live_console.log_text()
    assert "console sign-in" in log
    assert ADMIN_TOKEN not in log
    for token in seeded.agent_tokens.values():
        assert token not in log
