"""Properties over random input: nothing Brave would reject is sent, junk never crashes, text always fits."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from brave_search_mcp.brave.params import PreparedSearch, prepare_search
from brave_search_mcp.brave.results import parse_answer
from brave_search_mcp.config import MAX_MAX_BYTES, MAX_MAX_LINES, MIN_MAX_BYTES, MIN_MAX_LINES, Settings
from brave_search_mcp.models.envelopes import DIRECT_ANSWERS, Result, Section, WarningItem
from brave_search_mcp.models.errors import InvalidArgument, ParseError
from brave_search_mcp.models.inputs import SearchType, WebSearchArgs
from brave_search_mcp.models.search import SearchEnvelope, SearchMeta
from brave_search_mcp.render.compact import fit_to_limits
from tests.fuzz.checks import examples
from tests.fuzz.strategies import ANSWER_TYPES, RESULT_FIELDS, WEB_SECTIONS, mostly, query_objects
from tests.fuzz.strategies import field_values as field_values_of


def word_set(text: str) -> set[str]:
    return set(text.split())


# Brave's own lists (reference/brave-api.md §4), written out independently of params.py.
BRAVE_COUNTRIES = word_set(
    "AR AU AT BE BR CA CL DK FI FR DE GR HK IN ID IT JP KR MY MX NL NZ NO CN PL PT PH RU SA ZA ES SE CH TW TR GB US ALL"
)
BRAVE_SEARCH_LANGS = word_set(
    "ar eu bn bg ca zh-hans zh-hant hr cs da nl en en-gb et fi fr gl de el gu he hi hu is it ja jp kn ko lv lt ms ml "
    "mr nb pl pt-br pt-pt pa ro ru sr sk sl es sv ta te th tr uk vi"
)
BRAVE_UI_LANGS = word_set(
    "es-AR en-AU de-AT nl-BE fr-BE pt-BR en-CA fr-CA es-CL da-DK fi-FI fr-FR de-DE el-GR zh-HK en-IN en-ID it-IT "
    "ja-JP ko-KR en-MY es-MX nl-NL en-NZ no-NO zh-CN pl-PL en-PH ru-RU en-ZA es-ES sv-SE fr-CH de-CH zh-TW tr-TR "
    "en-GB en-US es-US"
)
SENDABLE_FILTERS = {"discussions", "faq", "infobox", "news", "query", "videos", "web", "locations"}
MAX_COUNT = {"web": 20, "news": 50, "videos": 50, "images": 200}
ALLOWED_KEYS = {
    "web": {
        "q", "count", "offset", "country", "search_lang", "ui_lang", "safesearch", "freshness", "units",
        "spellcheck", "extra_snippets", "text_decorations", "result_filter", "goggles", "summary",
    },
    "news": {
        "q", "count", "offset", "country", "search_lang", "ui_lang", "safesearch", "freshness", "spellcheck",
        "extra_snippets", "goggles",
    },
    "videos": {"q", "count", "offset", "country", "search_lang", "ui_lang", "safesearch", "freshness", "spellcheck"},
    "images": {"q", "count", "country", "search_lang", "safesearch", "spellcheck"},
}  # fmt: skip
FRESHNESS = re.compile(r"pd|pw|pm|py|([0-9]{4}-[0-9]{2}-[0-9]{2})to([0-9]{4}-[0-9]{2}-[0-9]{2})")
BOOL_KEYS = ("spellcheck", "extra_snippets", "text_decorations")


def assert_brave_accepts(prepared: PreparedSearch) -> None:
    """Brave's §8 validation rules, applied to what would be sent."""
    params = list(prepared.params)
    keys = [key for key, _ in params]
    assert keys[0] == "q"
    assert set(keys) <= ALLOWED_KEYS[prepared.search_type]
    repeated = {key for key in keys if keys.count(key) > 1}
    assert repeated <= {"goggles"}
    assert keys.count("goggles") <= 3
    sent = dict(params)

    query = sent["q"]
    assert query.strip()
    assert query == query.strip()
    assert len(query) <= 400
    assert len(query.split()) <= 50
    assert not any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in query)

    assert 1 <= int(sent["count"]) <= MAX_COUNT[prepared.search_type]
    assert int(sent["count"]) == prepared.requested
    if prepared.search_type == "images":
        assert "offset" not in sent
    elif "offset" in sent:
        assert 1 <= int(sent["offset"]) <= 9
    assert 0 <= prepared.offset <= 9

    if "country" in sent:
        assert sent["country"] in BRAVE_COUNTRIES
    if "search_lang" in sent:
        assert sent["search_lang"] in BRAVE_SEARCH_LANGS
    if "ui_lang" in sent:
        assert sent["ui_lang"] in BRAVE_UI_LANGS
    if "safesearch" in sent:
        allowed = {"off", "strict"} if prepared.search_type == "images" else {"off", "moderate", "strict"}
        assert sent["safesearch"] in allowed
    if "units" in sent:
        assert sent["units"] in {"metric", "imperial"}
    if "freshness" in sent:
        match = FRESHNESS.fullmatch(sent["freshness"])
        assert match is not None
        if match.group(1):
            assert date.fromisoformat(match.group(1)) <= date.fromisoformat(match.group(2))
    if "result_filter" in sent:
        entries = sent["result_filter"].split(",")
        assert entries
        assert set(entries) <= SENDABLE_FILTERS
    for key in BOOL_KEYS:
        if key in sent:
            assert sent[key] in {"true", "false"}
    if "summary" in sent:
        assert sent["summary"] == "1"
    for key, value in params:
        if key == "goggles":
            assert value.startswith("https://") or "\n" in value or value.lstrip().startswith(("$", "!"))
    assert MIN_MAX_LINES <= prepared.max_lines <= MAX_MAX_LINES
    assert MIN_MAX_BYTES <= prepared.max_bytes <= MAX_MAX_BYTES


