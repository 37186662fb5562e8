"""Corporate networks: both providers honour HTTP(S)_PROXY, NO_PROXY and SSL_CERT_FILE, through a real tinyproxy.

The variables are read by httpx2 itself (``trust_env``, no custom transport in production), so each test sets them
in this process and builds the tools the way the server does (``open_tools`` with no test transport). The proxy
is Debian's tinyproxy on loopback; its log says what it forwarded, so a passing call proves the path it took. The
origins are the fake Brave and fake SearXNG servers, over http or over https with a certificate from a test CA.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme

from brave_search_mcp.compose import open_tools
from brave_search_mcp.config import Settings
from brave_search_mcp.tools.boundary import ToolOutcome
from testkit.brave.http_server import FakeBraveServer
from testkit.forward_proxy import Forwarded, ForwardProxy
from testkit.programs import require
from testkit.searxng import FakeSearxngServer
from testkit.settings import make_settings
from testkit.tracked_server import free_port

require("tinyproxy", ".ci/run installs it: apt-get install -y tinyproxy")
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("network_env"),  # no proxy or CA setting from the machine: each test sets what it checks
]

PROVIDERS = ("brave", "searxng")


@dataclass
class Origin:
    """A fake provider serving on 127.0.0.1: the settings that reach it, where it answers, how often it did."""

    settings: Settings
    base_url: str
    path: str
    count: Any  # () -> int

    @property
    def authority(self) -> str:
        return self.base_url.split("://", 1)[1]


@contextmanager
def serving(provider: str, tls: ssl.SSLContext | None = None) -> Iterator[Origin]:
    """The provider's fake (http, or https with ``tls``) and settings that use it alone, without retries."""
    if provider == "brave":
        with FakeBraveServer(rate_per_second=1000, tls=tls) as brave:
            settings = make_settings(base_url=brave.base_url, retries=0)
            yield Origin(settings, brave.base_url, "/res/v1/web/search", lambda: brave.fake.hits("/web/search"))
    else:
        with FakeSearxngServer(tls=tls) as searx:
            settings = make_settings(providers=("searxng",), searxng_url=searx.base_url, retries=0)
            yield Origin(settings, searx.base_url, "/search", lambda: len(searx.fake.search_requests()))


async def search(settings: Settings, query: str) -> ToolOutcome:
    """One web search through the tools as the server builds them (no test transport: the real HTTP stack)."""
    async with open_tools(settings) as tools:
        return await tools.call("brave_web_search", {"query": query, "max_results": 2})


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[ForwardProxy]:
    directory = tmp_path / "proxy"
    directory.mkdir()
    with ForwardProxy(directory) as running:
        yield running


@pytest.fixture
def tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


def _ok(outcome: ToolOutcome) -> None:
    assert not outcome.is_error, outcome.text
    assert outcome.structured["meta"]["returned"] >= 1


def _code(outcome: ToolOutcome) -> str:
    assert outcome.is_error, outcome.text
    return str(outcome.structured["error"]["code"])


# ---------------------------------------------------------------- the proxy path


# Brave is asked with GET; SearXNG with a form POST (a public instance's bot limiter counts format=json GETs).
METHOD = {"brave": "GET", "searxng": "POST"}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_http_origin_is_fetched_through_http_proxy(
    provider: str, proxy: ForwardProxy, network_env: pytest.MonkeyPatch
) -> None:
    with serving(provider) as origin:
        _ok(await search(origin.settings, "direct first"))
        assert proxy.forwarded() == []  # without the variable nothing goes near the proxy
        network_env.setenv("HTTP_PROXY", proxy.url)
        _ok(await search(origin.settings, "through the proxy"))
        assert origin.count() == 2
    [forwarded] = proxy.forwarded()
    assert forwarded.method == METHOD[provider]
    assert forwarded.target.startswith(f"{origin.base_url}{origin.path}")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_https_origin_is_tunnelled_with_connect_and_trusted_by_ssl_cert_file(
    provider: str, proxy: ForwardProxy, network_env: pytest.MonkeyPatch, tls: ssl.SSLContext, ca_file: str
) -> None:
    network_env.setenv("HTTPS_PROXY", proxy.url)
    network_env.setenv("SSL_CERT_FILE", ca_file)
    with serving(provider, tls) as origin:
        _ok(await search(origin.settings, "tunnelled"))
        assert origin.count() == 1
    assert proxy.forwarded() == [Forwarded("CONNECT", origin.authority)]  # the proxy never saw the request itself


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_lower_case_https_proxy_is_honoured_too(
    provider: str, proxy: ForwardProxy, network_env: pytest.MonkeyPatch, tls: ssl.SSLContext, ca_file: str
) -> None:
    network_env.setenv("https_proxy", proxy.url)
    network_env.setenv("SSL_CERT_FILE", ca_file)
    with serving(provider, tls) as origin:
        _ok(await search(origin.settings, "lower case"))
    assert [f.method for f in proxy.forwarded()] == ["CONNECT"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "intranet.example, 127.0.0.1", "*"])
async def test_no_proxy_sends_a_listed_host_direct(
    provider: str, no_proxy: str, proxy: ForwardProxy, network_env: pytest.MonkeyPatch
) -> None:
    network_env.setenv("HTTP_PROXY", proxy.url)
    network_env.setenv("NO_PROXY", no_proxy)
    with serving(provider) as origin:
        _ok(await search(origin.settings, "direct"))
        assert origin.count() == 1
    assert proxy.forwarded() == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_no_proxy_for_another_host_still_uses_the_proxy(
    provider: str, proxy: ForwardProxy, network_env: pytest.MonkeyPatch
) -> None:
    network_env.setenv("HTTP_PROXY", proxy.url)
    network_env.setenv("NO_PROXY", "intranet.example,10.0.0.0/8")
    with serving(provider) as origin:
        _ok(await search(origin.settings, "still proxied"))
    assert [f.method for f in proxy.forwarded()] == [METHOD[provider]]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_proxy_that_is_down_is_a_network_error_not_a_silent_bypass(
    provider: str, network_env: pytest.MonkeyPatch
) -> None:
    network_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    with serving(provider) as origin:
        outcome = await search(origin.settings, "nobody home")
        assert origin.count() == 0
    assert _code(outcome) == "NETWORK_ERROR"


# ---------------------------------------------------------------- SSL_CERT_FILE


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_private_ca_is_trusted_only_when_ssl_cert_file_names_it(
    provider: str, network_env: pytest.MonkeyPatch, tls: ssl.SSLContext, ca_file: str
) -> None:
    with serving(provider, tls) as origin:
        refused = await search(origin.settings, "unknown issuer")
        network_env.setenv("SSL_CERT_FILE", ca_file)
        trusted = await search(origin.settings, "known issuer")
        assert origin.count() == 1  # the refused handshake never became a request
    assert _code(refused) == "NETWORK_ERROR"
    if provider == "brave":  # SearXNG's message names only the exception type (ConnectError)
        assert "CERTIFICATE_VERIFY_FAILED" in refused.text
    _ok(trusted)
