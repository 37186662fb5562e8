"""The safe fetcher: every hop checked and pinned, redirects followed by hand, bodies capped, time bounded.

For each hop (the first URL and up to ``MAX_REDIRECTS`` redirects): only http(s) without credentials;
the host is resolved and every address judged (``addresses.resolve_checked``); the connection goes to
those addresses only (``transport.PinnedBackend``); the host's politeness limiter (in the process's bounded
memory: 2 requests/s per host) grants a start; the request carries only the reader's own
headers — its own client, so no Brave key or configured header can reach a site. Statuses become the
typed errors an agent can act on; a type the reader cannot read is refused before its body is read;
the body is counted while it streams and decompresses (``bodies.read_capped``: a gzip bomb stops at the cap).
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import httpcore2
import httpx2

from brave_search_mcp._version import __version__
from brave_search_mcp.clock import Clock
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.limiter import Limiter
from brave_search_mcp.reader.addresses import AddressPolicy, Resolver, parse_address, resolve_checked, system_resolver
from brave_search_mcp.reader.content import SNIFF_BYTES, Kind, kind_of, may_be_readable, parse_content_type
from brave_search_mcp.reader.transport import PinnedBackend, PinnedTransport
from brave_search_mcp.render.text import clean_text
from brave_search_mcp.upstream.bodies import read_capped
from brave_search_mcp.upstream.retry import parse_retry_after
from brave_search_mcp.upstream.transport_errors import timeout_error, typed_transport_errors

MAX_REDIRECTS = 5
POLITENESS_RATE = 2.0  # requests per second to one host from one process (``limiter(local=True)``)
POLITENESS_BURST = 2
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = f"brave-search-mcp/{__version__} (read_url; +https://github.com/brave-search-mcp/brave-search-mcp)"
ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,text/*;q=0.8,application/json;q=0.8,*/*;q=0.5"
_DEFAULT_PORTS = {"http": 80, "https": 443}
Hops = tuple[tuple[str, tuple[str, ...]], ...]  # (host, the checked addresses it was reached at), hop by hop
_ABSOLUTE = "give the whole address, e.g. https://example.com/page."
_HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?")  # IDN hosts arrive as punycode


@dataclass(frozen=True)
class RawPage:
    """One fetched page: where it ended up, what it is, its (decoded, capped) bytes, and whether it may be cached."""

    url: str
    final_url: str
    media: str
    charset: str | None
    kind: Kind
    body: bytes
    no_store: bool
    hops: Hops  # each host on the way (redirects included) and the addresses it was read from


@dataclass(frozen=True)
class FetchSetup:
    """What a fetch needs: the address policy, caps, the per-host limiter, and the seams tests control."""

    policy: AddressPolicy
    max_bytes: int
    timeout: float
    limiter: Callable[[str], Limiter]  # host -> its politeness limiter
    clock: Clock
    resolver: Resolver = system_resolver
    network: httpcore2.AsyncNetworkBackend | None = None  # what the pinned backend connects through
    ssl_context: ssl.SSLContext | None = None


def _safe(text: str, limit: int) -> str:
    return clean_text(text, limit=limit, markup=False)


def _blocked(message: str, reason: str) -> errors.FetchBlocked:
    return errors.FetchBlocked(message, details={"reason": reason})


def parse_target(url: str, *, hop: int) -> httpx2.URL:
    """The URL as httpx2 will send it, refused unless it is http(s), has a host and carries no credentials.

    The host checked later is the host httpx2 parsed here, so no parser difference can send a request
    somewhere the check did not look.
    """
    try:
        target = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError, ValueError):
        if hop == 0:
            raise errors.InvalidArgument(f"url is not a valid URL; {_ABSOLUTE}", field="url") from None
        raise _blocked("The site redirected to an invalid URL.", "redirect") from None
    scheme = target.scheme.lower()
    if hop == 0 and (not scheme or (scheme in _DEFAULT_PORTS and not target.raw_host)):  # a typo, not a refusal
        raise errors.InvalidArgument(f"url {_safe(url, 80)!r} is not an absolute URL; {_ABSOLUTE}", field="url")
    if scheme not in _DEFAULT_PORTS:
        where = "url" if hop == 0 else "redirect"
        raise _blocked(f"Refused to read a {scheme or 'scheme-less'} URL: only http and https are read.", where)
    if not target.raw_host:
        raise _blocked("The site redirected to a URL without a host.", "redirect")
    host = target.raw_host.decode("ascii", "replace")
    if parse_address(host) is None and _HOST_NAME.fullmatch(host) is None:
        if hop == 0:
            raise errors.InvalidArgument("url has a host name that is not valid.", field="url")
        raise _blocked("The site redirected to a URL whose host name is not valid.", "redirect")
    if target.userinfo:
        raise _blocked("Refused to read a URL with a user name or password in it.", "credentials")
    return target


async def fetch_page(url: str, setup: FetchSetup, *, deadline: float | None = None) -> RawPage:
    """GET ``url`` under every safety rule; the typed errors name the site and the rule (a TIMEOUT's
    ``details.host`` names the host that did not answer)."""
    timeout = setup.timeout
    if deadline is not None:
        timeout = max(0.001, min(timeout, deadline - setup.clock()))
    first = parse_target(url, hop=0)
    where = [first.host]
    backend = PinnedBackend(setup.network)
    context = setup.ssl_context if setup.ssl_context is not None else httpx2.create_ssl_context()
    headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT, "Accept-Encoding": "gzip, deflate"}
    client = httpx2.AsyncClient(
        transport=PinnedTransport(backend, context),
        headers=headers,
        follow_redirects=False,
        trust_env=False,
        timeout=httpx2.Timeout(timeout),
    )
    try:
        async with client:
            with anyio.fail_after(timeout):
                return await _follow(url, first, client, backend, setup, deadline, where)
    except (TimeoutError, errors.UpstreamTimeout):
        late = timeout_error(where[-1], round(timeout, 3))
        late.details["host"] = where[-1]
        raise late from None


async def _follow(
    url: str,
    target: httpx2.URL,
    client: httpx2.AsyncClient,
    backend: PinnedBackend,
    setup: FetchSetup,
    deadline: float | None,
    where: list[str],
) -> RawPage:
    """Hop by hop: check, pin, wait for the host's slot, send; follow a redirect only while hops remain."""
    hops: list[tuple[str, tuple[str, ...]]] = []
    for hop in range(MAX_REDIRECTS + 1):
        host = target.raw_host.decode("ascii")
        port = target.port or _DEFAULT_PORTS[target.scheme.lower()]
        if hop:
            where.append(target.host)
        addresses = await resolve_checked(host, port, setup.policy, setup.resolver)
        hops.append((host, addresses))
        backend.pin(host, port, addresses)
        await setup.limiter(host.lower()).acquire(deadline=deadline)
        with typed_transport_errors(target.host, setup.timeout, _safe):
            response = await client.send(client.build_request("GET", target), stream=True)
            try:
                if response.status_code in REDIRECT_STATUSES:
                    location = response.headers.get("location")
                    if not location:
                        raise errors.UpstreamError(
                            f"{target.host} answered a redirect without saying where to.",
                            status=response.status_code,
                            retryable=False,
                        )
                    if hop == MAX_REDIRECTS:
                        break
                    target = parse_target(str(target.join(location.strip())), hop=hop + 1)
                    continue
                return await _page(url, target, response, setup, tuple(hops))
            finally:
                await response.aclose()
    raise _blocked(f"Refused to follow more than {MAX_REDIRECTS} redirects (from {where[0]}).", "too_many_redirects")


