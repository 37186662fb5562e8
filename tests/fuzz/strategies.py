"""Junk both doors share: control characters, markup, huge and surrogate text, JSON scalars and deep nesting, and
the shape of Brave's results with a wrong type in any field (the body fuzz and the parser properties use it)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

control_text = st.text(st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Zs"]), max_size=20)
surrogate_text = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=4)
markup_text = st.sampled_from(
    ["<b>x</b>", "&amp;&lt;&#x27;", "<script>alert(1)</script>", "\u202eevil", "\x1b[31mred", "a\r\nb", "\ufeff"]
)
huge_text = st.builds(lambda piece, n: piece * n, st.text(min_size=1, max_size=3), st.integers(2_000, 120_000))
texts = st.one_of(st.text(max_size=60), control_text, markup_text, huge_text)


def nested(leaf: Any, depth: int, as_dict: bool) -> Any:
    """``leaf`` wrapped ``depth`` times in lists or one-key objects."""
    for _ in range(depth):
        leaf = {"k": leaf} if as_dict else [leaf]
    return leaf


def scalars(*, wild: bool) -> st.SearchStrategy[Any]:
    """JSON scalars; ``wild`` adds what only a hand-written JSON text could carry (NaN, huge ints, surrogates)."""
    options: list[st.SearchStrategy[Any]] = [
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        texts,
    ]
    if wild:
        options += [st.floats(), st.integers(-(10**40), 10**40), surrogate_text]
    return st.one_of(options)


def values(*, wild: bool, max_depth: int) -> st.SearchStrategy[Any]:
    leaf = scalars(wild=wild)
    shallow = st.recursive(
        leaf,
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
        max_leaves=8,
    )
    deep = st.builds(nested, leaf, st.integers(20, max_depth), st.booleans())
    return st.one_of(shallow, shallow, deep)


# Every field Brave puts in a result of some type, and every field it nests one level down (meta_url.hostname,
# video.views, rating.ratingValue...): one level is enough to put a wrong type in each.
RESULT_FIELDS = (
    "title", "description", "age", "page_age", "meta_url", "extra_snippets", "thumbnail", "video", "properties",
    "question", "answer", "data", "breaking", "source", "profile", "long_desc", "attributes", "rating", "contact",
    "postal_address", "website_url", "provider_url", "type", "subtype", "family_friendly", "is_source_local", "label",
)  # fmt: skip
NESTED_FIELDS = (
    "hostname", "src", "original", "duration", "views", "creator", "publisher", "width", "height", "forum_name",
    "num_answers", "score", "question", "top_comment", "url", "name", "telephone", "ratingValue", "bestRating",
    "reviewCount", "display_address", "displayAddress", "title", "x",
)  # fmt: skip


def field_values(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """What a result field may hold: a scalar, a (nested) list of them, or an object of Brave's nested fields."""
    return st.one_of(
        leaf,
        st.lists(st.one_of(leaf, st.lists(leaf, max_size=3)), max_size=4),
        st.dictionaries(st.sampled_from(NESTED_FIELDS), leaf, max_size=5),
    )


def mostly(good: st.SearchStrategy[Any], junk: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` four times in five: most examples get past the first check and reach the deeper fields."""
    return st.integers(0, 4).flatmap(lambda roll: junk if roll == 0 else good)


WEB_SECTIONS = ("web", "news", "videos", "discussions", "faq", "infobox", "locations")
ANSWER_TYPES = {"web": "search", "news": "news", "videos": "videos", "images": "images"}


def query_objects(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Brave's ``query`` or ``summarizer`` object with junk in its fields, or junk in its place."""
    names = ("original", "altered", "more_results_available", "spellcheck_off", "key")
    return st.one_of(field_values(leaf), st.fixed_dictionaries({}, optional=dict.fromkeys(names, leaf)))
