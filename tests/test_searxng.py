"""The SearXNG provider's translation of our request and of SearXNG's answers, against a fake that answers as
a real instance does (language codes, query syntax, safe search, result shapes)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from brave_search_mcp.brave.facts import SEARCH_LANGUAGES
from brave_search_mcp.brave.params import prepare_search
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.providers.request import search_request
from brave_search_mcp.providers.searxng.client import SearxngConfig, SearxngProvider
from brave_search_mcp.providers.searxng.params import LANGUAGES, escape_syntax, search_form
from brave_search_mcp.providers.searxng.results import age
from testkit.searxng import FakeSearxng
from testkit.searxng.provider import search_request as req
from testkit.settings import make_settings

# ------------------------------------------------------------------------------------ what is sent


@pytest.mark.anyio
async def test_web_results_are_mapped_with_provenance_and_clean_text(searxng: SearxngProvider) -> None:
    page = await searxng.search(req())
    assert page.provider == "searxng"
    assert page.attempts == 1
    assert [s.key for s in page.sections] == ["web"]
    results = page.sections[0].results
    assert len(results) == 10  # of the instance's 27
    first = results[0]
    assert first.title == "hello world – result 1"
    assert first.snippet == "About hello world & more (result 1)."  # <b> stripped, &amp; decoded
    assert first.url == "https://site0.example.org/hello-world/1"
    assert first.site == "site0.example.org"
    assert first.provider == "searxng"
    assert first.engines == ["duckduckgo", "bing"]
    assert first.score == 1.0
    assert [r.rank for r in results] == list(range(1, 11))
    assert page.more_available is True
    assert page.warnings == []


@pytest.mark.anyio
async def test_request_is_a_form_post_with_every_parameter(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    await searxng.search(req(search_type="news", language="en", country="DE", safe_search="strict", freshness="pw"))
    sent = searx.search_requests()[-1]
    assert sent.method == "POST" and sent.url_params == {}  # format=json in a URL is limited to 4 an hour
    assert sent.params == {
        "q": "hello world",
        "format": "json",
        "categories": "news",
        "pageno": "1",
        "language": "en-DE",
        "safesearch": "2",
        "time_range": "week",
    }
    assert sent.engine_language == "en-DE"


@pytest.mark.parametrize(("freshness", "time_range"), [("pd", "day"), ("pw", "week"), ("pm", "month"), ("py", "year")])
@pytest.mark.parametrize(("safe", "level"), [("off", "0"), ("moderate", "1"), ("strict", "2")])
def test_freshness_and_safe_search_mapping(freshness: str, time_range: str, safe: str, level: str) -> None:
    form, warnings = search_form(req(freshness=freshness, safe_search=safe))
    assert (form["time_range"], form["safesearch"], warnings) == (time_range, level, [])


@pytest.mark.parametrize(("search_type", "level"), [("web", "1"), ("news", "2"), ("videos", "1"), ("images", "2")])
@pytest.mark.anyio
async def test_without_safe_search_brave_s_default_is_sent_not_the_instance_s(
    searxng: SearxngProvider, searx: FakeSearxng, search_type: str, level: str
) -> None:
    await searxng.search(req(search_type=search_type))
    assert searx.search_requests()[-1].params["safesearch"] == level
    assert searx.search_requests()[-1].engine_safesearch == int(level)  # not the instance's default 0


def test_image_moderate_safe_search_reaches_searxng_as_moderate() -> None:
    args = WebSearchArgs(query="cats", search_type="images", safe_search="moderate", offset=2)
    prepared = prepare_search(args, make_settings())
    assert ("safesearch", "strict") in prepared.params  # Brave's rule, for Brave
    request = search_request(prepared, args)
    assert (request.safe_search, request.offset) == ("moderate", 2)
    assert search_form(request)[0]["safesearch"] == "1"


@pytest.mark.anyio
async def test_custom_date_range_is_dropped_with_a_warning(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    page = await searxng.search(req(freshness="2025-01-01to2025-02-01"))
    assert "time_range" not in searx.search_requests()[-1].params
    assert [w.code for w in page.warnings] == ["PARAM_IGNORED"]
    assert "custom date ranges" in page.warnings[0].message


@pytest.mark.anyio
async def test_country_without_language_says_so_and_asks_for_every_language(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    page = await searxng.search(req(country="FR"))
    sent = searx.search_requests()[-1]
    # "all", sent: else the instance would take our Accept-Language header as the language
    assert sent.params["language"] == "all" and sent.engine_language == "all"
    assert [w.code for w in page.warnings] == ["PARAM_IGNORED"]


# Brave's codes as SearXNG must get them (team notes, searxng-real.md §c): zh-hans is refused with 400 as sent,
# jp reaches no engine; regions upper-case; a country becomes the region of a bare language.
@pytest.mark.parametrize(
    ("language", "country", "sent"),
    [
        ("zh-hans", None, "zh-CN"),
        ("zh-hant", "TW", "zh-TW"),
        ("jp", None, "ja"),
        ("jp", "JP", "ja-JP"),
        ("en-gb", None, "en-GB"),
        ("en-gb", "GB", "en-GB"),
        ("pt-br", None, "pt-BR"),
        ("pt-pt", None, "pt-PT"),
        ("de", "AT", "de-AT"),
        ("en", "ALL", "en"),
        ("nb", None, "nb"),
    ],
)
@pytest.mark.anyio
async def test_brave_languages_are_sent_as_searxng_locales(
    searxng: SearxngProvider, searx: FakeSearxng, language: str, country: str | None, sent: str
) -> None:
    page = await searxng.search(req(language=language, country=country))
    assert searx.search_requests()[-1].status == 200  # the fake validates language as SearXNG does
    assert searx.search_requests()[-1].engine_language == sent
    assert page.warnings == []


def test_every_brave_search_language_has_a_searxng_locale() -> None:
    assert set(LANGUAGES) == set(SEARCH_LANGUAGES)


@pytest.mark.anyio
async def test_a_language_without_a_searxng_locale_is_dropped_with_a_warning(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    page = await searxng.search(req(asked_language="klingon"))
    assert searx.search_requests()[-1].params["language"] == "all"
    assert [w.code for w in page.warnings] == ["INVALID_SEARCH_LANGUAGE"]
    assert "klingon" in page.warnings[0].message and "Brave" not in page.warnings[0].message


@pytest.mark.parametrize(("asked", "sent"), [("en-US", "en-US"), ("EN_us", "en-US"), ("fil", "fil"), ("tlh", "tlh")])
@pytest.mark.anyio
async def test_a_searxng_locale_brave_lacks_is_sent_as_searxng_spells_it(
    searxng: SearxngProvider, searx: FakeSearxng, asked: str, sent: str
) -> None:
    page = await searxng.search(req(asked_language=asked))
    assert (searx.search_requests()[-1].status, searx.search_requests()[-1].engine_language) == (200, sent)
    assert page.warnings == []


@pytest.mark.anyio
async def test_a_country_the_language_region_overrides_is_named_not_dropped_silently(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    page = await searxng.search(req(language="zh-hans", country="US"))
    assert searx.search_requests()[-1].engine_language == "zh-CN"
    assert [w.code for w in page.warnings] == ["PARAM_IGNORED"]
    message = page.warnings[0].message
    assert "zh-CN" in message and "country US was not used" in message and "Brave" not in message


@pytest.mark.parametrize(("asked", "sent", "codes"), [("se", "en-SE", []), ("zh-hans", "en", ["INVALID_COUNTRY"])])
@pytest.mark.anyio
async def test_a_country_brave_lacks_is_judged_by_searxng(
    searxng: SearxngProvider, searx: FakeSearxng, asked: str, sent: str, codes: list[str]
) -> None:
    page = await searxng.search(req(language="en", asked_country=asked))
    assert searx.search_requests()[-1].engine_language == sent
    assert [w.code for w in page.warnings] == codes
    assert all("Brave" not in w.message for w in page.warnings)


# ------------------------------------------------------------------------------------ query syntax


@pytest.mark.parametrize(
    ("query", "sent", "escaped"),
    [
        ("!!g hello", '"!!g" hello', ["!!g"]),
        ("hello !!g", 'hello "!!g"', ["!!g"]),
        ("!images cats", '"!images" cats', ["!images"]),
        ("i <3 python", 'i "<3" python', ["<3"]),
        ("hello :fr", 'hello ":fr"', [":fr"]),
        ("css !important", 'css "!important"', ["!important"]),
        ("hello !! world", 'hello "!!" world', ["!!"]),
        ('"!!g hello"', '"!!g hello"', []),  # a token holding a quote is never parsed
        ('"say !!g now"', '"say "!!g" now"', ["!!g"]),  # inside a phrase: the phrase is split around it
        ("a := b <= c :) ::", "a := b <= c :) ::", []),  # not syntax: left alone
        ("python3 -m venv site:docs.python.org", "python3 -m venv site:docs.python.org", []),
    ],
)
def test_searxng_syntax_is_quoted_and_nothing_else(query: str, sent: str, escaped: list[str]) -> None:
    assert escape_syntax(query) == (sent, escaped)


@pytest.mark.parametrize("query", ["!!g hello", "hello !!w world", "!images cats", ":de hallo", "i <3 python"])
@pytest.mark.anyio
async def test_the_engines_search_every_word_the_agent_wrote(
    searxng: SearxngProvider, searx: FakeSearxng, query: str
) -> None:
    page = await searxng.search(req(query=query))
    sent = searx.search_requests()[-1]
    assert sent.status == 200  # no redirect off the instance, no engine or language switched
    assert sent.engine_query is not None
    assert [w.strip('"') for w in sent.engine_query.split()] == query.split()
    assert sent.engine_categories == ["general"] and sent.engine_language == "all"
    assert [w.code for w in page.warnings] == ["QUERY_ESCAPED"]


@pytest.mark.anyio
async def test_brave_only_options_the_caller_set_are_named_in_one_warning(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    args = WebSearchArgs(
        query="rust", goggles=["https://example.org/g"], result_filter=["web"], extra_snippets=True,
        units="metric", spellcheck=False, ui_language="de-DE", text_decorations=True,
    )  # fmt: skip
    request = search_request(prepare_search(args, make_settings()), args)
    page = await searxng.search(request)
    notes = [w.message for w in page.warnings if w.code == "PARAM_IGNORED"]
    assert notes == [  # result_filter is not among them: SearXNG applies it to its own sections
        "SearXNG has no goggles, extra_snippets, units, spellcheck, ui_language; they were not sent."
    ]
    assert page.named == ("web",)
    plain = WebSearchArgs(query="rust")
    assert search_request(prepare_search(plain, make_settings()), plain).brave_options == ()


# ------------------------------------------------------------------------------------ answers


@pytest.mark.anyio
async def test_news_carry_iso_published_dates_with_or_without_offset(searxng: SearxngProvider) -> None:
    page = await searxng.search(req(search_type="news", count=3))
    assert [s.key for s in page.sections] == ["news"]
    dates = {r.url.rsplit("/", 1)[1]: r.published_date for r in page.sections[0].results}
    assert dates == {"1": "2025-03-14T09:30:00+00:00", "2": "2025-03-14T08:30:00", "3": None}


@pytest.mark.anyio
async def test_videos_are_served_with_duration_creator_views_and_thumbnail(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    page = await searxng.search(req(search_type="videos", count=2))
    assert searx.search_requests()[-1].params["categories"] == "videos"
    assert [s.key for s in page.sections] == ["videos"]
    by_url = {r.url: r for r in page.sections[0].results}
    first, second = by_url["https://video.example.net/hello-world/1"], by_url["https://video.example.net/hello-world/2"]
    assert first.duration == "3:20"  # as text
    assert second.duration == "3:21"  # 201.0 seconds, as a number
    assert (first.creator, first.views, first.thumbnail) == (
        "channel 0",
        1500,
        "https://video.example.net/hello-world/1.jpg",
    )
    assert first.published_date == "2025-03-14T09:30:00+00:00"


@pytest.mark.anyio
async def test_video_fields_in_other_shapes(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.extra_results = [
        {"url": "", "iframe_src": "https://v.example.org/embed/9", "length": 3725.0, "views": 1234, "metadata": "Pub"},
        {"url": "https://v.example.org/x", "length": True, "views": "lots", "author": "<b>Ann</b>"},
    ]
    page = await searxng.search(req(search_type="videos", count=2))
    embedded, odd = page.sections[0].results
    assert (embedded.url, embedded.duration, embedded.views, embedded.publisher) == (
        "https://v.example.org/embed/9",  # no page URL: the player's
        "1:02:05",
        1234,
        "Pub",
    )
    assert (odd.duration, odd.views, odd.creator) == (None, None, "Ann")


@pytest.mark.anyio
async def test_images_carry_image_url_thumbnail_and_size(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.extra_results = [{"url": "https://no-image.example.org/", "title": "no image", "img_src": ""}]
    page = await searxng.search(req(search_type="images", count=2))
    first = page.sections[0].results[0]
    assert page.sections[0].key == "images"
    assert searx.search_requests()[-1].params["categories"] == "images"
    assert first.image_url == "https://img.example.net/hello-world/1.jpg"
    assert first.thumbnail == "https://img.example.net/hello-world/1.thumb.jpg"
    assert (first.width, first.height) == (800, 600)


@pytest.mark.anyio
async def test_unusable_urls_are_dropped_duplicates_removed_odd_fields_tolerated(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.extra_results = [
        {"url": "javascript:alert(1)", "title": "evil"},
        {"url": "https://dup.example.org/page", "title": "<script>x</script>Dup", "score": "high"},
        {"url": "https://dup.example.org/page/", "title": "dup again"},
        {"url": "https://odd.example.org/", "engine": "wikipedia", "publishedDate": "yesterday", "score": 1e999},
        "not an object",
    ]
    page = await searxng.search(req(count=3))
    results = page.sections[0].results
    assert [r.url for r in results] == [
        "https://dup.example.org/page",
        "https://odd.example.org/",
        "https://site0.example.org/hello-world/1",
    ]
    assert results[0].title == "xDup" and results[0].score is None
    assert results[1].title == "odd.example.org"  # no title: the site stands in
    assert (results[1].engines, results[1].published_date, results[1].score) == (["wikipedia"], None, None)
    assert [w.code for w in page.warnings] == ["DEDUPLICATED"]


@pytest.mark.anyio
async def test_answers_infoboxes_and_suggestions_become_sections(searxng: SearxngProvider, searx: FakeSearxng) -> None:
    searx.answers = [{"answer": "Hello <b>world</b>", "url": None, "engine": "plugin: hash_plugin"}]
    searx.infoboxes = [
        {
            "infobox": "Hello",
            "id": "https://en.wikipedia.org/wiki/Hello",
            "content": "A greeting.",
            "engine": "wikipedia",
            "attributes": [{"label": "Language", "value": "English"}, {"label": "", "value": "dropped"}],
            "urls": [{"title": "Wikipedia", "url": "https://en.wikipedia.org/wiki/Hello"}],
        }
    ]
    searx.suggestions = ["hello there", "hello world program"]
    searx.corrections = ["hello world"]
    page = await searxng.search(req())
    assert [s.key for s in page.sections] == ["web", "infobox", "answers", "suggestions"]
    infobox = page.sections[1].results[0]
    assert (infobox.title, infobox.url, infobox.attributes) == (
        "Hello",
        "https://en.wikipedia.org/wiki/Hello",
        [["Language", "English"]],
    )
    answer = page.sections[2].results[0]
    assert (answer.snippet, answer.engines) == ("Hello world", ["plugin: hash_plugin"])
    assert [r.title for r in page.sections[3].results] == ["hello world", "hello there", "hello world program"]


@pytest.mark.anyio
async def test_older_build_with_string_answers_and_number_of_results(
    searxng: SearxngProvider, searx: FakeSearxng
) -> None:
    searx.legacy = True
    searx.pages = 0
    searx.answers = [{"answer": "42"}]
    page = await searxng.search(req())
    assert [s.key for s in page.sections] == ["answers"]  # an answer alone is a result, not NO_RESULTS
    assert page.sections[0].results[0].snippet == "42"


@pytest.mark.parametrize(
    ("published", "said"),
    [
        ("2025-03-16T09:00:00+00:00", "30 minutes ago"),
        ("2025-03-16T03:30:00+00:00", "6 hours ago"),
        ("2025-03-15T09:30:00", "1 day ago"),  # no offset: taken as UTC
        ("2025-03-11T09:30:00+00:00", "5 days ago"),
        ("2025-01-10T09:30:00+00:00", "2 months ago"),
        ("2022-03-04T12:00:00+00:00", "March 4, 2022"),
        ("2025-03-17T09:30:00+00:00", "March 17, 2025"),  # in the future: a date
    ],
)
def test_dates_are_told_as_ages_as_brave_tells_them(published: str, said: str) -> None:
    now = datetime(2025, 3, 16, 9, 30, tzinfo=UTC)
    assert age(published, now) == said


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://h:8080", "http://h:8080/search"),
        ("http://h/searx/", "http://h/searx/search"),
        ("http://h/searx/?foo=1", "http://h/searx/search?foo=1"),
        ("https://h?token=t#top", "https://h/search?token=t"),
    ],
)
def test_the_search_url_keeps_the_base_path_and_query(base: str, url: str) -> None:
    assert SearxngConfig(base).search_url == url


def test_searxng_takes_a_long_query_whole_up_to_what_its_engines_take() -> None:
    words = " ".join(f"word{n}" for n in range(120))
    assert search_form(req(query=words))[0]["q"] == words  # no Brave limit of 400 characters / 50 words
    huge = "abcdefghi " * 300  # 3000 characters
    form, warnings = search_form(req(query=huge.strip()))
    assert len(form["q"]) == 1999 and form["q"].endswith("abcdefghi")  # cut at a word boundary
    assert [w.code for w in warnings] == ["QUERY_TRUNCATED"] and "Brave" not in warnings[0].message
