"""Signed, expiring sign-in tokens and password hashes: the pure half of "identity that holds".

A token says who signed in, with which role, until when, and which stored sign-in it belongs
to (``sid``, so signing out can revoke it)::

    wb1.<base64url(JSON {"sid", "name", "role", "exp"})>.<base64url(HMAC-SHA256)>

The HMAC key is the workbench's session secret (``WORKBENCH_SESSION_SECRET``, or one the
store makes once and keeps): a token cannot be forged or altered without it, and
:func:`read_token` checks the signature in constant time before it looks at anything else.
Whether a valid token is still *live* (not signed out, the person still on the roster) is
the store's question (``store.people``).

Passwords (optional, per person on the roster) are kept as PBKDF2-SHA256 hashes with a
random salt; :func:`check_password` compares in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from workbench.errors import WorkbenchError
from workbench.settings import SESSION_HOURS

PREFIX = "wb1"
DEFAULT_HOURS = 12.0
PBKDF2_ITERATIONS = 200_000  # ~0.1 s on one core: cheap for a sign-in, dear for a guesser


class InvalidToken(WorkbenchError, ValueError):
    """A token that is malformed, altered, signed with another secret, or expired."""


class SignInError(WorkbenchError, ValueError):
    """A sign-in refused (unknown name, wrong password, bad settings): nothing was signed in."""


@dataclass(frozen=True)
class Claims:
    sid: str
    name: str
    role: str
    expires: datetime


def session_hours(environ: dict[str, str] | None = None) -> float:
    """How long a sign-in lasts (``WORKBENCH_SESSION_HOURS``, default 12)."""
    raw = (SESSION_HOURS.read(environ, "") or "").strip()
    if not raw:
        return DEFAULT_HOURS
    try:
        hours = float(raw)
    except ValueError:
        hours = -1.0
    if not 0 < hours <= 24 * 90:
        raise SignInError(f"{SESSION_HOURS.name}={raw!r} is not a number of hours from 0 to 2160",
                          f"set {SESSION_HOURS.name} to e.g. 12, or unset it for the default of 12 hours")
    return hours


def new_sid() -> str:
    return secrets.token_urlsafe(18)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, f"{PREFIX}.{payload}".encode("ascii"), hashlib.sha256).digest())


def issue_token(secret: bytes, claims: Claims) -> str:
    """The signed token for ``claims`` (``expires`` timezone-aware)."""
    body = {"sid": claims.sid, "name": claims.name, "role": claims.role,
            "exp": int(claims.expires.timestamp())}
    payload = _b64(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    return f"{PREFIX}.{payload}.{_sign(secret, payload)}"


def read_token(secret: bytes, token: str, now: datetime) -> Claims:
    """The claims of a token signed with ``secret`` that has not expired at ``now``; raises
    :class:`InvalidToken` saying which check failed (never which byte)."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3 or parts[0] != PREFIX:
        raise InvalidToken("the sign-in token is not one this workbench issues", "sign in again")
    payload, signature = parts[1], parts[2]
    if not hmac.compare_digest(signature, _sign(secret, payload)):
        raise InvalidToken("the sign-in token's signature does not match (altered, or signed "
                           "with another secret)", "sign in again")
    try:
        body = json.loads(_unb64(payload).decode("utf-8"))
        claims = Claims(str(body["sid"]), str(body["name"]), str(body["role"]),
                        datetime.fromtimestamp(int(body["exp"]), UTC))
    except (ValueError, KeyError, TypeError) as exc:  # signed by us, so only a format change
        raise InvalidToken(f"the sign-in token cannot be read ({exc})", "sign in again") from None
    if claims.expires <= now:
        raise InvalidToken("your sign-in has expired", "sign in again")
    return claims


def expiry(now: datetime, hours: float) -> datetime:
    return now + timedelta(hours=hours)


def hash_password(password: str, salt: bytes | None = None) -> str:
    """``pbkdf2_sha256$<iterations>$<salt>$<hash>`` for ``password``."""
    if not password:
        raise SignInError("an empty password cannot be set", "give a password, or none at all")
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, PBKDF2_ITERATIONS)
    return f"pbkdf2_sha256${PBKDF2_ITERATIONS}${_b64(salt)}${_b64(digest)}"


def check_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches the hash ``stored`` (False for a malformed hash)."""
    try:
        scheme, iterations, salt, digest = stored.split("$")
        if scheme != "pbkdf2_sha256":
            return False
        got = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), _unb64(salt), int(iterations))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(_b64(got), digest)
