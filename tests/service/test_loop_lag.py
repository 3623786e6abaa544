"""The event-loop lag probe: a callback that holds the loop is measured and logged with
the clock a benchmark can match to late answers; a free loop logs nothing."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from service.loop_lag import BLOCKED, LoopLagWatch
from service.observability import Metrics

T = TypeVar("T")


def _lags(metrics: Metrics) -> tuple[float, float]:
    """(observations, their sum) of the lag histogram."""
    samples = {
        sample.name: sample.value
        for metric in metrics.registry.collect()
        for sample in metric.samples
    }
    return (
        samples["pooltune_event_loop_lag_seconds_count"],
        samples["pooltune_event_loop_lag_seconds_sum"],
    )


def _watched(
    body: Callable[[], Awaitable[T]], *, warn_ms: float, caplog: pytest.LogCaptureFixture
) -> tuple[T, list[dict[str, Any]], Metrics]:
    """Run ``body`` on a fresh loop under a watch: its result, the warnings' fields and
    the metrics."""
    metrics = Metrics()

    async def scenario() -> T:
        watch = LoopLagWatch(metrics.event_loop_lag, warn_ms=warn_ms)
        watch.start()
        try:
            return await body()
        finally:
            await watch.stop()
            assert watch.gc_clock not in gc.callbacks

    with caplog.at_level(logging.WARNING, logger="service.loop_lag"):
        result = asyncio.run(scenario())
    warnings = [r.__dict__ for r in caplog.records if r.getMessage() == BLOCKED]
    return result, warnings, metrics


def test_a_held_loop_is_logged_with_its_length_and_when(caplog: pytest.LogCaptureFixture) -> None:
    async def hold() -> tuple[float, float]:
        await asyncio.sleep(0.1)  # the free loop: wake-ups on time
        held_from = time.monotonic()
        time.sleep(0.3)  # a callback holding the loop
        released = time.monotonic()
        await asyncio.sleep(0.1)
        return held_from, released

    (held_from, released), warnings, metrics = _watched(hold, warn_ms=100.0, caplog=caplog)
    assert len(warnings) == 1, warnings
    entry = warnings[0]
    assert 250 <= entry["lag_ms"] <= 1000
    # The stall ends when the loop was let go, on the clock shared by every process.
    assert released <= entry["monotonic_s"] <= released + 0.5
    assert entry["monotonic_s"] - entry["lag_ms"] / 1000 <= held_from + 0.02
    assert entry["gc_ms"] < 50 and entry["pid"] > 0  # the callback held it, not the collector
    count, total = _lags(metrics)
    assert count >= 10 and total >= 0.25


def test_a_collection_during_the_stall_is_named(caplog: pytest.LogCaptureFixture) -> None:
    async def collect() -> None:
        await asyncio.sleep(0.05)
        garbage = [[i] for i in range(300_000)]
        started = time.perf_counter()
        while time.perf_counter() - started < 0.05:
            gc.collect()  # the loop held by full collections, at least 50 ms of them
        del garbage
        await asyncio.sleep(0.05)

    _, warnings, _ = _watched(collect, warn_ms=20.0, caplog=caplog)
    assert warnings and warnings[0]["gc_ms"] >= 40 and warnings[0]["gc_generation"] == 2


def test_a_free_loop_warns_of_nothing(caplog: pytest.LogCaptureFixture) -> None:
    _, warnings, metrics = _watched(lambda: asyncio.sleep(0.3), warn_ms=100.0, caplog=caplog)
    assert not warnings
    count, _ = _lags(metrics)
    assert count >= 5


def test_no_warning_when_the_threshold_is_zero(caplog: pytest.LogCaptureFixture) -> None:
    metrics = Metrics()
    watch = LoopLagWatch(metrics.event_loop_lag, warn_ms=0.0)
    with caplog.at_level(logging.WARNING, logger="service.loop_lag"):
        assert watch.observe(now=10.5, due=10.0) == pytest.approx(0.5)
    assert not caplog.records
    count, total = _lags(metrics)
    assert count == 1 and total == pytest.approx(0.5)
