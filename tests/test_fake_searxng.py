"""The fake SearXNG answers as the real instance measured in the team notes (searxng-real.md) does, in each
respect where the provider's tests once stayed green only because the fake was kinder than SearXNG."""

from __future__ import annotations

import httpx2
import pytest

from testkit.clock import FakeClock
from testkit.foreground import foreground_server, interrupt
from testkit.searxng import FakeSearxng, FakeSearxngServer

BROWSERISH = {
    "User-Agent": "brave-search-mcp/test",
    "Accept": "application/json, text/html;q=0.1",
    "Accept-Language": "en",
    "Accept-Encoding": "gzip, deflate",
}


def ask(
    fake: FakeSearxng, *, method: str = "GET", headers: dict[str, str] | None = None, **params: str
) -> httpx2.Response:
    """One request through the MockTransport (form body for POST, URL query for GET)."""
    with httpx2.Client(transport=fake.sync_transport(), base_url="http://sx.test") as http:
        if method == "POST":
            return http.post("/search", data=params, headers=headers or BROWSERISH)
        return http.request(method, "/search", params=params, headers=headers or BROWSERISH)


def test_post_form_is_served_like_get_and_form_values_win() -> None:
    fake = FakeSearxng()
    posted = ask(fake, method="POST", q="hello", format="json")
    got = ask(fake, q="hello", format="json")
    assert posted.status_code == got.status_code == 200
    assert {r["url"] for r in posted.json()["results"]} == {r["url"] for r in got.json()["results"]}
    with httpx2.Client(transport=fake.sync_transport(), base_url="http://sx.test") as http:
        mixed = http.post("/search?q=from-url&format=json", data={"q": "from form"}, headers=BROWSERISH)
        put = http.put("/search", headers=BROWSERISH)
        root = http.post("/", data={"q": "x", "format": "json"}, headers=BROWSERISH)
    assert mixed.json()["query"] == "from form"
    assert put.status_code == 405 and "POST" in put.headers["allow"]
    assert (root.status_code, root.headers["location"]) == (308, "/search")


def test_validation_matches_the_real_instance() -> None:
    fake = FakeSearxng()
    assert ask(fake, format="json").json() == {"error": "No query"}
    assert ask(fake, q="", format="json").status_code == 400
    blank = ask(fake, q="   ", format="json")
    assert blank.status_code == 200 and blank.json()["query"] == "" and blank.json()["results"] == []
    assert ask(fake, q="x", format="json", time_range="None").status_code == 200
    assert ask(fake, q="x", format="json", safesearch="01").status_code == 200
    assert fake.search_requests()[-1].engine_safesearch == 1
    for value in ("zh-hans", "zh-Hans", "EN", "en_US", "en-USA"):
        refused = ask(fake, q="x", format="json", language=value)
        assert (refused.status_code, refused.json()) == (
            400,
            {"error": f"Invalid value {value} for parameter language"},
        )
    assert ask(fake, q="x", format="json", language="").json() == {"error": "Empty language parameter"}
    for value in ("en", "en-US", "en-us", "jp", "zh-CN", "all", "auto"):
        assert ask(fake, q="x", format="json", language=value).status_code == 200
    assert ask(fake, q="x", format="json", safesearch="moderate").status_code == 400
    assert ask(fake, q="x", format="json", time_range="decade").status_code == 400


def test_language_defaults_to_accept_language_unless_sent() -> None:
    fake = FakeSearxng()
    ask(fake, q="x", format="json", headers={**BROWSERISH, "Accept-Language": "de-DE,de;q=0.9"})
    ask(fake, q="x", format="json", language="all", headers={**BROWSERISH, "Accept-Language": "de-DE"})
    ask(fake, q="x", format="json", headers={k: v for k, v in BROWSERISH.items() if k != "Accept-Language"})
    assert [r.engine_language for r in fake.search_requests()] == ["de-DE", "all", "all"]


