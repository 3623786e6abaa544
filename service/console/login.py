"""Sign-in and sign-out: the admin token once, exchanged for a signed session cookie."""

from __future__ import annotations

import hmac
import logging
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from service.config import Settings
from service.console import session as sessions
from service.console.dependencies import (
    CheckedFormDep,
    ConsolePageError,
    FormDep,
    KeyDep,
    LoginRequiredError,
    console_admin,
)
from service.console.templating import SECURITY_HEADERS, render
from service.db import SessionDep, utcnow

logger = logging.getLogger(__name__)

router = APIRouter(include_in_schema=False)

FLEET = "/console/fleet"
LOGIN = "/console/login"
LOGIN_NONCE_MAX_AGE_S = 3600


def safe_next(path: str | None) -> str:
    """Where to go after sign-in: a console path only (never another site)."""
    if path and path.startswith("/console/") and "//" not in path and "\\" not in path:
        return path
    return FLEET


def _secure(request: Request) -> bool:
    settings: Settings = request.app.state.settings
    return request.url.scheme == "https" or settings.console_secure_cookies


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, status_code=303, headers={"Cache-Control": "no-store"})


def _login_form(
    request: Request, *, next_path: str, error: str | None, status_code: int
) -> HTMLResponse:
    nonce = sessions.new_login_nonce()
    response = render(
        "login.html",
        {"admin": None, "nonce": nonce, "next": next_path, "error": error, "nav": ""},
        status_code=status_code,
    )
    response.set_cookie(
        sessions.LOGIN_COOKIE_NAME,
        nonce,
        max_age=LOGIN_NONCE_MAX_AGE_S,
        path=LOGIN,
        httponly=True,
        secure=_secure(request),
        samesite="strict",
    )
    return response


@router.get("/")
def root(request: Request, session: SessionDep, key: KeyDep) -> Response:
    """The console: the fleet when signed in, else the login form."""
    try:
        console_admin(request, session, key)
    except LoginRequiredError:
        return _redirect(LOGIN)
    return _redirect(FLEET)


@router.get("/console")
@router.get("/console/")
def console_root() -> Response:
    return _redirect(FLEET)


@router.get(LOGIN)
def login_form(
    request: Request, next_path: Annotated[str | None, Query(alias="next")] = None
) -> HTMLResponse:
    return _login_form(request, next_path=safe_next(next_path), error=None, status_code=200)


@router.post(LOGIN)
def login(request: Request, session: SessionDep, key: KeyDep, form: FormDep) -> Response:
    nonce_cookie = request.cookies.get(sessions.LOGIN_COOKIE_NAME)
    nonce = form.get("nonce", "")
    if not nonce_cookie or not nonce or not hmac.compare_digest(nonce_cookie, nonce):
        raise ConsolePageError(
            403, "Refused", "the login form's CSRF token is missing or wrong; reload the page"
        )
    settings: Settings = request.app.state.settings
    supplied = form.get("token", "")
    next_path = safe_next(form.get("next"))
    if not hmac.compare_digest(supplied.encode(), settings.admin_token.get_secret_value().encode()):
        logger.warning("console sign-in refused: wrong admin token")
        return _login_form(
            request, next_path=next_path, error="That is not the admin token.", status_code=401
        )
    started = sessions.start_session(session, hours=settings.console_session_hours)
    logger.info(
        "console sign-in", extra={"session": sessions.session_hash(started.session_id)[:12]}
    )
    response = _redirect(next_path)
    response.set_cookie(
        sessions.COOKIE_NAME,
        sessions.make_cookie(key, started.session_id, started.expires_at),
        expires=started.expires_at,
        path="/",
        httponly=True,
        secure=_secure(request),
        samesite="strict",
    )
    response.delete_cookie(sessions.LOGIN_COOKIE_NAME, path=LOGIN, httponly=True, samesite="strict")
    return response


@router.post("/console/logout")
def logout(request: Request, session: SessionDep, _form: CheckedFormDep, key: KeyDep) -> Response:
    cookie = sessions.read_cookie(key, request.cookies.get(sessions.COOKIE_NAME), now=utcnow())
    if cookie is not None:
        sessions.end_session(session, cookie.session_id)
    response = _redirect(LOGIN)
    response.delete_cookie(
        sessions.COOKIE_NAME, path="/", httponly=True, secure=_secure(request), samesite="strict"
    )
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response
