"""read_url's safety rules end to end against real local sites: schemes, addresses, redirects, rebinding, headers."""

from __future__ import annotations

import pytest

from brave_search_mcp.models.errors import FetchBlocked, InvalidArgument
from testkit.settings import make_settings
from testkit.sites import FakeSite
from testkit.sites.dns import RecordingNetwork, ScriptedDNS

from .conftest import MakeReader, read

ARTICLE = "<html><head><title>Hello</title></head><body><article><h1>Hello</h1><p>{}</p></article></body></html>"
TEXT = "A paragraph long enough for the extractor to take it as the main content of the page. " * 3


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/file.txt",
        "gopher://example.com/",
        "javascript:alert(1)",
        "data:text/html,<h1>hi</h1>",
        "ws://example.com/socket",
    ],
)
async def test_only_http_and_https_are_read(make_reader: MakeReader, url: str) -> None:
    network = RecordingNetwork()
    with pytest.raises(FetchBlocked) as caught:
        await make_reader(network=network).read(url)
    assert "only http and https" in caught.value.message
    assert network.connects == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.20.1.1",
        "192.168.0.10",
        "169.254.169.254",
        "100.100.100.200",
        "[fd00:ec2::254]",
        "[::ffff:169.254.169.254]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::1]",
        "0.0.0.0",
        "[::]",
        "224.0.0.251",
        "240.0.0.1",
        "[fe80::1]",
        "100.64.0.1",
    ],
)
async def test_literal_special_addresses_are_refused_before_connecting(make_reader: MakeReader, host: str) -> None:
    network = RecordingNetwork()
    reader = make_reader(network=network, read_allowed_hosts=())
    with pytest.raises(FetchBlocked) as caught:
        await reader.read(f"http://{host}/latest/meta-data/")
    assert caught.value.details["reason"] == "address"
    assert "BRAVE_SEARCH_READ_ALLOWED_HOSTS" in caught.value.message
    assert network.connects == []


@pytest.mark.anyio
@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "127.1", "0177.0.0.1"])
async def test_odd_spellings_of_loopback_are_refused_after_resolution(make_reader: MakeReader, host: str) -> None:
    # The system resolver turns these into 127.0.0.1 (inet_aton rules) and the check sees that address;
    # httpx2 already rejects some spellings as invalid URLs. Either way nothing is read.
    with pytest.raises((FetchBlocked, InvalidArgument)):
        await make_reader(read_allowed_hosts=()).read(f"http://{host}/")


@pytest.mark.anyio
async def test_credentials_in_the_url_are_refused(make_reader: MakeReader, site: FakeSite) -> None:
    with pytest.raises(FetchBlocked) as caught:
        await make_reader().read(f"http://user:secret@127.0.0.1:{site.port}/")
    assert caught.value.details["reason"] == "credentials"
    assert site.requests == []


@pytest.mark.anyio
async def test_garbage_url_is_an_invalid_argument(make_reader: MakeReader) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await make_reader().read("http://exa mple.com/")
    assert caught.value.field == "url"


@pytest.mark.anyio
async def test_a_name_that_resolves_to_a_private_address_is_refused(make_reader: MakeReader) -> None:
    dns = ScriptedDNS({"intranet.example.com": ["10.20.30.40"]})
    network = RecordingNetwork()
    with pytest.raises(FetchBlocked) as caught:
        await make_reader(resolver=dns, network=network).read("https://intranet.example.com/wiki")
    assert "intranet.example.com resolves to a private address" in caught.value.message
    assert network.connects == []


@pytest.mark.anyio
async def test_redirect_to_loopback_is_refused_when_loopback_is_not_opted_in(
    make_reader: MakeReader, site: FakeSite
) -> None:
    # The site itself is reached by an opted-in name; only its redirect points at 127.0.0.1.
    site.name = "docs.test"
    site.redirect("/start", f"http://127.0.0.1:{site.port}/secret")
    site.page("/secret", ARTICLE.format("internal only"))
    reader = make_reader(resolver=ScriptedDNS({"docs.test": ["127.0.0.1"]}), read_allowed_hosts=("docs.test",))
    with pytest.raises(FetchBlocked) as caught:
        await reader.read(site.url("/start"))
    assert "127.0.0.1 is a loopback address" in caught.value.message
    assert site.count("/start") == 1
    assert site.count("/secret") == 0


