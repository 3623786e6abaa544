from __future__ import annotations

import pytest
from httpx import ASGITransport, AsyncClient

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_healthz_answers_ok(api_client: AsyncClient) -> None:
    response = await api_client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response.headers["x-request-id"]


async def test_readyz_checks_the_real_database(live_client: AsyncClient) -> None:
    response = await live_client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready"}


async def test_readyz_is_503_when_the_database_is_down(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app(database_url="postgresql+psycopg://postgres@127.0.0.1:1/nowhere")
    async with app.router.lifespan_context(app):
        transport = ASGITransport(app=app)
        async with AsyncClient(transport=transport, base_url="http://testserver") as client:
            response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["error"] == "database_unavailable"


async def test_request_id_is_echoed(api_client: AsyncClient) -> None:
    response = await api_client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert response.headers["x-request-id"] == "abc-123"


async def test_metrics_count_requests_per_route_template(api_client: AsyncClient) -> None:
    await api_client.get("/healthz")
    await api_client.get("/v1/hosts/12345")
    text = (await api_client.get("/metrics")).text
    assert 'pooltune_http_requests_total{method="GET",route="/healthz",status="200"} 1.0' in text
    assert 'route="/v1/hosts/{host_id}",status="401"' in text
    assert "pooltune_http_request_duration_seconds_bucket" in text


async def test_unknown_route_renders_the_error_shape(api_client: AsyncClient) -> None:
    response = await api_client.get("/nope")
    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "detail": "Not Found"}
