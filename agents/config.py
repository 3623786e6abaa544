"""Agent configuration: a TOML file plus environment overrides for secrets.

The file is loaded into a frozen pydantic model and validated at start-up (and on every
SIGHUP reload); errors name the file, the key and what is accepted. Only secrets and the
service URL come from the environment: ``POOLTUNE_DB_PASSWORD`` (``[target] password``),
``POOLTUNE_PG_PASSWORD`` (``[target.pgbouncer] postgres_password``), ``POOLTUNE_AGENT_TOKEN``
(the enrolled token), ``POOLTUNE_SERVICE_URL`` (``[service] url``).
See ``agents/packaging/pooltune-agent.toml`` for a commented example.
"""

from __future__ import annotations

import enum
import logging
import os
import tomllib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from agents import knobs as knob_catalog
from agents.knobs import Engine
from agents.wire import MAX_APPROVAL_TTL_S

logger = logging.getLogger(__name__)

DEFAULT_CONFIG_PATH = Path("/etc/pooltune/agent.toml")

ENV_DB_PASSWORD = "POOLTUNE_DB_PASSWORD"
ENV_PG_PASSWORD = "POOLTUNE_PG_PASSWORD"
#: PgBouncer's usual listen port, ``[target] port``'s default for ``engine = "pgbouncer"``.
PGBOUNCER_PORT = 6432
ENV_AGENT_TOKEN = "POOLTUNE_AGENT_TOKEN"
ENV_SERVICE_URL = "POOLTUNE_SERVICE_URL"

PositiveSeconds = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]


