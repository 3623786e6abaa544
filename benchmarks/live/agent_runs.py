"""The agent itself on a live server: in-process, with the real climber, alone (from its
local heuristic) or enrolled with a service (from its recommendation, or cold from the
tuple in force), watched by an independent :class:`Observer`. Any engine: the target comes
from the agent's own wiring (:func:`agents.wiring.make_target`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.climber.base import RESTART_EVENTS, Climber, ClimberEvent, EventKind, KnobSpace
from agents.config import AgentConfig, parse_config
from agents.service_client import ServiceClient, enroll_agent
from agents.targets.base import Target
from agents.wiring import assemble_agent, make_target
from benchmarks.live.cases import SAMPLE_S
from benchmarks.live.climb_record import record_inputs
from benchmarks.live.observer import Observer
from benchmarks.live.warm import WarmService


@dataclass(frozen=True)
class AgentRun:
    series: list[float]
    sizes: list[int]
    knob_changes: int
    #: The size the climb started from and where it came from (heuristic, model, …).
    start_size: int
    start_source: str
    #: What the climber decided and why, one line per event (:func:`event_lines`).
    events: list[str]
    #: When each sample of ``series`` ended (epoch seconds).
    times: list[float]
    #: What each climber of the run was fed, for an exact replay (:mod:`climb_record`).
    climber_inputs: list[dict[str, Any]]


def event_lines(events: list[ClimberEvent], knob: str) -> list[str]:
    """The climber's events as a live run keeps them: its step, the event, the size in
    force and the reason, so that a run shows which rule acted (a rollback, a change)."""
    return [f"{e.step} {e.kind.value} {e.knobs.get(knob, '?')}: {e.reason}" for e in events]


#: The event kinds that begin a climb again, as :func:`event_lines` writes them.
_RESTARTS = frozenset(kind.value for kind in RESTART_EVENTS)


def climb_ended(lines: Sequence[str]) -> bool:
    """Whether the last climb of :func:`run_event_lines` ended holding a tuple: a
    ``converged`` event with no restart, nor a new climber's ``climb N`` line, after it."""
    ended = False
    for line in lines:
        parts = line.split(maxsplit=2)
        kind = parts[1] if len(parts) > 1 else ""
        if kind == EventKind.CONVERGED.value:
            ended = True
        elif kind in _RESTARTS or parts[0] == "climb":
            ended = False
    return ended


def run_event_lines(climbers: Sequence[Climber], knob: str) -> list[str]:
    """The events of every climber of one agent run, in order: the agent starts a new
    climber when it profiles a changed workload, so each climb after the first is headed
    by a ``climb N`` line and none of the earlier ones is lost."""
    lines: list[str] = []
    for number, climber in enumerate(climbers, start=1):
        if number > 1:
            lines.append(f"climb {number}")
        lines += event_lines(climber.events, knob)
    return lines


def agent_config(
    target_section: Mapping[str, Any],
    *,
    knob: str,
    bounds: tuple[int, int],
    seconds: float,
    state_dir: Path,
    service: WarmService | None,
) -> AgentConfig:
    """The agent's configuration: ``[target]`` as given, the pool size ``knob`` only inside
    ``bounds``, measured every ``SAMPLE_S``."""
    return parse_config(
        {
            "agent": {
                "state_dir": str(state_dir),
                "sample_period_s": SAMPLE_S,
                "profile_window_s": 10.0,
                "climb_max_s": seconds,
                "log_level": "INFO",
            },
            "target": dict(target_section),
            "climber": {"knobs": [knob]},
            "bounds": {knob: list(bounds)},
        }
        | ({"service": {"url": service.url, "timeout_s": 30.0}} if service else {}),
        env={},  # the process environment does not configure the benchmark's agent
    )


def enrol(service: WarmService, target: Target) -> str:
    """Enrol this host with ``service`` once, as an agent keeps its token in its state
    directory; its agent token (the service refuses a second enrolment of a host)."""
    target.connect()
    facts = target.host_facts()
    key = f"{facts.engine}:{facts.hostname}"
    if key not in service.agent_tokens:
        credentials = enroll_agent(
            service.url, service.enrollment_token, facts, timeout_s=30.0, max_attempts=3
        )
        service.agent_tokens[key] = credentials.agent_token
    return service.agent_tokens[key]


def run_agent(
    config: AgentConfig,
    observer: Observer,
    seconds: float,
    *,
    service: WarmService | None = None,
    cold: bool = False,
) -> AgentRun:
    """The agent of ``config`` for ``seconds``: with ``service``, enrolled there and
    starting from its recommendation, or from the tuple in force when ``cold`` (it only
    uploads); without, from the local heuristic (no service). Its final tuple stays in
    force."""
    knob = observer.knob
    target = make_target(config, knobs=[knob])
    from benchmarks.fleet import ColdStartClient

    loop = assemble_agent(
        config,
        target=target,
        agent_token=enrol(service, target) if service is not None else None,
        client_class=ColdStartClient if cold else ServiceClient,
    )
    climbers: list[Climber] = []
    inputs: list[dict[str, Any]] = []
    factory = loop.climber_factory

    def recording_factory(space: KnobSpace, cpu_count: int) -> Climber:
        climber = factory(space, cpu_count)
        climbers.append(climber)
        inputs.append(record_inputs(climber))
        return climber

    loop.climber_factory = recording_factory
    loop.start()
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    sizes: list[int] = []
    times: list[float] = []
    series = observer.hold(seconds, sizes, times)
    loop.stop.set()
    thread.join(timeout=30)
    changes = loop.counters.knob_changes
    climb = loop.climb
    start_size = climb.start_tuple[knob] if climb is not None else (sizes[0] if sizes else 0)
    source = climb.source.value if climb is not None else "none"
    events = run_event_lines(climbers, knob)
    # Keep the agent's tuple in force for the final figure; shutdown would restore.
    loop.original.clear()
    loop.shutdown()
    return AgentRun(series, sizes, changes, start_size, source, events, times, inputs)
