"""The catalog of ``mariadb-<cores>core-v3``: v2's cases (the same workloads, clients,
servers and grids), each pool size held 10 s instead of 5 and the grid visited four times
instead of three, so a case keeps 32 samples per size where v2 kept 9.

Why: v2's sweeps do not resolve their own best sizes. Choosing a case's best size from all
its visits but one and scoring it on the visit left out regrets 0.120 of throughput, three
quarters of the engine default's 0.161 (docs/trainer.md, "What a real sweep resolves"), so
no model can be shown to halve the default's regret on them. Longer and more visits shrink
what a size's mean is uncertain by within a visit; the first 16 cases measured show that the
server's level moving between visits still decides the best (docs/datasets.md, "What v3
measures and why").
"""

from __future__ import annotations

from dataclasses import replace

from scripts.mariadb_dataset import catalog_v2
from scripts.mariadb_dataset.cases import FULL_TIMING

#: v2's timing with each size held twice as long (8 kept 1-s samples a visit) and 4 visits.
LONG_TIMING = replace(FULL_TIMING, dwell_s=10.0, repeats=4)

CATALOG = replace(
    catalog_v2.CATALOG,
    version="v3",
    timing=LONG_TIMING,
    summary=catalog_v2.CATALOG.summary
    + " The same cases as v2, each pool size held 10 s per visit and visited four times.",
)