@pytest.mark.anyio
async def test_redirect_to_another_scheme_is_refused(make_reader: MakeReader, site: FakeSite) -> None:
    site.redirect("/go", "file:///etc/passwd")
    with pytest.raises(FetchBlocked) as caught:
        await make_reader().read(site.url("/go"))
    assert caught.value.details["reason"] == "redirect"


@pytest.mark.anyio
async def test_five_redirects_are_followed_and_six_refused(make_reader: MakeReader, site: FakeSite) -> None:
    for hop in range(6):
        site.redirect(f"/r{hop}", f"/r{hop + 1}", status=301 if hop % 2 else 307)
    site.page("/r5", ARTICLE.format(TEXT))
    site.page("/r6", ARTICLE.format(TEXT))
    answer, text = await read(make_reader(), site.url("/r0"))
    assert answer["final_url"] == site.url("/r5")
    assert f"Redirected from: {site.url('/r0')}" in text

    site.redirect("/r5", "/r6")
    with pytest.raises(FetchBlocked) as caught:
        await make_reader(read_cache_ttl_seconds=0).read(site.url("/r0"))
    assert caught.value.details["reason"] == "too_many_redirects"
    assert site.count("/r6") == 0


@pytest.mark.anyio
async def test_rebinding_connects_to_the_checked_address_only(make_reader: MakeReader, site: FakeSite) -> None:
    """The name answers an allowed address first and a refused one after: the request still goes to the first.

    A second site on 127.0.0.2 plays the internal service a rebinding attack wants to reach.
    """
    site.name = "rebind.test"
    site.page("/", ARTICLE.format("the public page " + TEXT))
    with FakeSite("127.0.0.2") as internal:
        internal.page("/", ARTICLE.format("internal secrets " + TEXT))
        dns = ScriptedDNS({"rebind.test": [["127.0.0.1"], ["127.0.0.2"]]})
        reader = make_reader(resolver=dns, read_allowed_hosts=("127.0.0.1/32",))
        answer, _ = await read(reader, f"http://rebind.test:{site.port}/")
        assert "the public page" in answer["content"]
        assert dns.calls == ["rebind.test"]  # resolved once per hop, never again at connect time
        assert internal.requests == []
        assert site.requests[0].headers["host"] == f"rebind.test:{site.port}"


@pytest.mark.anyio
async def test_the_connection_goes_to_the_public_address_that_was_checked(
    make_reader: MakeReader, site: FakeSite
) -> None:
    """DNS answers a public address, then a metadata one; the socket is opened to the public address.

    The recording network stands in for the internet: it sends the (unreachable) public address to the local site.
    """
    dns = ScriptedDNS({"news.example": [["93.184.216.34"], ["169.254.169.254"]]})
    network = RecordingNetwork(redirect={"93.184.216.34": "127.0.0.1"})
    site.page("/story", ARTICLE.format(TEXT))
    reader = make_reader(resolver=dns, network=network, read_allowed_hosts=())
    answer, _ = await read(reader, f"http://news.example:{site.port}/story")
    assert answer["title"] == "Hello"
    assert network.connects == [("93.184.216.34", site.port)]
    assert site.requests[0].headers["host"] == f"news.example:{site.port}"


