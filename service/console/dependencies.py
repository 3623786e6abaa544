"""Who is signed in to the console, the signing key, and the checked form of a POST."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import Depends, Request

from service.config import Settings
from service.console import session as sessions
from service.db import SessionDep, utcnow

#: Most fields a console form may post (the largest is the approval form: a few knobs).
MAX_FORM_FIELDS = 100


class LoginRequiredError(Exception):
    """No valid session: the page answers with a redirect to the login form."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


class ConsolePageError(Exception):
    """Rendered as the console's error page with this status (never as JSON)."""

    def __init__(self, status_code: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.title = title
        self.detail = detail


def console_key(request: Request, session: SessionDep) -> bytes:
    """The key cookies and CSRF tokens are signed with (cached once its secret is stored)."""
    cached: bytes | None = getattr(request.app.state, "console_key", None)
    if cached is not None:
        return cached
    settings: Settings = request.app.state.settings
    configured = settings.console_secret.get_secret_value() if settings.console_secret else None
    secret, created = sessions.server_secret(session, configured)
    key = sessions.signing_key(secret, settings.admin_token.get_secret_value())
    if not created:
        request.app.state.console_key = key
    return key


KeyDep = Annotated[bytes, Depends(console_key)]


@dataclass(frozen=True, slots=True)
class ConsoleAdmin:
    """A signed-in admin: the session and the CSRF token its forms carry."""

    session_id: str
    csrf_token: str


def console_admin(request: Request, session: SessionDep, key: KeyDep) -> ConsoleAdmin:
    now = utcnow()
    cookie = sessions.read_cookie(key, request.cookies.get(sessions.COOKIE_NAME), now=now)
    if cookie is None or not sessions.session_alive(session, cookie.session_id, now=now):
        raise LoginRequiredError(request.url.path)
    return ConsoleAdmin(
        session_id=cookie.session_id, csrf_token=sessions.csrf_token(key, cookie.session_id)
    )


AdminDep = Annotated[ConsoleAdmin, Depends(console_admin)]


async def form_fields(request: Request) -> dict[str, str]:
    """The url-encoded body of a console form (the browser's default encoding)."""
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise ConsolePageError(415, "Unsupported form", "console forms are url-encoded")
    body = (await request.body()).decode("utf-8", errors="replace")
    try:
        pairs = parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError as exc:
        raise ConsolePageError(400, "Bad form", "the form has too many fields") from exc
    return dict(pairs)


FormDep = Annotated[dict[str, str], Depends(form_fields)]


def checked_form(admin: AdminDep, key: KeyDep, form: FormDep) -> dict[str, str]:
    """The form of a signed-in admin whose CSRF token is right; 403 otherwise."""
    if not sessions.csrf_valid(key, admin.session_id, form.get("csrf_token")):
        raise ConsolePageError(
            403, "Refused", "the form's CSRF token is missing or wrong; reload the page and retry"
        )
    return form


CheckedFormDep = Annotated[dict[str, str], Depends(checked_form)]
