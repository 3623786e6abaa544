"""Signing in to the console over HTTP, as a browser's form post would."""

from __future__ import annotations

import re

from httpx import AsyncClient, Response

NONCE = re.compile(r'name="nonce" value="([^"]+)"')
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


async def sign_in(client: AsyncClient, token: str, *, next_path: str = "") -> Response:
    form = await client.get("/console/login")
    match = NONCE.search(form.text)
    assert match is not None, form.text
    return await client.post(
        "/console/login", data={"nonce": match.group(1), "token": token, "next": next_path}
    )


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    assert match is not None, "the page has no form with a CSRF token"
    return match.group(1)
