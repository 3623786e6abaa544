"""Limits, base types and the strict model every payload of the wire contract uses.

The service's columns are sized from these constants (a test compares them with the
migrations), so the edge refuses what the database would choke on."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
)
from pydantic_core import PydanticCustomError

SCHEMA_VERSION: Literal[1] = 1

#: Longest climb trace a report may carry: 10,000 samples is 5.5 hours at one sample
#: every 2 s, far beyond any climb; longer traces must be cut by the agent (keep the end).
MAX_TRACE_SAMPLES = 10_000

#: Most engine-specific counters a profile may carry in ``extras``.
MAX_EXTRAS = 200

# -- storage limits: the one definition of each ------------------------------------------

#: The largest value a 32-bit integer column (PostgreSQL ``integer``) holds.
INT32_MAX = 2**31 - 1
#: The largest value a 64-bit integer column (PostgreSQL ``bigint``) holds.
INT64_MAX = 2**63 - 1
HOSTNAME_MAX_LENGTH = 253
ENGINE_VERSION_MAX_LENGTH = 100
IDEMPOTENCY_KEY_MAX_LENGTH = 128
#: ``name:version`` of a model (``model_versions.name`` is 100 characters, plus the number).
MODEL_VERSION_MAX_LENGTH = 200
#: Names of counters, settings and knobs carried in JSON documents.
KEY_MAX_LENGTH = 100
#: A text value of a climber setting.
SETTING_TEXT_MAX_LENGTH = 1000
STATE_MAX_LENGTH = 32
CLIMBER_NAME_MAX_LENGTH = 64
CLIMBER_VERSION_MAX_LENGTH = 32
WORKLOAD_GROUP_MAX_LENGTH = 128
#: Most CPUs a host may report.
MAX_CPU_COUNT = 4096
#: Most settings a climber may report.
MAX_SETTINGS = 200

IDEMPOTENCY_KEY = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9._:-]{{7,{IDEMPOTENCY_KEY_MAX_LENGTH - 1}}}$")


def stored_text(value: str) -> str:
    """Refuse what a text column cannot hold: NUL characters and lone surrogates."""
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000) characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"must be valid Unicode (a lone surrogate at position {exc.start} cannot be stored)"
        ) from exc
    return value


def utc_datetime(value: datetime) -> datetime:
    """The same instant in UTC; refused when that falls outside years 1 to 9999."""
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError(
            f"{value.isoformat()} is outside years 1 to 9999 once converted to UTC"
        ) from exc


def _number_not_bool_or_text(value: object) -> object:
    # JSON true is not 1 and "12" is not 12: a number must arrive as a number.
    if isinstance(value, bool | str | bytes):
        raise PydanticCustomError(
            "int_type",
            "Input should be an integer, not {kind}",
            {"kind": type(value).__name__},
        )
    return value


# Constraints come before the validator in each alias: pydantic then publishes them in the
# JSON schema (an alias of an alias with constraints on top would hide them).

#: Text that a database column (or a JSON document in one) can store.
Text = Annotated[str, AfterValidator(stored_text)]
#: A name inside a JSON document: a counter, a setting, a knob.
Key = Annotated[str, Field(min_length=1, max_length=KEY_MAX_LENGTH), AfterValidator(stored_text)]
#: A timezone-aware datetime, normalised to UTC, within years 1 to 9999 in UTC.
UtcDatetime = Annotated[AwareDatetime, AfterValidator(utc_datetime)]
#: An integer; never a boolean or a string.
Integer = Annotated[int, BeforeValidator(_number_not_bool_or_text)]
#: A count a 32-bit column holds (connections, samples).
Count32 = Annotated[int, Field(ge=0, le=INT32_MAX), BeforeValidator(_number_not_bool_or_text)]
#: A float (an integer is accepted); never a boolean or a string.
Real = Annotated[float, Strict()]
StrictBool = Annotated[bool, Strict()]


class StrictModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        frozen=True,
        str_strip_whitespace=True,
    )


NonNegative = Annotated[Real, Field(ge=0.0)]
Rate = Annotated[Real, Field(ge=0.0, description="Per second; finite, never negative.")]
Milliseconds = Annotated[Real, Field(ge=0.0, description="Milliseconds; finite, not negative.")]
Fraction = Annotated[Real, Field(ge=0.0, le=1.0)]


def bounded_extras(extras: dict[str, float]) -> dict[str, float]:
    if len(extras) > MAX_EXTRAS:
        raise ValueError(f"at most {MAX_EXTRAS} extras are accepted, got {len(extras)}")
    return extras


def bounded_settings(
    settings: dict[str, float | int | str | bool | None],
) -> dict[str, float | int | str | bool | None]:
    if len(settings) > MAX_SETTINGS:
        raise ValueError(f"at most {MAX_SETTINGS} settings are accepted, got {len(settings)}")
    return settings
