"""Payload builders for the console and approval tests."""

from __future__ import annotations

import uuid
from typing import Any

from tests.service.factories import workload_profile


def approval_request(
    *,
    engine: str = "mariadb",
    values: dict[str, int] | None = None,
    key: str | None = None,
    predicted_gain: dict[str, float] | None = None,
    ttl_s: int | None = None,
) -> dict[str, Any]:
    """What an agent in approval mode posts to /v1/approvals."""
    values = values or {"thread_pool_size": 12, "thread_pool_oversubscribe": 3}
    body: dict[str, Any] = {
        "idempotency_key": key or f"approval-{uuid.uuid4()}",
        "profile": workload_profile(),
        "current_tuple": {"engine": engine, "values": {next(iter(values)): 8}},
        "recommendation": {
            "schema_version": 1,
            "start_tuple": {"engine": engine, "values": values},
            "ranges": {name: {"low": max(1, v // 2), "high": v * 2} for name, v in values.items()},
            "source": "model",
            "model_version": "const:1",
        },
    }
    if predicted_gain is not None:
        body["predicted_gain"] = predicted_gain
    if ttl_s is not None:
        body["ttl_s"] = ttl_s
    return body