def near(values: list[str]) -> st.SearchStrategy[str]:
    """Valid values, their case variants, and random text."""
    valid = st.sampled_from(values)
    return st.one_of(valid, valid.map(str.lower), valid.map(str.upper), st.text(max_size=12))


words = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=30)
queries = st.one_of(
    st.text(min_size=1, max_size=600),
    st.lists(words, min_size=1, max_size=80).map(" ".join),
    st.lists(st.sampled_from(["a", "bb", "\x00", "\t", " ", "xyz" * 50]), min_size=1, max_size=200).map("".join),
)
dates = st.dates(min_value=date(1990, 1, 1), max_value=date(2100, 12, 31)).map(date.isoformat)
freshness = st.one_of(
    st.sampled_from(["pd", "pw", "pm", "py", "PD ", "2025-02-30to2025-03-01", " ", "p"]),
    st.tuples(dates, dates).map(lambda pair: f"{pair[0]}to{pair[1]}"),
    st.text(max_size=25),
)
goggles = st.lists(
    st.one_of(
        st.sampled_from(
            ["https://example.com/a.goggle", "http://example.com/a", "$discard\n$site=x", "!c", "file:///x", "https://"]
        ),
        st.text(max_size=20),
    ),
    max_size=6,
)
filters = st.lists(
    st.one_of(st.sampled_from(sorted(SENDABLE_FILTERS | {"summarizer", "Web", " NEWS "})), st.text(max_size=8)),
    max_size=6,
)


@st.composite
def search_args(draw: st.DrawFn) -> dict[str, Any]:
    args: dict[str, Any] = {"query": draw(queries)}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "search_type": st.sampled_from(["web", "news", "videos", "images"]),
        "max_results": st.integers(min_value=1, max_value=1000),
        "offset": st.integers(min_value=0, max_value=100),
        "country": near([*sorted(BRAVE_COUNTRIES), "UK"]),
        "search_language": near([*sorted(BRAVE_SEARCH_LANGS), "zh", "zh_TW", "en-US", "iw", "pt"]),
        "ui_language": near([*sorted(BRAVE_UI_LANGS), "en", "de", "nb", "en_us"]),
        "safe_search": st.sampled_from(["off", "moderate", "strict"]),
        "units": st.sampled_from(["metric", "imperial"]),
        "freshness": freshness,
        "spellcheck": st.booleans(),
        "extra_snippets": st.booleans(),
        "text_decorations": st.booleans(),
        "goggles": goggles,
        "result_filter": filters,
        "summary": st.booleans(),
        "max_lines": st.integers(min_value=-10, max_value=10_000),
        "max_bytes": st.integers(min_value=-10, max_value=10**7),
        "debug": st.booleans(),
        "include_raw_payload": st.booleans(),
        "disable_cache": st.booleans(),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            args[name] = draw(strategy)
    return args


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(search_args())
def test_prepare_search_never_sends_what_brave_rejects(arguments: dict[str, Any]) -> None:
    try:
        args = WebSearchArgs.model_validate(arguments)
    except ValueError:
        return  # the model rejects it (blank query): an INVALID_ARGUMENT before params run
    try:
        prepared = prepare_search(args, Settings())
    except InvalidArgument as exc:
        field = exc.field
        prepared = None
    if prepared is None:
        assert field in {"query", "result_filter"}
        return
    assert_brave_accepts(prepared)
    for warning in prepared.warnings:
        assert warning.code
        assert not any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in warning.message)


