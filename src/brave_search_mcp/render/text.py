"""The one home of text hygiene: every upstream string and URL passes through here before an agent sees it.

Brave, SearXNG and Answers send HTML-ish text. Only real HTML tag names are stripped, so code in
answers (``Vec<T>``, ``Option<&str>``, ``a < b && c > d``) survives; line-breaking tags (``<br>``,
``<p>``, ``<li>``…) become a break, never glue two words together; entities are decoded exactly once,
so ``&amp;lt;`` reads as ``&lt;`` (what the page shows) and cannot smuggle a tag in.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from brave_search_mcp.models.sites import host_key

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_TAG_NAMES = (
    r"a|abbr|article|b|big|blockquote|body|br|button|center|cite|code|dd|del|details|div|dl|dt|em|figure|"
    r"font|footer|form|h[1-6]|head|header|hr|html|i|iframe|img|input|ins|kbd|label|li|link|main|mark|meta|nav|"
    r"noscript|ol|option|p|picture|pre|q|s|samp|script|section|select|small|source|span|strike|strong|style|sub|"
    r"summary|sup|svg|table|tbody|td|textarea|tfoot|th|thead|time|title|tr|tt|u|ul|var|video|wbr"
)
# Only real HTML tag names are stripped, so "Vec<T> in Rust" and "Vec&lt;T&gt;" survive.
_TAG = re.compile(rf"</?(?:{_TAG_NAMES})\b[^<>]*>|<![^<>]*>|<\?[^<>]*>", re.I)
# Tags that end a line in a browser: they become a line break, so "a<br>b" is two lines, never "ab".
_BREAK = re.compile(r"<(?:br|/?p|/?div|/?li|/?tr|/?h[1-6]|hr|/?ul|/?ol|/?blockquote|/?pre|/?table)\b[^<>]*>", re.I)
_BOLD = re.compile(r"</?(?:strong|b)(?:\s[^<>]*)?>", re.I)
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
# Control characters (Cc), lone surrogates (Cs), zero-width and bidi characters: invisible, or able to disguise text.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]")
# Same, but keeping the line feed (multi-line text such as summaries and answers).
_INVISIBLE_KEEP_LF = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]"
)
_WHITESPACE_CONTROLS = str.maketrans({"\t": " ", "\n": " ", "\r": " ", "\v": " ", "\f": " "})
_LINE_BREAKS = str.maketrans(dict.fromkeys("\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
# A netloc with any of these needs urllib's full parse (user info, port, IPv6, a zone id kept in its case).
_NOT_PLAIN_HOST = re.compile(r"[@:\[\]%]")
# A usable URL has no white space, control characters or lone surrogates.
_URL_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def cut(text: str, limit: int) -> str:
    """Shorten to ``limit`` characters at a word boundary, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[: max(limit, 0)]
    head = text[: limit - 1]
    if text[limit - 1] not in " \n":
        space = max(head.rfind(" "), head.rfind("\n"))
        if space >= limit // 2:
            head = head[:space]
    return head.rstrip() + "…"


def strip_controls(text: str) -> str:
    """Remove control characters and lone surrogates so no value can smuggle terminal bytes or break UTF-8."""
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs"))


def clean_query(raw: str) -> str:
    """Whitespace-normalized query without control, zero-width or bidi characters, as Brave should see it."""
    visible = "".join(
        ch for ch in strip_controls(raw.translate(_WHITESPACE_CONTROLS)) if unicodedata.category(ch) != "Cf"
    )
    return " ".join(visible.split())


def format_marks(raw: str, limit: int = 5) -> list[str]:
    """The invisible format characters ``clean_query`` removes from ``raw`` (bidi overrides such as U+202E, zero-width
    marks), named ``U+202E`` in order of first appearance, at most ``limit``: a removal that changes how a query
    reads is said, never silent."""
    return list(dict.fromkeys(f"U+{ord(ch):04X}" for ch in raw if unicodedata.category(ch) == "Cf"))[:limit]


