"""Prometheus metrics, request ids, access logs and the body size limit, as one ASGI layer."""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.errors import error_response
from service.logging_setup import request_id_var

logger = logging.getLogger("service.access")

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class Metrics:
    """The service's metrics, in a registry of their own (one per app, so tests can build many)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "pooltune_http_requests",
            "HTTP requests by route template, method and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "pooltune_http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["method", "route"],
            buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
            registry=self.registry,
        )
        self.reports_ingested = Counter(
            "pooltune_reports_ingested",
            "Climb reports received, by outcome (created or duplicate).",
            ["outcome"],
            registry=self.registry,
        )
        self.recommendations = Counter(
            "pooltune_recommendations",
            "Recommendations answered, by engine and source (model or heuristic).",
            ["engine", "source"],
            registry=self.registry,
        )
        self.model_errors = Counter(
            "pooltune_model_errors",
            "Promoted models that failed to load or predict (the heuristic answered instead).",
            ["engine", "stage"],
            registry=self.registry,
        )
        self.event_loop_lag = Histogram(
            "pooltune_event_loop_lag_seconds",
            "How late this worker's event loop woke a 10-ms timer: time the loop was held "
            "by a callback, which every request due meanwhile waited for.",
            buckets=(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=self.registry,
        )
        self.model_version_in_use = Gauge(
            "pooltune_model_version_in_use",
            "Version number of the promoted model answering per engine (0: the heuristic).",
            ["engine"],
            registry=self.registry,
        )


class ObservabilityMiddleware:
    """Request id, metrics per route template, one JSON access line, and a 413 for big bodies."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, max_body_bytes: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        supplied = headers.get("x-request-id", "")
        request_id = supplied if _REQUEST_ID.match(supplied) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status_holder: dict[str, int] = {"status": 500}
        method = scope["method"]
        try:
            declared = headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
                status_holder["status"] = 413
                response = error_response(
                    413,
                    "payload_too_large",
                    f"the body is {declared} bytes; the limit is {self.max_body_bytes}",
                    **{"x-request-id": request_id},
                )
                await response(scope, receive, send)
                return

            received = 0

            async def limited_receive() -> Message:
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > self.max_body_bytes:
                        # FastAPI re-raises HTTPException from body reading; the handler
                        # renders it as a 413 in the usual error shape.
                        raise HTTPException(
                            413, f"the body exceeds the limit of {self.max_body_bytes} bytes"
                        )
                return message

            async def send_with_id(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status_holder["status"] = message["status"]
                    message["headers"] = [
                        *message.get("headers", []),
                        (b"x-request-id", request_id.encode()),
                    ]
                await send(message)

            await self.app(scope, limited_receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = _route_template(scope)
            status = status_holder["status"]
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(elapsed)
            logger.info(
                "request",
                extra={
                    "method": method,
                    "route": route,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                },
            )
            request_id_var.reset(token)


def _route_template(scope: Scope) -> str:
    # The matched route's template keeps the label set small; unmatched paths share one label.
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "<unmatched>"
