"""Who is signed in, and what they may do.

Every run of the app (``app.py``) first calls :func:`establish`, which decides who this
browser session is; pages then ask :func:`current`, :func:`allowed` and :func:`actor`.

- **OIDC**, when ``.streamlit/secrets.toml`` has an ``[auth]`` section: Streamlit's
  ``st.login`` signs people in and ``st.user`` says who they are. Their role is the roster's
  (``workbench people add E-MAIL --role ROLE``: the store and the CLI use the same list),
  else ``[workbench.roles]`` in the same file (e-mail = role), else ``viewer`` when either of
  those lists exists (least privilege) and ``analyst`` when none does.
- **Local sign-in** otherwise (sidebar): the store issues a signed, expiring token
  (``workbench.identity.sign_in``), kept in this browser's cookie (``components.session_cookie``), so
  the sign-in survives a reload, a pasted link, a new tab and a graph-node click; signing out
  revokes it in the store. With a roster in the store, only people on it sign in, with the
  roster's role (and their password when they have one).

Nobody signed in: with a roster or OIDC configured, a **viewer** (reads, changes nothing);
otherwise single-user mode (a workbench on one laptop has no one to keep out: every action
is allowed and records carry the typed name). A sign-in that lapses (expired, signed out in
another tab, taken off the roster) is said in the sidebar, never a silent fallback.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import streamlit as st

from components import session_cookie
from components.safe import md
from workbench.identity.roles import ROLES, Actor, may, refusal
from workbench.identity.sign_in import InvalidToken, SignInError

_KEY = "identity"
_TOKEN = "identity_token"
_DROPPED = "identity_dropped_tokens"  # signed out here: the cookie sent at start is not re-read
_ROSTER = "identity_roster"
_PROBLEM = "identity_problem"


@dataclass(frozen=True)
class Identity:
    name: str
    role: str
    source: str  # "oidc" or "local"


def _nobody() -> list[str]:
    return []


@dataclass(frozen=True)
class Backend:
    """What :func:`establish` needs from the store (``pages/_sign_in.py`` binds it to the
    engine; a component does not import the store). ``sign_in`` and ``resolve`` return an
    object with ``token``, ``name``, ``role`` and ``expires``; they raise ``SignInError`` /
    ``InvalidToken``. ``admins_without_password`` names the roster's admins whom the name
    alone signs in (the sidebar warns about them)."""

    roster_configured: Callable[[], bool]
    role_of: Callable[[str], str | None]
    sign_in: Callable[[str, str, str], object]
    resolve: Callable[[str], object]
    sign_out: Callable[[str], bool]
    admins_without_password: Callable[[], list[str]] = _nobody


def oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets.toml at all: Streamlit raises on first access
        return False


def _secrets_roles() -> dict:
    try:
        return dict(st.secrets.get("workbench", {}).get("roles", {}))
    except Exception:
        return {}


def oidc_role(email: str, roster_role: str | None, secrets_roles: dict, roster: bool) -> str:
    """The role of an OIDC identity: the roster's, else ``[workbench.roles]``'s, else the
    least privilege (``viewer``) when either list exists, else ``analyst``."""
    for role in (roster_role, secrets_roles.get(email)):
        if role in ROLES:
            return role
    return "viewer" if roster or secrets_roles else "analyst"


def roles_configured() -> bool:
    """Whether roles decide even with nobody signed in (OIDC, or a roster in the store)."""
    return oidc_configured() or bool(st.session_state.get(_ROSTER))


def establish(backend: Backend) -> Identity | None:
    """Decide who this run is for (call once per run, before the page): OIDC's user, or the
    local sign-in whose token this session or this browser's cookie holds, verified by the
    store. A token that no longer signs anyone in is dropped, and the sidebar says why."""
    if oidc_configured():
        user = st.user
        if not getattr(user, "is_logged_in", False):
            st.session_state.pop(_KEY, None)
            return None
        email = str(user.get("email") or "")
        roster = backend.roster_configured()
        role = oidc_role(email, backend.role_of(email), _secrets_roles(), roster)
        st.session_state[_KEY] = {"name": str(user.get("name") or email), "role": role,
                                  "source": "oidc"}
        return current()
    st.session_state[_ROSTER] = backend.roster_configured()
    token = st.session_state.get(_TOKEN)
    if token is None:
        sent = session_cookie.held()
        token = None if sent in st.session_state.get(_DROPPED, ()) else sent
    if token is None:
        st.session_state.pop(_KEY, None)
        return None
    try:
        live = backend.resolve(token)
    except InvalidToken as lapsed:
        st.session_state[_PROBLEM] = f"{lapsed.message}; {lapsed.hint}."
        _drop(token)
        for key in (_KEY, _TOKEN):
            st.session_state.pop(key, None)
        return None
    _hold(live)
    return current()


def _hold(live) -> None:
    st.session_state[_TOKEN] = live.token
    st.session_state[_KEY] = {"name": live.name, "role": live.role, "source": "local",
                              "expires": live.expires}
    st.session_state["user_name"] = live.name  # append-only records (edits, decisions) carry it


def current() -> Identity | None:
    """The signed-in person, or ``None``."""
    data = st.session_state.get(_KEY)
    return Identity(data["name"], data["role"], data.get("source", "local")) if data else None


def allowed(action: str) -> bool:
    """Whether the current person may do ``action`` (see the module docstring)."""
    who = current()
    if who is None:
        return not roles_configured()
    return may(who.role, action)


def actor(name: str | None = None) -> Actor:
    """The acting identity to pass to a store write, which checks the role itself
    (``workbench.identity.roles.require``): the signed-in person; nobody (refused) when roles are
    configured and nobody is signed in; else single-user mode, recorded as ``name`` (the
    name typed on the page) or the session's name."""
    who = current()
    if who is not None:
        return Actor.signed_in(who.name, who.role)
    if roles_configured():
        return Actor.nobody()
    return Actor.single_user(name or st.session_state.get("user_name") or "analyst")