class ConfigError(Exception):
    """The configuration cannot be used; the message says what to fix."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Mode(enum.StrEnum):
    """What the agent may do to the knobs (docs/agent.md, "Modes")."""

    #: Profile, start from the recommendation, climb: no one is asked.
    AUTO = "auto"
    #: Profile, ask for the recommendation, ask an admin; change nothing until approved.
    APPROVE = "approve"
    #: Profile, ask for the recommendation, report what it would do; never change a knob.
    RECOMMEND = "recommend"


class AgentSection(_Section):
    #: auto, approve or recommend; a change takes effect after a restart.
    mode: Mode = Mode.AUTO
    #: Where the original-tuple state file, the status file and the spool live.
    state_dir: Path = Path("/var/lib/pooltune")
    #: Where the status goes while ``state_dir`` cannot be written (full, read-only).
    runtime_dir: Path = Path("/run/pooltune")
    #: Seconds between two samples (the climber's sampling period).
    sample_period_s: PositiveSeconds = 2.0
    #: Observation window for the workload profile.
    profile_window_s: PositiveSeconds = 30.0
    #: The profile is taken from a steady window: while the 2-s throughput samples of the
    #: last ``profile_window_s`` vary more than this (coefficient of variation), e.g. through
    #: a flush stall, the agent keeps observing ...
    profile_steady_cv: float = Field(default=0.35, gt=0.0, le=10.0, allow_inf_nan=False)
    #: ... for at most this long (default 3 × ``profile_window_s``), then profiles over all of
    #: it.
    profile_max_window_s: PositiveSeconds | None = None
    #: A climb that has not converged after this long is stopped at its best tuple.
    climb_max_s: PositiveSeconds = 600.0
    #: Samples to drop after each knob change (the change takes effect with a lag).
    settle_samples: int = Field(default=1, ge=0, le=10)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @model_validator(mode="after")
    def _max_window_covers_the_window(self) -> AgentSection:
        if self.profile_max_window_s is not None and (
            self.profile_max_window_s < self.profile_window_s
        ):
            raise ValueError(
                f"profile_max_window_s ({self.profile_max_window_s:g}) must be at least "
                f"profile_window_s ({self.profile_window_s:g})"
            )
        return self

    @property
    def profile_longest_window_s(self) -> float:
        """How long an unsteady workload is observed before it is profiled anyway."""
        if self.profile_max_window_s is not None:
            return self.profile_max_window_s
        return 3.0 * self.profile_window_s


class SimulatedTargetSection(_Section):
    """``[target.simulated]``: tune a simulated server (agents/sim) instead of a database."""

    #: Seeds the workload drawn and the server's noise.
    seed: int = 0
    #: Workload family: "cpu", "io", "lock" or "light"; random when unset.
    workload: Literal["cpu", "io", "lock", "light"] | None = None
    cores: int | None = Field(default=None, ge=1, le=4096)
    connections: int | None = Field(default=None, ge=0, le=100_000)
    #: Overrides of agents.sim.SimWorkload fields (cpu_ms, io_ms, think_ms, ...).
    params: dict[str, float] = Field(default_factory=dict)
    #: Coefficient of variation of the 2-second throughput samples (default 5%).
    noise_cv: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Hostname in the host facts; default "simulated-<seed>".
    hostname: str = ""


class PgBouncerTargetSection(_Section):
    """``[target.pgbouncer]``: the PostgreSQL behind PgBouncer and the pools to tune. The
    admin console is ``[target] host``/``port``/``user``/``password``."""

    postgres_host: str = "127.0.0.1"
    postgres_port: int = Field(default=5432, ge=1, le=65535)
    #: A role with pg_monitor (docs/pgbouncer.md, agents/packaging/README.md).
    postgres_user: str = "pooltune"
    postgres_password: SecretStr = SecretStr("")
    postgres_database: str = "postgres"
    #: PostgreSQL connections the pools may never take (the agent, monitoring, maintenance).
    reserve_connections: int = Field(default=5, ge=1, le=100_000)
    #: PgBouncer databases whose own pool_size the agent may change (ini edit + RELOAD);
    #: empty: only the [pgbouncer] section's settings (SET).
    pools: list[str] = Field(default_factory=list)
    #: pgbouncer.ini for per-database sizes; empty: SHOW CONFIG's ``conffile``.
    config_file: str = ""


class TargetSection(_Section):
    engine: Engine = Engine.MARIADB
    #: When present, the agent tunes a simulated server and the fields below are unused.
    simulated: SimulatedTargetSection | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=3306, ge=1, le=65535)
    #: Unix socket path; when set, ``host``/``port`` are only used for ``extra_port``.
    socket: str = ""
    #: None: use the server's ``extra_port`` when it has one; 0: never; N: this port.
    extra_port: int | None = Field(default=None, ge=0, le=65535)
    user: str = "pooltune"
    password: SecretStr = SecretStr("")
    connect_timeout_s: PositiveSeconds = 5.0
    #: Timeout of one statement of the agent (reads and SET GLOBAL).
    query_timeout_s: PositiveSeconds = 5.0
    #: "transactions": commits + rollbacks per second; "queries": statements per second.
    throughput_metric: Literal["transactions", "queries"] = "transactions"
    #: Install and switch on the query_response_time plugin to measure latency.
    enable_latency: bool = False
    #: The server's CPU count when the agent does not run on the database host.
    cpu_count: int | None = Field(default=None, ge=1, le=4096)
    #: PgBouncer only (``engine = "pgbouncer"``).
    pgbouncer: PgBouncerTargetSection = PgBouncerTargetSection()

    @model_validator(mode="before")
    @classmethod
    def _pgbouncer_port(cls, data: Any) -> Any:
        """``port`` defaults to PgBouncer's 6432 for ``engine = "pgbouncer"``."""
        if isinstance(data, Mapping) and "port" not in data and data.get("engine") == "pgbouncer":
            return {**data, "port": PGBOUNCER_PORT}
        return data


class ClimberSection(_Section):
    name: str = "pooltune"
    #: Knobs to climb, pool size first; default: the catalog's tuned knobs.
    knobs: list[str] = Field(default_factory=list)
    #: Passed to the climber's factory as its config.
    settings: dict[str, float | int | str | bool] = Field(default_factory=dict)


class SafetySection(_Section):
    #: Roll back when throughput stays below this share of the last good tuple's ...
    rollback_below: float = Field(default=0.5, gt=0.0, lt=1.0)
    #: ... for this many samples in a row.
    rollback_samples: int = Field(default=3, ge=1, le=100)
    #: Consecutive failed samples before the agent restores the original tuple and waits.
    max_failed_samples: int = Field(default=10, ge=1)


class ServiceSection(_Section):
    #: The service's base URL; empty: work offline (local heuristic, reports spooled).
    url: str = ""
    #: File holding the agent token written by ``pooltune-agent enroll``.
    token_file: Path | None = None
    timeout_s: PositiveSeconds = 10.0
    max_attempts: int = Field(default=4, ge=1, le=20)
    backoff_initial_s: PositiveSeconds = 0.5
    backoff_max_s: PositiveSeconds = 30.0
    #: Seconds between attempts to drain the spool while the service is down.
    drain_every_s: PositiveSeconds = 30.0
    spool_max_bytes: int = Field(default=50_000_000, ge=10_000)


