"""Which network addresses a submitted endpoint may reach (SSRF guard).

A submitted base URL is refused when its host, in any spelling, is or resolves to an
address that is private, loopback, link-local, multicast, unspecified, reserved, not
globally routable, or a cloud metadata address — unless the operator allowlisted it
(`AddressPolicy.allow`, e.g. 127.0.0.1 for the demo's baselines). Spellings covered:
IPv6 and IPv4-mapped/-embedded IPv6 (::ffff:, 6to4, Teredo, NAT64), the legacy numeric
IPv4 forms getaddrinfo accepts (2130706433, 0x7f000001, 0177.1, 127.1), trailing dots,
upper case; '%' (percent-encoding, IPv6 zone ids) and every character that is not a letter, digit,
'-' or '.' (':' in IPv6 literals) are refused outright (`host_characters`). Host names of metadata services, `localhost` and
names under .localhost, .internal and .local are refused without resolving them; the allowlist holds
addresses (optionally with a port), never names.

The check runs twice: once when the form is validated (`check_url`), and again for the
address each socket actually connects to (`AddressPolicy.socket_factory`, given to
aiohttp's connector by `guarded_session`), so a host that resolves to a public address
at validation and to 127.0.0.1 a second later (DNS rebinding) is still refused, and so
is every redirect target. Metadata addresses can never be allowlisted.
"""
from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Callable, Iterable
from urllib.parse import urlsplit

IP = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",   # AWS, GCP, Azure, OpenStack, DigitalOcean
    "169.254.170.2",     # AWS ECS task metadata
    "169.254.169.123",   # AWS time sync
    "100.100.100.200",   # Alibaba Cloud
    "192.0.0.192",       # Oracle Cloud
    "fd00:ec2::254",     # AWS IPv6 metadata
    "fd00:ec2::23",
))
METADATA_NAMES = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    "metadata.azure.internal", "kubernetes.default", "kubernetes.default.svc",
})
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressRefused(OSError):
    """Raised at connection time; an OSError so aiohttp reports it as a connection failure."""


def _strip_scope(text: str) -> str:
    return text.split("%", 1)[0]


def parse_ip(host: str) -> IP | None:
    """The address a host string denotes if it is a numeric literal in ANY spelling, else None.

    getaddrinfo (glibc) accepts inet_aton's legacy forms, so they are read the same way here:
    `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1` all mean 127.0.0.1.
    """
    h = host.strip().lower().rstrip(".")
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    try:
        return ipaddress.ip_address(_strip_scope(h))
    except ValueError:
        pass
    if h and all(c in "0123456789abcdefx." for c in h):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(h))
        except (OSError, ValueError):
            return None
    return None


HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
IPV6_CHARS = frozenset("0123456789abcdef:.")


def host_characters(host: str) -> str | None:
    """Why `host` (lower case, brackets removed) is not a plain host name or IP literal, else None.

    Only letters, digits, '-' and '.' (and ':' in an IPv6 literal) pass: no '%' (percent-encoding, an IPv6
    zone id), '_', '@' or anything else a resolver or another URL parser might read differently."""
    if "%" in host:
        return "the host may not contain '%' (no percent-encoding, no IPv6 zone id)"
    allowed = IPV6_CHARS if ":" in host else HOST_CHARS
    odd = sorted({c for c in host if c not in allowed})
    if odd:
        shown = " ".join(repr(c) if c.isprintable() else f"U+{ord(c):04X}" for c in odd[:5])
        return f"the host may contain only letters, digits, '-' and '.' (found {shown})"
    return None


def embedded_ipv4(ip: IP) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64, compatible)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    out = []
    if ip.ipv4_mapped:
        out.append(ip.ipv4_mapped)
    if ip.sixtofour:
        out.append(ip.sixtofour)
    if ip.teredo:
        out.extend(ip.teredo)
    if ip in NAT64 or (int(ip) >> 32 == 0 and int(ip) > 0xFFFF):   # NAT64, or deprecated ::a.b.c.d
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


def why_blocked(ip: IP) -> str | None:
    """Plain words if the address is not a public one, else None (allowlist not considered)."""
    for inner in embedded_ipv4(ip):
        reason = why_blocked(inner)
        if reason:
            return f"{reason} (inside the IPv6 address {ip})"
    if ip in METADATA_ADDRESSES:
        return f"{ip} is a cloud metadata address"
    checks = (("loopback", ip.is_loopback), ("unspecified", ip.is_unspecified),
              ("link-local", ip.is_link_local), ("multicast", ip.is_multicast),
              ("private", ip.is_private), ("reserved", ip.is_reserved))
    for name, hit in checks:
        if hit:
            return f"{ip} is {'an' if name[0] in 'aeiou' else 'a'} {name} address"
    if not ip.is_global:
        return f"{ip} is not a public internet address"
    return None


@dataclass(frozen=True)
class AllowEntry:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    port: int | None = None

    def matches(self, ip: IP, port: int | None) -> bool:
        return ip.version == self.network.version and ip in self.network and (
            self.port is None or port == self.port)


