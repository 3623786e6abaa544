"""One periodic loop with a stop event, a deadline per iteration and a survival policy.

Expected errors (a lost connection, a server restarting) are warnings with counters and a
capped backoff; anything else is logged with its traceback and survived; only the errors
a subclass calls fatal leave :meth:`PeriodicLoop.iterate`. A subclass says what one
iteration does (``_iterate``) and what always follows it (``_after_iteration``).
"""

from __future__ import annotations

import faulthandler
import logging
import threading
from collections.abc import Callable

from agents.status import Counters

logger = logging.getLogger(__name__)

#: The longest wait after failed iterations, seconds.
MAX_BACKOFF_S = 30.0


class PeriodicLoop:
    """Runs ``_iterate`` every :attr:`period_s` until the stop event is set."""

    #: Errors expected on a live server: a warning, a counter, a backoff.
    expected_errors: tuple[type[Exception], ...] = ()
    #: Errors that leave :meth:`iterate` (the loop cannot do its job at all).
    fatal_errors: tuple[type[Exception], ...] = ()

    def __init__(
        self, *, stop: threading.Event | None, clock: Callable[[], float], counters: Counters
    ) -> None:
        self.stop = stop or threading.Event()
        self.reload_requested = threading.Event()
        self.clock = clock
        self.counters = counters
        self._consecutive_failures = 0

    @property
    def period_s(self) -> float:
        raise NotImplementedError

    def _iterate(self) -> None:
        raise NotImplementedError

    def _after_iteration(self) -> None:
        """Runs after every iteration, failed or not."""

    def _after_failure(self) -> None:
        """Runs after a failed iteration, before the backoff."""

    def _reload(self) -> None:
        """Runs before the next iteration once :attr:`reload_requested` is set (SIGHUP)."""

    def run(self, *, max_iterations: int | None = None) -> None:
        """Loop until the stop event is set (or ``max_iterations`` ran: tests)."""
        iterations = 0
        next_deadline = self.clock()
        while not self.stop.is_set():
            if self.reload_requested.is_set():
                self.reload_requested.clear()
                self._reload()
            period = self.period_s
            next_deadline += period
            # A stuck iteration (a hung socket, a blocked disk) dumps every thread's stack
            # to stderr, so the operator sees where it hangs.
            faulthandler.dump_traceback_later(max(30.0, 10 * period), repeat=False)
            try:
                self.iterate()
            finally:
                faulthandler.cancel_dump_traceback_later()
            iterations += 1
            if max_iterations is not None and iterations >= max_iterations:
                break
            now = self.clock()
            if now > next_deadline:
                overrun = now - next_deadline
                if overrun > period:
                    logger.warning("iteration overran its deadline by %.2fs", overrun)
                next_deadline = now
            else:
                self.stop.wait(next_deadline - now)

    def iterate(self) -> None:
        """One iteration; raises only the :attr:`fatal_errors`."""
        try:
            self._iterate()
            self._consecutive_failures = 0
        except self.fatal_errors:
            raise
        except self.expected_errors as exc:
            self._failed(type(exc).__name__, exc)
        except Exception as exc:  # the loop survives anything one iteration can throw
            self.counters.unexpected_errors += 1
            logger.exception("unexpected error in the agent loop (survived): %s", exc)
            self._failed(type(exc).__name__, exc)
        finally:
            self._after_iteration()

    def _failed(self, kind: str, exc: BaseException) -> None:
        self.counters.failed_samples += 1
        self.counters.count_error(kind)
        self._consecutive_failures += 1
        self._after_failure()
        backoff = min(MAX_BACKOFF_S, self.period_s * 2 ** min(self._consecutive_failures - 1, 5))
        logger.warning(
            "sample failed (%s: %s); %d in a row, next try in %.1fs",
            kind,
            exc,
            self._consecutive_failures,
            backoff,
        )
        self.stop.wait(backoff)
