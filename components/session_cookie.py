"""Keep the sign-in token in a browser cookie, so a sign-in survives a reload, a pasted link,
a new tab and a full-page navigation (issue 35: it vanished on F5, and the page fell back to
"everyone may do everything").

Streamlit reads cookies (``st.context.cookies``, those sent when the browser opened the
session) but offers no way to set one. A Components-v2 component runs its script in the
app's own document (unlike an ``st.iframe``), so it can: :func:`keep` writes the token (or
clears it) with ``document.cookie``. The next session the browser opens sends it, and
``components.identity`` reads and verifies it.

Why a cookie and not ``?session=`` in the URL: a query parameter is dropped by every link and
page switch that does not carry it, and a link pasted to a colleague would hand them the
sign-in. The cookie stays with this browser: ``SameSite=Strict`` (never sent from another
site), ``Path=/``, ``Secure`` on https, and an expiry equal to the token's. It cannot be
``HttpOnly`` (a script sets it); the token inside is signed, expires, and signing out revokes
it in the store, so a copied value is worth no more than the sign-in it names.
"""

from __future__ import annotations

import re

import streamlit as st

COOKIE = "wb_session"

# The value is the token (base64url and dots) or nothing: anything else is refused here, so
# no text reaches document.cookie that could add an attribute or another cookie.
_TOKEN = re.compile(r"[A-Za-z0-9_\-.]{1,2048}")

_JS = """
export default function (component) {
  const data = component.data || {};
  const name = data.name;
  const wanted = data.token || "";
  const secure = window.location.protocol === "https:" ? "; Secure" : "";
  const now = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  const held = now ? now.slice(name.length + 1) : "";
  if (wanted && held !== wanted) {
    document.cookie = name + "=" + wanted + "; Path=/; Max-Age=" + String(data.max_age)
      + "; SameSite=Strict" + secure;
  } else if (!wanted && held) {
    document.cookie = name + "=; Path=/; Max-Age=0; SameSite=Strict" + secure;
  }
  // A mark for tests: what this browser was last told to hold (not the token itself).
  document.documentElement.setAttribute("data-wb-session-cookie", wanted ? "set" : "cleared");
}
"""

_component = st.components.v2.component("workbench_session_cookie", js=_JS)


def keep(token: str | None, max_age_s: int) -> None:
    """Make the browser hold ``token`` for ``max_age_s`` seconds, or no token at all."""
    if token is not None and not _TOKEN.fullmatch(token):
        raise ValueError("a sign-in token holds only base64url characters and dots")
    _component(key="wb_session_cookie", data={"name": COOKIE, "token": token or "",
                                              "max_age": max(0, int(max_age_s))})


def held() -> str | None:
    """The token the browser sent when it opened this session, if any."""
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # no browser session (a bare script run)
        return None
    return value if isinstance(value, str) and _TOKEN.fullmatch(value) else None