@pytest.mark.anyio
async def test_no_brave_key_or_configured_header_reaches_the_site(
    make_reader: MakeReader, site: FakeSite, backend: object
) -> None:
    settings = make_settings(searxng_headers="X-Private-Token: tok-123", read_allowed_hosts=("127.0.0.1",))
    key = settings.api_key.get_secret_value() if settings.api_key else ""
    site.redirect("/a", "/b")
    site.page("/b", ARTICLE.format(TEXT))
    reader = make_reader(searxng_headers="X-Private-Token: tok-123", http_token="bearer-abc")
    await reader.read(site.url("/a"))
    assert len(site.requests) == 2
    for name, value in site.all_headers():
        assert key not in value and "tok-123" not in value and "bearer-abc" not in value, name
        assert name not in ("x-subscription-token", "authorization", "x-private-token", "cookie")
    assert site.requests[0].headers["user-agent"].startswith("brave-search-mcp/")
    assert "read_url" in site.requests[0].headers["user-agent"]


@pytest.mark.anyio
async def test_a_redirect_loop_is_cut_at_the_limit(make_reader: MakeReader, site: FakeSite) -> None:
    """A redirect loop is cut at the limit: the site sees exactly six requests (the first and five redirects)."""
    site.redirect("/loop", "/loop")
    with pytest.raises(FetchBlocked):
        await make_reader().read(site.url("/loop"))
    assert site.count("/loop") == 6


@pytest.mark.anyio
async def test_internal_site_without_opt_in_is_refused(make_reader: MakeReader) -> None:
    with FakeSite() as local:
        local.page("/", ARTICLE.format(TEXT))
        with pytest.raises(FetchBlocked):
            await make_reader(read_allowed_hosts=()).read(local.url("/"))
        assert local.requests == []


@pytest.mark.anyio
async def test_the_pinned_backend_refuses_a_host_nothing_was_pinned_for() -> None:
    import httpcore2

    from brave_search_mcp.reader.transport import PinnedBackend

    network = RecordingNetwork()
    backend = PinnedBackend(network)
    backend.pin("a.example", 443, ["93.184.216.34"])
    with pytest.raises(httpcore2.ConnectError, match="no checked address"):
        await backend.connect_tcp("b.example", 443)
    with pytest.raises(httpcore2.ConnectError, match="no checked address"):
        await backend.connect_tcp("a.example", 8443)  # the port is part of the pin
    with pytest.raises(httpcore2.ConnectError):
        await backend.connect_unix_socket("/var/run/docker.sock")
    assert network.connects == []


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["not a url", "example.com/page", "http:///no-host", "//example.com/x"])
async def test_a_url_that_is_not_an_absolute_url_is_an_invalid_argument(make_reader: MakeReader, url: str) -> None:
    # Not a refusal by the safety rules: the agent wrote something that is not a web address, and can fix it.
    network = RecordingNetwork()
    with pytest.raises(InvalidArgument) as caught:
        await make_reader(network=network).read(url)
    assert caught.value.field == "url" and "https://" in caught.value.message
    assert network.connects == []


@pytest.mark.anyio
@pytest.mark.parametrize("host", ["localhost", "localhost.", "LOCALHOST.", "app.localhost", "app.localhost."])
async def test_localhost_names_are_refused_as_loopback_without_asking_dns(make_reader: MakeReader, host: str) -> None:
    dns = ScriptedDNS({})  # a resolver that knows no name: a refusal must not depend on what DNS answers
    with pytest.raises(FetchBlocked) as caught:
        await make_reader(resolver=dns, read_allowed_hosts=()).read(f"http://{host}:8080/admin")
    assert caught.value.details["reason"] == "address" and "loopback" in caught.value.message
    assert dns.calls == []


@pytest.mark.anyio
async def test_an_opted_in_localhost_is_read_with_or_without_its_trailing_dot(
    make_reader: MakeReader, site: FakeSite
) -> None:
    site.page("/x", ARTICLE.format(TEXT))
    dns = ScriptedDNS({"localhost": ["127.0.0.1"]})
    reader = make_reader(resolver=dns, read_allowed_hosts=("localhost",))
    for host in ("localhost", "localhost."):
        answer, _ = await read(reader, f"http://{host}:{site.port}/x")
        assert "main content" in answer["content"]
    assert dns.calls == ["localhost", "localhost"]  # the dot is not sent to a resolver that only knows the name
