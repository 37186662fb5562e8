"""Every fault the fake injects arrives as Brave's (or a proxy's, or the network's) failure would, on both faces."""

from __future__ import annotations

import gzip
import json
import socket
import time

import httpx2
import pytest

from testkit.brave import FAULTS, NEWS_PATH, VALID_KEY, WEB_PATH, FakeBrave
from testkit.brave.http_server import FakeBraveServer
from tests.fakes.brave_calls import BASE, RATE_HEADERS, ask, error_of, mock_client, with_client

# ---------------------------------------------------------------------------------------------- fault queue


def test_inject_rejects_unknown_faults(fake: FakeBrave) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        fake.inject("teapot")
    with pytest.raises(ValueError, match="times"):
        fake.inject("500", times=0)


def test_faults_are_used_in_order_by_matching_paths(fake: FakeBrave) -> None:
    fake.inject("500", path="/news/search")
    fake.inject("503", times=2)
    assert fake.pending_faults() == 3
    assert ask(fake, WEB_PATH).status == 503
    assert ask(fake, NEWS_PATH, [("q", "x")]).status == 500
    assert ask(fake, NEWS_PATH, [("q", "x")]).status == 503
    assert ask(fake, WEB_PATH).status == 200
    assert fake.pending_faults() == 0
    assert [r.fault for r in fake.requests] == ["503", "500", "503", None]
    assert fake.hits() == 4 and fake.hits("/news/search") == 2


def test_reset_forgets_everything(fake: FakeBrave) -> None:
    fake.inject("500")
    ask(fake)
    fake.inject("503")
    fake.reset()
    assert fake.requests == [] and fake.pending_faults() == 0
    assert ask(fake).status == 200
    assert fake.stats() == {"requests": 1, "rate_limited": 0, "by_path": {WEB_PATH: 1}}


# (fault, status, Brave error code or None, content type prefix)
HTTP_FAULT_CASES: list[tuple[str, int, str | None, str]] = [
    ("500", 500, None, "text/plain"),
    ("502", 502, None, "text/html"),
    ("503", 503, None, "text/plain"),
    ("504", 504, None, "text/html"),
    ("429", 429, "RATE_LIMITED", "application/json"),
    ("429_quota", 429, "QUOTA_LIMITED", "application/json"),
    ("422_validation", 422, "VALIDATION", "application/json"),
    ("422_token", 422, "SUBSCRIPTION_TOKEN_INVALID", "application/json"),
    ("400_not_in_plan", 400, "OPTION_NOT_IN_PLAN", "application/json"),
    ("403", 403, "RESOURCE_NOT_ALLOWED", "application/json"),
    ("404_subscription", 404, "SUBSCRIPTION_NOT_FOUND", "application/json"),
    ("html_error", 502, None, "text/html"),
]


def check_http_fault(response: httpx2.Response, status: int, code: str | None, content_type: str) -> None:
    """Assert an injected HTTP fault arrived with its status, content type, rate headers and Brave code."""
    assert response.status_code == status
    assert response.headers["content-type"].startswith(content_type)
    for name in RATE_HEADERS:
        assert name in response.headers
    if code is None:
        with pytest.raises(ValueError):
            response.json()
    else:
        error = response.json()["error"]
        assert (error["code"], error["status"]) == (code, status)


@pytest.mark.parametrize(("fault", "status", "code", "content_type"), HTTP_FAULT_CASES)
def test_http_faults_through_mock_transport(
    fake: FakeBrave, fault: str, status: int, code: str | None, content_type: str
) -> None:
    fake.inject(fault)
    with mock_client(fake) as client:
        check_http_fault(client.get(WEB_PATH, params={"q": "x"}), status, code, content_type)
        assert client.get(WEB_PATH, params={"q": "x"}).status_code == 200


@pytest.mark.parametrize(("fault", "status", "code", "content_type"), HTTP_FAULT_CASES)
def test_http_faults_through_the_real_server(
    server: FakeBraveServer, http: httpx2.Client, fault: str, status: int, code: str | None, content_type: str
) -> None:
    server.fake.inject(fault)
    check_http_fault(http.get(WEB_PATH, params={"q": "x"}), status, code, content_type)
    assert http.get(WEB_PATH, params={"q": "x"}).status_code == 200


def test_fault_error_bodies_match_brave_meta(fake: FakeBrave) -> None:
    fake.inject("400_not_in_plan")
    fake.inject("403")
    fake.inject("404_subscription")
    fake.inject("422_validation")
    assert error_of(ask(fake))["meta"] == {"component": "authentication", "plan": "Free"}
    assert error_of(ask(fake))["meta"] == {"component": "api"}
    assert error_of(ask(fake))["meta"] == {"component": "subscriptions"}
    assert error_of(ask(fake))["meta"]["errors"][0]["loc"] == ["query", "count"]


