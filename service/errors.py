"""Domain errors carry their status code; one handler renders ``{"error", "detail"}``.

Database failures are rendered here too, as a last resort: the database unavailable (refused,
cut, frozen past its timeouts, pool exhausted) is a 503 with ``Retry-After``; a value the
database refuses (``DataError`` / ``IntegrityError``) is a 4xx naming the column. Validation
at the edge should catch such values first (see :mod:`agents.wire`); these handlers make sure a
gap is a clear 4xx, never a 500. See docs/service.md.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from service.db_errors import describe_data_error, describe_integrity_error

logger = logging.getLogger(__name__)


class ErrorBody(BaseModel):
    """Every error response has this shape."""

    error: str = Field(description="A stable, machine-readable code.", examples=["not_found"])
    detail: Any = Field(
        default=None, description="What went wrong, for humans (or a list of field errors)."
    )


class PooltuneError(Exception):
    status_code = 500
    error = "internal_error"

    def __init__(self, detail: Any = None) -> None:
        super().__init__(detail)
        self.detail = detail


class NotFoundError(PooltuneError):
    status_code = 404
    error = "not_found"


class UnauthorizedError(PooltuneError):
    status_code = 401
    error = "unauthorized"


class ForbiddenError(PooltuneError):
    status_code = 403
    error = "forbidden"


class ConflictError(PooltuneError):
    status_code = 409
    error = "conflict"


class PayloadTooLargeError(PooltuneError):
    status_code = 413
    error = "payload_too_large"


class InvalidInputError(PooltuneError):
    status_code = 422
    error = "invalid"


class DatabaseUnavailableError(PooltuneError):
    """The database cannot be reached or did not answer in time: retry later."""

    status_code = 503
    error = "database_unavailable"


class InvalidBodyError(StarletteHTTPException):
    """The body is not JSON this service reads (not UTF-8, malformed, a key given twice).

    An HTTPException so that FastAPI's body reading passes it through unchanged; rendered
    like a validation error (422) with ``detail`` listing where the problem is.
    """

    def __init__(self, loc: list[str | int], msg: str, kind: str) -> None:
        super().__init__(422, msg)
        self.errors = [{"loc": ["body", *loc], "msg": msg, "type": kind}]


def error_response(status_code: int, error: str, detail: Any, **headers: str) -> JSONResponse:
    body = {"error": error, "detail": jsonable_encoder(detail)}
    return JSONResponse(body, status_code=status_code, headers=headers or None)


def _validation_detail(exc: RequestValidationError) -> list[dict[str, Any]]:
    detail = []
    for err in exc.errors():
        msg = err.get("msg", "")
        reason = (err.get("ctx") or {}).get("error")
        if err.get("type") == "json_invalid" and reason:
            msg = f"{msg}: {reason}"
        detail.append({"loc": list(err.get("loc", ())), "msg": msg, "type": err.get("type", "")})
    return detail


def _allowed_methods(request: Request) -> str:
    """Every method the API serves at this path, read from its OpenAPI document (a 405 from
    one route would name only that route's method, not its siblings' on the same path)."""
    app = request.app
    table: list[tuple[re.Pattern[str], set[str]]] | None = getattr(
        app.state, "allowed_methods", None
    )
    if table is None:
        table = [
            (compile_path(path)[0], {method.upper() for method in operations})
            for path, operations in app.openapi().get("paths", {}).items()
        ]
        app.state.allowed_methods = table
    methods: set[str] = set()
    for pattern, path_methods in table:
        if pattern.match(request.url.path):
            methods |= path_methods
    return ", ".join(sorted(methods))


def retry_after_seconds(request: Request) -> str:
    return str(max(1, round(request.app.state.settings.db_retry_after_s)))


def install_error_handlers(app: FastAPI) -> None:
    async def on_domain_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, PooltuneError)
        headers = {}
        if exc.status_code == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if exc.status_code == 503:
            headers["Retry-After"] = retry_after_seconds(request)
        return error_response(exc.status_code, exc.error, exc.detail, **headers)

    async def on_validation_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, "validation_error", _validation_detail(exc))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if isinstance(exc, InvalidBodyError):
            return error_response(422, "validation_error", exc.errors)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed_methods(request) or headers.get("Allow", "")
        codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        error = codes.get(exc.status_code, "http_error")
        return error_response(exc.status_code, error, exc.detail, **headers)

    async def on_database_unavailable(request: Request, exc: Exception) -> JSONResponse:
        reason = getattr(exc, "orig", None) or exc
        logger.warning(
            "database unavailable", extra={"error": f"{type(reason).__name__}: {reason}"[:500]}
        )
        return error_response(
            503,
            DatabaseUnavailableError.error,
            "the database is unavailable or did not answer in time; retry later",
            **{"Retry-After": retry_after_seconds(request)},
        )

    async def on_data_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, sa_exc.DataError)
        logger.warning("the database refused a value", extra={"error": str(exc.orig)[:500]})
        return error_response(422, InvalidInputError.error, [describe_data_error(exc)])

    async def on_integrity_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, sa_exc.IntegrityError)
        logger.warning("the database refused a row", extra={"error": str(exc.orig)[:500]})
        status_code, detail = describe_integrity_error(exc)
        error = ConflictError.error if status_code == 409 else InvalidInputError.error
        return error_response(status_code, error, [detail])

    async def on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error", exc_info=exc)
        return error_response(500, "internal_error", "an unexpected error occurred")

    app.add_exception_handler(PooltuneError, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    for unavailable in (
        sa_exc.OperationalError,
        sa_exc.InterfaceError,
        sa_exc.TimeoutError,
        sa_exc.DisconnectionError,
        sa_exc.PendingRollbackError,
    ):
        app.add_exception_handler(unavailable, on_database_unavailable)
    app.add_exception_handler(sa_exc.DataError, on_data_error)
    app.add_exception_handler(sa_exc.IntegrityError, on_integrity_error)
    app.add_exception_handler(Exception, on_unexpected)


_DESCRIPTIONS = {
    401: "Missing or wrong token.",
    403: "The token is valid but lacks the rights for this route.",
    404: "No such object.",
    409: "Conflicts with the stored state.",
    413: "The body is larger than the configured limit.",
    422: "The payload failed validation (including a body that is not UTF-8 JSON, or an "
    "object with a key given twice); `detail` lists each field and the reason.",
    503: "The database is unavailable or did not answer within its timeouts. Nothing was "
    "stored; retry after `Retry-After` seconds.",
}


#: Documented error responses for the OpenAPI of every route (all of them use the database,
#: so 503 is always listed).
def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    responses: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorBody, "description": _DESCRIPTIONS[code]} for code in codes
    }
    responses[503] = {
        "model": ErrorBody,
        "description": _DESCRIPTIONS[503],
        "headers": {
            "Retry-After": {
                "description": "Seconds to wait before retrying.",
                "schema": {"type": "integer"},
            }
        },
    }
    return responses
