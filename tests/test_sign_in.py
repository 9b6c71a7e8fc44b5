"""Signed, expiring sign-in tokens and password hashes (issue 35 item 1), by hand-made cases:
an altered byte, another secret, an expired token and a wrong password are each refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workbench.errors import WorkbenchError
from workbench.identity.sign_in import (
    Claims,
    InvalidToken,
    SignInError,
    check_password,
    hash_password,
    issue_token,
    read_token,
    session_hours,
)

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SECRET = b"s" * 48
CLAIMS = Claims("sid-1", "Zoë", "annotator", NOW + timedelta(hours=12))


def test_a_token_reads_back_its_claims_until_it_expires():
    token = issue_token(SECRET, CLAIMS)
    assert token.startswith("wb1.") and token.count(".") == 2
    assert read_token(SECRET, token, NOW) == CLAIMS  # a non-ASCII name survives
    with pytest.raises(InvalidToken, match="expired"):
        read_token(SECRET, token, NOW + timedelta(hours=12))


@pytest.mark.parametrize("spoil", [
    lambda t: t[:-2] + ("A" if t[-2] != "A" else "B") + t[-1],  # the signature
    lambda t: t.replace("wb1.", "wb1.x", 1),  # the payload
    lambda t: "wb2" + t[3:],  # the version
    lambda t: t.rsplit(".", 1)[0],  # no signature
    lambda t: "",
])
def test_an_altered_token_is_refused(spoil):
    with pytest.raises(InvalidToken) as info:
        read_token(SECRET, spoil(issue_token(SECRET, CLAIMS)), NOW)
    assert isinstance(info.value, WorkbenchError) and info.value.hint == "sign in again"


def test_a_role_cannot_be_raised_by_editing_the_payload():
    import base64
    import json

    prefix, payload, signature = issue_token(SECRET, CLAIMS).split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body["role"] = "admin"
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    with pytest.raises(InvalidToken, match="signature does not match"):
        read_token(SECRET, f"{prefix}.{forged}.{signature}", NOW)


def test_another_secret_does_not_read_the_token():
    with pytest.raises(InvalidToken, match="another secret"):
        read_token(b"t" * 48, issue_token(SECRET, CLAIMS), NOW)


def test_passwords_are_salted_and_checked():
    one, two = hash_password("correct horse"), hash_password("correct horse")
    assert one != two and one.startswith("pbkdf2_sha256$200000$")  # a salt each
    assert check_password("correct horse", one) and check_password("correct horse", two)
    assert not check_password("correct hors", one)
    assert not check_password("correct horse", "md5$1$x$y")
    assert not check_password("x", "garbage")
    with pytest.raises(SignInError):
        hash_password("")


def test_session_hours_are_a_setting_with_a_clear_error():
    assert session_hours({}) == 12.0
    assert session_hours({"WORKBENCH_SESSION_HOURS": "0.5"}) == 0.5
    for bad in ("zero", "0", "-3", "99999"):
        with pytest.raises(SignInError, match="WORKBENCH_SESSION_HOURS"):
            session_hours({"WORKBENCH_SESSION_HOURS": bad})
