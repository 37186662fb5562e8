"""Each shortcut on the per-call path (parse, sanitize, render) gives exactly what the long way gives."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brave_search_mcp.brave.results import parse_answer
from brave_search_mcp.models.envelopes import Result
from brave_search_mcp.models.errors import ParseError
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.render import compact
from brave_search_mcp.render import text as sanitizer
from brave_search_mcp.render.text import clean_text, dedup_key, one_line
from testkit.brave.brave import FIXTURES_DIR
from tests.fuzz.checks import examples
from tests.test_properties import answers, envelope_of

# Any code point, lone surrogates and every line break included, with the characters the shortcuts look for.
ANY_CHAR = st.characters(codec=None, exclude_categories=()) | st.sampled_from(list(" \n\r\u2028\u0085<>&;·…\x1b"))
ANY_TEXT = st.text(ANY_CHAR, max_size=80)


def _one_line_the_long_way(text: str) -> str:
    if text.isascii():
        return text if "\n" not in text and "\r" not in text else text.translate(sanitizer._LINE_BREAKS)
    return text.translate(sanitizer._LINE_BREAKS).encode("utf-8", errors="ignore").decode("utf-8")


@settings(deadline=None)
@given(ANY_TEXT)
def test_one_line_equals_the_full_translation(text: str) -> None:
    assert one_line(text) == _one_line_the_long_way(text)


@settings(deadline=None)
@given(ANY_TEXT, st.booleans(), st.sampled_from([" ", "\n"]))
def test_text_without_angle_bracket_or_ampersand_has_no_markup_to_strip(text: str, bold: bool, breaks: str) -> None:
    plain = text.replace("<", "").replace("&", "")
    assert sanitizer._strip_markup(plain, decorations=bold, breaks=breaks) == plain


PRINTABLE_TEXT = st.text(st.sampled_from(list(" a\u00e9\u4e2d\U0001f600·")), max_size=60)


@settings(deadline=None)
@given(PRINTABLE_TEXT | st.text(ANY_CHAR, max_size=60))
def test_printable_text_without_runs_or_padding_of_spaces_folds_to_itself(text: str) -> None:
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        assert " ".join(text.split()) == text


@settings(deadline=None)
@given(PRINTABLE_TEXT)
def test_printable_text_is_space_folded(text: str) -> None:
    assert clean_text(text, limit=10_000) == " ".join(text.split())


URLS = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(["http", "HTTPS", "https", "ftp", ""]),
        st.sampled_from(["://", ":", ":///"]),
        st.text(st.sampled_from(list("aZ.-0@:[]%")), max_size=12),
        st.text(st.sampled_from(list("/aB.%")), max_size=10),
        st.sampled_from(["", "?", "?q=1", "?a=/&b"]),
        st.sampled_from(["", "#", "#frag"]),
    ),
) | st.text(ANY_CHAR, max_size=40)


@settings(deadline=None)
@given(URLS, st.sampled_from(["", " ", "\t"]))
def test_dedup_key_of_a_plain_host_is_what_urlunsplit_builds(url: str, pad: str) -> None:
    raw = pad + url + pad
    try:
        parts = urlsplit(raw.strip())
    except ValueError:
        return
    scheme = parts.scheme.lower()
    if scheme in ("http", "https") and sanitizer._plain_host(parts.netloc) is not None:
        rebuilt = urlunsplit((scheme, parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))
        assert dedup_key(raw) == rebuilt


@settings(deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8"), max_size=30), max_size=6))
def test_part_bytes_are_the_utf8_bytes_of_its_lines(lines: list[str]) -> None:
    assert compact._Part.of(lines).nbytes == sum(len(line.encode("utf-8")) for line in lines)


@settings(deadline=None)
@given(st.text(st.characters(codec="utf-8") | st.just("\n"), max_size=60), st.integers(-1, 12), st.integers(-1, 80))
def test_hardcut_of_text_that_fits_is_the_text(text: str, max_lines: int, max_bytes: int) -> None:
    cut_long_way = "" if max_lines <= 0 else compact._cut_bytes("\n".join(text.split("\n")[:max_lines]), max_bytes)
    assert compact._hardcut(text, max_lines, max_bytes) == cut_long_way


# ------------------------------------------------------------------------------------ results without revalidation

OPTIONAL_TEXT = st.none() | st.text(ANY_CHAR, max_size=20)
BY_TYPE: dict[Any, st.SearchStrategy[Any]] = {
    str: st.text(ANY_CHAR, max_size=20),
    str | None: OPTIONAL_TEXT,
    int | None: st.none() | st.integers(),
    float | None: st.none() | st.floats(allow_nan=False),
    bool | None: st.none() | st.booleans(),
    list[str] | None: st.none() | st.lists(st.text(max_size=5), max_size=3),
    list[list[str]] | None: st.none() | st.lists(st.lists(st.text(max_size=5), max_size=3), max_size=3),
}
OPTIONAL_FIELDS = {
    name: BY_TYPE[info.annotation] for name, info in Result.model_fields.items() if name not in ("title", "url")
}


@settings(deadline=None)
@given(
    st.text(ANY_CHAR, max_size=20), st.text(ANY_CHAR, max_size=20), st.fixed_dictionaries({}, optional=OPTIONAL_FIELDS)
)
def test_a_checked_result_is_the_validated_result(title: str, url: str, fields: dict[str, Any]) -> None:
    checked = Result.checked(title, url, **fields)
    validated = Result(title=title, url=url, **fields)
    assert checked == validated
    assert repr(checked) == repr(validated)
    assert checked.model_fields_set == validated.model_fields_set
    assert checked.dump() == validated.dump()
    copied = checked.model_copy(update={"age": "now"})
    assert copied.dump() == validated.model_copy(update={"age": "now"}).dump()
    assert checked.dump() == validated.dump()  # the copy changed neither


def test_every_result_default_is_shared_safely() -> None:
    assert all(info.default_factory is None for info in Result.model_fields.values())
    optional = [info for info in Result.model_fields.values() if not info.is_required()]
    assert all(info.default is None or isinstance(info.default, str) for info in optional)


def test_a_checked_result_refuses_a_field_it_does_not_have() -> None:
    with pytest.raises(TypeError, match="'colour'"):
        Result.checked("t", "https://a.example/", colour="red")


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers(), st.booleans())
def test_parsed_results_hold_the_types_validation_would_give(answer: tuple[SearchType, Any], decorations: bool) -> None:
    search_type, data = answer
    try:
        parsed = parse_answer(search_type, data, text_decorations=decorations)
    except ParseError:
        return
    for section in parsed.sections:
        for result in section.results:
            assert Result.model_validate(result.model_dump()) == result
            assert type(result.title) is str and type(result.url) is str


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_frozen(item) for item in value]
    return value


@pytest.mark.parametrize(("name", "search_type"), [("web", "web"), ("news", "news"), ("videos", "videos")])
def test_any_mapping_parses_as_a_dict_does(name: str, search_type: SearchType) -> None:
    data = json.loads((FIXTURES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    as_dicts = parse_answer(search_type, data)
    as_mappings = parse_answer(search_type, _frozen(data))
    assert as_dicts.sections
    assert [s.dump() for s in as_mappings.sections] == [s.dump() for s in as_dicts.sections]


LINE_TEXT = st.text(st.sampled_from(list("ab \n\r\x0b\x1e")), max_size=12) | ANY_TEXT


@settings(deadline=None)
@given(st.lists(LINE_TEXT, min_size=1, max_size=4), st.none() | LINE_TEXT, st.none() | LINE_TEXT)
def test_rendered_lines_are_always_single_clean_lines(texts: list[str], age: str | None, site: str | None) -> None:
    result = Result(title=texts[0], url="https://a.example/" + texts[-1], snippet=texts[-1], age=age, site=site)
    result.extra_snippets = texts[1:] or None
    for line in compact._render_result(result, 1):
        assert one_line(line) == line


def test_fit_to_limits_never_reads_the_summary_it_replaces() -> None:
    data = json.loads((FIXTURES_DIR / "web.json").read_text(encoding="utf-8"))
    parsed = parse_answer("web", data)
    envelope = envelope_of("web", parsed.sections)
    blank = envelope.model_copy(update={"summary": ""})
    assert isinstance(blank, SearchEnvelope)
    for bounds in ((200, 16384), (6, 16384), (200, 500), (2, 60)):
        assert compact.fit_to_limits(blank, *bounds)[1] == compact.fit_to_limits(envelope, *bounds)[1]
        assert compact.fit_to_limits(blank, *bounds)[0] == compact.fit_to_limits(envelope, *bounds)[0]
