"""One rule for showing or storing an endpoint address: credentials in it are masked.

An api_base like ``http://user:PASSWORD@host/v1`` or ``https://host/v1?api-key=K`` carries
a secret, and addresses travel far: the endpoint log in the store, error messages (traces,
the store, the CLI, the pages), hints, logs and the Settings page. Keys given as keys are
never stored; an address gets the same care through :func:`redact_url` (one address) and
:func:`redact_text` (any text that may hold one: an error from litellm or httpx quotes the
URL it called). Masked: the whole user-info (a username can itself be a token) and the
value of every query or fragment parameter whose name looks secret (``api-key``, ``key``,
``token``, ``secret``, ``password``, ``sig``, ...). The host, port, path and other
parameters stay, so the address still says where calls went.

Only what the workbench writes or shows is masked; the request itself still goes to the
real address.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import urlsplit

MASK = "***"
# A parameter name "looks secret" when it contains one of these (case-insensitive):
# api-key, api_key, apikey, key, x-api-key, token, access_token, secret, client_secret,
# password, passwd, pwd, sig, signature, auth, authorization, credential, session.
_SECRET_NAME = re.compile(r"key|token|secret|pass|pwd|sig|auth|credential|session", re.I)
# An absolute URL inside free text: a scheme, "://", then anything up to a space or a quote.
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s'\"<>`]+")
# user-info of an address whose scheme was cut off ("user:pw@host" quoted alone).
# A secret-looking parameter anywhere in text: a server's error may echo the path and query
# it was asked for ("no route /v1/?api-key=K").
_TEXT_PARAM = re.compile(r"([?&;#])([\w.\-\[\]]*)=([^\s&#;'\"<>`]*)")
_USERINFO = re.compile(r"(?<![\w/@])([^\s/@:'\"<>`()\[\]{}]+):([^\s/@'\"<>`()]+)@(?=[\w.\-\[])")


def redact_url(url: str) -> str:
    """``url`` with its user-info and secret-looking parameters masked (else unchanged)."""
    if not url:
        return url
    # Without a scheme ("user:pw@host/v1", a mistyped address) the same parts are masked.
    scheme, sep, rest = url.partition("://") if "://" in url else ("", "", url)
    # The authority ends at the first "/", "?" or "#"; user-info is everything before its
    # last "@" (a password may itself hold "@" or ":").
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        authority = MASK + "@" + authority.rsplit("@", 1)[1]
    return scheme + sep + authority + _redact_params(tail)


def _redact_params(tail: str) -> str:
    def param(m: re.Match[str]) -> str:
        name = m.group(2)
        return m.group(1) + name + "=" + (MASK if _SECRET_NAME.search(name) else m.group(3))

    return re.sub(r"([?&#;])([^=&#;?]*)=([^&#;]*)", param, tail)


def redact_text(text: str, known: tuple[str, ...] = ()) -> str:
    """``text`` with every address in it redacted, and every secret of the ``known``
    addresses (passwords, user names, secret parameter values) masked wherever it appears
    (an error may quote a part of the address, not the whole)."""
    if not text:
        return text
    out = _URL.sub(lambda m: redact_url(m.group()), text)
    out = _USERINFO.sub(MASK + "@", out)
    out = _TEXT_PARAM.sub(
        lambda m: m.group(1) + m.group(2) + "=" + (MASK if _SECRET_NAME.search(m.group(2)) else m.group(3)),
        out)
    with _lock:
        secrets = _known | {s for url in known for s in url_secrets(url)}
    for secret in sorted(secrets, key=len, reverse=True):
        out = out.replace(secret, MASK)
    return out


# The secrets of every address the configuration named in this process (remember()):
# masked in any text, however a server or a library quoted them.
_known: set[str] = set()
_lock = threading.Lock()


def remember(*urls: str | None) -> None:
    """Mask the secrets of ``urls`` in every later :func:`redact_text` (a configuration
    calls this for its addresses when it is built)."""
    found = {s for url in urls if url for s in url_secrets(url)}
    if found:
        with _lock:
            _known.update(found)


MIN_SECRET_CHARS = 6  # shorter values would mask ordinary words wherever they appear
TOKEN_USER_CHARS = 16  # a user name alone this long is taken for a token (https://TOKEN@host)


def url_secrets(url: str) -> list[str]:
    """The secret parts of ``url`` to mask wherever they appear: its user-info, password
    and secret parameter values; a user name alone only when it is token-like (a name like
    "admin" is masked inside addresses, not in every text)."""
    found: list[str] = []
    try:
        parts = urlsplit(url if "://" in url else "//" + url)
        userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    except ValueError:
        return found
    if userinfo:
        user, colon, password = userinfo.partition(":")
        found += [userinfo, password] if colon else []
        if len(user) >= TOKEN_USER_CHARS:
            found.append(user)
    for tail in (parts.query, parts.fragment):
        for pair in re.split(r"[&;]", tail):
            name, eq, value = pair.partition("=")
            if eq and _SECRET_NAME.search(name):
                found.append(value)
    return [s for s in dict.fromkeys(found) if len(s) >= MIN_SECRET_CHARS]


def has_secret(url: str) -> bool:
    """True when ``url`` carries a credential that :func:`redact_url` would mask."""
    return redact_url(url) != url
