"""Fixtures of the browser tests: a seeded live service and one headless Chromium."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.migrate import upgrade
from tests.console.live import (
    CHROMIUM,
    CHROMIUM_ARGS,
    LiveServer,
    Seeded,
    artifacts_dir,
    seed,
    start_server,
    stop_server,
)
from tests.fixtures.postgres import create_database, drop_database


@pytest.fixture(scope="module")
def artifacts() -> Path:
    path = artifacts_dir()
    print(f"\nconsole test artifacts (screenshots, server log): {path}")
    return path


@pytest.fixture(scope="module")
def console_database() -> Iterator[str]:
    url = create_database("pooltune_console")
    try:
        upgrade(url)
        yield url
    finally:
        drop_database(url)


@pytest.fixture(scope="module")
def live_console(console_database: str, artifacts: Path) -> Iterator[LiveServer]:
    server = start_server(console_database, artifacts / "service.log")
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture(scope="module")
def seeded(live_console: LiveServer, console_database: str) -> Seeded:
    return seed(live_console.base_url, console_database)


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """Debian's Chromium, headless, on a new empty profile (Playwright drives it)."""
    if shutil.which(CHROMIUM) is None:
        pytest.fail(
            f"{CHROMIUM} is missing: run scripts/ensure-system.sh (apt-get install chromium "
            "chromium-driver)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="pooltune-chromium-")
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1360, "height": 900},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
