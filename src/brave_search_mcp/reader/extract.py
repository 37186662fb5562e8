"""Fetched bytes → a ``Document``: HTML's main content as markdown, PDF text per page (pypdf), plain text,
markdown and JSON passed through cleaned.

HTML takes one of two roads. A page a documentation generator made (Sphinx, DocBook, asciidoc, mdBook,
rustdoc, Node's apidoc, MkDocs, Docusaurus: ``docsite``) names its content element plainly; that element,
pruned of the generator's chrome, is written by the reader's own per-element rules (``markdown``), which
keep code, headings, tables, signatures and admonitions the way a developer reads them (measured on real
documentation pages: ``bench/docs.py``). Every other page goes to trafilatura, the field's reference for
main-content extraction: it drops navigation, ads, cookie banners and footers and writes headings, lists,
tables and code as markdown. It runs in its fast mode (its readability/jusText comparison chose worse text
on the article-extraction benchmark: docs/benchmarks.md), twice: its ``favor_precision`` pass is taken unless
it keeps less than 80 % of the plain pass's text or drops a code block (on that benchmark it drops more
boilerplate than text: F1 0.957 → 0.959); and again with that comparison and ``favor_recall`` when the fast
passes find little. Its habits that cost the model are undone, each measured on
that benchmark: it drops blank lines inside code and the language of a code block (each ``<pre>`` is marked
with a per-call random token before extraction, lines a tool would never write, turned back into blank lines
and a fence language afterwards); it writes each link's URL inside the prose (the link text stays, the URLs
go to the page's links, shown on request); it escapes ``_ * [ ] < ~`` with backslashes (``read\\_url`` is not
the name a model should copy) and marks underlined text with ``<u>``. A page with no readable text at all
says so in a note (a PAGE_INCOMPLETE warning), never an empty success. The libraries are imported on first
use, so starting the server does not pay for them. Every string leaves through ``text.clean_layout`` /
``text.clean_text``; a body no parser can read is a PARSE_ERROR, never a traceback.
"""

from __future__ import annotations

import io
import json
import re
import secrets
from typing import Any

from brave_search_mcp.models import errors
from brave_search_mcp.reader.content import Kind, decode_text
from brave_search_mcp.reader.docsite import find_docs
from brave_search_mcp.reader.document import Document, fence_walk
from brave_search_mcp.reader.links import Link, LinkList, link_base, page_links, resolved
from brave_search_mcp.reader.markdown import to_markdown
from brave_search_mcp.render.text import clean_layout, clean_text

