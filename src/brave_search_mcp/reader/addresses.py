"""Which addresses the reader may connect to: the operator's opt-ins, IP classes refused, resolve-then-check.

A server that fetches pages for a model must not become a proxy into the user's network. Every host
is resolved here, every address it resolves to is classified, and only a host whose addresses all pass
(or that the operator opted in with ``BRAVE_SEARCH_READ_ALLOWED_HOSTS``) yields addresses to connect to;
the transport then connects to exactly those, never resolving again (``transport.py``). Python's own
``is_global`` misses several forms on the interpreters we support (IPv4-compatible, NAT64, 6to4,
site-local), so IPv4 addresses carried inside IPv6 are unwrapped and judged as the IPv4 they reach.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import anyio

from brave_search_mcp.models import errors

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# (host as sent to DNS, port) -> the addresses it resolves to, as text
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

# Instance-metadata services: credentials live there. Refused even for a host name the operator opted in;
# only an IP or CIDR entry that contains the address itself lets it through.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not global, not "private" to Python 3.11
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")
_V4_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


@dataclass(frozen=True)
class AddressPolicy:
    """The operator's opt-ins: exact host names, ``*.suffix`` names, and IP networks the reader may reach anyway."""

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()

    @staticmethod
    def from_entries(entries: Iterable[str]) -> AddressPolicy:
        """Parse ``BRAVE_SEARCH_READ_ALLOWED_HOSTS`` entries (already shape-checked by ``Settings``)."""
        names: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            if entry.startswith("*."):
                suffixes.append(entry[1:])  # ".corp.example"
            else:
                names.add(entry)
        return AddressPolicy(frozenset(names), tuple(suffixes), tuple(networks))

    def name_allowed(self, host: str) -> bool:
        """Whether the operator opted this host name in (its addresses are then not judged, metadata aside)."""
        name = host.lower().rstrip(".")
        return name in self.names or any(name.endswith(suffix) for suffix in self.suffixes)

    def address_allowed(self, ip: IPAddress) -> bool:
        """Whether an opted-in network contains the address (an IPv4-mapped IPv6 address counts as its IPv4)."""
        candidates: list[IPAddress] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            candidates.append(ip.ipv4_mapped)
        return any(c.version == net.version and c in net for c in candidates for net in self.networks)


def parse_address(text: str) -> IPAddress | None:
    """The address a host string names literally (brackets and an IPv6 zone allowed), or None for a name."""
    candidate = text.strip().strip("[]")
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address really reaches (mapped, compatible, NAT64, 6to4, Teredo), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if any(ip in net for net in _NAT64) or (ip in _V4_COMPATIBLE and int(ip) > 0xFFFF):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def refusal(ip: IPAddress) -> str | None:
    """Why the reader must not connect to ``ip`` (a short class name), or None when it is a public address."""
    if ip in METADATA_ADDRESSES:
        return "cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        plain = ipaddress.IPv6Address(str(ip).split("%", 1)[0]) if ip.scope_id else ip
        inner = _embedded_v4(plain)
        if inner is not None:
            why = refusal(inner)
            return f"{why} inside an IPv6 address" if why else None
        if plain in _SITE_LOCAL:
            return "site-local address"
    if ip.is_unspecified:
        return "unspecified address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address"
    if ip.is_multicast:
        return "multicast address"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED:
        return "shared (carrier-grade NAT) address"
    if ip.is_reserved:
        return "reserved address"
    if ip.is_private:
        return "private address"
    if not ip.is_global:
        return "address that is not publicly routable"
    return None


def judge(host: str, ip: IPAddress, policy: AddressPolicy) -> str | None:
    """Why ``host`` at ``ip`` is refused under ``policy``, or None when the reader may connect."""
    if policy.address_allowed(ip):
        return None
    why = refusal(ip)
    if why is None:
        return None
    if policy.name_allowed(host) and ip not in METADATA_ADDRESSES:
        return None
    return why


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """The operating system's answer for ``host`` (what a browser would connect to), as address strings."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def resolve_checked(host: str, port: int, policy: AddressPolicy, resolver: Resolver) -> tuple[str, ...]:
    """The addresses to connect to for ``host``: every one it resolves to must pass, else FETCH_BLOCKED.

    One refused address refuses the host: a name that answers both public and private addresses is how
    DNS rebinding starts. The caller connects to exactly what this returns (``PinnedBackend.pin``).
    """
    literal = parse_address(host)
    if literal is not None:
        why = judge(host, literal, policy)
        if why is not None:
            raise _blocked(f"{host} is a {why}", "address", host)
        return (str(literal),)
    name = host.lower().rstrip(".")
    loopback_name = name == "localhost" or name.endswith(".localhost")
    if loopback_name and not policy.name_allowed(host):
        # RFC 6761: these names are loopback wherever they resolve, and some resolvers do not know "localhost."
        raise _blocked(f"{host} is a loopback name", "address", host)
    try:
        answers = await resolver(name if loopback_name else host, port)
    except OSError as exc:
        raise _unresolved(host, exc) from None
    checked: list[str] = []
    for text in answers:
        ip = parse_address(text)
        if ip is None:
            raise _blocked(f"{host} resolved to something that is not an IP address", "resolution", host)
        why = judge(host, ip, policy)
        if why is not None:
            raise _blocked(f"{host} resolves to a {why}", "address", host)
        if str(ip) not in checked:
            checked.append(str(ip))
    if not checked:
        raise _unresolved(host, None)
    return tuple(checked)


def recheck(hops: Iterable[tuple[str, Sequence[str]]], policy: AddressPolicy) -> None:
    """FETCH_BLOCKED unless every host a stored page came through, at the addresses it was read from, passes
    ``policy``: a cached page is served only where the policy in force would let the reader fetch it again."""
    for host, addresses in hops:
        for text in addresses:
            ip = parse_address(text)
            why = judge(host, ip, policy) if ip is not None else "address that is not an IP address"
            if why is not None:
                verb = "is" if parse_address(host) is not None else "resolves to"
                raise _blocked(f"{host} {verb} a {why}", "address", host)


def _blocked(what: str, reason: str, host: str) -> errors.FetchBlocked:
    return errors.FetchBlocked(
        f"Refused to read: {what}; the reader only reaches public addresses unless the operator opts a host in "
        "with BRAVE_SEARCH_READ_ALLOWED_HOSTS.",
        details={"reason": reason, "host": host},
    )


def _unresolved(host: str, exc: OSError | None) -> errors.NetworkError:
    # EAI_AGAIN is a DNS server's temporary failure; a name that does not exist will not exist on retry.
    temporary = isinstance(exc, socket.gaierror) and exc.errno == socket.EAI_AGAIN
    return errors.NetworkError(
        f"Could not resolve {host}: no address found.",
        retryable=temporary,
        details={"reason": "dns", "host": host},
    )
