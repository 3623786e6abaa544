"""Name the column behind a database ``DataError`` or ``IntegrityError``.

PostgreSQL often does not say which column a value did not fit ("value too long for type
character varying(200)", "integer out of range"), and psycopg refuses a NUL character before
the statement leaves. The statement's table and bound parameters do say it: the first
parameter that breaks its column's type is the culprit. Constraint names (the metadata's
naming convention) give the columns of an integrity violation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from sqlalchemy import BigInteger, Column, Integer, SmallInteger, String, Table
from sqlalchemy import exc as sa_exc

from service.db import Base

_TABLE = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE)\s+\"?(\w+)\"?", re.IGNORECASE)
_PARAM_SUFFIX = re.compile(r"_(?:m?\d+)$")
_INTEGER_RANGES = {SmallInteger: 2**15, Integer: 2**31, BigInteger: 2**63}


def _table(statement: str | None) -> Table | None:
    match = _TABLE.match(statement or "")
    if match is None:
        return None
    return Base.metadata.tables.get(match.group(1))


def _parameters(params: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(params, Mapping):
        yield from params.items()
    elif isinstance(params, list | tuple):
        for item in params:
            if isinstance(item, Mapping):
                yield from item.items()


def _column(table: Table, key: str) -> Column[Any] | None:
    column = table.c.get(key)
    if column is None:
        column = table.c.get(_PARAM_SUFFIX.sub("", key))
    return column


def _problem(column: Column[Any], value: Any) -> str | None:
    """Why ``value`` does not fit ``column``, or None when it does."""
    if isinstance(value, str):
        if "\x00" in value:
            return "must not contain NUL (\\u0000) characters"
        length = getattr(column.type, "length", None)
        if isinstance(column.type, String) and length is not None and len(value) > length:
            return f"at most {length} characters are stored, got {len(value)}"
    if isinstance(value, int) and not isinstance(value, bool):
        for kind, bound in _INTEGER_RANGES.items():
            if isinstance(column.type, kind) and not -bound <= value < bound:
                return f"must be between {-bound} and {bound - 1}"
    return None


def _diag(exc: sa_exc.DBAPIError, name: str) -> str | None:
    diag = getattr(exc.orig, "diag", None)
    value = getattr(diag, name, None) if diag is not None else None
    return value if isinstance(value, str) else None


def describe_data_error(exc: sa_exc.DBAPIError) -> dict[str, Any]:
    """``{"loc": [table, column], "msg", "type"}`` for a value the database refused."""
    reason = _diag(exc, "message_primary") or str(exc.orig).strip().splitlines()[0]
    table = _table(exc.statement)
    if table is not None:
        for key, value in _parameters(exc.params):
            column = _column(table, key)
            if column is not None and (problem := _problem(column, value)) is not None:
                return {"loc": [table.name, column.name], "msg": problem, "type": "data_error"}
    column_name = _diag(exc, "column_name")
    loc = [name for name in (_diag(exc, "table_name"), column_name) if name]
    return {"loc": loc, "msg": f"the database refused a value: {reason}", "type": "data_error"}


def describe_integrity_error(exc: sa_exc.DBAPIError) -> tuple[int, dict[str, Any]]:
    """(status, detail) for a row the database refused: 409 for a duplicate, else 422."""
    reason = _diag(exc, "message_primary") or str(exc.orig).strip().splitlines()[0]
    state = getattr(exc.orig, "sqlstate", None)
    table_name = _diag(exc, "table_name")
    constraint_name = _diag(exc, "constraint_name")
    columns: list[str] = []
    table = Base.metadata.tables.get(table_name or "")
    if table is not None and constraint_name:
        for constraint in table.constraints:
            if constraint.name == constraint_name:
                columns = [column.name for column in getattr(constraint, "columns", [])]
        for index in table.indexes:
            if index.name == constraint_name:
                columns = [column.name for column in index.columns]
    if not columns and (column_name := _diag(exc, "column_name")):
        columns = [column_name]
    loc: list[str] = [name for name in (table_name, *columns) if name]
    status = 409 if state == "23505" else 422
    kind = "duplicate" if status == 409 else "integrity_error"
    return status, {"loc": loc, "msg": f"the database refused the row: {reason}", "type": kind}