def parse_allow(entry: str) -> AllowEntry:
    """`127.0.0.1`, `10.0.0.0/8`, `127.0.0.1:8765`, `[::1]:8765`, `::1`."""
    text = entry.strip()
    port = None
    if text.startswith("["):
        addr, _, rest = text[1:].partition("]")
        if rest.startswith(":"):
            port = int(rest[1:])
        text = addr
    elif text.count(":") == 1:
        text, p = text.split(":")
        port = int(p)
    try:
        return AllowEntry(ipaddress.ip_network(text, strict=False), port)
    except ValueError as exc:
        raise ValueError(f"allowlist entry {entry!r} is not an address or network: {exc}") from None


Resolver = Callable[[str, int], list[str]]


def system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({_strip_scope(info[4][0]) for info in infos})


@dataclass(frozen=True)
class AddressPolicy:
    allow: tuple[AllowEntry, ...] = ()
    resolve: Resolver = field(default=system_resolve, compare=False)

    @classmethod
    def from_strings(cls, entries: Iterable[str], resolve: Resolver | None = None) -> "AddressPolicy":
        return cls(tuple(parse_allow(e) for e in entries if e and e.strip()), resolve or system_resolve)

    def refusal(self, ip: IP, port: int | None = None) -> str | None:
        """Why `ip` may not be contacted, or None. Mapped IPv6 is judged as its IPv4 address."""
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        reason = why_blocked(ip)
        if reason is None:
            return None
        if ip not in METADATA_ADDRESSES and any(e.matches(ip, port) for e in self.allow):
            return None
        return reason

    def check_host(self, host: str, port: int) -> str | None:
        """None if every address of `host` may be contacted, else the reason (plain words)."""
        h = host.strip().lower().rstrip(".")
        if h.startswith("[") and h.endswith("]"):
            h = h[1:-1]
        if not h:
            return "the URL has no host"
        bad = host_characters(h)
        if bad:
            return bad
        if h in METADATA_NAMES or h == "localhost" or h.endswith((".localhost", ".internal", ".local")):
            literal_ok = False
        else:
            literal_ok = True
        ip = parse_ip(h)
        if ip is not None:
            reason = self.refusal(ip, port)
            return f"the address is not allowed: {reason}" if reason else None
        if not literal_ok:
            return f"the host {h!r} names an internal service"
        try:
            addresses = self.resolve(h, port)
        except (OSError, UnicodeError) as exc:
            return f"the host {h!r} does not resolve ({getattr(exc, 'strerror', None) or exc})"
        if not addresses:
            return f"the host {h!r} does not resolve"
        for a in addresses:
            ip = parse_ip(a)
            if ip is None:
                return f"the host {h!r} resolves to something that is not an address: {a!r}"
            reason = self.refusal(ip, port)
            if reason:
                return f"the host {h!r} resolves to an address that is not allowed: {reason}"
        return None

    def check_url(self, url: str) -> str | None:
        """None if the URL's host may be contacted, else the reason. Syntax is checked by validation.py."""
        try:
            parts = urlsplit(url.strip())
            host, port = parts.hostname or "", parts.port
        except ValueError as exc:
            return f"the URL cannot be read: {exc}"
        port = port or (443 if parts.scheme.lower() == "https" else 80)
        # The client (aiohttp) parses with yarl: both must agree on the host, or the check means nothing.
        try:
            import yarl
            yhost = (yarl.URL(url.strip()).raw_host or "").lower()
        except (ValueError, TypeError) as exc:
            return f"the URL cannot be read: {exc}"
        a, b = yhost.strip("[]").rstrip("."), host.lower().strip("[]").rstrip(".")
        if a != b and (parse_ip(a) is None or parse_ip(a) != parse_ip(b)):
            return "the URL's host is ambiguous (parsers disagree on it)"
        return self.check_host(host, port)

    # --- connection time -------------------------------------------------------------------
    def socket_factory(self, addr_info) -> socket.socket:
        """aiohttp `socket_factory`: called with the address about to be connected to."""
        family, type_, proto, _, sockaddr = addr_info
        ip = parse_ip(str(sockaddr[0]))
        reason = "unreadable address" if ip is None else self.refusal(ip, int(sockaddr[1]))
        if reason:
            raise AddressRefused(errno.EACCES, f"connection refused by the address policy: {reason}")
        return socket.socket(family=family, type=type_, proto=proto)


def guarded_session(policy: AddressPolicy, concurrency: int = 8, resolver=None):
    """An aiohttp session whose every connection (redirects included) passes `policy`.

    Redirect targets are connected through the same connector, so a redirect to an internal
    address fails like a direct request to it. `resolver` (an aiohttp AbstractResolver) is for tests.
    """
    import aiohttp
    connector = aiohttp.TCPConnector(limit=concurrency, socket_factory=policy.socket_factory,
                                     use_dns_cache=False, resolver=resolver)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None),
                                 trust_env=False)   # no proxies from the environment: they would bypass the check
