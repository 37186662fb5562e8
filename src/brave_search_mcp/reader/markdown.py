"""A content element → Markdown a developer reads by, through a table of per-element rules.

Each block element has one rule (``_BLOCK_RULES``; a class can pick a rule first: admonitions); everything
else is inline text, unless it wraps a code block, table, list or heading (``<span><pre>``). What the rules
keep: code blocks fenced on lines of their own, verbatim (``<br>`` and block children as newlines), with the
language the page names; headings as ``#`` lines; tables as GFM tables (a cell's blocks on one line, ``|``
escaped); definition lists with API signatures as code and the description under them; admonitions with
their label; ``<details>`` under its summary. Link text stays and every target goes to a ``LinkList`` (links
around code included). Code blocks are never indented or quoted, so a fence always opens a line
(``document.fence_walk`` reads them back). Depth is bounded: below ``MAX_DEPTH`` an element is read as plain
text, and lists and quotes nested past ``MAX_INDENT`` stop indenting.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from brave_search_mcp.reader.document import fence_walk
from brave_search_mcp.reader.links import LinkList, resolved

MAX_DEPTH = 120
MAX_INDENT = (
    8  # nesting levels of lists and quotes that indent: each re-indents all it holds, so deeper ones stay level
)
_BLOCK = frozenset({
    "address", "article", "aside", "blockquote", "body", "center", "details", "dialog", "dd", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr",
    "li", "main", "menu", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead",
    "tr", "ul", "caption", "html", "listing", "xmp",
})  # fmt: skip
_SKIP = frozenset({"script", "style", "noscript", "template", "head", "title", "img", "picture", "video", "audio",
                   "svg", "button", "input", "select", "textarea", "iframe", "map", "area"})  # fmt: skip
_LANGUAGE = re.compile(r"(?:^|\s)(?:language|lang|highlight|brush|sourceCode)[-:]\s*([A-Za-z0-9+#._-]{1,30})")
_BARE_LANGUAGES = frozenset({
    "rust", "sh", "bash", "shell", "console", "python", "js", "javascript", "ts", "json", "yaml", "toml", "c", "cpp",
    "go", "java", "sql", "html", "css", "xml", "diff", "ini",
})  # fmt: skip
_NO_LANGUAGE = frozenset({"none", "text", "plain", "plaintext", "notranslate", "nohighlight", "default-text"})
_WHITE = re.compile(r"[ \t\n\r\f]+")
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,9}[.)]) ")
_GLYPHS = " \t¶§#🔗\u200b"
_FENCE_START = re.compile(r"^\s*(`{3,}|~{3,})")
_BLOCK_START = re.compile(r"^(#{1,6}(?:\s|$)|[-+*](?:\s|$)|>|\d{1,9}[.)](?:\s|$)|`{3,}|~{3,}|=+\s*$|\|)")
_ADMONITION_CLASSES = frozenset({"admonition", "admonitionblock", "theme-admonition", "note", "warning", "tip",
                                 "caution", "important", "danger", "attention", "hint"})  # fmt: skip
_LABEL_CLASSES = frozenset({"admonition-title", "title", "icon", "admonition-heading"})
_SIGNATURE_DL = frozenset({
    "function", "class", "method", "attribute", "data", "exception", "classmethod", "staticmethod", "decorator",
    "describe", "property", "py", "c", "cpp", "js", "rst",
})  # fmt: skip
# Blocks whose lines matter: an inline element holding one (``<span><pre>``, ``<a><table>``) is read as a block.
_STRUCTURE = ("pre", "table", "ul", "ol", "dl", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6")
_CONTENT_START = frozenset({"p", "pre", "ul", "ol", "dl", "blockquote"})  # an admonition's body has begun
LABEL_SCAN = 12  # elements an admonition's label can be among (asciidoc's sits in a table cell, four levels down)
_GENERIC_ADMONITION = frozenset({"admonition", "admonitionblock", "theme-admonition"})


def to_markdown(root: Any, base: str, links: LinkList) -> str:
    """``root``'s content as Markdown; the links it holds are added to ``links`` in text order."""
    return "\n\n".join(block for block in _Walker(base, links).blocks(root, 0) if block.strip())


def _classes(node: Any) -> set[str]:
    return set(str(node.get("class") or "").split())


