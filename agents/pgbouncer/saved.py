"""How PgBouncer pool sizes are written in the agent's state file.

The state file maps names to the values to put back. ``[pgbouncer]`` settings are saved
under their own name (``default_pool_size``: an integer). A database's own pool size is
saved under ``pool_size@<database>``, and ``null`` when the database had none (it followed
``default_pool_size``): a restore then removes the option instead of writing the default
in, so the database goes on following the default. See docs/pgbouncer.md, "Several pools".
"""

from __future__ import annotations

from collections.abc import Mapping

from agents import knobs as knob_catalog
from agents.knobs import Engine

POOL_KEY_PREFIX = "pool_size@"


def pool_key(database: str) -> str:
    """The state file's name for ``database``'s own pool size."""
    return f"{POOL_KEY_PREFIX}{database}"


def split_saved(
    values: Mapping[str, int | None],
) -> tuple[dict[str, int], dict[str, int | None]]:
    """``values`` of a state file as (``[pgbouncer]`` settings, own pool sizes by
    database). Raises ValueError naming a key that is neither, or a setting without a
    value."""
    settings: dict[str, int] = {}
    pools: dict[str, int | None] = {}
    catalog = knob_catalog.catalog(Engine.PGBOUNCER)
    for name, value in values.items():
        if name.startswith(POOL_KEY_PREFIX) and len(name) > len(POOL_KEY_PREFIX):
            pools[name.removeprefix(POOL_KEY_PREFIX)] = value
        elif name in catalog:
            if value is None:
                raise ValueError(f"{name} has no value to put back")
            settings[name] = value
        else:
            raise ValueError(
                f"{name!r} is neither a PgBouncer setting nor {POOL_KEY_PREFIX}<database>"
            )
    return settings, pools
