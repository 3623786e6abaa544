"""The wire contract between agents, the service and the trainer.

This package is the single source of truth for what crosses the network: the service
and the trainer import these models; nothing else defines a payload. Every model
rejects NaN and infinity, negative rates and counts, unknown fields, unknown engines
and knob values outside the engine's catalog (:mod:`agents.knobs`), with messages that
name the field and the accepted range.

Limits that storage must respect live here too, once each (:mod:`agents.wire.base`): the
service's columns are sized from these constants (a test compares them with the migrations),
so the edge refuses what the database would choke on: NUL characters and lone surrogates in
any string, strings longer than their column, integers beyond their column, datetimes whose
UTC value falls outside years 1 to 9999. Numbers and booleans are not coerced from strings or
from each other (``true`` is not 1, ``"12"`` is not 12).

Versioning: every top-level payload carries ``schema_version``. A change that an older
reader cannot ignore bumps :data:`SCHEMA_VERSION`; readers refuse versions they do not
know instead of guessing. Import every name from ``agents.wire``.
"""

from __future__ import annotations

from agents.wire.base import (
    CLIMBER_NAME_MAX_LENGTH,
    CLIMBER_VERSION_MAX_LENGTH,
    ENGINE_VERSION_MAX_LENGTH,
    HOSTNAME_MAX_LENGTH,
    IDEMPOTENCY_KEY,
    IDEMPOTENCY_KEY_MAX_LENGTH,
    INT32_MAX,
    INT64_MAX,
    KEY_MAX_LENGTH,
    MAX_CPU_COUNT,
    MAX_EXTRAS,
    MAX_SETTINGS,
    MAX_TRACE_SAMPLES,
    MODEL_VERSION_MAX_LENGTH,
    SCHEMA_VERSION,
    SETTING_TEXT_MAX_LENGTH,
    STATE_MAX_LENGTH,
    WORKLOAD_GROUP_MAX_LENGTH,
    Count32,
    Fraction,
    Integer,
    Key,
    Milliseconds,
    NonNegative,
    Rate,
    Real,
    StrictBool,
    StrictModel,
    Text,
    UtcDatetime,
    bounded_extras,
    bounded_settings,
    stored_text,
    utc_datetime,
)
from agents.wire.recommendations import (
    MAX_APPROVAL_TTL_S,
    ApprovalCreate,
    ApprovalRead,
    ApprovalState,
    PredictedGain,
    RecommendationRequest,
    RecommendationResponse,
)
from agents.wire.reports import (
    ClimberInfo,
    ClimbReport,
    TraceKind,
    TraceSample,
    utcnow,
)
from agents.wire.workload import (
    HostFacts,
    KnobRange,
    KnobTuple,
    Source,
    WorkloadProfile,
)

__all__ = [
    "ApprovalCreate",
    "ApprovalRead",
    "ApprovalState",
    "CLIMBER_NAME_MAX_LENGTH",
    "CLIMBER_VERSION_MAX_LENGTH",
    "ClimbReport",
    "ClimberInfo",
    "Count32",
    "ENGINE_VERSION_MAX_LENGTH",
    "Fraction",
    "HOSTNAME_MAX_LENGTH",
    "HostFacts",
    "IDEMPOTENCY_KEY",
    "IDEMPOTENCY_KEY_MAX_LENGTH",
    "INT32_MAX",
    "INT64_MAX",
    "Integer",
    "KEY_MAX_LENGTH",
    "Key",
    "KnobRange",
    "KnobTuple",
    "MAX_APPROVAL_TTL_S",
    "MAX_CPU_COUNT",
    "MAX_EXTRAS",
    "MAX_SETTINGS",
    "MAX_TRACE_SAMPLES",
    "MODEL_VERSION_MAX_LENGTH",
    "Milliseconds",
    "NonNegative",
    "PredictedGain",
    "Rate",
    "Real",
    "RecommendationRequest",
    "RecommendationResponse",
    "SCHEMA_VERSION",
    "SETTING_TEXT_MAX_LENGTH",
    "STATE_MAX_LENGTH",
    "Source",
    "StrictBool",
    "StrictModel",
    "Text",
    "TraceKind",
    "TraceSample",
    "UtcDatetime",
    "WORKLOAD_GROUP_MAX_LENGTH",
    "WorkloadProfile",
    "bounded_extras",
    "bounded_settings",
    "stored_text",
    "utc_datetime",
    "utcnow",
]
