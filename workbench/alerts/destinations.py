"""Where the workbench may send things: the checks every outbound address passes, when it is
saved (an alert rule's webhook) and again when it is used (each post, at connect time).

An address is refused when
- its scheme is not ``http`` or ``https``, or it has no host;
- it carries a credential (user-info, or a key-like parameter): credentials come from the
  environment or secrets (an alert rule's ``auth_env``, the exporters' key variables), never
  from an address that lands in shell history, logs and the store;
- its host is a number written in an unusual form (``0x7f000001``, ``2130706433``,
  ``0177.0.0.1``, ``127.1``): such spellings exist to slip past address filters;
- its host is, or resolves to, an address that is not public: loopback, private, link-local,
  shared (CGNAT), unspecified, multicast, reserved, or a cloud metadata service
  (``169.254.169.254``, ``fd00:ec2::254``, ``100.100.100.200``). Every address a name
  resolves to must pass, so a name that also points inside is refused.

An admin may allow named hosts anyway (an on-premise collector, a local test receiver):
``[outbound] allow = ["collector.internal", "127.0.0.1"]`` in ``workbench.toml`` or
``WORKBENCH_OUTBOUND_ALLOW=host,host``. The name is matched as written in the address
(case-insensitive); a metadata address stays refused unless the entry is that address itself.

:func:`checked_addresses` is what the outbound client (``workbench.alerts.outbound``) calls at
connect time: it resolves the name, checks every address and returns them, and the client
connects to one of exactly those, so a name that resolves elsewhere a moment later (DNS
rebinding) does not reach a refused address.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from workbench.errors import WorkbenchError
from workbench.llm.redact import has_secret, redact_url
from workbench.settings import CONFIG, OUTBOUND_ALLOW

CONFIG_FILE = Path("workbench.toml")
SCHEMES = ("http", "https")
METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200"))
_NUMERIC_LABEL = re.compile(r"0[xX][0-9a-fA-F]*|[0-9]+")
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundError(WorkbenchError, OSError):
    """A post did not deliver: the message names the address (credentials masked) and what
    happened; the hint what to do."""


class DestinationRefused(OutboundError):
    """The address may not be sent to (see the module doc); nothing was sent."""


@dataclass(frozen=True)
class Destination:
    """A checked address: ``url`` as given, its scheme, host (lower case, as written) and
    port; ``key`` groups posts per receiver (retries back off per destination)."""

    url: str
    scheme: str
    host: str
    port: int

    @property
    def key(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def shown(self) -> str:
        return redact_url(self.url)


def allowed_hosts(env: Mapping[str, str] | None = None,
                  config: str | os.PathLike[str] | None = None) -> frozenset[str]:
    """The hosts an admin allowed: ``[outbound] allow`` of the configuration file
    (``WORKBENCH_CONFIG``, else ./workbench.toml) and ``WORKBENCH_OUTBOUND_ALLOW``
    (comma-separated). Read at each call, so a change applies to the next post."""
    env = os.environ if env is None else env
    names = [h for h in (OUTBOUND_ALLOW.read(env) or "").split(",")]
    path = Path(config) if config else Path(p) if (p := CONFIG.read(env)) else CONFIG_FILE
    if path.is_file():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8")).get("outbound", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise DestinationRefused(f"{path} cannot be read for [outbound] allow: {exc}",
                                     "fix the file (TOML, UTF-8)") from None
        listed = table.get("allow", []) if isinstance(table, dict) else None
        if not isinstance(listed, list) or not all(isinstance(h, str) for h in listed):
            raise DestinationRefused(f"{path}: [outbound] allow must be a list of host names",
                                     'write e.g. allow = ["collector.internal"]')
        names += listed
    return frozenset(_host_key(h) for h in names if h.strip())


def _host_key(host: str) -> str:
    host = host.strip().lower().rstrip(".").strip("[]")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def check_url(url: str, what: str = "address") -> Destination:
    """``url`` parsed when its form may be sent to (scheme, host, no credential, no odd
    numeric host); :class:`DestinationRefused` naming the problem otherwise. No lookup."""
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise DestinationRefused(f"{what} {shown[:200]!r} is not a valid address ({exc})",
                                 "give e.g. https://hooks.example.com/alerts") from None
    if parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise DestinationRefused(f"{what} {shown[:200]!r} is not an http(s) address",
                                 "give e.g. https://hooks.example.com/alerts")
    if has_secret(url):
        raise DestinationRefused(
            f"{what} {shown}: the address carries a credential (user-info or a key "
            "parameter); it is refused",
            "remove it from the address and give it through the environment or "
            ".streamlit/secrets.toml (an alert rule's --auth-env, an exporter's key variable)")
    host = parts.hostname.lower().rstrip(".")
    if _odd_number(host):
        raise DestinationRefused(
            f"{what} {shown}: the host {host!r} is a number written in an unusual form",
            "write the address as a name or a dotted IPv4 / bracketed IPv6 address")
    scheme = parts.scheme.lower()
    return Destination(url, scheme, host, port or (443 if scheme == "https" else 80))


def _odd_number(host: str) -> bool:
    labels = host.split(".")
    if not all(_NUMERIC_LABEL.fullmatch(label) for label in labels):
        return False
    try:
        ipaddress.IPv4Address(host)  # canonical dotted quad: an ordinary address
    except ValueError:
        return True
    return False


def address_refusal(ip: IpAddress) -> str | None:
    """Why ``ip`` may not be sent to (``"loopback"``, ``"private"``, ...), None when it is
    public."""
    mapped = getattr(ip, "ipv4_mapped", None) or getattr(ip, "sixtofour", None)
    if mapped is not None:
        return address_refusal(mapped)
    if ip in METADATA:
        return "a cloud metadata service"
    for word, test in (("loopback", ip.is_loopback), ("unspecified", ip.is_unspecified),
                       ("link-local", ip.is_link_local), ("multicast", ip.is_multicast),
                       ("private", ip.is_private), ("reserved", ip.is_reserved)):
        if test:
            return word
    if not ip.is_global:
        return "not public"
    return None


def checked_addresses(host: str, port: int, *, allow: Iterable[str] | None = None,
                      resolve: Callable[..., list] | None = None) -> list[IpAddress]:
    """The addresses ``host`` resolves to (``resolve``: ``socket.getaddrinfo`` unless given),
    every one checked (see the module doc), in the resolver's order;
    :class:`DestinationRefused` naming the first refused, :class:`OutboundError` when the
    name does not resolve."""
    resolve = resolve or socket.getaddrinfo
    allow = allowed_hosts() if allow is None else frozenset(_host_key(h) for h in allow)
    key = _host_key(host)
    try:
        literal: IpAddress | None = ipaddress.ip_address(key)
    except ValueError:
        literal = None
    if literal is not None:
        found = [literal]
    else:
        try:
            infos = resolve(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise OutboundError(f"{host} cannot be resolved ({exc})",
                                "check the host name and the network") from None
        found = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0])
                                   for info in infos))
    if not found:
        raise OutboundError(f"{host} resolves to no address", "check the host name")
    allowed = key in allow
    for ip in found:
        why = address_refusal(ip)
        if why is None or (allowed and (ip not in METADATA or str(ip) == key)):
            continue
        seen = host if str(ip) == key else f"{host} (resolved to {ip})"
        raise DestinationRefused(
            f"{seen} is {why}: the workbench does not send there",
            f"an admin may allow it: [outbound] allow = [\"{key}\"] in workbench.toml, "
            f"or {OUTBOUND_ALLOW.name}={key}")
    return found


def check_destination(url: str, what: str = "address", *, allow: Iterable[str] | None = None,
                      resolve: Callable[..., list] | None = None) -> Destination:
    """:func:`check_url` and :func:`checked_addresses` together: what saving an address
    checks (the post checks again when it connects)."""
    dest = check_url(url, what)
    try:
        checked_addresses(dest.host, dest.port, allow=allow, resolve=resolve)
    except DestinationRefused as exc:
        raise DestinationRefused(f"{what} {dest.shown}: {exc.message}", exc.hint) from None
    return dest


def secret_value(name: str, env: Mapping[str, str] | None = None,
                 secrets_files: Iterable[Path] = (Path(".streamlit/secrets.toml"),
                                                  Path("~/.streamlit/secrets.toml"))) -> str | None:
    """The value of the environment variable ``name``, else of the top-level key ``name`` of
    ``.streamlit/secrets.toml`` (project, then home), as model keys are found; None when
    neither holds one. Never stored, never shown."""
    env = os.environ if env is None else env
    if env.get(name):
        return env[name]
    for path in secrets_files:
        path = path.expanduser()
        if path.is_file():
            try:
                value = tomllib.loads(path.read_text(encoding="utf-8")).get(name)
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if isinstance(value, str) and value:
                return value
    return None
