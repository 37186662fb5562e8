"""The fakes narrow their results as the upstreams do: Brave by inline goggles and ``site:`` operators, SearXNG's
engines by ``site:`` / ``-site:`` terms, so a test that a filter "returns only that domain" checks something."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from testkit.brave import IMAGES_PATH, LLM_PATH, NEWS_PATH, VIDEOS_PATH, WEB_PATH, FakeBrave
from testkit.brave.goggles import read_goggles
from testkit.searxng import FakeSearxng
from testkit.site_operators import on_site, read_operators
from tests.fakes.brave_calls import Params, ask, body

PYTHON_DOCS = "$discard\n$site=docs.python.org"


def hosts(results: list[dict[str, Any]]) -> set[str]:
    return {str(result["url"]).split("/")[2] for result in results}


# ---------------------------------------------------------------------------------------------- the rule readers


@pytest.mark.parametrize(
    ("goggle", "kept", "dropped"),
    [
        (PYTHON_DOCS, ["https://docs.python.org/3/", "https://en.docs.python.org/x"], ["https://python.org/"]),
        ("$discard,site=medium.com", ["https://docs.python.org/"], ["https://medium.com/a", "https://x.medium.com/"]),
        ("$discard\n/3/library^$site=docs.python.org", ["https://docs.python.org/3/library/os.html"],
         ["https://docs.python.org/3/libraryx", "https://docs.python.org/3/whatsnew/"]),
        ("$discard\n$site=docs.rs\n/old/$discard,site=docs.rs", ["https://docs.rs/tokio"], ["https://docs.rs/old/x"]),
        ("!\n|https://docs.rs/$discard", ["http://docs.rs/", "https://x.org/?u=https://docs.rs/"], ["https://docs.rs/a"]),
        ("! only a comment\n$boost=3,site=docs.rs", ["https://docs.rs/", "https://x.org/"], []),
    ],
)  # fmt: skip
def test_inline_goggles_discard_as_the_quickstart_describes(goggle: str, kept: list[str], dropped: list[str]) -> None:
    rules = read_goggles([goggle])
    assert rules is not None
    assert [rules.keeps(url) for url in kept + dropped] == [True] * len(kept) + [False] * len(dropped)


def test_a_goggle_url_changes_nothing_offline() -> None:
    assert read_goggles(["https://gist.github.com/a/b"]) is None


def test_site_operators_or_joins_alternatives_and_side_by_side_both_must_hold() -> None:
    ored = read_operators("asyncio site:docs.python.org OR site:peps.python.org -site:bad.python.org")
    assert ored.text == "asyncio"
    assert ored.groups == (("docs.python.org", "peps.python.org"),) and ored.excluded == ("bad.python.org",)
    assert ored.keeps("https://peps.python.org/pep-1/") and not ored.keeps("https://bad.python.org/")
    both = read_operators("asyncio site:docs.python.org site:peps.python.org")
    assert not both.keeps("https://docs.python.org/") and not both.keeps("https://peps.python.org/")
    plain = read_operators("cats OR dogs")
    assert not plain and plain.text == "cats OR dogs"
    assert on_site("https://docs.python.org/3/library/os.html", "docs.python.org/3/library/")
    assert not on_site("https://docs.python.org/3/libraryx", "docs.python.org/3/library")


# ---------------------------------------------------------------------------------------------- the fake Brave


def test_brave_web_keeps_only_the_goggle_s_site_in_its_recalled_sections(fake: FakeBrave) -> None:
    data = body(ask(fake, WEB_PATH, [("q", "python asyncio"), ("count", "20"), ("goggles", PYTHON_DOCS)]))
    assert hosts(data["web"]["results"]) == {"docs.python.org"}
    assert len(data["web"]["results"]) == 6 and data["web"]["mutated_by_goggles"] is True
    assert data["news"]["results"] == [] and data["videos"]["results"] == []
    assert hosts(data["faq"]["results"]) == {"realpython.com", "superfastpython.com"}  # goggles do not reach these
    plain = body(ask(fake, WEB_PATH, [("q", "python asyncio"), ("count", "20")]))
    assert len(hosts(plain["web"]["results"])) > 10


def test_brave_pages_the_narrowed_recall_set(fake: FakeBrave) -> None:
    page = [("q", "python asyncio"), ("count", "4"), ("goggles", PYTHON_DOCS)]
    first = body(ask(fake, WEB_PATH, page))["web"]["results"]
    second = body(ask(fake, WEB_PATH, [*page, ("offset", "1")]))["web"]["results"]
    assert len(first) == 4 and len(second) == 2 and hosts(first + second) == {"docs.python.org"}


@pytest.mark.parametrize(
    ("path", "params", "expected"),
    [
        (NEWS_PATH, [("goggles", "$discard\n$site=theregister.com")], {"www.theregister.com"}),
        (VIDEOS_PATH, [("q", "python asyncio site:vimeo.com")], {"vimeo.com"}),
        (IMAGES_PATH, [("q", "python asyncio site:fake-diagrams.example")], {"www.fake-diagrams.example"}),
        (WEB_PATH, [("q", "python asyncio site:peps.python.org OR site:anyio.readthedocs.io")],
         {"peps.python.org", "anyio.readthedocs.io"}),
    ],
)  # fmt: skip
def test_brave_news_takes_goggles_and_every_type_site_operators(fake: FakeBrave, path: str, params: Params,
                                                                 expected: set[str]) -> None:  # fmt: skip
    sent = dict([("q", "python asyncio"), ("count", "20"), *params])
    data = body(ask(fake, path, list(sent.items())))
    results = data["web"]["results"] if path == WEB_PATH else data["results"]
    assert results and hosts(results) == expected


def test_brave_excludes_and_honours_operators_only_when_asked(fake: FakeBrave) -> None:
    query = [("count", "20"), ("q", "python asyncio -site:docs.python.org")]
    narrowed = body(ask(fake, WEB_PATH, query))["web"]["results"]
    assert narrowed and "docs.python.org" not in hosts(narrowed)
    literal = body(ask(fake, WEB_PATH, [*query, ("operators", "false")]))["web"]["results"]
    assert "docs.python.org" in hosts(literal)
    assert ask(fake, VIDEOS_PATH, [("q", "x"), ("goggles", PYTHON_DOCS)]).status == 422  # videos take no goggles


def test_brave_llm_context_grounds_only_on_the_goggle_s_sites(fake: FakeBrave) -> None:
    params = [("q", "tokio"), ("goggles", "$discard\n$site=docs.example.org"), ("enable_local", "true")]
    grounding = body(ask(fake, LLM_PATH, params))["grounding"]
    assert hosts(grounding["generic"]) == {"docs.example.org"} and grounding["map"] == []
    assert "poi" not in grounding


# ---------------------------------------------------------------------------------------------- the fake SearXNG


def searx(fake: FakeSearxng, q: str, category: str = "general") -> list[dict[str, Any]]:
    with httpx2.Client(transport=fake.sync_transport(), base_url="http://sx.test") as http:
        reply = http.get("/search", params={"q": q, "format": "json", "categories": category})
    assert reply.status_code == 200
    results: list[dict[str, Any]] = reply.json()["results"]
    return results


def test_searxng_engines_find_pages_only_on_the_named_sites() -> None:
    fake = FakeSearxng()
    one = searx(fake, "asyncio site:docs.python.org/3/library")
    assert len(one) == fake.results_per_page
    assert all(r["url"].startswith("https://docs.python.org/3/library/asyncio/") for r in one)
    two = searx(fake, "asyncio site:docs.python.org OR site:peps.python.org", "news")
    assert hosts(two) == {"docs.python.org", "peps.python.org"}
    assert searx(fake, "asyncio site:docs.python.org site:peps.python.org") == []  # ANDed: no page is on both
    assert fake.search_requests()[-1].engine_query == "asyncio site:docs.python.org site:peps.python.org"


def test_searxng_engines_leave_out_an_excluded_site() -> None:
    fake = FakeSearxng()
    everything = hosts(searx(fake, "asyncio"))
    assert "site3.example.org" in everything
    assert hosts(searx(fake, "asyncio -site:site3.example.org")) == everything - {"site3.example.org"}
