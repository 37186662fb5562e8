"""The fake's real server: it stops at once mid-request, serves keep-alive clients concurrently, has control
endpoints for other processes, and runs in the foreground until Ctrl-C.
"""

from __future__ import annotations

import threading
import time

import httpx2
import pytest

from testkit.brave import NEWS_PATH, VALID_KEY, WEB_PATH
from testkit.brave.http_server import FakeBraveServer, _Server
from testkit.foreground import foreground_server, interrupt


def test_server_stops_promptly_with_a_hanging_request_in_flight() -> None:
    outcome: list[BaseException | int] = []
    srv = FakeBraveServer().start()
    srv.fake.inject("hang", seconds=30)

    def call() -> None:
        try:
            with httpx2.Client(headers={"X-Subscription-Token": VALID_KEY}, timeout=20.0) as client:
                outcome.append(client.get(srv.base_url + WEB_PATH, params={"q": "x"}).status_code)
        except httpx2.HTTPError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    assert srv.wait_for_requests(1, timeout=5.0)
    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 1.5
    worker.join(5.0)
    assert not worker.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], httpx2.TransportError)


def test_server_serves_concurrent_keep_alive_requests(server: FakeBraveServer, http: httpx2.Client) -> None:
    results: list[int] = []
    lock = threading.Lock()

    def call(i: int) -> None:
        status = http.get(WEB_PATH, params={"q": f"query {i}", "count": "1"}).status_code
        with lock:
            results.append(status)

    workers = [threading.Thread(target=call, args=(i,)) for i in range(16)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10.0)
    assert results == [200] * 16
    assert server.fake.hits(WEB_PATH) == 16


def test_latency_delays_every_answer_and_the_rate_window_counts_requests_as_they_arrive() -> None:
    # Brave answers in about 250 ms; the bench's agent session needs that. Three requests at once on a 2/s plan:
    # each waits the latency, and the third is refused (429 with Brave's headers) because the first two arrived.
    with FakeBraveServer(rate_per_second=2, latency=0.2) as srv:
        answers: list[tuple[int, str, float]] = []  # status, the plan header, seconds to the answer
        lock = threading.Lock()

        def call(i: int) -> None:
            with httpx2.Client(headers={"X-Subscription-Token": VALID_KEY}, timeout=5.0) as client:
                started = time.monotonic()
                response = client.get(srv.base_url + WEB_PATH, params={"q": f"query {i}"})
                with lock:
                    answers.append(
                        (response.status_code, response.headers["x-ratelimit-limit"], time.monotonic() - started)
                    )

        workers = [threading.Thread(target=call, args=(i,)) for i in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(10.0)
        assert sorted(status for status, _, _ in answers) == [200, 200, 429]
        assert {plan for _, plan, _ in answers} == {"2, 2000"}
        assert min(seconds for _, _, seconds in answers) >= 0.2
        assert (srv.fake.hits(WEB_PATH), srv.fake.hits(WEB_PATH, status=200), srv.fake.hits(status=429)) == (3, 2, 1)
        assert srv.fake.rate_limited_count == 1


def test_latency_must_not_be_negative() -> None:
    for latency in (-0.1, (-0.1, 0.2), (0.3, 0.2)):
        with pytest.raises(ValueError, match="latency"):
            FakeBraveServer(latency=latency)


def test_a_latency_range_draws_each_answers_wait_from_a_seeded_generator() -> None:
    """Issue 36's jitter: each answer waits a draw from the range; the same seed draws the same waits in order."""

    def waits(seed: int) -> list[float]:
        with FakeBraveServer(rate_per_second=1000, latency=(0.05, 0.15), seed=seed) as srv:
            server = srv.server
            assert isinstance(server, _Server)
            return [server.delay() for _ in range(50)]

    first = waits(7)
    assert first == waits(7) and first != waits(8)
    assert all(0.05 <= wait <= 0.15 for wait in first) and max(first) - min(first) > 0.05
    with FakeBraveServer(rate_per_second=1000, latency=(0.05, 0.15), seed=7) as srv:
        started = time.monotonic()
        response = httpx2.get(srv.base_url + WEB_PATH, params={"q": "x"}, headers={"X-Subscription-Token": VALID_KEY})
        assert response.status_code == 200 and time.monotonic() - started >= first[0]

    with FakeBraveServer(rate_per_second=1000, latency=(0.05, 0.15), seed=7) as srv:
        server = srv.server
        assert isinstance(server, _Server)
        warm_up = [server.delay() for _ in range(3)]
        srv.reseed()  # a bench's timed run after its warm-up draws what a run without one draws
        assert warm_up == first[:3] and [server.delay() for _ in range(50)] == first


# ---------------------------------------------------------------------------------------------- control endpoints


def test_control_endpoints(server: FakeBraveServer, http: httpx2.Client) -> None:
    injected = http.post("/__fake/inject", json={"fault": "503", "path": "/web/search", "times": 2})
    assert injected.json() == {"ok": True, "pending": 2}
    assert http.post("/__fake/inject", json={"fault": "429", "retry_after": 4}).status_code == 200
    assert [http.get(WEB_PATH, params={"q": "x"}).status_code for _ in range(2)] == [503, 503]
    limited = http.get(WEB_PATH, params={"q": "x"})
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "4")
    assert http.get(NEWS_PATH, params={"q": "x"}).status_code == 200
    assert http.get("/__fake/stats").json() == {
        "requests": 4,
        "rate_limited": 1,
        "by_path": {WEB_PATH: 3, NEWS_PATH: 1},
    }
    assert http.post("/__fake/reset").json() == {"ok": True}
    assert http.get("/__fake/stats").json() == {"requests": 0, "rate_limited": 0, "by_path": {}}
    assert server.fake.requests == []


def test_control_endpoints_reject_bad_input(http: httpx2.Client) -> None:
    assert http.post("/__fake/inject", json={"fault": "teapot"}).status_code == 400
    assert http.post("/__fake/inject", json={"path": "/web/search"}).status_code == 400
    assert http.post("/__fake/inject", content=b"not json").status_code == 400
    assert http.post("/__fake/inject", json=["503"]).status_code == 400
    assert http.get("/__fake/nothing").status_code == 404
    assert http.get("/__fake/inject").status_code == 404


def test_module_runs_a_foreground_server_until_interrupted() -> None:
    # Started as nohup or a background job would start it (SIGINT ignored): Ctrl-C must still stop it.
    with foreground_server("testkit.brave", "--rate", "1", "--monthly", "2000") as (process, url):
        response = httpx2.get(url + WEB_PATH, params={"q": "x"}, headers={"X-Subscription-Token": VALID_KEY})
        assert response.status_code == 200
        assert response.headers["x-ratelimit-limit"] == "1, 2000"
        assert interrupt(process) == (0, "")
