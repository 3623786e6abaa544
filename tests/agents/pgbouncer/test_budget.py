"""The pool budget: Σ pool sizes ≤ max_db_connections ≤ max_connections − reserved − reserve."""

from __future__ import annotations

from agents.pgbouncer.budget import PoolBudget, PoolPlan

BUDGET = PoolBudget(max_connections=100, superuser_reserved_connections=3, reserve=7)


def plan(database: str, size: int, **options: int) -> PoolPlan:
    return PoolPlan(
        database=database,
        pool_size=size,
        reserve_pool=options.get("reserve", 0),
        max_db_connections=options.get("cap", 0),
        user_pools=options.get("users", 1),
    )


def test_the_server_limit_leaves_out_reserved_and_reserve() -> None:
    assert BUDGET.server_limit == 90
    assert BUDGET.check([plan("a", 45), plan("b", 45)]) is None


def test_pools_over_the_server_limit_are_refused_with_the_sum() -> None:
    reason = BUDGET.check([plan("a", 45), plan("b", 46)])
    assert reason == (
        "the pools may open a 45 + b 46 = 91 server connections > PostgreSQL's "
        "max_connections 100 − superuser_reserved_connections 3 − reserve 7 = 90"
    )


def test_reserve_pools_and_user_pools_count() -> None:
    assert BUDGET.check([plan("a", 40, reserve=6)]) is None
    assert BUDGET.check([plan("a", 40, reserve=6), plan("b", 44)]) is None
    assert "a 46 + b 45 = 91" in (BUDGET.check([plan("a", 40, reserve=6), plan("b", 45)]) or "")
    # Two users of one database: two pools of 40.
    assert "a 80 + b 11 = 91" in (BUDGET.check([plan("a", 40, users=2), plan("b", 11)]) or "")


def test_a_database_cap_bounds_what_it_may_open() -> None:
    # Capped at 30, a pool of 25 with a reserve of 10 opens at most 30.
    assert BUDGET.check([plan("a", 25, reserve=10, cap=30), plan("b", 60)]) is None


def test_sizes_above_max_db_connections_are_refused() -> None:
    reason = BUDGET.check([plan("a", 12, cap=20, users=2)])
    assert reason == "database a: Σ pool sizes 2 pools × 12 = 24 > max_db_connections 20"
    assert BUDGET.check([plan("a", 10, cap=20, users=2)]) is None


def test_no_room_at_all_refuses_everything() -> None:
    tiny = PoolBudget(max_connections=10, superuser_reserved_connections=3, reserve=7)
    assert "no server connection is left" in (tiny.check([plan("a", 1)]) or "")


def test_uncapped_databases_are_named() -> None:
    plans = [plan("a", 10, cap=50), plan("b", 10), plan("c", 10, cap=200)]
    assert BUDGET.uncapped_databases(plans) == ["b", "c"]


def test_the_largest_pool_size_keeps_the_rule_with_the_others_as_they_are() -> None:
    plans = [plan("a", 20), plan("b", 30)]
    size, why = BUDGET.largest_pool_size(plans, "a", most=10_000)
    assert size == 60  # 90 − b's 30
    assert why is not None and "a 61 + b 30 = 91" in why
    assert BUDGET.check([plan("a", size), plan("b", 30)]) is None
    # Below the most asked for, nothing says no.
    assert BUDGET.largest_pool_size(plans, "a", most=40) == (40, None)


def test_the_largest_pool_size_counts_reserves_users_and_caps() -> None:
    plans = [plan("a", 5, reserve=4, users=2), plan("b", 10, cap=25)]
    # b opens at most 10; a opens 2 × (size + 4) ≤ 80, so size ≤ 36.
    assert BUDGET.largest_pool_size(plans, "a", most=1000)[0] == 36
    # b's own cap: 25.
    size, why = BUDGET.largest_pool_size(plans, "b", most=1000)
    assert size == 25 and why is not None and "> max_db_connections 25" in why


def test_no_room_for_one_more_pool_is_size_zero() -> None:
    plans = [plan("a", 1), plan("b", 90)]
    size, why = BUDGET.largest_pool_size(plans, "a", most=50)
    assert size == 0
    assert why is not None and "a 1 + b 90 = 91" in why