# ------------------------------------------------------------------------------------ junk answers

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["https://a.example/x", "http://b.example/", "https://www.a.example/x/", "<b>x</b>&amp;"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["results", "url", "title", "src", "type", "x"]), children, max_size=3),
    ),
    max_leaves=6,
)
field_values = field_values_of(json_scalars)


result_items = mostly(
    st.fixed_dictionaries(
        {"url": st.sampled_from(["https://a.example/x", "https://c.example/", "http://d.example/p?q=1"])},
        optional=dict.fromkeys(RESULT_FIELDS, field_values),
    ),
    json_scalars,
)
result_lists = st.lists(result_items, min_size=1, max_size=5)
containers = mostly(st.fixed_dictionaries({"results": result_lists}), field_values)


@st.composite
def answers(draw: st.DrawFn) -> tuple[SearchType, Any]:
    search_type: SearchType = draw(st.sampled_from(["web", "news", "videos", "images"]))
    if draw(st.integers(0, 9)) == 0:
        return search_type, draw(json_values)
    data: dict[str, Any] = {}
    if search_type == "web":
        data.update({name: draw(containers) for name in WEB_SECTIONS if draw(st.integers(0, 2))})
    else:
        data["results"] = draw(mostly(result_lists, field_values))
    for name in ("query", "summarizer"):
        if draw(st.booleans()):
            data[name] = draw(query_objects(json_scalars))
    kind = draw(st.integers(0, 4))
    if kind < 3:
        data["type"] = ANSWER_TYPES[search_type]
    elif kind == 3:
        data["type"] = draw(json_scalars)
    return search_type, data


def envelope_of(
    search_type: SearchType, sections: list[Section], query: str = "q", warnings: list[WarningItem] | None = None
) -> SearchEnvelope:
    meta = SearchMeta(
        query=query,
        search_type=search_type,
        requested=10,
        returned=sum(len(s.results) for s in sections),
        offset=0,
        has_more=False,
        trace_id="t",
        server_version="0",
    )
    return SearchEnvelope(summary="", sections=sections, meta=meta, warnings=warnings or [])


def check_fit(envelope: SearchEnvelope, max_lines: int, max_bytes: int) -> None:
    fitted, text = fit_to_limits(envelope, max_lines, max_bytes)
    lines = text.split("\n")
    assert len(lines) <= max_lines
    assert len(text.encode("utf-8")) <= max_bytes
    returned = fitted.meta.returned
    assert returned == sum(len(s.results) for s in fitted.sections if s.key not in DIRECT_ANSWERS)
    assert lines[0] == fitted.summary
    starts = [line.split(". ", 1)[0] for line in lines]
    assert all(str(number) in starts for number in range(1, returned + 1))
    # The structured envelope is exactly what the text shows: rendering it again, unbounded, gives the same text.
    assert fit_to_limits(fitted, MAX_MAX_LINES, MAX_MAX_BYTES)[1] == text


limits = st.tuples(
    st.integers(min_value=MIN_MAX_LINES, max_value=MAX_MAX_LINES),
    st.integers(min_value=MIN_MAX_BYTES, max_value=MAX_MAX_BYTES),
)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers(), st.booleans(), limits)
def test_junk_answers_raise_only_parse_error_and_fit(
    answer: tuple[SearchType, Any], decorations: bool, bounds: tuple[int, int]
) -> None:
    search_type, data = answer
    try:
        parsed = parse_answer(search_type, data, text_decorations=decorations)
    except ParseError:
        event("ParseError")
        return
    event(f"results parsed: {'some' if parsed.sections else 'none'}")
    for section in parsed.sections:
        for result in section.results:
            assert result.url.startswith(("http://", "https://"))
            assert result.title
            assert "\n" not in result.title + result.snippet
    check_fit(envelope_of(search_type, parsed.sections, warnings=parsed.warnings), *bounds)


text_fields = st.text(max_size=500)
results = st.builds(
    Result,
    title=st.text(min_size=1, max_size=200),
    url=st.text(max_size=300).map(lambda tail: "https://x.example/" + tail),
    snippet=text_fields,
    age=st.none() | st.text(max_size=30),
    site=st.none() | st.text(max_size=30),
    extra_snippets=st.none() | st.lists(st.text(max_size=300), max_size=5),
)
sections = st.lists(
    st.tuples(st.sampled_from(["web", "news", "videos", "faq", "infobox"]), st.lists(results, max_size=25)),
    max_size=4,
).map(lambda pairs: [Section(key=key, label=key.title(), results=items) for key, items in pairs])


@settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(sections, limits, st.text(min_size=1, max_size=400))
def test_fit_to_limits_always_within_bounds(section_list: list[Section], bounds: tuple[int, int], query: str) -> None:
    check_fit(envelope_of("web", section_list, query=query), *bounds)
