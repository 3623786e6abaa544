"""The knob space: the catalog's knobs narrowed to the operator's bounds."""

from __future__ import annotations

import math

import pytest

from agents import knobs
from agents.climber import KnobSpace


def test_clip_rounds_like_the_catalog_inside_the_operators_bounds() -> None:
    space = KnobSpace.from_engine("mariadb", 4, bounds={"thread_pool_size": (2, 32)})
    catalog_size = knobs.knob("mariadb", "thread_pool_size")
    for value in (2.4, 2.5, 7.5, 8.5, 31.6):
        assert space.size.clip(value) == catalog_size.clip(value)
    assert space.clip({"thread_pool_size": 40}) == {
        "thread_pool_size": 32,
        "thread_pool_oversubscribe": 3,
        "thread_pool_stall_limit": 500,
    }
    assert space.clip({"thread_pool_size": 0, "thread_pool_stall_limit": 10**9}) == {
        "thread_pool_size": 2,
        "thread_pool_oversubscribe": 3,
        "thread_pool_stall_limit": 60000,
    }
    assert space.size.from_unit(math.log2(5)) == 5
    assert space.size.from_unit(10.0) == 32


def test_the_default_is_clipped_into_the_bounds() -> None:
    space = KnobSpace.from_engine("mariadb", 64, bounds={"thread_pool_size": (2, 32)})
    assert space.size.default == 32  # the CPU count, inside the bounds
    assert space.defaults()["thread_pool_oversubscribe"] == 3


def test_bounds_outside_the_catalog_leave_no_room() -> None:
    with pytest.raises(ValueError, match="thread_pool_size: low 200 is above high 128"):
        KnobSpace.from_engine("mariadb", 4, bounds={"thread_pool_size": (200, 300)})
