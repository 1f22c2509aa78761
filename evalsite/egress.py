"""Where an outbound call a tenant controls may go. Plain Python + httpx: no Django import.

A tenant sets URLs (a target's ``base_url``) that the server then calls from inside the operator's network.
Left alone, that lets a tenant read the server's own loopback services, the cloud metadata address or any
private host (server-side request forgery). The rule, one for every such URL:

- the scheme is http or https, the URL has a host and no user name or password in it;
- the host's addresses are refused when any of them is unspecified, loopback, link-local, private, shared
  (carrier-grade NAT), multicast, reserved or otherwise not globally routable, in IPv4 or IPv6, an IPv4
  address inside an IPv6 one (mapped, 6to4, Teredo) judged as the IPv4 address it carries, unless the
  operator allows its network or its host name, on every port or on the URL's (``EgressPolicy``, from
  EVALSITE_OUTBOUND_ALLOW);
- a literal address in any form a resolver takes (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``,
  ``[::ffff:127.0.0.1]``) is the address it spells, and ``localhost`` (and ``*.localhost``) is loopback, so
  these are refused when the URL is stored, before anything is called;
- any other name is resolved when a connection opens, every resolved address checked, and the connection made
  to a checked address, never to a second answer of the resolver (``GuardedTransport``): a name that resolves
  to a public address when stored and to 127.0.0.1 when called (DNS rebinding) is refused then;
- redirects are not followed (httpx does not by default, and the clients here never ask it to), and the
  environment's proxy settings are ignored: a proxy would make the checked address the proxy's.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Sequence[str]]

# IPv4's shared address space (RFC 6598): neither private nor global to Python's ipaddress.
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1/128")


class EgressRefused(Exception):
    """A URL, or an address its host resolved to, that the policy refuses; `rule` names why."""

    def __init__(self, message: str, *, rule: str):
        super().__init__(message)
        self.message, self.rule = message, rule


@dataclass(frozen=True)
class EgressPolicy:
    """What the operator allows beyond the public internet: networks (CIDR or single addresses) and host names
    (exact, or ``*.suffix`` for every name under a domain), each on every port or on one port only
    (``es.internal:9200``, ``10.20.0.0/16:9200``, ``[fd00::/8]:9200``): allowing a search service need not open
    every other service of its hosts. Empty: public addresses only."""

    networks: tuple[tuple[IPNetwork, int | None], ...] = ()
    hosts: frozenset[tuple[str, int | None]] = field(default_factory=frozenset)

    @classmethod
    def parse(cls, entries: Iterable[str]) -> EgressPolicy:
        """From EVALSITE_OUTBOUND_ALLOW's entries; ValueError naming an entry that is neither a network nor a
        host name, with an optional port."""
        networks: list[tuple[IPNetwork, int | None]] = []
        hosts: set[tuple[str, int | None]] = set()
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            where, port = _split_port(entry, raw)
            try:
                networks.append((ipaddress.ip_network(where.strip("[]"), strict=False), port))
                continue
            except ValueError:
                pass
            name = where[2:] if where.startswith("*.") else where
            if not name or not all(part and part.replace("-", "").isalnum() for part in name.split(".")):
                raise ValueError(
                    f"{raw!r} is neither a network (10.0.0.0/8, ::1) nor a host name, with an optional port "
                    "(es.internal:9200, 10.0.0.0/8:9200, [fd00::/8]:9200)"
                )
            hosts.add((where, port))
        return cls(networks=tuple(networks), hosts=frozenset(hosts))

    def allows_host(self, host: str, port: int | None = None) -> bool:
        """The host name is allowed on this port (None: on some port, as a URL is checked before it is called)."""
        host = _normal_host(host)
        return any(
            (entry == host or (entry.startswith("*.") and host.endswith(entry[1:])))
            and _port_ok(allowed, port)
            for entry, allowed in self.hosts
        )

    def allows_address(self, address: IPAddress, port: int | None = None) -> bool:
        candidates = [address, *_embedded_ipv4(address)]
        return any(
            a in network and _port_ok(allowed, port)
            for a in candidates
            for network, allowed in self.networks
            if a.version == network.version
        )


def _split_port(entry: str, raw: str) -> tuple[str, int | None]:
    """An allowance's host or network and its port (None: every port). IPv6 takes a port only in brackets
    (``[fd00::/8]:9200``): ``fd00::9200`` is an address."""
    if entry.startswith("["):
        inside, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{raw!r}: a bracket opened and not closed, or followed by other than :port")
        return inside, _port(rest[1:], raw) if rest else None
    if entry.count(":") == 1:
        where, _, port = entry.partition(":")
        return where, _port(port, raw)
    return entry, None


def _port(text: str, raw: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"{raw!r}: the port must be a number from 1 to 65535")
    return int(text)


def _port_ok(allowed: int | None, port: int | None) -> bool:
    return allowed is None or port is None or allowed == port


def address_rule(address: IPAddress) -> str | None:
    """The rule that refuses this address (``loopback``, ``private``, ...), or None for a public one. An IPv4
    address carried inside an IPv6 one is judged as itself."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address_rule(address.ipv4_mapped)  # ::ffff:a.b.c.d reaches a.b.c.d and nothing else
    for inner in _embedded_ipv4(address):  # 6to4 and Teredo: refused when the address they carry is
        rule = address_rule(inner)
        if rule is not None:
            return rule
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "shared"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "not-global"
    return None


