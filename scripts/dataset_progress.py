"""How the dataset builders report a sweep's progress: a log line every fifth visit and at
the last one, so a long run shows it is alive without a line per sample."""

from __future__ import annotations

import logging

from agents.sweep import Progress, ProgressCallback


def progress_logger(
    logger: logging.Logger, label: str, *, value: str = "value", unit: str = "/s"
) -> ProgressCallback:
    """A sweep's ``on_progress`` that logs ``label``'s visits to ``logger``; ``value``
    names the knob's value and ``unit`` the throughput's."""

    def report(progress: Progress) -> None:
        if progress.visit % 5 == 0 or progress.visit == progress.visits:
            logger.info(
                f"  %s visit %d/%d (repeat %d, {value} %d): %.0f{unit}, %.0fs left",
                label,
                progress.visit,
                progress.visits,
                progress.repeat,
                progress.value,
                progress.visit_mean,
                progress.remaining_s,
            )

    return report
