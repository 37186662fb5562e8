"""The parts every v1 envelope shares: warnings, results and sections, call meta, and the error envelope."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

API_VERSION: Literal["v1"] = "v1"


class Envelope(BaseModel):
    """Base of every envelope: dumps compactly, without None fields."""

    model_config = ConfigDict(extra="forbid")

    def dump(self) -> dict[str, Any]:
        """The JSON-ready dict sent as ``structuredContent``."""
        return self.model_dump(mode="json", exclude_none=True)


class WarningItem(Envelope):
    """A soft problem: the call went on, this tells the agent what changed."""

    code: str
    message: str


class ToolEnvelope(Envelope):
    """What every tool answer carries, success or error: the contract version and the call's warnings."""

    api_version: Literal["v1"] = API_VERSION
    warnings: list[WarningItem] = Field(default_factory=list)


class Result(Envelope):
    """One search result; each search type fills only the fields it has."""

    title: str
    url: str
    snippet: str = ""
    age: str | None = None
    site: str | None = None  # the site the page belongs to, as a reader names it (host without www.)
    # provenance: which provider found it (brave, searxng), the engines behind it (SearXNG), its rank
    # in the provider's list (1-based), the publication time as ISO-8601 when known, and the provider's
    # own relevance score when it gives one
    provider: str | None = None
    engines: list[str] | None = None
    rank: int | None = None
    published_date: str | None = None
    score: float | None = None
    extra_snippets: list[str] | None = None
    # news
    breaking: bool | None = None
    # videos
    duration: str | None = None
    views: int | None = None
    creator: str | None = None
    publisher: str | None = None
    thumbnail: str | None = None
    # images
    image_url: str | None = None
    width: int | None = None
    height: int | None = None
    # faq / discussions
    question: str | None = None
    answer: str | None = None
    forum: str | None = None
    answers: int | None = None
    votes: str | None = None
    # infobox / locations
    attributes: list[list[str]] | None = None
    address: str | None = None
    phone: str | None = None
    rating: str | None = None
    # places (brave_local_search): numbers for programs and widgets beside the readable rating
    rating_value: float | None = None
    review_count: int | None = None
    hours: str | None = None
    open_now: bool | None = None
    price_range: str | None = None
    latitude: float | None = None
    longitude: float | None = None
    distance: str | None = None
    categories: list[str] | None = None

    @classmethod
    def checked(cls, title: str, url: str, **fields: Any) -> Result:
        """A result from values its parser already cleaned and typed, without validating them a second time.

        What pydantic's ``model_construct`` builds (every default, then the given fields), minus its
        per-field loop: parsing builds one of these per upstream result on every cache miss.
        """
        if not _RESULT_NAMES.issuperset(fields):
            raise TypeError(f"Result has no field {sorted(fields.keys() - _RESULT_NAMES)[0]!r}")
        values = _RESULT_FIELDS.copy()
        values["title"], values["url"] = title, url
        values.update(fields)
        result = cls.__new__(cls)
        object.__setattr__(result, "__dict__", values)
        object.__setattr__(result, "__pydantic_fields_set__", {"title", "url", *fields})
        object.__setattr__(result, "__pydantic_extra__", None)
        object.__setattr__(result, "__pydantic_private__", None)
        return result


# Every field of a result with its default, in declaration order (the required title and url are always given).
_RESULT_FIELDS = MappingProxyType({name: info.default for name, info in Result.model_fields.items()})
_RESULT_NAMES = frozenset(_RESULT_FIELDS)


# Direct answers (an infobox, SearXNG's answers and suggested searches) are not results: a search shows them above
# its results whatever max_results says (bounded in bytes), unnumbered, so result numbers stay the results' own.
DIRECT_ANSWERS: tuple[str, ...] = ("infobox", "answers", "suggestions")


class Section(Envelope):
    """A group of results of one kind (web, news, videos, faq, discussions, infobox, locations, images)."""

    key: str
    label: str
    section_limit_reached: bool = False
    results: list[Result]


class RateLimitMeta(Envelope):
    """The plan figures Brave reported on its last answer."""

    per_second: float | None = None
    remaining_second: int | None = None
    limit_month: int | None = None
    remaining_month: int | None = None
    reset_seconds: float | None = None
    reset_month_seconds: float | None = None


class MetaStamp(Envelope):
    """Who answered and which call it was: on the meta of every envelope, success or error."""

    provider: str = "brave"
    trace_id: str
    server_version: str


class CallMeta(MetaStamp):
    """The stamp plus what every served call reports: its duration and the plan figures Brave sent."""

    duration_ms: int = 0
    rate_limit: RateLimitMeta | None = None


class ErrorBody(Envelope):
    """The ``error`` member of an error envelope."""

    code: str
    message: str
    retryable: bool
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorMeta(MetaStamp):
    """Minimal meta of an error envelope."""

    tool: str | None = None


class ErrorEnvelope(ToolEnvelope):
    """Returned with ``isError: true`` for every failure."""

    error: ErrorBody
    meta: ErrorMeta
