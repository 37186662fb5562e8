"""sites / exclude_sites: which entries are accepted, what they match, and how Brave is told (goggle or operators)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from brave_search_mcp.brave.params import prepare_search
from brave_search_mcp.models.errors import InvalidArgument
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.models.sites import SiteFilter, parse_site
from brave_search_mcp.usecases.llm_context import LlmContextArgs, prepare

from .prepared import INLINE, SETTINGS, prep, values

GIST = "https://gist.github.com/someone/0123456789abcdef"


@pytest.mark.parametrize(
    ("entry", "written"),
    [
        ("docs.python.org", "docs.python.org"),
        ("  Docs.Python.ORG.  ", "docs.python.org"),
        ("*.python.org", "python.org"),
        ("docs.python.org/3/library/", "docs.python.org/3/library"),
        ("docs.python.org/", "docs.python.org"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("gov", "gov"),
    ],
)
def test_an_entry_is_a_domain_with_an_optional_path(entry: str, written: str) -> None:
    assert WebSearchArgs(query="q", sites=[entry]).sites == [written]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("https://docs.python.org", "has a scheme"),
        ("http:docs.python.org", "has a scheme"),
        ("docs.*.org", "only wildcard is a leading *."),
        ("*python.org", "only wildcard is a leading *."),
        ("docs.python.org/3/*", "only wildcard is a leading *."),
        ("docs.python.org:443", "is not a domain"),
        ("docs python.org", "is not a domain"),
        ("-docs.python.org", "is not a domain"),
        ("docs.python.org/search?q=x", "no ?, #"),
        ("docs.python.org/a$b", "URL path characters only"),
        ("", "an entry is empty"),
        ("a." * 120 + "org", "longer than 200 characters"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(entry: str, says: str) -> None:
    for field in ("sites", "exclude_sites"):
        with pytest.raises(ValidationError) as caught:
            WebSearchArgs.model_validate({"query": "q", field: ["docs.python.org", entry]})
        error = caught.value.errors()[0]
        assert error["loc"] == (field,)
        assert says in error["msg"]


def test_at_most_ten_entries_and_repeats_are_one() -> None:
    eleven = [f"site{n}.example.org" for n in range(11)]
    with pytest.raises(ValidationError, match="at most 10 entries"):
        WebSearchArgs(query="q", sites=eleven)
    assert WebSearchArgs(query="q", exclude_sites=["a.org", "*.a.org", "A.org."]).exclude_sites == ["a.org"]


def test_exclusions_that_cover_every_site_are_refused_before_any_request() -> None:
    with pytest.raises(ValidationError, match="exclude_sites covers every entry of sites"):
        WebSearchArgs(query="q", sites=["docs.python.org/3", "peps.python.org"], exclude_sites=["python.org"])
    with pytest.raises(ValidationError, match="exclude_sites covers every entry"):
        LlmContextArgs(query="q", sites=["a.org"], exclude_sites=["a.org"])
    # one site still open: a valid filter
    WebSearchArgs(query="q", sites=["docs.python.org", "docs.rs"], exclude_sites=["python.org"])


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://docs.python.org/3/library/asyncio.html", True),
        ("https://docs.python.org/3/library", True),
        ("http://DOCS.python.org./3/library/os.html?x=1", True),
        ("https://docs.python.org/3/libraryx/os.html", False),  # a path prefix ends at a segment
        ("https://docs.python.org/3/whatsnew/", False),
        ("https://en.docs.python.org/3/library/x", True),  # a subdomain
        ("https://notdocs.python.org/3/library/x", False),
        ("https://peps.python.org/pep-0654/", True),
        ("https://evilpeps.python.org/", False),
        ("https://peps.python.org.evil.example/", False),
        ("https://bad.peps.python.org/", False),  # excluded
        ("not a url", False),
        ("", False),
    ],
)
def test_what_a_filter_keeps(url: str, kept: bool) -> None:
    sites = SiteFilter.of(["docs.python.org/3/library", "peps.python.org"], ["bad.peps.python.org"])
    assert sites is not None and sites.keeps(url) is kept


def test_without_sites_only_the_exclusions_drop() -> None:
    sites = SiteFilter.of(None, ["medium.com"])
    assert sites is not None
    assert sites.keeps("https://docs.python.org/") and sites.keeps("")  # a suggestion without a URL stays
    assert not sites.keeps("https://blog.medium.com/post")
    assert SiteFilter.of([], []) is None


def test_covers_reads_paths_and_subdomains() -> None:
    assert parse_site("python.org").covers(parse_site("docs.python.org/3"))
    assert parse_site("docs.python.org/3").covers(parse_site("docs.python.org/3/library"))
    assert not parse_site("docs.python.org/3").covers(parse_site("docs.python.org"))
    assert not parse_site("docs.python.org").covers(parse_site("python.org"))


# ------------------------------------------------------------------------------------ how Brave is told


def test_web_and_news_get_one_inline_goggle() -> None:
    for search_type in ("web", "news"):
        prepared = prep(
            search_type=search_type, sites=["docs.python.org/3/library", "peps.python.org"], exclude_sites=["x.org"]
        )
        assert prepared.sites_as == "goggle"
        assert values(prepared, "goggles") == [
            "$discard\n/3/library^$site=docs.python.org\n$site=peps.python.org\n$discard,site=x.org"
        ]
        assert values(prepared, "q") == ["hello world"]  # the query is left alone


def test_exclusions_alone_discard_only_those_sites() -> None:
    prepared = prep(exclude_sites=["medium.com", "pinterest.com"])
    assert values(prepared, "goggles") == ["$discard,site=medium.com\n$discard,site=pinterest.com"]


def test_a_callers_inline_goggle_is_merged_and_goggle_urls_travel_beside_it() -> None:
    prepared = prep(goggles=[GIST, INLINE], sites=["docs.python.org"])
    assert values(prepared, "goggles") == [GIST, f"{INLINE}\n$discard\n$site=docs.python.org"]
    assert prepared.sites_as == "goggle"


def test_with_every_goggle_slot_a_url_the_filter_goes_into_the_query() -> None:
    urls = [f"{GIST}{n}" for n in range(3)]
    prepared = prep(goggles=urls, sites=["docs.python.org"], exclude_sites=["x.org"])
    assert values(prepared, "goggles") == urls
    assert values(prepared, "q") == ["hello world site:docs.python.org -site:x.org"]
    assert prepared.sites_as == "site: operators"
    assert prepared.query == "hello world"  # what the summary line names


@pytest.mark.parametrize("search_type", ["images", "videos"])
def test_images_and_videos_get_site_operators_ored(search_type: str) -> None:
    prepared = prep(search_type=search_type, sites=["vimeo.com", "youtube.com/@pycon"], exclude_sites=["x.org"])
    assert values(prepared, "q") == ["hello world site:vimeo.com OR site:youtube.com/@pycon -site:x.org"]
    assert values(prepared, "goggles") == []
    assert prepared.sites_as == "site: operators"


def test_operators_that_would_pass_brave_s_query_limits_are_refused_not_dropped() -> None:
    ten = [f"documentation-site-number-{n}.example.org" for n in range(10)]
    with pytest.raises(InvalidArgument) as caught:
        prep(search_type="videos", query="word " * 10, sites=ten)
    assert caught.value.details["field"] == "sites"
    assert "Brave allows 400 / 50" in caught.value.message and "shorten the query" in caught.value.message
    words = " ".join(f"w{n}" for n in range(48))  # 48 words + 3 operators: 51 words
    with pytest.raises(InvalidArgument, match=r"/ 51 words"):
        prep(search_type="images", query=words, exclude_sites=["a.org", "b.org", "c.org"])
    assert values(prep(search_type="images", query=words, exclude_sites=["a.org"]), "q")[0].endswith(" -site:a.org")


def test_llm_context_sends_the_goggle() -> None:
    params, warnings = prepare(LlmContextArgs(query="tokio", sites=["docs.rs"], exclude_sites=["docs.rs/old"]))
    assert [v for k, v in params if k == "goggles"] == ["$discard\n$site=docs.rs\n/old^$discard,site=docs.rs"]
    assert warnings == []
    params, _ = prepare(LlmContextArgs(query="tokio"))
    assert "goggles" not in dict(params)


def test_no_filter_changes_nothing() -> None:
    plain = prepare_search(WebSearchArgs(query="q"), SETTINGS)
    empty = prepare_search(WebSearchArgs(query="q", sites=[], exclude_sites=[]), SETTINGS)
    assert plain.params == empty.params and empty.sites is None and empty.sites_as is None
