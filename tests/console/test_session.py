"""Session cookies: signature, expiry, and the key's dependence on the admin token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from service.console import session as sessions

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
KEY = sessions.signing_key("server-secret", "admin-token-aaaaaaaaaaaa")


def test_a_signed_cookie_reads_back_until_it_expires() -> None:
    cookie = sessions.make_cookie(KEY, "sid123", NOW + timedelta(hours=1))
    read = sessions.read_cookie(KEY, cookie, now=NOW)
    assert read is not None and read.session_id == "sid123"
    assert sessions.read_cookie(KEY, cookie, now=NOW + timedelta(hours=1, seconds=1)) is None


def test_a_tampered_cookie_is_refused() -> None:
    cookie = sessions.make_cookie(KEY, "sid123", NOW + timedelta(hours=1))
    session_id, expiry, signature = cookie.split(".")
    later = str(int(expiry) + 86400)
    assert sessions.read_cookie(KEY, f"{session_id}.{later}.{signature}", now=NOW) is None
    assert sessions.read_cookie(KEY, f"other.{expiry}.{signature}", now=NOW) is None
    assert sessions.read_cookie(KEY, "garbage", now=NOW) is None
    assert sessions.read_cookie(KEY, None, now=NOW) is None


def test_a_new_admin_token_or_secret_invalidates_every_cookie() -> None:
    cookie = sessions.make_cookie(KEY, "sid123", NOW + timedelta(hours=1))
    rotated = sessions.signing_key("server-secret", "admin-token-bbbbbbbbbbbb")
    other_secret = sessions.signing_key("another-secret", "admin-token-aaaaaaaaaaaa")
    assert sessions.read_cookie(rotated, cookie, now=NOW) is None
    assert sessions.read_cookie(other_secret, cookie, now=NOW) is None


def test_csrf_tokens_belong_to_one_session_and_one_key() -> None:
    token = sessions.csrf_token(KEY, "sid123")
    assert sessions.csrf_valid(KEY, "sid123", token)
    assert not sessions.csrf_valid(KEY, "sid456", token)
    assert not sessions.csrf_valid(sessions.signing_key("s", "t" * 20), "sid123", token)
    assert not sessions.csrf_valid(KEY, "sid123", "")
    assert not sessions.csrf_valid(KEY, "sid123", None)
