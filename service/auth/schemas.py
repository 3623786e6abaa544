from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from agents.wire import HOSTNAME_MAX_LENGTH, HostFacts, Integer, Real, Text

ENROLLMENT_DESCRIPTION_MAX_LENGTH = 200
#: Enrolment tokens are ``pte_`` + 43 characters; anything much longer is not one.
ENROLLMENT_TOKEN_MAX_LENGTH = 200
MAX_ENROLLMENT_USES = 10_000
MAX_ENROLLMENT_TTL_HOURS = 24 * 365


class EnrollmentTokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: Text = Field(
        default="", max_length=ENROLLMENT_DESCRIPTION_MAX_LENGTH, examples=["rack 4 database hosts"]
    )
    max_uses: Integer = Field(
        default=1, ge=1, le=MAX_ENROLLMENT_USES, description="Agents that may enrol with it."
    )
    ttl_hours: Real | None = Field(
        default=None,
        gt=0,
        le=MAX_ENROLLMENT_TTL_HOURS,
        description="Lifetime; the service default (POOLTUNE_ENROLLMENT_TOKEN_TTL_HOURS) if unset.",
    )
    hostname: Text | None = Field(
        default=None,
        min_length=1,
        max_length=HOSTNAME_MAX_LENGTH,
        description="Scope the token to this hostname: it enrols only that host, and it may "
        "enrol it again when the host is already enrolled (the host's previous agents are "
        "revoked). A token without a hostname enrols only hosts that are not enrolled yet.",
        examples=["db-17.example.net"],
    )


class EnrollmentTokenRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    description: str
    max_uses: int
    uses: int
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None
    hostname: str | None = Field(default=None, description="The only hostname it enrols.")


class EnrollmentTokenCreated(EnrollmentTokenRead):
    token: str = Field(
        description="The secret, shown only now; hand it to the agent's configuration.",
        examples=["pte_Jx3v..."],
    )


class AgentEnroll(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enrollment_token: Text = Field(
        min_length=1, max_length=ENROLLMENT_TOKEN_MAX_LENGTH, examples=["pte_Jx3v..."]
    )
    host: HostFacts


class AgentRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    host_id: int
    token_prefix: str = Field(description="First characters of the token, to tell tokens apart.")
    created_at: datetime
    rotated_at: datetime | None = None
    revoked_at: datetime | None = None


class AgentCredentials(BaseModel):
    agent_id: int = Field(examples=[7])
    host_id: int = Field(examples=[3])
    agent_token: str = Field(
        description="Long-lived bearer token for this agent, shown only now.",
        examples=["pta_Q8f2..."],
    )
    previous_token_valid_until: datetime | None = Field(
        default=None,
        description="After a rotation: the token the agent held before keeps working until "
        "this time, or until this new token is first used, whichever comes first.",
    )
