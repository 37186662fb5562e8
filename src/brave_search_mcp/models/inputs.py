"""Strict tool inputs shared by several layers: the single source of truth for schemas, validation and help."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from brave_search_mcp.models.sites import SiteFilter, check_sites

SearchType = Literal["web", "news", "images", "videos"]
SafeSearch = Literal["off", "moderate", "strict"]
Units = Literal["metric", "imperial"]
HelpTopic = Literal["params", "examples", "limits", "errors", "all"]


class StrictInput(BaseModel):
    """Base for tool inputs: typed exactly as the published schema says (``"5"`` is not an integer, ``true``
    is not a number, a string is not a list), unknown fields are errors, and an alias may not duplicate its
    canonical name."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=False, strict=True)

    # canonical field name -> accepted Brave spellings
    ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {}

    @model_validator(mode="before")
    @classmethod
    def _no_alias_duplicates(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for canonical, aliases in cls.ALIASES.items():
                given = [name for name in (canonical, *aliases) if name in data]
                if len(given) > 1:
                    raise ValueError(f"give only one of {', '.join(given)} (they are the same parameter)")
        return data

    @field_validator("*", mode="before")
    @classmethod
    def _text_is_text(cls, value: Any) -> Any:
        """Lone surrogates are not text (a bad ``\\u`` escape): they are dropped, as the query always did."""
        if isinstance(value, str):
            return _without_surrogates(value)
        if isinstance(value, list):
            return [_without_surrogates(item) if isinstance(item, str) else item for item in value]
        return value


def _without_surrogates(text: str) -> str:
    """``text`` without lone surrogates, which cannot be encoded as UTF-8 and so never reach an upstream."""
    if not any("\ud800" <= char <= "\udfff" for char in text):
        return text
    return "".join(char for char in text if not "\ud800" <= char <= "\udfff")


def max_results_field(description: str) -> Any:
    """``max_results`` as every search tool takes it: at least 1, also accepted under Brave's own name ``count``."""
    return Field(None, ge=1, validation_alias=AliasChoices("max_results", "count"), description=description)


SiteList = Annotated[list[str] | None, AfterValidator(check_sites)]


def sites_field(*, exclude: bool = False) -> Any:
    """``sites`` / ``exclude_sites`` as every search tool takes them (entries checked by ``check_sites``)."""
    if exclude:
        return Field(None, description="Never results from these domains (max 10).")
    return Field(
        None, description="Only results from these domains (max 10; subdomains too); a path narrows: docs.x.org/3/api."
    )


class QueryInput(StrictInput):
    """Inputs that carry a search query, and perhaps coordinates: the checks they share, written once."""

    @field_validator("query", check_fields=False)
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be empty")
        return value

    @model_validator(mode="after")
    def _coordinates_together(self) -> Self:
        if (getattr(self, "latitude", None) is None) != (getattr(self, "longitude", None) is None):
            raise ValueError("give latitude and longitude together")
        return self

    @model_validator(mode="after")
    def _sites_leave_room(self) -> Self:
        found = SiteFilter.of(getattr(self, "sites", None), getattr(self, "exclude_sites", None))
        if found is not None and found.leaves_nothing():
            raise ValueError("exclude_sites covers every entry of sites, so no result could come back")
        return self


class WebSearchArgs(QueryInput):
    """Arguments of ``brave_web_search``."""

    ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {
        "max_results": ("count",),
        "search_language": ("search_lang",),
        "ui_language": ("ui_lang",),
        "safe_search": ("safesearch",),
    }

    query: str = Field(description='Search text; Brave operators work (site:, "phrase", -term). Max 400 chars.')
    search_type: SearchType = Field("web", description="Which Brave index to search.")
    sites: SiteList = sites_field()
    exclude_sites: SiteList = sites_field(exclude=True)
    result_filter: list[str] | None = Field(
        None,
        description='Web only: sections to show, max_results each, e.g. ["web","news"]. Default: web, others if room.',
    )
    max_results: int | None = max_results_field(
        "Results shown (default 10; max web 20, news/videos 50, images 200); direct answers extra."
    )
    offset: int | None = Field(None, ge=0, description="Page index 0-9 (not a result index). Not for images.")
    country: str | None = Field(None, description="2-letter result country, e.g. US, DE, or ALL.")
    search_language: str | None = Field(
        None, validation_alias=AliasChoices("search_language", "search_lang"), description="e.g. en, de, zh-hans."
    )
    ui_language: str | None = Field(
        None, validation_alias=AliasChoices("ui_language", "ui_lang"), description="e.g. en-US, de-DE."
    )
    safe_search: SafeSearch | None = Field(
        None, validation_alias=AliasChoices("safe_search", "safesearch"), description="Images: off or strict only."
    )
    units: Units | None = None
    freshness: str | None = Field(None, description="pd, pw, pm, py, or YYYY-MM-DDtoYYYY-MM-DD.")
    spellcheck: bool | None = None
    extra_snippets: bool | None = Field(None, description="Up to 5 extra snippets per result (web, news).")
    text_decorations: bool | None = Field(None, description="Web: keep match highlights as **bold**.")
    goggles: list[str] | None = Field(None, description="Goggle https URLs or inline definitions (web, news).")
    summary: bool = Field(False, description="Web: also return a summarizer_key for brave_summarizer.")
    max_lines: int | None = Field(None, description="Cap on text lines (20-300, default 120).")
    max_bytes: int | None = Field(None, description="Cap on text bytes (4096-98304, default 32768).")
    debug: bool = Field(False, description="Add debug data; enables the four debug controls.")
    include_raw_payload: bool = False
    include_request_url: bool = False
    disable_cache: bool = False
    disable_throttle: bool = False


class SummarizerArgs(StrictInput):
    """Arguments of ``brave_summarizer``: exactly one of ``key`` or ``query``."""

    key: str | None = Field(None, description="summarizer_key from brave_web_search with summary: true.")
    query: str | None = Field(None, description="Or a query: the tool searches and summarizes in one call.")
    entity_info: bool = False
    inline_references: bool = Field(False, description="Add (url) citations inside the summary text.")
    country: str | None = None
    search_language: str | None = Field(None, validation_alias=AliasChoices("search_language", "search_lang"))
    deadline_seconds: float | None = Field(
        None, gt=0, le=120, description="Deadline of the whole call in seconds (polling default 20)."
    )

    ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {"search_language": ("search_lang",)}

    @field_validator("query", "key")
    @classmethod
    def _not_blank(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A blank one given is refused in the words every tool uses for a blank query."""
        if value is not None and not value.strip():
            raise ValueError(f"{info.field_name} must not be empty")
        return value

    @model_validator(mode="after")
    def _exactly_one_source(self) -> SummarizerArgs:
        if (self.key is None) == (self.query is None):
            raise ValueError("give exactly one of key or query")
        return self


# read_url's budget: 500 characters hold a heading and a paragraph or two, less cannot show a page usefully;
# 50,000 (about 12,000 tokens) is a whole long documentation page, past which an agent should page or pick a
# section. The default 8,000 matches brave_llm_context's budget.
DEFAULT_MAX_CHARS = 8_000
MIN_MAX_CHARS = 500
MAX_MAX_CHARS = 50_000
MAX_URLS = 5
MAX_URL_CHARS = 4096


class ReadArgs(StrictInput):
    """Arguments of ``read_url``: exactly one of ``url`` or ``urls``; paging and sections are for one page."""

    url: str | None = Field(None, min_length=1, max_length=MAX_URL_CHARS, description="The http(s) page to read.")
    urls: list[str] | None = Field(  # each entry checked below: the schema stays short
        None,
        min_length=1,
        max_length=MAX_URLS,
        description="Or 1-5 pages at once, sharing max_chars evenly.",
    )
    start_char: int = Field(0, ge=0, description="Where to start: next_start_char of the previous part.")
    max_chars: int = Field(
        DEFAULT_MAX_CHARS, ge=1, description="Characters per part (500-50000; 500+ a page with urls)."
    )
    format: Literal["markdown", "text"] = Field(
        "markdown", description="markdown keeps headings, lists, tables and code; text drops the marks."
    )
    section: str | None = Field(
        None, min_length=1, max_length=300, description="A heading's text: read only that section."
    )
    links: Literal["same_site", "all"] | None = Field(
        None, description="Also list links: same_site (in the content) or all (nav, footer, other sites)."
    )
    render: Literal["auto", "never", "always"] = Field("auto", description="auto: render pages only JavaScript draws.")

    @model_validator(mode="after")
    def _one_source(self) -> ReadArgs:
        if any(not 1 <= len(url) <= MAX_URL_CHARS for url in self.urls or ()):
            raise ValueError(f"each of urls must be 1-{MAX_URL_CHARS} characters")
        if (self.url is None) == (self.urls is None):
            raise ValueError("give exactly one of url or urls")
        if self.urls is not None and (self.start_char or self.section is not None):
            raise ValueError("start_char and section are for one page: read it with url")
        return self


class HelpArgs(StrictInput):
    """Arguments of ``brave_web_search_help``."""

    topic: HelpTopic = "all"


class StatusArgs(StrictInput):
    """Arguments of ``brave_web_search_status``."""

    probe_connectivity: bool = Field(False, description="Send one count=1 request per search endpoint.")
    verbose: bool = Field(False, description="Add per-endpoint request/error counters.")
    include_limits: bool = Field(False, description="Add the parameter limits.")


# ---------------------------------------------------------------------------------------------
# Output envelopes. Optional fields are omitted from the wire when None (see ``dump``).
