"""Domain errors carry their status code; one handler renders ``{"error", "detail"}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

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


def error_response(status_code: int, error: str, detail: Any, **headers: str) -> JSONResponse:
    body = {"error": error, "detail": jsonable_encoder(detail)}
    return JSONResponse(body, status_code=status_code, headers=headers or None)


def _validation_detail(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [
        {
            "loc": list(err.get("loc", ())),
            "msg": err.get("msg", ""),
            "type": err.get("type", ""),
        }
        for err in exc.errors()
    ]


def install_error_handlers(app: FastAPI) -> None:
    async def on_domain_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, PooltuneError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else {}
        return error_response(exc.status_code, exc.error, exc.detail, **headers)

    async def on_validation_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, "validation_error", _validation_detail(exc))

    async def on_http_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        error = codes.get(exc.status_code, "http_error")
        return error_response(exc.status_code, error, exc.detail)

    async def on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error", exc_info=exc)
        return error_response(500, "internal_error", "an unexpected error occurred")

    app.add_exception_handler(PooltuneError, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)


#: Documented error responses for the OpenAPI of every route.
def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        401: "Missing or wrong token.",
        403: "The token is valid but lacks the rights for this route.",
        404: "No such object.",
        409: "Conflicts with the stored state.",
        413: "The body is larger than the configured limit.",
        422: "The payload failed validation; `detail` lists each field and the reason.",
    }
    return {code: {"model": ErrorBody, "description": descriptions[code]} for code in codes}
