"""The client's network address, in one place: the peer, or what a trusted proxy says the peer was.

Forwarding headers are written by whoever sends the request, so `X-Forwarded-For` is believed only when
the immediate peer is a proxy the operator configured:

    EMPATHY_ARENA_TRUSTED_PROXIES   comma-separated IPs / CIDR networks of the reverse proxies in front of
                                    the app (default empty: no forwarding header is trusted)

Each trusted proxy appends the address it received the request from, so the header is read from the right:
skip every address that is itself a trusted proxy, and the first one that is not is the client. Anything to
its left was written by the client and is ignored. uvicorn's own proxy handling is switched off (app.py:
`proxy_headers=False`), so the peer seen here is the TCP peer.

Used by the arena's HTTP API and Gradio tab (`from_request` takes a starlette Request or a gr.Request;
`from_scope` an ASGI scope).
"""
from __future__ import annotations

import ipaddress
import logging
import os
import threading
from functools import lru_cache

TRUSTED_PROXIES_ENV = "EMPATHY_ARENA_TRUSTED_PROXIES"
MAX_HOPS = 32               # a longer header is a client stuffing it; only the right-most hops are read

log = logging.getLogger(__name__)
_Net = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_ip(text: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as proxies write it: `1.2.3.4`, `1.2.3.4:5678`, `::1`, `[::1]:5678`; None if it is not one."""
    if not text:
        return None
    t = text.strip()
    if t.startswith("[") and "]" in t:
        t = t[1:t.index("]")]
    elif t.count(":") == 1:                   # IPv4 with a port (IPv6 has at least two colons)
        t = t.split(":", 1)[0]
    try:
        ip = ipaddress.ip_address(t)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped                 # ::ffff:1.2.3.4 is 1.2.3.4
    return ip


def parse_networks(spec: str | None) -> tuple[_Net, ...]:
    """`10.0.0.0/8, 127.0.0.1` -> networks; raises ValueError naming a bad entry (a typo must not pass silently)."""
    nets = []
    for part in (spec or "").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            nets.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{TRUSTED_PROXIES_ENV}: {part!r} is not an IP address or CIDR network") from None
    return tuple(nets)


class ProxyTrust:
    """Which peers may tell us the client's address."""

    def __init__(self, networks: tuple[_Net, ...] = ()):
        self.networks = tuple(networks)
        self._warned = False
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: str | None) -> "ProxyTrust":
        return cls(parse_networks(spec))

    def trusts(self, ip) -> bool:
        return ip is not None and any(ip.version == n.version and ip in n for n in self.networks)

    def resolve(self, peer: str | None, forwarded_for: list[str] | tuple[str, ...] = ()) -> str | None:
        """The client's address as text. `forwarded_for`: every X-Forwarded-For header value, in order."""
        peer_ip = parse_ip(peer)
        if peer_ip is None:
            return peer or None               # not an IP (a unix socket, a test client): as given
        if not self.trusts(peer_ip):
            if forwarded_for and not self._warned:
                self._note_untrusted(peer_ip)
            return str(peer_ip)
        hops = [h for value in forwarded_for for h in value.split(",")][-MAX_HOPS:]
        client = peer_ip
        for hop in reversed(hops):
            ip = parse_ip(hop)
            if ip is None:
                # A trusted proxy wrote something that is not an address ("unknown"): stop at the last known
                # hop. Those clients then share that hop's limits, which errs on the safe side.
                break
            client = ip
            if not self.trusts(ip):
                break
        return str(client)

    def _note_untrusted(self, peer_ip) -> None:
        """Once per process: a forwarding header came from a peer we do not trust. Behind a real proxy this
        means EMPATHY_ARENA_TRUSTED_PROXIES is missing its address, and every client shares the proxy's limits."""
        with self._lock:
            if self._warned:
                return
            self._warned = True
        log.warning("X-Forwarded-For received from %s, which is not a trusted proxy: ignored. If the app runs "
                    "behind a reverse proxy at that address, add it to %s.", peer_ip, TRUSTED_PROXIES_ENV)


@lru_cache(maxsize=1)
def _env_trust(spec: str) -> ProxyTrust:
    return ProxyTrust.from_spec(spec)


def default_trust() -> ProxyTrust:
    """The trust configured in the environment (re-read when the variable changes, e.g. between tests)."""
    return _env_trust(os.environ.get(TRUSTED_PROXIES_ENV, ""))


def _header_values(headers, name: str) -> list[str]:
    if headers is None:
        return []
    getlist = getattr(headers, "getlist", None)      # starlette Headers: repeated headers kept apart
    if getlist is not None:
        return list(getlist(name))
    for key, value in dict(headers).items():         # a plain dict (a gr.Request restored from a pickle)
        if key.lower() == name:
            return [value]
    return []


def from_scope(scope: dict, trust: ProxyTrust | None = None) -> str | None:
    """The same for a raw ASGI scope (middleware that answers before any framework runs)."""
    client = scope.get("client")
    forwarded = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"x-forwarded-for"]
    return (trust or default_trust()).resolve(client[0] if client else None, forwarded)


def from_request(request, trust: ProxyTrust | None = None) -> str | None:
    """The client address of a starlette/FastAPI Request or a gr.Request (None when there is no peer)."""
    if request is None:
        return None
    client = getattr(request, "client", None)
    peer = getattr(client, "host", None) if client else None
    headers = getattr(request, "headers", None)
    return (trust or default_trust()).resolve(peer, _header_values(headers, "x-forwarded-for"))
