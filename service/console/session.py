"""Console sessions: a signed cookie naming a stored session, and the CSRF tokens of its forms.

The signing key is HMAC(server secret, admin token): changing the admin token (or the secret)
changes the key, so every cookie signed before stops verifying. The cookie is
``<session id>.<expiry>.<signature>``; the database keeps sha256(session id) so a logout
revokes the session even though the cookie would still verify. Forms carry
HMAC(key, "csrf" + session id). Why and how: docs/console.md, "Sign-in and sessions".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from service.console.models import ConsoleSecret, ConsoleSession
from service.db import insert_ignoring_conflict, utcnow

COOKIE_NAME = "pooltune_session"
LOGIN_COOKIE_NAME = "pooltune_login"
SECRET_NAME = "session-signing"
_KEY_LABEL = b"pooltune-console-session-v1\x00"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signing_key(server_secret: str, admin_token: str) -> bytes:
    """The key every cookie and CSRF token is signed with: secret and admin token together."""
    return hmac.new(
        server_secret.encode(), _KEY_LABEL + admin_token.encode(), hashlib.sha256
    ).digest()


def _sign(key: bytes, message: str) -> str:
    return _b64(hmac.new(key, message.encode(), hashlib.sha256).digest())


def session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CookieSession:
    session_id: str
    expires_at: datetime


def make_cookie(key: bytes, session_id: str, expires_at: datetime) -> str:
    payload = f"{session_id}.{int(expires_at.timestamp())}"
    return f"{payload}.{_sign(key, payload)}"


def read_cookie(key: bytes, value: str | None, *, now: datetime) -> CookieSession | None:
    """The session a cookie names, if its signature holds and it has not expired."""
    if not value or len(value) > 512:
        return None
    parts = value.split(".")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    session_id, expiry, signature = parts
    if not hmac.compare_digest(signature, _sign(key, f"{session_id}.{expiry}")):
        return None
    expires_at = datetime.fromtimestamp(int(expiry), tz=now.tzinfo)
    if expires_at <= now:
        return None
    return CookieSession(session_id=session_id, expires_at=expires_at)


def csrf_token(key: bytes, session_id: str) -> str:
    return _sign(key, f"csrf\x00{session_id}")


def csrf_valid(key: bytes, session_id: str, supplied: str | None) -> bool:
    return bool(supplied) and hmac.compare_digest(str(supplied), csrf_token(key, session_id))


def new_login_nonce() -> str:
    """The login form's CSRF value (double submit: a cookie and a hidden field, equal)."""
    return secrets.token_urlsafe(24)


def server_secret(session: Session, configured: str | None) -> tuple[str, bool]:
    """POOLTUNE_CONSOLE_SECRET, or the database's secret (created once, shared by replicas).

    The flag says whether this call created it: a secret not yet committed must not be
    cached, since the transaction may still roll back.
    """
    if configured:
        return configured, False
    created = insert_ignoring_conflict(
        session,
        ConsoleSecret.__table__,
        {"name": SECRET_NAME, "value": secrets.token_urlsafe(48), "created_at": utcnow()},
        conflict_columns=["name"],
    )
    value = session.scalar(select(ConsoleSecret.value).where(ConsoleSecret.name == SECRET_NAME))
    assert value is not None  # inserted above or by a concurrent request
    return value, created is not None


def start_session(session: Session, *, hours: float, now: datetime | None = None) -> CookieSession:
    """A new session (a fresh id at every sign-in); expired rows are cleared on the way."""
    now = now or utcnow()
    session.execute(delete(ConsoleSession).where(ConsoleSession.expires_at <= now))
    session_id = secrets.token_urlsafe(32)
    expires_at = (now + timedelta(hours=hours)).replace(microsecond=0)
    session.add(ConsoleSession(id=session_hash(session_id), created_at=now, expires_at=expires_at))
    session.flush()
    return CookieSession(session_id=session_id, expires_at=expires_at)


def session_alive(session: Session, session_id: str, *, now: datetime) -> bool:
    row = session.get(ConsoleSession, session_hash(session_id))
    return row is not None and row.revoked_at is None and row.expires_at > now


def end_session(session: Session, session_id: str, *, now: datetime | None = None) -> None:
    row = session.get(ConsoleSession, session_hash(session_id))
    if row is not None and row.revoked_at is None:
        row.revoked_at = now or utcnow()
        session.flush()