def test_injected_429_headers(fake: FakeBrave) -> None:
    fake.inject("429", retry_after=3)
    fake.inject("429", reset_only=True, reset=7)
    with mock_client(fake) as client:
        plain = client.get(WEB_PATH, params={"q": "x"})
        assert plain.headers["retry-after"] == "3"
        assert plain.headers["x-ratelimit-remaining"].startswith("0, ")
        bare = client.get(WEB_PATH, params={"q": "x"})
    assert bare.headers["x-ratelimit-reset"].startswith("7, ")
    assert "retry-after" not in bare.headers and "x-ratelimit-limit" not in bare.headers
    assert bare.json()["error"]["code"] == "RATE_LIMITED"
    assert fake.rate_limited_count == 2


@pytest.mark.parametrize("face", ["mock", "server"])
def test_non_brave_answers(face: str, fake: FakeBrave) -> None:
    def run(client: httpx2.Client) -> None:
        fake.inject("403_bare")
        bare = client.get(WEB_PATH, params={"q": "x"})
        assert bare.status_code == 403 and bare.headers["content-type"].startswith("text/html")
        assert not any(name in bare.headers for name in RATE_HEADERS)
        fake.inject("invalid_json")
        broken = client.get(WEB_PATH, params={"q": "x"})
        assert broken.status_code == 200 and broken.headers["content-type"] == "application/json"
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken.content)
        fake.inject("empty_body")
        empty = client.get(WEB_PATH, params={"q": "x"})
        assert (empty.status_code, empty.content, empty.headers["content-length"]) == (200, b"", "0")
        fake.inject("truncated_gzip")
        cut = client.get(WEB_PATH, params={"q": "x"})
        assert cut.headers["content-encoding"] == "gzip"
        with pytest.raises(json.JSONDecodeError):
            json.loads(cut.content)

    with_client(face, fake, run)


@pytest.mark.parametrize("face", ["mock", "server"])
def test_oversize_is_valid_json_of_the_requested_size_without_length(face: str, fake: FakeBrave) -> None:
    def run(client: httpx2.Client) -> None:
        fake.inject("oversize", size=300_000)
        response = client.get(WEB_PATH, params={"q": "x"})
        assert response.status_code == 200
        assert "content-length" not in response.headers
        assert len(response.content) == 300_000
        assert json.loads(response.content)["type"] == "search"

    with_client(face, fake, run)


def test_oversize_defaults_to_eight_mebibytes_streamed(fake: FakeBrave) -> None:
    fake.inject("oversize")
    reply = ask(fake)
    assert reply.streamed and reply.body == b""
    assert sum(len(chunk) for chunk in reply.iter_body()) == 8 * 1024 * 1024
    fake.inject("oversize", size=200_000)
    zipped = ask(fake, headers={"Accept-Encoding": "gzip"})
    assert zipped.header("Content-Encoding") == "gzip"
    assert len(gzip.decompress(b"".join(zipped.iter_body()))) == 200_000


# ---------------------------------------------------------------------------------------------- transport faults


def test_transport_faults_through_mock_transport(fake: FakeBrave) -> None:
    with mock_client(fake) as client:
        fake.inject("refused")
        with pytest.raises(httpx2.ConnectError):
            client.get(WEB_PATH, params={"q": "x"})
        for name in ("timeout", "hang"):
            fake.inject(name)
            with pytest.raises(httpx2.ReadTimeout):
                client.get(WEB_PATH, params={"q": "x"})
        fake.inject("reset")
        with pytest.raises(httpx2.RemoteProtocolError):
            client.get(WEB_PATH, params={"q": "x"})
        fake.inject("slow_body", delay=0, chunk_size=100)
        slow = client.get(WEB_PATH, params={"q": "x"})
        assert slow.json()["query"]["original"] == "x"
    assert [r.status for r in fake.requests] == [0, 0, 0, 200, 200]
    assert [r.fault for r in fake.requests] == ["refused", "timeout", "hang", "reset", "slow_body"]