@pytest.mark.parametrize("q", ["!!g hello", "hello !!g", "!!G hello"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_external_bang_anywhere_redirects_off_the_instance_even_for_json(q: str, method: str) -> None:
    reply = ask(FakeSearxng(), method=method, q=q, format="json")
    assert reply.status_code == 302
    assert reply.headers["location"] == "https://www.google.com/search?q=hello"


def test_query_syntax_is_taken_out_of_what_the_engines_get() -> None:
    fake = FakeSearxng()
    cases = {
        "!!nosuchbang hello": "!!nosuchbang hello",  # unknown: kept
        "hello !! world": "hello world",  # feeling lucky: removed (JSON does not redirect)
        ":fr hello": "hello",
        "hello   :de": "hello",
        "i <3 python": "i python",  # a 3-second timeout
        "!images hello": "hello",
        "!nosuch hello": "!nosuch hello",
        '"!!g" hello': '"!!g" hello',  # quoted: plain text
        "wow!! great": "wow!! great",
    }
    for q, engines_got in cases.items():
        reply = ask(fake, q=q, format="json", language="fr")
        assert reply.status_code == 200, q
        assert reply.json()["query"] == engines_got == fake.search_requests()[-1].engine_query, q
    assert fake.search_requests()[3].engine_language == "de"  # ":de" in q beats language=fr


def test_a_category_or_engine_token_overrides_categories_and_several_merge() -> None:
    fake = FakeSearxng()
    bang = ask(fake, q="!images hello", format="json", categories="news").json()
    assert {r["category"] for r in bang["results"]} == {"images"}
    both = ask(fake, q="hello", format="json", categories="general,images").json()
    assert {r["category"] for r in both["results"]} == {"general", "images"}
    engine = ask(fake, q="!yt hello", format="json").json()
    assert {e for r in engine["results"] for e in r["engines"]} == {"youtube"}


def test_pages_have_the_instances_size_and_equal_scores_swap_between_identical_requests() -> None:
    fake = FakeSearxng()
    first = ask(fake, q="many", format="json").json()["results"]
    again = ask(fake, q="many", format="json").json()["results"]
    page2 = ask(fake, q="many", format="json", pageno="2").json()["results"]
    assert len(first) == len(page2) == 27  # not any client's count
    assert {r["url"] for r in first} == {r["url"] for r in again}
    assert [r["url"] for r in first] != [r["url"] for r in again]  # same set, another order
    assert [r["score"] for r in first] == [r["score"] for r in again]
    assert not {r["url"] for r in first} & {r["url"] for r in page2}
    assert ask(fake, q="many", format="json", pageno="4").json()["results"] == []


def test_json_off_refuses_json_csv_and_rss_but_serves_html() -> None:
    fake = FakeSearxng()
    fake.json_enabled = False
    for fmt in ("json", "csv", "rss"):
        refused = ask(fake, q="x", format=fmt)
        assert refused.status_code == 403 and refused.headers["content-type"].startswith("text/html"), fmt
    assert ask(fake, method="POST", format="json").status_code == 403  # checked before the query
    assert ask(fake, q="x", format="xml").status_code == 200
    fake.json_enabled = True
    assert ask(fake, q="x", format="csv").status_code == 403  # only html and json are configured


def test_limiter_refuses_what_a_limiter_enabled_instance_refuses() -> None:
    clock = FakeClock()
    fake = FakeSearxng()
    fake.enable_limiter(clock=clock)
    refused = {
        "curl": {**BROWSERISH, "User-Agent": "curl/8.5"},
        "json only": {**BROWSERISH, "Accept": "application/json"},
        "no language": {k: v for k, v in BROWSERISH.items() if k != "Accept-Language"},
        "identity": {**BROWSERISH, "Accept-Encoding": "identity"},
    }
    for why, headers in refused.items():
        reply = ask(fake, method="POST", headers=headers, q="x", format="json")
        assert reply.status_code == 429, why
        assert reply.text == "Too Many Requests" and "retry-after" not in reply.headers
    assert ask(fake, method="POST", q="x", format="json").status_code == 200


def test_limiter_counts_url_api_requests_per_hour_and_bursts() -> None:
    clock = FakeClock()
    fake = FakeSearxng()
    fake.enable_limiter(clock=clock)
    gets = [ask(fake, q="x", format="json").status_code for _ in range(5)]
    assert gets == [200, 200, 200, 200, 429]  # format=json in the URL: 4 an hour
    clock.now += 21
    posts = [ask(fake, method="POST", q="x", format="json").status_code for _ in range(16)]
    assert posts == [200] * 15 + [429]  # a form POST is not an API request; 15 in 20 s are
    clock.now += 21
    assert ask(fake, method="POST", q="x", format="json").status_code == 200


def test_limiter_counts_each_client_and_every_refused_request() -> None:
    clock = FakeClock()
    fake = FakeSearxng()
    fake.enable_limiter(clock=clock)
    one = [ask(fake, method="POST", q="x", format="json").status_code for _ in range(17)]
    assert one == [200] * 15 + [429, 429]
    other = {**BROWSERISH, "X-Forwarded-For": "192.0.2.7"}  # as SearXNG reads a client behind its local proxy
    assert ask(fake, method="POST", headers=other, q="x", format="json").status_code == 200
    clock.now += 19.9  # the 17 requests, refused ones too, are still in the 20 s window
    assert ask(fake, method="POST", q="x", format="json").status_code == 429
    clock.now += 20.0
    assert ask(fake, method="POST", q="x", format="json").status_code == 200


def test_engines_of_a_failing_category_fail_while_the_others_answer() -> None:
    fake = FakeSearxng()
    fake.failing = {"general": "CAPTCHA"}
    web = ask(fake, method="POST", q="x", format="json").json()
    again = ask(fake, method="POST", q="x", format="json", pageno="2").json()
    news = ask(fake, method="POST", q="x", format="json", categories="news").json()
    both = ask(fake, method="POST", q="x", format="json", categories="general,news").json()
    assert web["results"] == [] and web["unresponsive_engines"] == [
        ["bing", "CAPTCHA"], ["duckduckgo", "CAPTCHA"], ["yacy", "CAPTCHA"]
    ]  # fmt: skip
    assert again["unresponsive_engines"][0] == ["bing", "Suspended: CAPTCHA"]  # benched after its failure
    assert news["results"] and news["unresponsive_engines"] == []
    assert {r["category"] for r in both["results"]} == {"news"} and len(both["unresponsive_engines"]) == 3


def test_an_instance_that_does_not_page_repeats_page_one() -> None:
    fake = FakeSearxng()
    fake.repeat_first_page = True
    pages = [ask(fake, q="x", format="json", categories="videos", pageno=str(n)).json()["results"] for n in (1, 2, 9)]
    assert [{r["url"] for r in page} for page in pages[1:]] == [{r["url"] for r in pages[0]}] * 2


@pytest.mark.anyio
async def test_a_hung_instance_holds_a_request_until_the_clients_read_timeout_on_the_given_clock() -> None:
    clock = FakeClock()
    fake = FakeSearxng()
    fake.hanging = True
    async with httpx2.AsyncClient(transport=fake.mock_transport(sleep=clock.sleep), timeout=7.5) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.post("http://sx.test/search", data={"q": "x", "format": "json"})
    assert clock.sleeps == [7.5] and fake.search_requests()[0].engine_query is None  # taken, never searched
    with pytest.raises(httpx2.ReadTimeout):
        ask(fake, method="POST", q="x", format="json")  # the synchronous transport times out at once


def test_a_hung_real_server_holds_the_request_until_let_go(searxng_server: FakeSearxngServer) -> None:
    searxng_server.fake.hanging = True
    with httpx2.Client(timeout=0.2) as http:
        with pytest.raises(httpx2.ReadTimeout):
            http.post(searxng_server.base_url + "/search", data={"q": "x", "format": "json"})
        searxng_server.fake.hanging = False
        assert http.post(searxng_server.base_url + "/search", data={"q": "x", "format": "json"}).status_code == 200


def test_public_instance_turns_an_api_client_away_to_its_index() -> None:
    fake = FakeSearxng()
    fake.enable_limiter(public_instance=True, clock=FakeClock())
    statuses = [ask(fake, method="POST", q="x", format="json") for _ in range(5)]
    assert [r.status_code for r in statuses] == [200, 200, 429, 302, 302]
    assert statuses[-1].headers["location"] == "http://sx.test/"


def test_the_real_server_reads_post_forms(searxng_server: FakeSearxngServer) -> None:
    with httpx2.Client() as http:
        reply = http.post(searxng_server.base_url + "/search", data={"q": "!!g a b", "format": "json"})
        ok = http.post(searxng_server.base_url + "/search", data={"q": "rust :de", "format": "json", "pageno": "2"})
    assert reply.status_code == 302
    assert ok.status_code == 200 and ok.json()["query"] == "rust"
    assert searxng_server.fake.search_requests()[-1].params["pageno"] == "2"


def test_module_runs_a_foreground_server_until_interrupted() -> None:
    # As `python -m testkit.searxng` started by nohup or a background job (SIGINT ignored): Ctrl-C still stops it.
    with foreground_server("testkit.searxng", "--pages", "1") as (process, url):
        answer = httpx2.get(url + "/search", params={"q": "tide tables", "format": "json"}).json()
        assert answer["query"] == "tide tables" and answer["results"]
        assert interrupt(process) == (0, "")