def permitted(action: str) -> bool:
    """:func:`allowed`, and when it is ``False`` also :func:`explain_refusal` (say why)."""
    if allowed(action):
        return True
    explain_refusal(action)
    return False


def explain_refusal(action: str) -> None:
    """Say why ``action`` is not available (call when :func:`allowed` is ``False``)."""
    who = current()
    if who is None:
        st.info(f"Sign in (sidebar) to {action}.")
    else:
        st.info(md(refusal(who.role, action)))


def _sign_in(backend: Backend) -> None:
    name = (st.session_state.get("id_name") or "").strip()
    if not name:
        st.session_state["id_flash"] = "Type your name to sign in."
        return
    role = st.session_state.get("id_role") or "analyst"
    try:
        live = backend.sign_in(name, role, st.session_state.get("id_password") or "")
    except SignInError as refused:
        st.session_state["id_flash"] = f"{refused.message}. {refused.hint}."
        return
    finally:
        st.session_state.pop("id_password", None)  # never kept beyond the press
    st.session_state.pop(_PROBLEM, None)
    _hold(live)


def _drop(token: str | None) -> None:
    if token:
        st.session_state[_DROPPED] = [*st.session_state.get(_DROPPED, ()), token]


def _sign_out(backend: Backend) -> None:
    token = st.session_state.pop(_TOKEN, None)
    if token:
        backend.sign_out(token)  # every tab and pasted link holding it is signed out too
    _drop(token)
    _drop(session_cookie.held())
    st.session_state.pop(_KEY, None)
    st.session_state.pop("user_name", None)


def sidebar(backend: Backend) -> None:
    """Sign-in / signed-in box in the sidebar (called by app.py on every page), and the
    cookie that keeps a local sign-in in this browser."""
    with st.sidebar:
        share_theme()
        who, oidc = current(), oidc_configured()
        warn_admins_without_password(backend.admins_without_password())
        if not oidc:
            data = st.session_state.get(_KEY) or {}
            expires = data.get("expires")
            left = (expires - datetime.now(expires.tzinfo)).total_seconds() if expires else 0
            session_cookie.keep(st.session_state.get(_TOKEN) if who else None, int(left))
        if who is not None:
            st.caption(md(f"Signed in as {who.name} ({who.role})"))
            st.button("Sign out", on_click=st.logout if oidc else _sign_out,
                      args=() if oidc else (backend,),
                      key="id_logout" if oidc else "id_signout")
            return
        if _PROBLEM in st.session_state:
            st.warning(md(st.session_state[_PROBLEM]))
        if roles_configured():
            st.caption("Not signed in: you can read everything and change nothing.")
        if oidc:
            st.button("Sign in", on_click=st.login, key="id_login")
            return
        roster = bool(st.session_state.get(_ROSTER))
        with st.expander("Sign in", expanded=bool(st.session_state.get(_PROBLEM))):
            if "id_flash" in st.session_state:
                st.error(md(st.session_state.pop("id_flash")))
            with st.form("id_form"):
                st.text_input("Sign-in name", key="id_name")
                if roster:
                    # The roster gives the role: nobody picks their own.
                    st.text_input("Password", type="password", key="id_password",
                                  help="Leave empty if an admin set none for you.")
                else:
                    st.selectbox("Role", ROLES, index=ROLES.index("analyst"), key="id_role",
                                 help="author: edit graphs · analyst/reviewer: decide reviews · "
                                      "annotator: label · reviewer: adjudicate · admin: all · "
                                      "viewer: read only")
                st.form_submit_button("Sign in", on_click=_sign_in, args=(backend,))


