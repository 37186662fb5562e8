"""What a fetched body is and how to turn its bytes into text: content types, sniffing, charsets.

A page's ``Content-Type`` decides how it is read (HTML, PDF, plain text, markdown, JSON); a missing or
generic type is sniffed from the first bytes. Charset order follows what browsers do: a byte-order mark,
then the header, then an HTML ``<meta>``, then strict UTF-8, then detection; a declared charset that
cannot decode the bytes is passed over instead of raising, and the last resort replaces bad bytes, so
no body can end in a traceback. A body labelled Latin-1 that is valid multi-byte UTF-8 is read as UTF-8
(the commonest mislabelling on the web; valid UTF-8 by accident in Latin-1 text is vanishingly rare).
"""

from __future__ import annotations

import codecs
import re
from typing import Literal

Kind = Literal["html", "pdf", "text", "markdown", "json"]

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
_JSON_TYPES = frozenset({"application/json", "text/json", "application/ld+json"})
_GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})
_MARKDOWN_SUFFIXES = (".md", ".markdown")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I)
_HTML_START = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S)
_SINGLE_BYTE_WESTERN = frozenset({"iso8859-1", "iso8859-15", "cp1252", "ascii"})
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
SNIFF_BYTES = 2048
_LATIN_FAMILY = frozenset(
    {"cp1250", "cp1252", "cp1254", "cp1257", "cp437", "cp775", "cp850", "cp858", "latin_1", "mac_latin2", "mac_roman"}
    | {"mac_iceland", "mac_turkish"}
    | {f"iso8859_{n}" for n in (1, 2, 3, 4, 9, 10, 13, 14, 15, 16)}
)


def parse_content_type(header: str | None) -> tuple[str, str | None]:
    """``(media type in lower case, charset or None)`` from a ``Content-Type`` header."""
    if not header:
        return "", None
    media, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip("\"'"):
            charset = value.strip().strip("\"'")
    return media.strip().lower(), charset


def kind_of(media: str, head: bytes, path: str = "") -> Kind | None:
    """How to read a body of ``media`` type whose first bytes are ``head``; None when the reader cannot."""
    if media in _HTML_TYPES:
        return "html"
    if media == "application/pdf":
        return "pdf"
    if media in _MARKDOWN_TYPES:
        return "markdown"
    if media in _JSON_TYPES or media.endswith("+json"):
        return "json"
    if media.startswith("text/"):
        return "markdown" if path.lower().endswith(_MARKDOWN_SUFFIXES) else "text"
    if media in _GENERIC_TYPES:
        if head.startswith(b"%PDF-"):
            return "pdf"
        if _HTML_START.match(head[:SNIFF_BYTES]):
            return "html"
    return None


def may_be_readable(media: str) -> bool:
    """Whether a body of this type is worth downloading at all (others are refused before the body is read)."""
    return media in _GENERIC_TYPES or kind_of(media, b"") is not None


def _codec(name: str | None) -> str | None:
    """Python's codec name for a declared charset, or None when it is unknown or not a text codec."""
    if not name:
        return None
    try:
        info = codecs.lookup(name.strip())
    except LookupError:
        return None
    return info.name if getattr(info, "_is_text_encoding", True) else None


def _strict(body: bytes, codec: str) -> str | None:
    try:
        return body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def decode_text(body: bytes, declared: str | None, kind: Kind) -> str:
    """The body as text: BOM, then the declared charset, then ``<meta>`` (HTML), then UTF-8, then detection."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            text = _strict(body, codec)
            if text is not None:
                return text
    header = _codec(declared)
    candidates: list[str] = []
    if header is not None:
        candidates.append(header)
    if kind == "html":
        match = _META_CHARSET.search(body[:SNIFF_BYTES])
        meta = _codec(match.group(1).decode("ascii", "ignore")) if match else None
        if meta is not None:
            candidates.append(meta)
    if candidates and candidates[0] in _SINGLE_BYTE_WESTERN and not body.isascii():
        as_utf8 = _strict(body, "utf-8")
        if as_utf8 is not None:
            return as_utf8
    for codec in [*candidates, "utf-8"]:
        text = _strict(body, codec)
        if text is not None:
            return text
    guessed = _detect(body)
    if guessed is not None:
        return guessed
    return body.decode("utf-8", errors="replace")


def _detect(body: bytes) -> str | None:
    """charset-normalizer's reading of undeclared, non-UTF-8 bytes (it samples, so a large body costs little).

    It cannot tell the Latin code pages apart on short text (French comes out as Baltic or Polish), so
    when it names one of them the web's own default for undeclared pages, windows-1252, is used instead;
    Cyrillic, Greek, Hebrew, Arabic and the multi-byte Asian encodings keep its answer.
    """
    from charset_normalizer import from_bytes

    best = from_bytes(body).best()
    if best is None:
        return None
    if best.encoding in _LATIN_FAMILY:
        western = _strict(body, "cp1252")
        if western is not None:
            return western
    try:
        return str(best)
    except (UnicodeDecodeError, LookupError):
        return None
