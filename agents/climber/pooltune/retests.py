"""The re-tests of a climb, on fresh samples only: a change is kept when A/B/A shows its gain
(:meth:`Retests.confirm`), a verdict is taken again without the samples that chose it
(:meth:`Retests.retest`), and every visit of the reference is a witness of a workload change
(:meth:`Retests._witness`). Why: docs/climber.md ("Search", "Secondary knobs")."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping

from agents.climber.base import EventKind, KnobDim
from agents.climber.pooltune.change import Move, moved
from agents.climber.pooltune.config import PooltuneConfig
from agents.climber.pooltune.evidence import Comparison, Evidence, Rules, Verdict
from agents.climber.pooltune.line_search import Program, Request


class Retests:
    """The re-tests of :class:`~agents.climber.pooltune.search.Search`, which holds the
    climb's configuration, evidence and events."""

    _config: PooltuneConfig
    _evidence: Evidence
    _event: Callable[[EventKind, str], None]
    #: Why the climb must start again (the reference moved during the search), if so.
    changed: str | None

    def confirm(
        self, dim: KnobDim, before: dict[str, int], after: dict[str, int]
    ) -> Generator[Request, None, bool]:
        """A/B/A on fresh samples: ``after`` beats ``before`` beyond the noise and ε (a
        GUARD event says when it does not)."""
        cfg = self._config
        since = self._evidence.now
        yield from self._witness(before, cfg.visit_samples)
        yield (dict(after), cfg.visit_samples)
        yield from self._witness(before, cfg.visit_samples)
        while True:
            if self.changed is not None:
                return False
            readings = (
                self._evidence.readings(before, since=since),
                self._evidence.readings(after, since=since),
            )
            comparison = self._evidence.compare(
                *readings, final=False, rules=Rules(stay=True, z=cfg.confirm_z)
            )
            if comparison.verdict is Verdict.BETTER:
                return True
            if (
                comparison.verdict is Verdict.WORSE
                or self._evidence.gain_ruled_out(*readings, z=cfg.confirm_z)
                or len(self._evidence.since(after, since)) >= cfg.confirm_samples
            ):
                self._event(
                    EventKind.GUARD,
                    f"{dim.name}={after[dim.name]} not confirmed by a re-test: back to "
                    f"{before[dim.name]}",
                )
                return False
            yield (dict(after), cfg.visit_samples)
            yield from self._witness(before, cfg.visit_samples)

    def _witness(self, reference: Mapping[str, int], samples: int | None = None) -> Program:
        """Measure ``reference`` (``min_samples`` unless told), a witness of a workload change:
        if it moved from its earlier visits beyond the noise, the climb must start again. On
        a server seen to stall, a visit that fell is measured longer first."""
        samples = samples or self._config.min_samples
        yield (dict(reference), samples)
        move = moved(self._evidence, reference)
        # A stall only ever lowers throughput: a fall is looked at again, a rise is not.
        if move is not None and move.shift < 0 and self._evidence.stalls_seen():
            yield (dict(reference), samples)
            move = moved(self._evidence, reference)
        self._note_move(move)

    def retest(
        self, before: dict[str, int], after: dict[str, int], *, rules: Rules
    ) -> Generator[Request, None, Comparison]:
        """``after`` against ``before`` on fresh samples only, A/B/A/B, until the test tells
        or ``rules.max_samples`` of ``after`` force a verdict: the earlier samples chose
        ``after`` and are biased in its favour (the winner's curse)."""
        cfg = self._config
        visit = rules.visit_samples or cfg.visit_samples
        cap = rules.max_samples or cfg.max_samples
        since = self._evidence.now
        yield from self._witness(before, visit)
        yield (dict(after), visit)
        yield from self._witness(before, visit)
        while True:
            if self.changed is not None:
                return Comparison(Verdict.UNSURE)
            comparison = self._evidence.compare(
                self._evidence.readings(before, since=since),
                self._evidence.readings(after, since=since),
                final=len(self._evidence.since(after, since)) >= cap,
                rules=rules,
            )
            if comparison.verdict is not Verdict.UNSURE:
                return comparison
            yield (dict(after), visit)
            yield from self._witness(before, visit)

    def _note_move(self, move: Move | None) -> None:
        if move is not None and self.changed is None:
            self.changed = move.reason
