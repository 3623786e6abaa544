from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from agents.wire import HostFacts


class EnrollmentTokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(default="", max_length=200, examples=["rack 4 database hosts"])
    max_uses: int = Field(default=1, ge=1, le=10_000, description="Agents that may enrol with it.")
    ttl_hours: float | None = Field(
        default=None,
        gt=0,
        le=24 * 365,
        description="Lifetime; the service default (POOLTUNE_ENROLLMENT_TOKEN_TTL_HOURS) if unset.",
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


class EnrollmentTokenCreated(EnrollmentTokenRead):
    token: str = Field(
        description="The secret, shown only now; hand it to the agent's configuration.",
        examples=["pte_Jx3v..."],
    )


class AgentEnroll(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enrollment_token: str = Field(min_length=1, max_length=200, examples=["pte_Jx3v..."])
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