def code_span(text: str) -> str:
    """``text`` as inline code, with a delimiter longer than any backtick run inside it."""
    text = _WHITE.sub(" ", text).strip()
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def fenced(code: str, language: str) -> str:
    """A fenced code block: a fence longer than any backtick run inside, the code verbatim."""
    longest = max((len(run) for run in re.findall(r"^\s*(`{3,})", code, re.M)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code}\n{fence}"


def language_of(pre: Any) -> str:
    """The language a code block's markup names (``language-x``, ``highlight-x``, rustdoc's ``rust``), or ''."""
    nodes = [pre, *pre.iter("code")]
    ancestor = pre.getparent()
    for _ in range(3):
        if ancestor is None:
            break
        nodes.append(ancestor)
        ancestor = ancestor.getparent()
    for node in nodes:
        found = _LANGUAGE.search(str(node.get("class") or ""))
        if found:
            name = found.group(1).lower()
            return "" if name in _NO_LANGUAGE else "python" if name == "default" else name
    for node in nodes[: 1 + len(list(pre.iter("code")))]:
        bare = _classes(node) & _BARE_LANGUAGES
        if bare:
            return sorted(bare)[0]
    return ""


def pre_text(pre: Any) -> str:
    """A ``<pre>``'s text as the browser shows it: ``<br>`` and block children end lines, nbsp is a space."""
    parts: list[str] = []

    def newline() -> None:
        if parts and not parts[-1].endswith("\n"):
            parts.append("\n")

    def walk(node: Any, depth: int) -> None:
        for child in node:
            if isinstance(child.tag, str) and child.tag not in _SKIP and depth >= MAX_DEPTH:
                parts.append(str(child.text_content()))  # past the limit: its text, without its line structure
            elif isinstance(child.tag, str) and child.tag not in _SKIP:
                if child.tag == "br":
                    parts.append("\n")
                elif child.tag in _BLOCK:
                    newline()
                    parts.append(child.text or "")
                    walk(child, depth + 1)
                    newline()
                else:
                    parts.append(child.text or "")
                    walk(child, depth + 1)
            parts.append(child.tail or "")

    parts.append(pre.text or "")
    walk(pre, 0)
    lines = "".join(parts).replace("\xa0", " ").replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(line.rstrip() for line in lines)


def indented(block: str, first: str, rest: str) -> str:
    """``block`` with ``first`` before its first line and ``rest`` before the others; code lines stay as they are."""
    out: list[str] = []
    for index, (line, opener, toggles) in enumerate(fence_walk(block)):
        if opener is not None or toggles:
            out.append(line)
        else:
            out.append((first if index == 0 else rest) + line if line.strip() or index == 0 else line)
    return "\n".join(out)


def one_line(blocks: list[str]) -> str:
    """Blocks flattened to one line (a table cell): code blocks become inline code."""
    pieces: list[str] = []
    for block in blocks:
        lines = block.split("\n")
        if len(lines) > 1 and lines[0].startswith("```"):
            pieces.append(code_span(" ".join(line.strip() for line in lines[1:-1])))
        else:  # a list in a cell: its items one after another, without their markers
            pieces.append(" ".join(_LIST_MARKER.sub("", line.strip()) for line in lines if line.strip()))
    return " ".join(piece for piece in pieces if piece).replace("|", "\\|")


class _Walker:
    """One walk over a content element (what it has seen of links lives in ``links``)."""

    def __init__(self, base: str, links: LinkList) -> None:
        self.base = base
        self.links = links
        self.nesting = 0  # lists and quotes open around the element being written

    # -------------------------------------------------------------------------------------- blocks

    def blocks(self, node: Any, depth: int) -> list[str]:
        """``node``'s children as blocks: runs of inline content become paragraphs."""
        out: list[str] = []
        run: list[str] = [_WHITE.sub(" ", node.text or "")]
        for child in node:
            if isinstance(child.tag, str) and child.tag in _BLOCK:
                out += self.paragraph(run)
                run = []
                out += self.block(child, depth + 1)
            elif isinstance(child.tag, str) and child.tag not in _SKIP and _holds_structure(child):
                out += self.paragraph(run)
                run = []
                if child.tag == "a":
                    self.add_link(child)
                out += self.blocks(child, depth + 1)
            elif isinstance(child.tag, str):
                run.append(self.inline(child, depth + 1))
            run.append(_WHITE.sub(" ", child.tail or ""))
        return out + self.paragraph(run)

    def block(self, node: Any, depth: int) -> list[str]:
        """One block element by its rule."""
        if depth > MAX_DEPTH:
            return self.paragraph([_WHITE.sub(" ", str(node.text_content()))])
        classes = _classes(node)
        if node.tag in ("div", "aside", "section") and classes & _ADMONITION_CLASSES:
            return self.admonition(node, depth)
        return _BLOCK_RULES.get(node.tag, _Walker.blocks)(self, node, depth)

    def paragraph(self, run: list[str]) -> list[str]:
        """Inline pieces as one paragraph; a line that would read as Markdown structure is escaped."""
        text = re.sub(r" *\n *", "\n", re.sub(r"[ \t]+", " ", "".join(run))).strip()
        if not text:
            return []
        lines = [("\\" + line if _BLOCK_START.match(line) else line) for line in text.split("\n") if line.strip()]
        return ["\n".join(lines)]

    def heading(self, node: Any, depth: int) -> list[str]:
        level = int(node.tag[1])
        if "code-header" in _classes(node):  # rustdoc's item headers are signatures
            text = code_span(self.plain(node))
        else:
            text = _WHITE.sub(" ", self.inline_children(node, depth)).strip().rstrip(_GLYPHS).strip()
        return [f"{'#' * level} {text}"] if text else []

    def pre(self, node: Any, depth: int) -> list[str]:
        for anchor in node.iter("a"):
            self.add_link(anchor)
        code = pre_text(node)
        return [fenced(code, language_of(node))] if code.strip() else []

    def lists(self, node: Any, depth: int) -> list[str]:
        ordered = node.tag == "ol"
        try:
            number = int(node.get("start") or 1)
        except ValueError:
            number = 1
        items: list[str] = []
        level = self.nesting
        self.nesting += 1
        for item in node:
            if not isinstance(item.tag, str):
                continue
            body = self.blocks(item, depth) if item.tag == "li" else self.block(item, depth)
            if not body:
                continue
            marker = f"{number}. " if ordered else "- "
            number += 1
            if level >= MAX_INDENT:
                parts = [_marked(body[0], marker), *body[1:]]
            else:
                pad = " " * len(marker)
                parts = [indented(body[0], marker, pad)] + [indented(block, pad, pad) for block in body[1:]]
            items.append("\n\n".join(parts) if len(parts) > 1 else parts[0])
        self.nesting = level
        return ["\n".join(items)] if items else []

    def definitions(self, node: Any, depth: int) -> list[str]:
        out: list[str] = []
        signature = bool(_classes(node) & _SIGNATURE_DL)
        for child in node:
            if not isinstance(child.tag, str):
                continue
            if child.tag == "dt":
                if signature or "sig" in _classes(child):
                    term = code_span(self.plain(child).rstrip(_GLYPHS))
                else:
                    words = _WHITE.sub(" ", self.inline_children(child, depth)).strip()
                    term = f"**{words}**" if words else ""
                out += [term] if term else []
            elif child.tag == "dd":
                out += self.blocks(child, depth)
            else:
                out += self.block(child, depth) if child.tag in _BLOCK else self.paragraph([self.inline(child, depth)])
        return out

    def table(self, node: Any, depth: int) -> list[str]:
        rows: list[list[str]] = []
        for row in node.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr"):
            cells: list[str] = []
            for cell in row.xpath("./th | ./td"):
                cells.append(one_line(self.blocks(cell, depth)))
                try:
                    span = min(int(cell.get("colspan") or 1), 50)
                except ValueError:
                    span = 1
                cells += [""] * (span - 1)
            if any(cells):
                rows.append(cells)
        if not rows:
            return []
        width = max(len(row) for row in rows)
        if width == 1 and len(rows) <= 2:  # a layout table around one block: its content, not a grid
            return [cell for row in rows for cell in row]
        caption = [f"**{self.plain(found)}**" for found in node.xpath("./caption") if self.plain(found)]
        lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
        lines.insert(1, "|" + " --- |" * width)
        return [*caption, "\n".join(lines)]

    def quote(self, node: Any, depth: int) -> list[str]:
        level = self.nesting
        self.nesting += 1
        blocks = self.blocks(node, depth)
        self.nesting = level
        return blocks if level >= MAX_INDENT else [indented(block, "> ", "> ") for block in blocks]

    def details(self, node: Any, depth: int) -> list[str]:
        out: list[str] = []
        summary = node.find("summary")
        if summary is not None:
            if any(isinstance(n.tag, str) and n.tag in _BLOCK for n in summary.iterdescendants()):
                out += self.blocks(summary, depth)
            else:
                words = _WHITE.sub(" ", self.inline_children(summary, depth)).strip()
                out += [f"**{words}**"] if words else []
            summary.getparent().remove(summary) if summary.getparent() is not None else None
        return out + self.blocks(node, depth)

    def admonition(self, node: Any, depth: int) -> list[str]:
        label = ""
        for index, found in enumerate(node.iter()):
            if index > LABEL_SCAN or (found.tag in _CONTENT_START and not _is_label(found)):
                break  # a title inside the body (a table's, a figure's) is not the label
            if found is not node and isinstance(found.tag, str) and _is_label(found):
                label = self.plain(found).strip().rstrip(":")
                label = label[:1].upper() + label[1:]
                found.getparent().remove(found) if found.tail is None or not found.tail.strip() else None
                break
        if not label:
            named = sorted(_classes(node) & (_ADMONITION_CLASSES - _GENERIC_ADMONITION))
            label = named[0].capitalize() if named else ""
        cells = node.xpath(".//td[contains(@class, 'content')]")  # asciidoc lays the label and text out as a table
        body = self.blocks(cells[0], depth) if cells else self.blocks(node, depth)
        if not label:
            return body
        if body and not body[0].startswith(("`", "|", "-", "#", ">")):
            return [f"**{label}:** {body[0]}", *body[1:]]
        return [f"**{label}:**", *body]

    def skip(self, node: Any, depth: int) -> list[str]:
        return []

    # -------------------------------------------------------------------------------------- inline

    def inline(self, node: Any, depth: int) -> str:
        """One inline element as Markdown text (code as code spans, emphasis marked, links as their text)."""
        tag = node.tag
        if tag in _SKIP:
            return ""
        if depth > MAX_DEPTH:  # past the limit: its words, not its marks (the text is never lost)
            return _WHITE.sub(" ", str(node.text_content()))
        if tag == "br":
            return "\n"
        if tag in ("code", "kbd", "samp", "tt"):
            return code_span(self.plain(node))
        text = self.inline_children(node, depth)
        if tag == "a":
            self.add_link(node, text)
            return text
        if tag in ("strong", "b"):
            return _wrap(text, "**")
        if tag in ("em", "i"):
            return _wrap(text, "*")
        return text

    def inline_children(self, node: Any, depth: int) -> str:
        parts = [_WHITE.sub(" ", node.text or "")]
        for child in node:
            if isinstance(child.tag, str):
                piece = self.inline(child, depth + 1)
                parts.append(f" {piece} " if child.tag in _BLOCK and child.tag != "br" else piece)
            parts.append(_WHITE.sub(" ", child.tail or ""))
        return "".join(parts)

    def plain(self, node: Any) -> str:
        """``node``'s text on one line (a signature, a label); its links are still listed."""
        for anchor in node.iter("a"):
            self.add_link(anchor)
        return _WHITE.sub(" ", str(node.text_content()).replace("\xa0", " ")).strip()

    def add_link(self, anchor: Any, text: str | None = None) -> None:
        words = text if text is not None else str(anchor.text_content())
        self.links.add(_WHITE.sub(" ", words).strip().strip("`*"), resolved(str(anchor.get("href") or ""), self.base))


def _is_label(node: Any) -> bool:
    """An admonition's label: Sphinx's ``admonition-title``, DocBook's ``title``, Docusaurus' ``admonitionHeading``."""
    classes = _classes(node)
    return bool(classes & _LABEL_CLASSES) or any(name.lower().startswith("admonitionheading") for name in classes)


def _holds_structure(node: Any) -> bool:
    """Whether an inline element wraps a block whose lines matter (lxml stops at the first one it finds)."""
    return next(node.iterdescendants(*_STRUCTURE), None) is not None


def _marked(block: str, marker: str) -> str:
    """``block`` after a list marker, unless it opens with a fence (a fence opens its own line)."""
    return block if _FENCE_START.match(block) else marker + block


def _wrap(text: str, mark: str) -> str:
    inner = text.strip()
    if not inner or "\n" in inner:
        return text
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    return f"{lead}{mark}{inner}{mark}{trail}"


_Rule = Callable[[_Walker, Any, int], list[str]]
_BLOCK_RULES: dict[str, _Rule] = {
    **{f"h{n}": _Walker.heading for n in range(1, 7)},
    "pre": _Walker.pre,
    "listing": _Walker.pre,
    "xmp": _Walker.pre,
    "ul": _Walker.lists,
    "ol": _Walker.lists,
    "menu": _Walker.lists,
    "dl": _Walker.definitions,
    "table": _Walker.table,
    "blockquote": _Walker.quote,
    "details": _Walker.details,
    "hr": _Walker.skip,
}