class ApprovalSection(_Section):
    """``[approval]``: how an agent in ``approve`` or ``recommend`` mode waits and asks again."""

    #: The agent's own bound on a pending request (also its ``ttl_s``, which the service caps):
    #: no decision by then means doing nothing.
    wait_max_s: float = Field(default=86_400.0, ge=60.0, le=MAX_APPROVAL_TTL_S)
    #: Seconds between polls of a pending request: the first ...
    poll_initial_s: PositiveSeconds = 5.0
    #: ... growing by half each time up to this (and doubling while the service is down).
    poll_max_s: PositiveSeconds = 60.0
    #: After a rejected, expired or superseded request (or, in recommend mode, after a
    #: recommendation) the agent changes nothing for this long, then profiles and asks again.
    retry_after_s: PositiveSeconds = 86_400.0

    @model_validator(mode="after")
    def _poll_order(self) -> Self:
        if self.poll_max_s < self.poll_initial_s:
            raise ValueError(
                f"poll_max_s ({self.poll_max_s:g}) must be at least poll_initial_s "
                f"({self.poll_initial_s:g})"
            )
        return self


class AgentConfig(_Section):
    """The whole agent configuration (frozen)."""

    agent: AgentSection = AgentSection()
    target: TargetSection = TargetSection()
    #: Hard bounds per knob, ``name = [low, high]``, inside the catalog's bounds.
    bounds: dict[str, tuple[int, int]] = Field(default_factory=dict)
    climber: ClimberSection = ClimberSection()
    safety: SafetySection = SafetySection()
    service: ServiceSection = ServiceSection()
    approval: ApprovalSection = ApprovalSection()
    #: The token from the environment (never written to the file).
    agent_token: SecretStr | None = None

    @model_validator(mode="after")
    def _knobs_and_bounds(self) -> Self:
        catalog = knob_catalog.catalog(self.target.engine)
        for name in self.climber.knobs:
            if name not in catalog:
                raise ValueError(
                    f"climber.knobs: {name!r} is not a knob of {self.target.engine.value}; "
                    f"known: {', '.join(catalog)}"
                )
        for name, (low, high) in self.bounds.items():
            knob = catalog.get(name)
            if knob is None:
                raise ValueError(
                    f"bounds: {name!r} is not a knob of {self.target.engine.value}; "
                    f"known: {', '.join(catalog)}"
                )
            if low > high:
                raise ValueError(f"bounds.{name}: low ({low}) is above high ({high})")
            if low < knob.minimum or high > knob.maximum:
                raise ValueError(
                    f"bounds.{name} = [{low}, {high}] must lie inside the server's "
                    f"[{knob.minimum}, {knob.maximum}] ({knob.unit})"
                )
        return self

    @model_validator(mode="after")
    def _approval_needs_the_service(self) -> Self:
        if self.agent.mode is Mode.APPROVE and not self.service.url:
            raise ValueError(
                'agent.mode = "approve" asks an admin through the service: set [service] url '
                f"(or {ENV_SERVICE_URL})"
            )
        return self

    @property
    def tuned_knob_names(self) -> list[str]:
        if self.climber.knobs:
            return list(self.climber.knobs)
        return [k.name for k in knob_catalog.tuned_knobs(self.target.engine)]

    def knob_bounds(self, name: str) -> tuple[int, int]:
        """The hard bounds of ``name``: the config's, else the catalog's."""
        if name in self.bounds:
            return self.bounds[name]
        knob = knob_catalog.knob(self.target.engine, name)
        return (knob.minimum, knob.maximum)

    def clip(
        self, values: Mapping[str, int], *, names: Collection[str] | None = None
    ) -> dict[str, int]:
        """``values`` clipped into the hard bounds; with ``names``, only those knobs."""
        return {
            name: knob_catalog.clip_to_bounds(value, *self.knob_bounds(name))
            for name, value in values.items()
            if names is None or name in names
        }

    def outside_bounds(self, values: Mapping[str, int]) -> dict[str, int]:
        """The values of ``values`` that lie outside their knob's hard bounds."""
        return {
            name: value
            for name, value in values.items()
            if not self.knob_bounds(name)[0] <= value <= self.knob_bounds(name)[1]
        }

    @property
    def state_file(self) -> Path:
        return self.agent.state_dir / "original-tuple.json"

    @property
    def status_file(self) -> Path:
        return self.agent.state_dir / "status.json"

    @property
    def status_fallback_file(self) -> Path:
        """The status while ``status_file`` cannot be written, named after ``state_dir``
        (two agents on one host share the runtime directory)."""
        name = str(self.agent.state_dir).strip("/").replace("/", "-") or "root"
        return self.agent.runtime_dir / f"{name}.status.json"

    @property
    def spool_dir(self) -> Path:
        return self.agent.state_dir / "spool"

    @property
    def approval_file(self) -> Path:
        return self.agent.state_dir / "approval.json"

    @property
    def token_path(self) -> Path:
        return self.service.token_file or self.agent.state_dir / "agent-token"