@pytest.mark.anyio
async def test_transport_faults_through_async_mock_transport(fake: FakeBrave) -> None:
    async with httpx2.AsyncClient(
        transport=fake.mock_transport(), base_url=BASE, headers={"X-Subscription-Token": VALID_KEY}
    ) as client:
        fake.inject("slow_body", delay=0.001, chunk_size=1000)
        slow = await client.get(WEB_PATH, params={"q": "x"})
        assert slow.json()["type"] == "search"
        fake.inject("reset")
        with pytest.raises(httpx2.RemoteProtocolError):
            await client.get(WEB_PATH, params={"q": "x"})
        fake.inject("oversize", size=100_000)
        async with client.stream("GET", WEB_PATH, params={"q": "x"}) as streamed:
            assert "content-length" not in streamed.headers
            received = sum([len(chunk) async for chunk in streamed.aiter_bytes()])
        assert received == 100_000


def test_reset_and_refused_through_the_real_server(server: FakeBraveServer, http: httpx2.Client) -> None:
    server.fake.inject("reset")
    with pytest.raises((httpx2.ReadError, httpx2.RemoteProtocolError)):
        http.get(WEB_PATH, params={"q": "x"})
    server.fake.inject("refused")
    with pytest.raises((httpx2.RemoteProtocolError, httpx2.ReadError)):
        http.get(WEB_PATH, params={"q": "x"})
    assert http.get(WEB_PATH, params={"q": "x"}).status_code == 200


def test_timeout_through_the_real_server(server: FakeBraveServer, http: httpx2.Client) -> None:
    server.fake.inject("timeout", seconds=30)
    with pytest.raises(httpx2.ReadTimeout):
        http.get(WEB_PATH, params={"q": "x"}, timeout=0.2)
    assert http.get(WEB_PATH, params={"q": "x"}).status_code == 200


def test_slow_body_through_the_real_server(server: FakeBraveServer, http: httpx2.Client) -> None:
    server.fake.inject("slow_body", delay=0.02, chunk_size=1024)
    started = time.monotonic()
    response = http.get(WEB_PATH, params={"q": "x"})
    elapsed = time.monotonic() - started
    assert response.json()["query"]["original"] == "x"
    pieces = -(-int(response.headers["content-length"]) // 1024)
    assert pieces >= 3
    assert elapsed >= (pieces - 1) * 0.02


def test_fault_names_are_all_exercised() -> None:
    exercised = {case[0] for case in HTTP_FAULT_CASES} | {
        "403_bare",
        "invalid_json",
        "empty_body",
        "oversize",
        "truncated_gzip",
        "refused",
        "reset",
        "slow_body",
        "timeout",
        "hang",
        "early_hints",
        "headers",
    }
    assert exercised == FAULTS


def test_headers_replace_what_one_normal_answer_carries(fake: FakeBrave) -> None:
    """A broken edge's headers on one answer (issue 36): the named ones replaced, the answer and the rest intact;
    the next answer is the fake's own again. On a 429 of the rate window they replace its headers too."""
    bad = {"X-RateLimit-Limit": "1e308, inf", "x-ratelimit-remaining": "nan, nan", "Retry-After": "inf"}
    fake.inject("headers", headers={**bad, "X-RateLimit-Policy": None})
    damaged = ask(fake, WEB_PATH)
    assert damaged.status == 200 and damaged.json()["type"] == "search" and damaged.fault == "headers"
    assert [damaged.header(name) for name in bad] == ["1e308, inf", "nan, nan", "inf"]
    assert [k for k, _ in damaged.headers].count("X-RateLimit-Limit") == 1  # replaced, not added beside
    assert damaged.header("x-ratelimit-policy") is None  # None: left out
    assert str(damaged.header("x-ratelimit-reset")).startswith("1, ")  # what was not named stays
    assert ask(fake, WEB_PATH).header("x-ratelimit-limit") == "50, 2000"
    fake.rate_per_second = 1  # the window already holds this second's requests
    fake.inject("headers", headers={"X-RateLimit-Limit": "5, 2000"})
    refused = ask(fake, WEB_PATH)
    assert (refused.status, refused.header("x-ratelimit-limit")) == (429, "5, 2000")


def test_early_hints_go_on_the_wire_before_the_answer(server: FakeBraveServer) -> None:
    """The 103 really is sent (httpx2 reads past it, so only raw bytes can show it), then the whole 200."""
    server.fake.inject("early_hints")
    request = (
        f"GET {WEB_PATH}?q=x HTTP/1.1\r\nHost: brave\r\nX-Subscription-Token: {VALID_KEY}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(request.encode())
        received = b""
        for _ in range(1000):  # bounded: the server closes after its answer
            piece = sock.recv(65536)
            if not piece:
                break
            received += piece
    interim, _, rest = received.partition(b"\r\n\r\n")
    assert interim.startswith(b"HTTP/1.1 103 Early Hints\r\n") and b"Link: </static/app.css>" in interim
    assert rest.startswith(b"HTTP/1.1 200 ")
