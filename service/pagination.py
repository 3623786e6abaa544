"""Limit/offset pagination shared by the list routes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Query
from pydantic import BaseModel, Field

from agents.wire import INT32_MAX

MAX_PAGE_SIZE = 200

ItemT = TypeVar("ItemT")


class PageParams(BaseModel):
    limit: int = 50
    offset: int = 0

    def page(self, items: Sequence[ItemT], total: int) -> Page[ItemT]:
        """``items`` (already converted for the response) as this page of ``total``."""
        return Page[Any](items=list(items), total=total, limit=self.limit, offset=self.offset)


def page_params(
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE_SIZE, description="Items per page.", examples=[50])
    ] = 50,
    offset: Annotated[
        int, Query(ge=0, le=INT32_MAX, description="Items to skip.", examples=[0])
    ] = 0,
) -> PageParams:
    return PageParams(limit=limit, offset=offset)


PageDep = Annotated[PageParams, Depends(page_params)]


class Page(BaseModel, Generic[ItemT]):
    """One page of a list, newest first, with the total count for the same filters."""

    items: list[ItemT]
    total: int = Field(ge=0, description="Items matching the filters, over all pages.")
    limit: int
    offset: int
