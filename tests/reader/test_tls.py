"""HTTPS through the pinned connection: the socket goes to the checked address, TLS is for the host name."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest
import trustme

from brave_search_mcp.models.errors import NetworkError
from testkit.sites import FakeSite
from testkit.sites.dns import ScriptedDNS

from .conftest import MakeReader, read

PAGE = "<html><head><title>Secure</title></head><body><article><p>{}</p></article></body></html>"


@pytest.fixture
def secure_site(ca: trustme.CA) -> Iterator[tuple[FakeSite, list[str | None]]]:
    names: list[str | None] = []
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("secure.test").configure_cert(server)
    server.sni_callback = lambda _sock, name, _ctx: names.append(name)
    with FakeSite(tls=server, name="secure.test") as site:
        site.page("/", PAGE.format("over TLS " * 30))
        yield site, names


def _client(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


@pytest.mark.anyio
async def test_https_verifies_the_host_name_while_connecting_to_the_pinned_address(
    make_reader: MakeReader, ca: trustme.CA, secure_site: tuple[FakeSite, list[str | None]]
) -> None:
    site, sni = secure_site
    reader = make_reader(resolver=ScriptedDNS({"secure.test": ["127.0.0.1"]}), ssl_context=_client(ca))
    answer, _ = await read(reader, site.url("/"))
    assert "over TLS" in answer["content"]
    assert sni == ["secure.test"]
    assert site.requests[0].headers["host"] == f"secure.test:{site.port}"


@pytest.mark.anyio
async def test_a_certificate_for_another_name_is_refused(
    make_reader: MakeReader, ca: trustme.CA, secure_site: tuple[FakeSite, list[str | None]]
) -> None:
    site, _ = secure_site
    reader = make_reader(resolver=ScriptedDNS({"impostor.test": ["127.0.0.1"]}), ssl_context=_client(ca))
    with pytest.raises(NetworkError) as caught:
        await reader.read(f"https://impostor.test:{site.port}/")
    assert "impostor.test" in caught.value.message
    assert site.requests == []
    # By address, too: the certificate names secure.test, so verification cannot pass for 127.0.0.1.
    with pytest.raises(NetworkError):
        await make_reader(ssl_context=_client(ca)).read(f"https://127.0.0.1:{site.port}/")


@pytest.mark.anyio
async def test_an_untrusted_certificate_is_refused(
    make_reader: MakeReader, secure_site: tuple[FakeSite, list[str | None]]
) -> None:
    site, _ = secure_site
    reader = make_reader(resolver=ScriptedDNS({"secure.test": ["127.0.0.1"]}))  # the system trust store
    with pytest.raises(NetworkError):
        await reader.read(site.url("/"))
    assert site.requests == []
