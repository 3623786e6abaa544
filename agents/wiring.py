"""Assembles an agent from its configuration: target, climber, service client, spool, state.

``pooltune-agent run`` and the benchmarks build their agents with :func:`assemble_agent`,
so a benchmark runs the agent the daemon runs. A benchmark passes its own target, agent
token, service client class and clock; the service URL and the state directory come from
the configuration it builds (``parse_config``).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import TypeAdapter, ValidationError

from agents.climber import CONFIGS as CLIMBER_CONFIGS
from agents.climber import Climber, KnobSpace, make_climber
from agents.config import AgentConfig, ConfigError, load_config, read_agent_token
from agents.knobs import Engine
from agents.loop import AgentLoop, ClimberFactory
from agents.service_client import ServiceClient, Uploader, make_http_client
from agents.spool import Spool
from agents.targets.base import Target

if TYPE_CHECKING:
    from agents.pgbouncer.rotation import PoolRotation


def make_target(config: AgentConfig, *, knobs: Sequence[str] | None = None) -> Target:
    """The configured target (``[target]``, or ``[target.simulated]``), not connected yet;
    ``knobs``: the knobs it reads and changes (default: the tuned ones)."""
    simulated = config.target.simulated
    if simulated is not None:
        from agents.targets.simulated import SimulatedTarget

        try:
            return SimulatedTarget.from_settings(
                engine=config.target.engine, **simulated.model_dump()
            )
        except ValueError as exc:
            raise ConfigError(f"[target.simulated]: {exc}") from exc
    if config.target.engine in (Engine.MARIADB, Engine.PERCONA):
        from agents.targets.mariadb import MariaDBTarget

        tuned = list(knobs) if knobs is not None else config.tuned_knob_names
        return MariaDBTarget(config.target, tuned_knobs=tuned)
    if config.target.engine is Engine.PGBOUNCER:
        from agents.targets.pgbouncer import PgBouncerTarget

        tuned = list(knobs) if knobs is not None else config.tuned_knob_names
        return PgBouncerTarget(config.target, tuned_knobs=tuned)
    raise ConfigError(f"target.engine = {config.target.engine.value!r} is not supported yet")


def make_climber_factory(config: AgentConfig) -> ClimberFactory:
    """The configured climber (``[climber] name`` and ``settings``), via the climber
    package's factory. A wrong name or setting is a :class:`ConfigError` at start-up."""
    name = config.climber.name
    if name not in CLIMBER_CONFIGS:
        raise ConfigError(
            f"climber.name = {name!r} is unknown; known: {', '.join(CLIMBER_CONFIGS)}"
        )
    config_class = CLIMBER_CONFIGS[name]
    known = {f.name for f in dataclasses.fields(config_class)}
    unknown = sorted(set(config.climber.settings) - known)
    if unknown:
        raise ConfigError(
            f"climber.settings: unknown key(s) {', '.join(unknown)} for {name!r}; "
            f"known: {', '.join(sorted(known))}"
        )
    try:
        climber_config = TypeAdapter(config_class).validate_python(dict(config.climber.settings))
    except ValidationError as exc:
        raise ConfigError(f"invalid [climber] settings for {name!r}: {exc}") from exc

    def build(space: KnobSpace, cpu_count: int) -> Climber:
        return make_climber(name, knob_space=space, cpu_count=cpu_count, config=climber_config)

    return build


def make_service_client(
    config: AgentConfig,
    *,
    token: str | None = None,
    client_class: type[ServiceClient] = ServiceClient,
    stop: threading.Event | None = None,
) -> ServiceClient | None:
    """A client of ``[service] url`` with the agent ``token`` (default: the environment's or
    the enrolled one); None when no service is configured."""
    if not config.service.url:
        return None
    return client_class(
        make_http_client(config.service.url, timeout_s=config.service.timeout_s),
        token=token if token is not None else read_agent_token(config),
        max_attempts=config.service.max_attempts,
        backoff_initial_s=config.service.backoff_initial_s,
        backoff_max_s=config.service.backoff_max_s,
        stop=stop,
    )


def assemble_agent(
    config: AgentConfig,
    *,
    target: Target | None = None,
    agent_token: str | None = None,
    client_class: type[ServiceClient] = ServiceClient,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    config_path: Path | None = None,
) -> AgentLoop:
    """The agent's loop for ``config``: ``target`` (default :func:`make_target`), the
    configured climber, a ``client_class`` client of the service with ``agent_token``
    (default: the configured token) and the spool and state files under ``state_dir``;
    ``wall_clock`` dates the reports and the approval record (never a duration).
    With ``config_path``, SIGHUP re-reads that file and makes a new service client."""
    stop = stop or threading.Event()
    service = make_service_client(config, token=agent_token, client_class=client_class, stop=stop)
    uploader = Uploader(service, Spool(config.spool_dir, max_bytes=config.service.spool_max_bytes))
    loop = AgentLoop(
        config,
        target=target if target is not None else make_target(config),
        climber_factory=make_climber_factory(config),
        uploader=uploader,
        stop=stop,
        clock=clock,
        wall_clock=wall_clock,
    )
    if config_path is not None:
        path = config_path

        def reload_config() -> AgentConfig:
            """The new file, and a service client for its [service] and token (so `enroll`
            followed by a reload starts the uploads)."""
            new_config = load_config(path)
            previous = uploader.service
            uploader.service = make_service_client(
                new_config, token=agent_token, client_class=client_class, stop=stop
            )
            if previous is not None:
                previous.client.close()
            return new_config

        loop.config_loader = reload_config
    return loop


def assemble_daemon(
    config: AgentConfig,
    *,
    stop: threading.Event | None = None,
    config_path: Path | None = None,
) -> AgentLoop | PoolRotation:
    """What ``pooltune-agent run`` runs: :func:`assemble_agent`'s loop, or with
    ``[target.pgbouncer] pools`` one loop per pool climbed in turn
    (:class:`~agents.pgbouncer.rotation.PoolRotation`)."""
    if config.target.engine is not Engine.PGBOUNCER or not config.target.pgbouncer.pools:
        return assemble_agent(config, stop=stop, config_path=config_path)
    from agents.pgbouncer.rotation import PoolRotation
    from agents.targets.pgbouncer import PgBouncerTarget

    stop = stop or threading.Event()
    service = make_service_client(config, stop=stop)
    uploader = Uploader(service, Spool(config.spool_dir, max_bytes=config.service.spool_max_bytes))

    def make_loop(pool_config: AgentConfig, view: Target) -> AgentLoop:
        return AgentLoop(
            pool_config,
            target=view,
            climber_factory=make_climber_factory(pool_config),
            uploader=uploader,
            stop=stop,
        )

    return PoolRotation(
        config,
        target=PgBouncerTarget(config.target),
        make_loop=make_loop,
        stop=stop,
        config_loader=(lambda: load_config(config_path)) if config_path is not None else None,
    )
