"""Request bodies are read as strict UTF-8 JSON: every route of the API uses this route class.

FastAPI's own reading accepts UTF-16/32, keeps the last of two equal keys, and answers an
undocumented 400 for a body it cannot decode. Here a body that is not UTF-8, not JSON, too
deeply nested, holds a number too long to read, or gives a key twice in one object is a 422
whose ``detail`` says where (for a duplicate key, its path).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from service.errors import InvalidBodyError


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.path: list[str | int] = [key]


class _Pairs(list[tuple[str, Any]]):
    """An object's members in order, kept apart from arrays while the path is traced."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
    return result


def _trace(node: Any) -> None:
    """Raise with the full path of the first key given twice (slow path, errors only)."""
    if isinstance(node, _Pairs):
        seen: set[str] = set()
        for key, value in node:
            if key in seen:
                raise _DuplicateKeyError(key)
            seen.add(key)
            try:
                _trace(value)
            except _DuplicateKeyError as exc:
                exc.path.insert(0, key)
                raise
    elif isinstance(node, list):
        for index, value in enumerate(node):
            try:
                _trace(value)
            except _DuplicateKeyError as exc:
                exc.path.insert(0, index)
                raise


def parse_json_body(body: bytes) -> Any:
    """The body as JSON, or :class:`InvalidBodyError` naming what is wrong and where."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidBodyError(
            [], f"the body is not UTF-8 (byte {exc.start} is invalid)", "json_invalid"
        ) from exc
    try:
        return json.loads(text, object_pairs_hook=_unique_object)
    except _DuplicateKeyError:
        try:
            _trace(json.loads(text, object_pairs_hook=_Pairs))
        except _DuplicateKeyError as exc:
            raise InvalidBodyError(
                exc.path, f"the key {exc.path[-1]!r} is given twice in one object", "duplicate_key"
            ) from exc
        raise AssertionError("a duplicate key vanished on the second reading") from None
    except json.JSONDecodeError as exc:
        raise InvalidBodyError(
            [], f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", "json_invalid"
        ) from exc
    except (ValueError, RecursionError) as exc:
        # Integers longer than Python reads (4,300 digits) and absurd nesting.
        raise InvalidBodyError([], f"not readable JSON: {exc}", "json_invalid") from exc


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_json_body(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An API route whose request reads its JSON body with :func:`parse_json_body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