def password_warning(name: str) -> str:
    """The warning, as Markdown, that the admin ``name`` has no password (``name`` is escaped;
    the fix is a command quoted for the shell)."""
    quoted = shlex.quote(name)
    command = f"workbench people add {quoted} --role admin --password-env VAR --as {quoted}"
    # A code span shows its text as is; a name holding a backtick would end it early, so such
    # a command is escaped like the prose instead.
    shown = md(command) if "`" in command else f"`{command}`"
    return (f"{md(name)} is an admin without a password: anyone who types that name signs in "
            f"as admin. Set one with {shown}.")


def warn_admins_without_password(names: Sequence[str]) -> None:
    """Say, for each admin in ``names``, that the name alone signs in as admin (the sidebar
    and Settings call it). Nothing under OIDC, where the local sign-in is off."""
    if oidc_configured():
        return
    for name in names:
        st.warning(password_warning(name), icon=":material/lock_open:")


def acting_name(label: str, key: str, default: str) -> str:
    """Who an append-only record (a decision, a graph version) is recorded for: the signed-in
    identity, shown and not editable; in single-user mode (nobody signed in, no roles
    configured) a name typed in a ``label`` field, remembered for the session. Returns ""
    when none is given."""
    who = current()
    if who is not None:
        # md() escapes the name only: escaping the whole line showed "Reviewer: \*\*ann\*\*"
        st.caption(f"{md(label)}: **{md(who.name)}** ({md(who.role)}, signed in)")
        return who.name
    if roles_configured():
        return ""
    name = st.text_input(label, value=default, key=key).strip()
    if name:
        st.session_state["user_name"] = name
    return name


# -- one theme for the whole app -----------------------------------------------------------
# Streamlit's frontend keeps the theme chosen in its menu (Settings -> theme) in localStorage
# under a key holding the path the tab was opened at ("stActiveTheme-/review-v2"), so a dark
# theme chosen on Review came back light on every page opened by its own address (issue 44
# item 8). This script, run in the app's own document (a Components-v2 component, like
# components.session_cookie), writes every theme choice under every page's key too: one
# setting for the session, whichever page the next tab opens.
_THEME_JS = """
export default function () {
  const w = window;
  if (w.__wbThemeShared) return;
  w.__wbThemeShared = true;
  const KEY = /^stActiveTheme-(.*)-v([0-9]+)$/;
  const store = w.localStorage;
  const write = Storage.prototype.setItem;
  const paths = () => {
    const found = new Set([w.location.pathname]);
    for (const a of document.querySelectorAll("[data-testid='stSidebarNav'] a[href]")) {
      const path = new URL(a.href, w.location.href).pathname;
      found.add(path);
      found.add(path.replace(/[^/]*$/, ""));  // the app's root, where the default page is
    }
    if (found.size === 1) found.add("/");
    return found;
  };
  Storage.prototype.setItem = function (key, value) {
    write.call(this, key, value);
    const m = this === store ? KEY.exec(String(key)) : null;
    if (!m) return;
    for (const path of paths()) write.call(store, `stActiveTheme-${path}-v${m[2]}`, value);
  };
  document.documentElement.setAttribute("data-wb-theme-shared", "yes");  // a mark for tests
}
"""

_theme_component = st.components.v2.component("workbench_shared_theme", js=_THEME_JS)


def share_theme() -> None:
    """Make the theme chosen in Streamlit's menu the theme of every page (see above)."""
    _theme_component(key="wb_shared_theme")