def shown(value: Any, limit: int = 60) -> str:
    """A caller's value quoted for a warning: control characters stripped, capped so warnings stay short."""
    text = strip_controls(str(value))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f'"{text}"'


def _strip_markup(text: str, *, decorations: bool, breaks: str) -> str:
    if "<" in text:  # every markup pattern starts with "<": skip the regex passes for plain text
        text = _COMMENT.sub("", text)
        if decorations:
            text = _BOLD.sub("**", text)
        text = _TAG.sub("", _BREAK.sub(breaks, text))
    if "&" in text:
        text = html.unescape(text)
        if "<" in text:  # "&lt;b&gt;" was an escaped tag: strip what decoding produced, once
            text = _TAG.sub("", _BREAK.sub(breaks, _COMMENT.sub("", text)))
    return text


def clean_text(value: Any, *, limit: int, decorations: bool = False, markup: bool = True) -> str:
    """Plain, single-line, bounded text from an upstream string, safe to show the model.

    ``markup=False`` treats the value as plain text (error messages): nothing is stripped but
    invisible characters. Anything but a string is empty text.
    """
    if not isinstance(value, str) or limit <= 0:
        return ""
    # every markup pattern starts with "<" and every entity with "&": plain text skips the markup pass
    marked = markup and ("<" in value or "&" in value)
    text = _strip_markup(value, decorations=decorations, breaks=" ") if marked else value
    if text.isprintable():
        # No control, format, surrogate or separator characters but the space: nothing to strip or
        # translate, and the space is the only white space left to collapse (when it runs or pads the text).
        if "  " in text or text[:1] == " " or text[-1:] == " ":
            text = " ".join(text.split())
    else:
        text = " ".join(_INVISIBLE.sub("", _ANSI.sub("", text.replace("\t", " ").translate(_LINE_BREAKS))).split())
    if decorations:
        text = text.replace("****", "")
    out = text if len(text) <= limit else cut(text, limit)
    if decorations and out.endswith("…") and out.count("**") % 2 and limit > 3:
        shorter = cut(text, limit - 2)  # close the bold span the cut opened
        out = shorter[:-1] + "**…" if shorter.endswith("…") and shorter.count("**") % 2 else shorter
    return out


def number_text(value: Any) -> Any:
    """A number as the text a reader expects (upstreams sometimes send numbers for text fields); else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return value


def clean_block(value: Any, *, limit: int) -> str:
    """Multi-line clean text (summaries, answers): lines and paragraph breaks kept, each line folded."""
    if not isinstance(value, str) or limit <= 0:
        return ""
    text = _strip_markup(value.replace("\r\n", "\n").replace("\r", "\n"), decorations=False, breaks="\n")
    text = _INVISIBLE_KEEP_LF.sub("", _ANSI.sub("", text.replace("\t", " ")))
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return cut(_BLANK_LINES.sub("\n\n", "\n".join(lines)).strip(), limit)


def one_line(text: str) -> str:
    """One rendered line: no line breaks (line counts stay exact) and no lone surrogates (UTF-8 stays valid)."""
    if text.isprintable():  # every line break and lone surrogate is unprintable: nothing to change
        return text
    if text.isascii():
        return text if "\n" not in text and "\r" not in text else text.translate(_LINE_BREAKS)
    return text.translate(_LINE_BREAKS).encode("utf-8", errors="ignore").decode("utf-8")


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds characters that must never be echoed (controls, surrogates, bidi overrides)."""
    return _INVISIBLE.search(text) is not None


# ------------------------------------------------------------------------------------------ URLs


def _plain_host(netloc: str) -> str | None:
    """``netloc`` lower-cased when it is a bare host (no user, port, IPv6 brackets or zone), else None.

    For such a netloc this is exactly urllib's ``hostname``, without the re-parsing each urllib
    property does on every access (this runs for every result on the hot path).
    """
    if not netloc or _NOT_PLAIN_HOST.search(netloc):
        return None
    return netloc.lower()