def _embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    return [a for a in found if a is not None]


def _normal_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def literal_address(host: str) -> IPAddress | None:
    """The address a host spells when it is a literal: IPv6 (brackets optional), or IPv4 in any form the C
    resolver takes (dotted, decimal, octal, hexadecimal, shortened). None for a name."""
    host = _normal_host(host)
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not host or not all(c in "0123456789abcdefx." for c in host) or not host[0].isdigit():
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def address_refusal(
    policy: EgressPolicy, host: str, address: IPAddress, port: int | None = None
) -> str | None:
    """Why a connection to `address` (for `host`) on `port` is refused, or None when it may go."""
    if policy.allows_host(host, port) or policy.allows_address(address, port):
        return None
    return address_rule(address)


def check_url(url: str, policy: EgressPolicy, *, field_name: str = "base_url") -> httpx.URL:
    """The URL, parsed, when its form and (for a literal address or localhost) its host are allowed; else
    EgressRefused naming the field and the rule. A name is checked again, resolved, when it is called."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:  # 0177.0.0.1, say: no client here could call it either
        raise EgressRefused(f"{field_name}: not a URL ({exc}).", rule="url") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise EgressRefused(
            f"{field_name}: expected an http:// or https:// URL with a host, got {url!r}.", rule="scheme"
        )
    if parsed.userinfo:
        raise EgressRefused(
            f"{field_name}: a user name or password in the URL is not allowed; send credentials as a secret "
            "header.",
            rule="userinfo",
        )
    host = parsed.host
    port = parsed.port or {"http": 80, "https": 443}[parsed.scheme]
    if policy.allows_host(host, port):
        return parsed
    address = literal_address(host)
    if address is None and (_normal_host(host) == "localhost" or _normal_host(host).endswith(".localhost")):
        address = ipaddress.IPv4Address("127.0.0.1")
    if address is not None and (rule := address_refusal(policy, host, address, port)) is not None:
        raise EgressRefused(_refused(field_name, host, address, rule, port), rule=rule)
    return parsed


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a URL, the port made explicit; None for no URL or one httpx cannot read."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return None
    if not parsed.host:
        return None
    port = parsed.port or {"http": 80, "https": 443}.get(parsed.scheme, 0)
    return parsed.scheme, _normal_host(parsed.host), port


def _refused(field_name: str, host: str, address: IPAddress, rule: str, port: int | None = None) -> str:
    spelled = "" if _normal_host(host) == str(address) else f" ({host} is {address})"
    on = "" if port is None else f" on port {port}"
    return (
        f"{field_name}: {rule} address{spelled} not allowed{on}; the operator can allow a network or host, and "
        "a port, with EVALSITE_OUTBOUND_ALLOW."
    )


def resolve(host: str, port: int) -> list[str]:
    """The host's addresses, as the system resolver answers (numeric strings, in its order)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedBackend(httpcore.SyncBackend):
    """httpcore's network backend with the policy at the moment of connecting: the host is resolved once, each
    address checked, and the socket opened to a checked address (pinned), so no later DNS answer is used."""

    def __init__(self, policy: EgressPolicy, resolver: Resolver = resolve):
        self.policy, self.resolver = policy, resolver

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            found = self.resolver(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        if not addresses:
            raise httpcore.ConnectError(f"cannot resolve {host}: no address")
        for address in addresses:
            rule = address_refusal(self.policy, host, address, port)
            if rule is not None:
                raise EgressRefused(_refused("base_url", host, address, rule, port), rule=rule)
        last: Exception | None = None
        for text in found:  # as socket.create_connection tries them, but only the addresses checked above
            try:
                return super().connect_tcp(text, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport over GuardedBackend: no proxy from the environment, TLS verified as usual (the
    certificate and SNI are the URL's host name, not the pinned address)."""

    def __init__(self, policy: EgressPolicy, *, limits: httpx.Limits, resolver: Resolver = resolve) -> None:
        super().__init__(trust_env=False, limits=limits)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy, resolver),
        )
