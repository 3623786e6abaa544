"""The limits the API documents and enforces are the columns' sizes in the migrated schema.

Each limit is defined once (agents/wire/ for the wire contract, the schemas for the
service's own fields); the ORM sizes its columns from those constants, and the migrations must
agree. This reads both ends: the JSON schema the API publishes, and the PostgreSQL columns
``alembic upgrade head`` created.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import BigInteger, Engine, Integer, String, inspect

from agents.wire import INT32_MAX, INT64_MAX, ClimbReport, HostFacts, RecommendationResponse
from service.auth.schemas import AgentEnroll, EnrollmentTokenCreate
from service.registry.schemas import MODEL_NAME_MAX_LENGTH

pytestmark = pytest.mark.postgres

#: (schema, field) -> (table, column): text whose length the API bounds by its column.
TEXT_LIMITS: list[tuple[type[BaseModel], str, str, str]] = [
    (HostFacts, "hostname", "hosts", "hostname"),
    (HostFacts, "engine_version", "hosts", "engine_version"),
    (ClimbReport, "start_model_version", "reports", "start_model_version"),
    (RecommendationResponse, "model_version", "recommendation_log", "model_version"),
    (RecommendationResponse, "model_version", "approvals", "model_version"),
    (EnrollmentTokenCreate, "description", "enrollment_tokens", "description"),
    (EnrollmentTokenCreate, "hostname", "enrollment_tokens", "hostname"),
]
#: (schema, field) -> (table, column): integers the API bounds by (or within) their column.
INTEGER_LIMITS: list[tuple[type[BaseModel], str, str, str]] = [
    (HostFacts, "memory_bytes", "hosts", "memory_bytes"),
    (HostFacts, "cpu_count", "hosts", "cpu_count"),
    (ClimbReport, "samples_to_converge", "reports", "samples_to_converge"),
    (EnrollmentTokenCreate, "max_uses", "enrollment_tokens", "max_uses"),
]
#: Text columns the service fills itself (hashes, enum values, prefixes): no API field.
INTERNAL_TEXT = {
    ("agents", "token_hash"),
    ("agents", "previous_token_hash"),
    ("agents", "token_prefix"),
    ("approvals", "decided_by"),
    ("approvals", "engine"),
    ("approvals", "request_sha256"),
    ("approvals", "source"),
    ("approvals", "state"),
    ("console_secrets", "name"),
    ("console_secrets", "value"),
    ("console_sessions", "id"),
    ("enrollment_tokens", "token_hash"),
    ("hosts", "engine"),
    ("model_versions", "engine"),
    ("model_versions", "artifact_sha256"),
    ("promotion_events", "action"),
    ("recommendation_log", "engine"),
    ("recommendation_log", "source"),
    ("reports", "engine"),
    ("reports", "payload_sha256"),
    ("reports", "start_source"),
}
#: Bounded elsewhere than a published schema field.
OTHER_TEXT = {
    ("reports", "idempotency_key"),  # the key's pattern (test below)
    ("approvals", "idempotency_key"),  # the same pattern (test below)
    ("model_versions", "name"),  # the registry's MODEL_NAME_MAX_LENGTH (test below)
}


def _property(schema: type[BaseModel], field: str) -> dict[str, Any]:
    """The field's JSON schema with an Optional unwrapped."""
    prop: dict[str, Any] = schema.model_json_schema()["properties"][field]
    for option in prop.get("anyOf", []):
        if option.get("type") != "null":
            return {**prop, **option}
    return prop


def _columns(engine: Engine) -> dict[tuple[str, str], Any]:
    inspector = inspect(engine)
    return {
        (table, column["name"]): column["type"]
        for table in inspector.get_table_names()
        for column in inspector.get_columns(table)
    }


@pytest.mark.parametrize(("schema", "field", "table", "column"), TEXT_LIMITS)
def test_text_limits_equal_the_column_length(
    pg_engine: Engine, schema: type[BaseModel], field: str, table: str, column: str
) -> None:
    column_type = _columns(pg_engine)[(table, column)]
    assert isinstance(column_type, String)
    assert _property(schema, field)["maxLength"] == column_type.length


@pytest.mark.parametrize(("schema", "field", "table", "column"), INTEGER_LIMITS)
def test_integer_limits_fit_the_column(
    pg_engine: Engine, schema: type[BaseModel], field: str, table: str, column: str
) -> None:
    column_type = _columns(pg_engine)[(table, column)]
    capacity = INT64_MAX if isinstance(column_type, BigInteger) else INT32_MAX
    assert isinstance(column_type, Integer)
    maximum = _property(schema, field)["maximum"]
    assert maximum <= capacity
    if field in ("memory_bytes", "samples_to_converge"):
        assert maximum == capacity  # a storage limit, not a policy


def test_every_text_column_has_its_limit(pg_engine: Engine) -> None:
    text_columns = {
        key
        for key, kind in _columns(pg_engine).items()
        if isinstance(kind, String) and kind.length is not None  # TEXT columns have no limit
    }
    text_columns -= {("alembic_version", "version_num")}
    covered = {(table, column) for _, _, table, column in TEXT_LIMITS}
    assert text_columns == covered | INTERNAL_TEXT | OTHER_TEXT


def test_the_other_text_limits_equal_their_columns(pg_engine: Engine) -> None:
    columns = _columns(pg_engine)
    assert columns[("model_versions", "name")].length == MODEL_NAME_MAX_LENGTH
    key_length = columns[("reports", "idempotency_key")].length
    assert columns[("approvals", "idempotency_key")].length == key_length
    base: dict[str, Any] = ClimbReport.model_json_schema()["properties"]
    assert base["idempotency_key"]["pattern"].endswith(f"{{7,{key_length - 1}}}$")
    enroll = AgentEnroll.model_json_schema()["properties"]["enrollment_token"]
    assert enroll["maxLength"] >= 4 + 43  # the prefix and 32 random bytes in base64