def dedup_key(url: str) -> str:
    """A comparison key so the same page found twice (two sections, two providers, two citations) shows once."""
    text = url.strip() if isinstance(url, str) else ""
    try:
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            return text
        plain = _plain_host(parts.netloc)
        if plain is not None:  # what urlunsplit builds from these parts (a path after a netloc starts with "/")
            path, query = parts.path.rstrip("/"), parts.query
            return f"{scheme}://{plain}{path}?{query}" if query else f"{scheme}://{plain}{path}"
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return text
    if parts.username is not None or parts.password is not None:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        host = f"{userinfo}@{host}"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    if port is not None and port != {"http": 80, "https": 443}[scheme]:
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), parts.query, ""))


def http_url(value: Any) -> str | None:
    """The value if it is a usable absolute http(s) URL, else None: nothing else is worth a click or a citation."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or _URL_FORBIDDEN.search(text):
        return None
    try:
        parts = urlsplit(text)
        if parts.scheme.lower() not in ("http", "https"):
            return None
        if _plain_host(parts.netloc) is not None:
            return text
        if not parts.hostname:
            return None
        _ = parts.port
    except ValueError:
        return None
    return text


def site_of(url: str) -> str:
    """The site a URL belongs to, as a reader names it: its host (``models.sites.host_key``: an international name
    in ASCII, so a look-alike letter cannot pass for another site) without ``www.``."""
    try:
        parts = urlsplit(url)
        host = _plain_host(parts.netloc) or parts.hostname or ""
    except ValueError:
        return ""
    return host_key(host).removeprefix("www.")


def plural(count: int, word: str) -> str:
    """``1 place`` / ``2 places``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def seconds_text(seconds: float) -> str:
    """A duration as a reader wants it: ``8 s`` for a budget of 7.99999 s spent, ``0.25 s``, ``52 s``, ``3 min``,
    ``1.5 h`` (digits beyond what a reader can act on are noise)."""
    value = max(0.0, seconds) if math.isfinite(seconds) else 0.0
    if value >= 3600:
        return f"{value / 3600:.1f}".removesuffix(".0") + " h"
    if value >= 120:
        return f"{value / 60:.0f} min"
    if value >= 10:
        return f"{value:.0f} s"
    digits = 1 if value >= 1 else 2
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") + " s"


# ------------------------------------------------------------------------------------------ documents (read_url)

# The invisible characters above, but keeping the tab and the line feed: a page's layout and its code survive.
_INVISIBLE_KEEP_LAYOUT = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]"
)
_TRAILING_SPACES = re.compile(r"[^\S\n]+$", re.M)
_PARAGRAPH_SEPARATORS = str.maketrans({"\u2028": "\n", "\u2029": "\n\n"})


def clean_layout(value: Any, *, limit: int) -> str:
    """Multi-line text whose layout carries meaning (a page read as markdown, code in it), safe to show the model.

    Terminal escapes, control, zero-width and bidi characters go (a bidi override can make code read
    differently from what runs); indentation, tabs, markup and line breaks stay; runs of blank lines
    fold to one outside fenced code (inside, code is verbatim). Markup is not stripped: the text is already the
    markdown the reader made.
    """
    if not isinstance(value, str) or limit <= 0:
        return ""
    text = value.replace("\r\n", "\n").replace("\r", "\n").translate(_PARAGRAPH_SEPARATORS)
    text = _TRAILING_SPACES.sub("", _INVISIBLE_KEEP_LAYOUT.sub("", _ANSI.sub("", text)))
    return cut(_fold_blank_lines(text).strip("\n"), limit)


def _fold_blank_lines(text: str) -> str:
    """Runs of blank lines folded to one, except inside fenced code blocks."""
    if "```" not in text and "~~~" not in text:
        return _BLANK_LINES.sub("\n\n", text)
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if found is not None:
            marker = found.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        elif fence is None and not line and out and not out[-1]:
            continue
        out.append(line)
    return "\n".join(out)