def reloadable(running: AgentConfig, new: AgentConfig) -> AgentConfig:
    """``new`` as a running agent takes it on SIGHUP: ``[target]``, ``state_dir``,
    ``runtime_dir`` and ``mode`` keep their running values (they take effect after a
    restart)."""
    kept = {name: getattr(running.agent, name) for name in ("state_dir", "runtime_dir", "mode")}
    if new.target == running.target and all(getattr(new.agent, k) == v for k, v in kept.items()):
        return new
    logger.warning("[target], state_dir and mode changes take effect after a restart")
    return new.model_copy(
        update={"target": running.target, "agent": new.agent.model_copy(update=kept)}
    )


def reload_config(running: AgentConfig, load: Callable[[], AgentConfig]) -> AgentConfig | None:
    """The configuration ``load`` reads, :func:`reloadable` for a running agent; None
    (logged) when it cannot be read: a broken file must not stop a running agent."""
    try:
        return reloadable(running, load())
    except Exception as exc:
        logger.error("configuration not reloaded, keeping the running one: %s", exc)
        return None


def _format_validation_error(path: Path | str, exc: ValidationError) -> str:
    lines = [f"invalid configuration in {path}:"]
    for error in exc.errors():
        location = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key (check the spelling against the example config)"
        lines.append(f"  {location}: {message}")
    return "\n".join(lines)


def parse_config(
    data: Mapping[str, object], *, source: str = "<config>", env: Mapping[str, str] | None = None
) -> AgentConfig:
    """Validate ``data`` (a parsed TOML document) with the environment's overrides."""
    env = os.environ if env is None else env
    document: dict[str, object] = dict(data.items())
    if "agent_token" in document:
        raise ConfigError(
            f"invalid configuration in {source}:\n  agent_token: do not put the token in the "
            f"file; run `pooltune-agent enroll` or set {ENV_AGENT_TOKEN}"
        )
    target = dict(_section(document, "target", source))
    service = dict(_section(document, "service", source))
    if env.get(ENV_DB_PASSWORD):
        target["password"] = env[ENV_DB_PASSWORD]
    if env.get(ENV_PG_PASSWORD):
        pgbouncer = dict(_section(target, "pgbouncer", source))
        target["pgbouncer"] = pgbouncer | {"postgres_password": env[ENV_PG_PASSWORD]}
    if env.get(ENV_SERVICE_URL):
        service["url"] = env[ENV_SERVICE_URL]
    document["target"] = target
    document["service"] = service
    if env.get(ENV_AGENT_TOKEN):
        document["agent_token"] = env[ENV_AGENT_TOKEN]
    try:
        return AgentConfig.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(source, exc)) from None


def _section(document: Mapping[str, object], name: str, source: str) -> Mapping[str, object]:
    section = document.get(name, {})
    if not isinstance(section, Mapping):
        raise ConfigError(f"invalid configuration in {source}:\n  {name}: must be a [{name}] table")
    return section


def load_config(path: Path, *, env: Mapping[str, str] | None = None) -> AgentConfig:
    """Read, parse and validate the TOML file at ``path``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    return parse_config(data, source=str(path), env=env)


def read_agent_token(config: AgentConfig) -> str | None:
    """The agent token: the environment's, else the enrolled one, else None."""
    if config.agent_token is not None:
        return config.agent_token.get_secret_value()
    try:
        token = config.token_path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the agent token {config.token_path}: {exc}") from None
    return token or None
