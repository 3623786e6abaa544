"""The dataset catalogs by version: ``--dataset v1`` (kept reproducible), ``v2`` and ``v3``
(v2's cases, each size held longer and visited more often) and ``v4`` (v2's cases by paired
sweeps)."""

from __future__ import annotations

from scripts.mariadb_dataset import catalog_v1, catalog_v2, catalog_v3, catalog_v4
from scripts.mariadb_dataset.cases import Catalog

CATALOGS: dict[str, Catalog] = {
    c.version: c
    for c in (catalog_v1.CATALOG, catalog_v2.CATALOG, catalog_v3.CATALOG, catalog_v4.CATALOG)
}
LATEST = "v2"


def catalog(version: str) -> Catalog:
    """The catalog ``version``; a ValueError naming the known ones otherwise."""
    try:
        return CATALOGS[version]
    except KeyError:
        raise ValueError(f"no dataset catalog {version!r}; known: {', '.join(CATALOGS)}") from None