MAX_DOCUMENT_CHARS = 2_000_000  # what the reader keeps of one page (a 5 MB page rarely has half that in text)
MAX_PDF_PAGES = 500
TITLE_LIMIT = 300
EMPTY_NOTE = "no readable text was found on the page"
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight|brush)[-:]\s*([A-Za-z0-9+#._-]{1,30})")
# Elements that are consent or cookie prompts by name; trafilatura drops most boilerplate itself.
_PRUNE = (
    "//*[contains(@id,'cookie-banner') or contains(@class,'cookie-banner') or contains(@id,'cookie-consent') "
    "or contains(@class,'cookie-consent') or contains(@class,'cookie-notice') or contains(@id,'cookie-notice') "
    "or contains(@class,'consent-banner') or contains(@id,'consent-banner') or contains(@class,'gdpr')]"
)
_HEADING_LINE = re.compile(r"^#{1,6} ")
_FENCE_LINE = re.compile(r"^(`{3,}|~{3,})")
LITTLE = 500  # characters: a fast pass that finds less than this is tried again with every fallback
PRECISE_SHARE = 0.8  # trafilatura's favor_precision pass is taken when it keeps at least this share of the text
# trafilatura's markdown link (or image): text with its escapes, then the target, which may hold one level of parens
_MD_LINK = re.compile(r"!?\[((?:\\.|[^\\\]])*)\]\((<[^>\n]*>|(?:[^()\s]|\([^()\s]*\))*)(?:\s+\"[^\"\n]*\")?\)")
_CODE_SPAN = re.compile(r"(?<!\\)(`+)(?!`).+?(?<!`)\1(?!`)")
_ESCAPED = re.compile(r"(\\+)([*_`~\[\]<])")  # trafilatura's inline escapes: 2k+1 backslashes stand for k
_UNDERLINE = re.compile(r"</?u>")


def extract(*, url: str, final_url: str, kind: Kind, content_type: str, body: bytes, charset: str | None) -> Document:
    """Read ``body`` as ``kind``; blocking CPU work, so callers run it in a worker thread."""
    meta: dict[str, str | None] = {}
    notes: list[str] = []
    links: tuple[tuple[Link, ...], tuple[Link, ...]] = ((), ())
    if kind == "pdf":
        markdown = _pdf(body, meta, notes)
    else:
        text = decode_text(body, charset, kind)
        if kind == "html":
            try:
                markdown, links = _html(text, final_url, meta)
            except Exception as exc:  # lxml/trafilatura on hostile markup: a readable failure, never a traceback
                raise errors.ParseError(
                    f"The page's HTML could not be read ({type(exc).__name__}).", details={"content_type": content_type}
                ) from None
        elif kind == "json":
            markdown = _json(text)
        else:
            markdown = text
            if kind == "markdown":  # a markdown file names itself in its first top-level heading
                meta["title"] = next((line[2:] for line in markdown.splitlines() if line.startswith("# ")), None)
    cleaned = clean_layout(markdown, limit=MAX_DOCUMENT_CHARS + 1)
    if kind == "html" and not cleaned.strip():
        notes.append(EMPTY_NOTE)
    truncated = len(cleaned) > MAX_DOCUMENT_CHARS
    if truncated:
        cleaned = cleaned[:MAX_DOCUMENT_CHARS]
    return Document(
        url=url,
        final_url=final_url,
        kind=kind,
        content_type=content_type,
        markdown=cleaned,
        title=clean_text(meta.get("title"), limit=TITLE_LIMIT) or None,
        site=clean_text(meta.get("site"), limit=120) or None,
        published=clean_text(meta.get("published"), limit=40) or None,
        truncated=truncated,
        notes=tuple(notes),
        links=links[0],
        content_links=links[1],
    )


# ------------------------------------------------------------------------------------------ HTML


def _html(text: str, url: str, meta: dict[str, str | None]) -> tuple[str, tuple[tuple[Link, ...], tuple[Link, ...]]]:
    """The page's main content as markdown, with its title, site name and date when it states them; the page's
    links and the main text's links."""
    import trafilatura

    tree = trafilatura.load_html(text)
    if tree is None:
        # Not a full document (a fragment, or not HTML at all): read whatever text it has.
        return clean_layout(trafilatura.html2txt(text) or "", limit=MAX_DOCUMENT_CHARS), ((), ())
    found = trafilatura.extract_metadata(tree, default_url=url, extensive=False)
    meta["title"] = found.title
    meta["site"] = found.sitename if found.sitename and found.sitename != found.hostname else None
    meta["published"] = found.date
    every = page_links(tree, url)
    in_text = LinkList(url)
    docs = find_docs(tree)
    if docs is not None:
        written = to_markdown(docs.main, link_base(tree, url), in_text)
        if written.strip():
            return written, (every, tuple(in_text.links))
        in_text = LinkList(url)
    token = "bsm" + secrets.token_hex(6)
    _mark_code(tree, token)
    options: dict[str, Any] = {  # no url: trafilatura would resolve relative links against the site's root
        "output_format": "markdown",
        "include_links": True,  # taken out of the prose below: they say which links are in the content
        "include_formatting": True,
        "include_tables": True,
        "include_images": False,
        "include_comments": True,  # on a forum thread the replies are the content
        "deduplicate": False,
        "prune_xpath": _PRUNE,
    }
    markdown = trafilatura.extract(tree, fast=True, **options) or ""
    precise = trafilatura.extract(tree, fast=True, favor_precision=True, **options) or ""
    code = f"{token}lang:"
    if len(precise) >= len(markdown) * PRECISE_SHARE and precise.count(code) >= markdown.count(code):
        markdown = precise  # its stricter pass, unless it loses much of the text or a code block
    if len(markdown) < LITTLE:  # little found: readability and jusText as fallbacks, and favor_recall
        fuller = trafilatura.extract(tree, favor_recall=True, **options) or ""
        markdown = fuller if len(fuller) > len(markdown) else markdown
    if not markdown:
        markdown = trafilatura.html2txt(tree) or ""
    prose = settle(_restore_code(markdown, token), link_base(tree, url), in_text)
    return prose, (every, tuple(in_text.links))


def settle(markdown: str, base: str, links: LinkList) -> str:
    """trafilatura's markdown as the model should read it; the links it kept in the prose go to ``links``.

    Outside code (fences and spans, verbatim): ``[text](url)`` becomes ``text``, the inline backslash escapes
    are undone and ``<u>`` tags dropped. Block-start escapes (``\\#``, ``\\-``, ``1\\.``) stay: they keep a line
    of prose from reading as a heading or a list.
    """

    def unlink(match: re.Match[str]) -> str:
        text = _ESCAPED.sub(_unescape, match.group(1))
        links.add(text, resolved(match.group(2).strip("<>"), base))
        return match.group(1)

    def prose(part: str) -> str:
        part = _MD_LINK.sub(unlink, part)
        part = _ESCAPED.sub(_unescape, part)
        return _UNDERLINE.sub("", part)

    lines: list[str] = []
    for line, opener, toggles in fence_walk(markdown):
        if opener is not None or toggles or ("[" not in line and "\\" not in line and "<u>" not in line):
            lines.append(line)
            continue
        pieces: list[str] = []
        last = 0
        for span in _CODE_SPAN.finditer(line):
            pieces += [prose(line[last : span.start()]), span.group(0)]
            last = span.end()
        pieces.append(prose(line[last:]))
        lines.append("".join(pieces))
    return "\n".join(lines)


def _unescape(match: re.Match[str]) -> str:
    """One of trafilatura's escapes undone: 2k+1 backslashes before the character stand for k (an even run is text)."""
    run = len(match.group(1))
    return match.group(0) if run % 2 == 0 else "\\" * (run // 2) + match.group(2)


def _mark_code(tree: Any, token: str) -> None:
    """Flatten each ``<pre>`` to one ``<code>`` whose first line names its language and blank lines are markers."""
    for pre in list(tree.iter("pre")):
        parent = pre.getparent()
        around = [pre, *pre.iter("code"), *([parent] if parent is not None else [])]
        classes = " ".join(str(node.get("class") or "") for node in around)
        found = _LANGUAGE.search(classes)
        code = str(pre.text_content()).strip("\n")
        lines = [line if line.strip() else f"{token}blank" for line in code.split("\n")]
        for child in list(pre):
            pre.remove(child)
        holder = pre.makeelement("code", {})
        holder.text = f"{token}lang:{found.group(1).lower() if found else ''}\n" + "\n".join(lines)
        pre.text = None
        pre.append(holder)


def _restore_code(markdown: str, token: str) -> str:
    """Undo ``_mark_code``: markers become blank lines and a fence language; blank lines go around blocks."""
    out: list[str] = []
    in_fence = False
    for line in markdown.split("\n"):
        fence = _FENCE_LINE.match(line)
        if fence is not None:
            if not in_fence and out and out[-1].strip():
                out.append("")
            in_fence = not in_fence
            out.append(line)
            continue
        if line.startswith(f"{token}lang:"):
            language = line[len(token) + 5 :].strip()
            if in_fence and out and _FENCE_LINE.match(out[-1]):
                out[-1] = out[-1].rstrip() + language
            continue
        if line.strip() == f"{token}blank":
            out.append("")
            continue
        if not in_fence and out and _FENCE_LINE.match(out[-1]) and line.strip():
            out.append("")  # after a closing fence
        if not in_fence and _HEADING_LINE.match(line) and out and out[-1].strip():
            out.append("")
        out.append(line.replace(token, "") if token in line else line)
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ PDF


def _pdf(body: bytes, meta: dict[str, str | None], notes: list[str]) -> str:
    """Each page's text under a ``## Page N`` heading (so ``section="Page 3"`` reads one page)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(body), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise errors.UnsupportedContent(
                "The PDF is encrypted with a password; the reader cannot open it.",
                details={"content_type": "application/pdf"},
            )
        pages = reader.pages
        count = len(pages)
        info = reader.metadata
    except errors.BraveSearchError:
        raise
    except Exception as exc:  # a malformed PDF can fail in any way; none of it may reach the agent as a traceback
        raise _unreadable_pdf(exc) from None
    try:
        meta["title"] = str(info.title) if info is not None and info.title else None
        created = info.creation_date if info is not None else None
        meta["published"] = created.date().isoformat() if created is not None else None
    except Exception:  # a broken info dictionary costs only the title and date
        meta.setdefault("title", None)
    parts: list[str] = []
    unreadable: list[int] = []
    for number in range(1, min(count, MAX_PDF_PAGES) + 1):
        try:
            text = pages[number - 1].extract_text() or ""
        except Exception:
            unreadable.append(number)
            continue
        parts.append(f"## Page {number}\n\n{text.strip()}")
    if unreadable:
        notes.append(f"{len(unreadable)} PDF page(s) could not be read: {', '.join(map(str, unreadable[:20]))}")
    if count > MAX_PDF_PAGES:
        notes.append(f"only the first {MAX_PDF_PAGES} of {count} PDF pages were read")
    if count and not any(part.partition("\n\n")[2] for part in parts):
        notes.append("the PDF has no text layer (scanned images?)")
    return "\n\n".join(parts)


def _unreadable_pdf(exc: Exception) -> errors.BraveSearchError:
    name = type(exc).__name__
    if name == "DependencyError":  # AES encryption needs a crypto package the reader does not ship
        return errors.UnsupportedContent(
            "The PDF is encrypted in a way the reader cannot open.", details={"content_type": "application/pdf"}
        )
    return errors.ParseError(f"The PDF could not be read ({name}).", details={"content_type": "application/pdf"})


# ------------------------------------------------------------------------------------------ JSON


def _json(text: str) -> str:
    """JSON re-indented in a fenced block (as sent when it does not parse: a JSON type can still hold text)."""
    try:
        pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text
    return f"```json\n{pretty}\n```"
