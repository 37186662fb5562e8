"""read_url and the corporate-network variables: it never goes through HTTP(S)_PROXY, and it trusts SSL_CERT_FILE.

A proxy would resolve the host again and could reach an address the safety rules refuse, so the reader connects
only to the address it checked (the search providers do use the proxy: tests/test_proxies.py).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from brave_search_mcp.models.errors import NetworkError
from testkit.forward_proxy import ForwardProxy
from testkit.programs import require
from testkit.sites import FakeSite

from .conftest import MakeReader, read

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("network_env")]

PAGE = "<html><head><title>Intranet</title></head><body><article><p>{}</p></article></body></html>"


@pytest.fixture
def secure_site(ca: trustme.CA) -> Iterator[FakeSite]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    with FakeSite(tls=context) as site:
        site.page("/", PAGE.format("behind the corporate CA " * 20))
        yield site


async def test_the_reader_connects_directly_even_with_a_proxy_set(
    make_reader: MakeReader, site: FakeSite, tmp_path: Path, network_env: pytest.MonkeyPatch
) -> None:
    require("tinyproxy", ".ci/run installs it: apt-get install -y tinyproxy")
    site.page("/", PAGE.format("read without the proxy " * 20))
    with ForwardProxy(tmp_path) as proxy:
        network_env.setenv("HTTP_PROXY", proxy.url)
        network_env.setenv("HTTPS_PROXY", proxy.url)
        network_env.setenv("ALL_PROXY", proxy.url)
        answer, _ = await read(make_reader(), site.url("/"))
        assert proxy.forwarded() == []
    assert "read without the proxy" in answer["content"]
    assert site.count("/") == 1


async def test_the_reader_trusts_a_private_ca_only_when_ssl_cert_file_names_it(
    make_reader: MakeReader, secure_site: FakeSite, ca_file: str, network_env: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NetworkError):
        await make_reader().read(secure_site.url("/"))
    network_env.setenv("SSL_CERT_FILE", ca_file)
    answer, _ = await read(make_reader(), secure_site.url("/"))
    assert "behind the corporate CA" in answer["content"]
