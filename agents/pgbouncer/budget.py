"""The hard rule on PgBouncer pool sizes, in one place.

PgBouncer opens up to ``pool_size`` (+ ``reserve_pool``) server connections per
(database, user) pool, and PostgreSQL refuses connections beyond ``max_connections`` −
``superuser_reserved_connections``. A pool size PgBouncer cannot get from PostgreSQL turns
into client errors, so the agent never applies sizes that break:

1. per database with a cap: Σ over its user pools of ``pool_size`` ≤ ``max_db_connections``
   (sizes above the cap do nothing: PgBouncer makes clients wait at the cap, so the climber
   would measure a flat line);
2. for the server: Σ over databases of min(cap, Σ over its pools of ``pool_size`` +
   ``reserve_pool``) ≤ ``max_connections`` − ``superuser_reserved_connections`` − reserve,
   where reserve is the connections the agent keeps free for everyone else (itself,
   monitoring, maintenance, replication).

Why caps above the server limit are only a note (not a refusal): see docs/pgbouncer.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class PoolPlan:
    """One PgBouncer database's pools as they are, or would be after a change."""

    database: str
    pool_size: int
    reserve_pool: int
    #: The cap in force for this database (its own ``max_db_connections``, else the
    #: global one); 0 means none.
    max_db_connections: int
    #: (database, user) pools of this database: 1 with a forced user, else the users seen.
    user_pools: int = 1

    @property
    def most_connections(self) -> int:
        """The most server connections this database's pools may open."""
        wanted = self.user_pools * (self.pool_size + self.reserve_pool)
        return min(wanted, self.max_db_connections) if self.max_db_connections > 0 else wanted


@dataclass(frozen=True, slots=True)
class PoolBudget:
    """PostgreSQL's connection limit and the share of it the pools may use."""

    max_connections: int
    superuser_reserved_connections: int
    #: Connections kept out of the pools' reach (``[target.pgbouncer] reserve_connections``).
    reserve: int

    @property
    def server_limit(self) -> int:
        """Server connections all pools together may open."""
        return self.max_connections - self.superuser_reserved_connections - self.reserve

    def describe_limit(self) -> str:
        return (
            f"PostgreSQL's max_connections {self.max_connections} − "
            f"superuser_reserved_connections {self.superuser_reserved_connections} − "
            f"reserve {self.reserve} = {self.server_limit}"
        )

    def check(self, plans: Sequence[PoolPlan]) -> str | None:
        """``None`` when ``plans`` keep the rule (module docstring), else why not."""
        if self.server_limit < 1:
            return f"no server connection is left for the pools: {self.describe_limit()}"
        for plan in plans:
            if plan.pool_size < 1:
                return f"database {plan.database}: pool_size {plan.pool_size} is below 1"
            total = plan.user_pools * plan.pool_size
            if 0 < plan.max_db_connections < total:
                pools = f"{plan.user_pools} pools × " if plan.user_pools > 1 else ""
                return (
                    f"database {plan.database}: Σ pool sizes {pools}{plan.pool_size} = {total} "
                    f"> max_db_connections {plan.max_db_connections}"
                )
        needed = sum(plan.most_connections for plan in plans)
        if needed > self.server_limit:
            parts = " + ".join(f"{plan.database} {plan.most_connections}" for plan in plans)
            return (
                f"the pools may open {parts} = {needed} server connections > "
                f"{self.describe_limit()}"
            )
        return None

    def uncapped_databases(self, plans: Sequence[PoolPlan]) -> list[str]:
        """Databases whose cap does not keep them inside the server limit by itself."""
        return [
            plan.database
            for plan in plans
            if plan.max_db_connections <= 0 or plan.max_db_connections > self.server_limit
        ]

    def largest_pool_size(
        self, plans: Sequence[PoolPlan], database: str, *, most: int
    ) -> tuple[int, str | None]:
        """The largest ``pool_size`` of ``database`` up to ``most`` that keeps the rule with
        the other databases as ``plans`` has them, and why no larger one does (None when
        ``most`` itself keeps it). 0 when even 1 breaks it. What a climb of that one pool
        may use while the others hold still."""
        if not any(plan.database == database for plan in plans):
            raise KeyError(f"no pool plan for database {database!r}")
        return largest_keeping(
            lambda size: self.check(
                [replace(p, pool_size=size) if p.database == database else p for p in plans]
            ),
            most=most,
        )


def largest_keeping(reason_at: Callable[[int], str | None], *, most: int) -> tuple[int, str | None]:
    """The largest size in [1, ``most``] whose ``reason_at`` is None (the rule holds; it
    must hold for every smaller size too), and the reason at the next size (None when
    ``most`` holds). 0 when even 1 breaks the rule."""
    if reason_at(most) is None:
        return most, None
    low, high = 0, most  # the rule holds at low (or low = 0), breaks at high
    while high - low > 1:
        middle = (low + high) // 2
        if reason_at(middle) is None:
            low = middle
        else:
            high = middle
    return low, reason_at(low + 1)


def budget_notes(
    budget: PoolBudget,
    plans: Sequence[PoolPlan],
    *,
    default_plans: Callable[[int], Sequence[PoolPlan]],
    most: int = 10_000,
) -> list[str]:
    """What ``pooltune-agent test`` and the agent's start say about the budget: the pools
    already break it, PgBouncer alone does not keep them within it, and the largest
    ``default_pool_size`` that keeps it (``default_plans(size)``: every plan with that
    default), beyond which the agent's changes are refused."""
    notes = []
    broken = budget.check(plans)
    if broken is not None:
        notes.append(f"the pools in force already break the rule: {broken}")
    uncapped = budget.uncapped_databases(plans)
    if uncapped:
        notes.append(
            f"max_db_connections does not keep {', '.join(uncapped)} within "
            f"{budget.describe_limit()}: the agent keeps its own sizes inside it, but "
            "PgBouncer alone would not"
        )
    if broken is None:
        ceiling, why = largest_keeping(lambda size: budget.check(default_plans(size)), most=most)
        if why is not None:
            notes.append(
                f"default_pool_size above {ceiling} breaks the rule ({why}): the agent "
                f"refuses such sizes; [bounds] default_pool_size = [1, {ceiling}] keeps its "
                "climbs inside"
            )
    return notes