async def _page(url: str, target: httpx2.URL, response: httpx2.Response, setup: FetchSetup, hops: Hops) -> RawPage:
    """A final answer: its status mapped, its type judged before the body is read, the body read capped."""
    site = target.host
    status = response.status_code
    if not 200 <= status < 300:
        raise status_error(status, site, response.headers)
    media, charset = parse_content_type(response.headers.get("content-type"))
    if not may_be_readable(media):
        raise _unsupported(media, site)
    body = await read_capped(response, setup.max_bytes, upstream=site)
    kind = kind_of(media, body[:SNIFF_BYTES], target.path)
    if kind is None:
        raise _unsupported(media or "an unlabelled binary body", site)
    cache_control = response.headers.get("cache-control", "").lower()
    no_store = any(part.strip() == "no-store" for part in cache_control.split(","))
    return RawPage(url, str(target), media, charset, kind, body, no_store, hops)


def _unsupported(media: str, site: str) -> errors.UnsupportedContent:
    shown = _safe(media, 80)
    return errors.UnsupportedContent(
        f"{site} sent {shown}; the reader reads HTML, PDF, plain text, markdown and JSON only.",
        details={"content_type": shown},
    )


def status_error(status: int, site: str, headers: httpx2.Headers) -> errors.BraveSearchError:
    """A site's non-2xx answer as the code an agent acts on (404/410, 401/403, 429/5xx retryable, other 4xx)."""
    details = {"status": status, "site": site}
    if status in (404, 410):
        return errors.NotFound(f"{site} says the page does not exist (HTTP {status}).", details=details)
    if status in (401, 403):
        return errors.FetchForbidden(f"{site} refused to serve the page (HTTP {status}).", details=details)
    if status == 429 or (status >= 500 and status != 501):
        wait = parse_retry_after(headers.get("retry-after"), headers.get("date"))
        return errors.UpstreamError(
            f"{site} answered HTTP {status}; it may work later.",
            status=status,
            retryable=True,
            retry_after=wait,
            details={"site": site},
        )
    return errors.UpstreamError(f"{site} answered HTTP {status}.", status=status, retryable=False, details=details)
