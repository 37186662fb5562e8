"""The documentation corpus: real pages from Debian's documentation packages, and what each page's content is.

Six generators, each from the package that installs it offline (never committed): Python's Sphinx
(``python3.11-doc``), Django's Sphinx (``python-django-doc``), DocBook (``postgresql-doc-15``), asciidoc
(``git-doc``), mdBook (``rust-doc``'s books) and rustdoc (``rust-doc``'s ``std``). Pages are picked
deterministically: each generator's files sorted by path, files over ``MAX_BYTES`` left out, then evenly spaced
picks (``PER_GENERATOR`` of them).

"The main element" is defined here per generator, from its markup, independently of the reader:

- Sphinx (Python): ``div[role=main]``; Sphinx (Django's theme): ``#yui-main div.yui-g``;
- DocBook: ``body`` without ``div.navheader`` / ``div.navfooter``;
- asciidoc: ``body`` without ``#footer`` and ``#footnotes``;
- mdBook: ``#content > main``; rustdoc: ``section#main-content``.

Inside it, the generator's controls are not content either (``GOLD_CHROME``): headerlink and anchor glyphs,
rustdoc's "source" links, "[−]", "Expand description", "Run" and version notes, DocBook's table of contents
that repeats the headings. The gold text, code blocks, headings and table cells come from what remains;
chrome strings are the words of everything else on the page (navigation, sidebars, headers, footers,
previous/next) and of those controls, that the content itself never says.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOCS = Path("/usr/share/doc")
PER_GENERATOR = 25
MAX_BYTES = 400_000  # a few rustdoc pages are megabytes; they would only slow the run down
# generator -> (package folder, file globs, main element path, nodes removed from the whole page first)
GENERATORS: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "sphinx-python": ("python3.11/html", ("library/*.html", "reference/*.html", "tutorial/*.html", "howto/*.html"),
                      "//div[@role='main']", ""),
    "sphinx-django": ("python-django-doc/html", ("ref/**/*.html", "topics/**/*.html", "howto/**/*.html"),
                      "//div[@id='yui-main']//div[contains(@class, 'yui-g')]", ""),
    "docbook": ("postgresql-doc-15/html", ("*.html",), "//body",
                "//div[@class='navheader'] | //div[@class='navfooter']"),
    "asciidoc": ("git-doc", ("git-*.html", "git*.html"), "//body", "//div[@id='footer'] | //div[@id='footnotes']"),
    "mdbook": ("rust-doc/html", ("book/*.html", "reference/*.html", "nomicon/*.html", "rust-by-example/*/*.html"),
               "//div[@id='content']/main", ""),
    "rustdoc": ("rust-doc/html/std", ("*/struct.*.html", "*/trait.*.html", "*/fn.*.html", "*/enum.*.html"),
                "//section[@id='main-content']", ""),
}  # fmt: skip
GOLD_CHROME = (
    "//a[contains(@class, 'headerlink')] | //a[@class='anchor'] | //a[contains(@class, 'srclink')]"
    " | //*[@id='toggle-all-docs'] | //summary[contains(@class, 'hideme')] | //a[contains(@class, 'test-arrow')]"
    " | //span[contains(@class, 'rightside')] | //span[contains(@class, 'out-of-band')] | //div[@class='toc']"
    " | //button | //script | //style | //span[@class='viewcode-link'] | //div[contains(@class, 'tooltip')]"
    " | //span[contains(@class, 'notable-traits')] | //a[normalize-space()='Read more']"
)
_BLOCKS = (
    "p",
    "div",
    "section",
    "pre",
    "li",
    "dt",
    "dd",
    "tr",
    "td",
    "th",
    "table",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "summary",
    "details",
    "blockquote",
    "ul",
    "ol",
    "dl",
    "br",
    "header",
    "footer",
    "figure",
    "caption",
)
_WHITE = re.compile(r"\s+")


@dataclass
class Gold:
    """What a page's content is: its text, code blocks, headings and tables; and the site's chrome strings."""

    generator: str
    path: str
    html: str
    text: str = ""
    code: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    tables: list[list[list[str]]] = field(default_factory=list)
    chrome: list[str] = field(default_factory=list)


def pick_pages(per_generator: int = PER_GENERATOR) -> list[tuple[str, Path]]:
    """Each generator's pages, picked evenly from its sorted files; none if its package is not installed."""
    picked: list[tuple[str, Path]] = []
    for generator, (folder, globs, _, _) in GENERATORS.items():
        root = DOCS / folder
        files = sorted({p for pattern in globs for p in root.glob(pattern) if p.stat().st_size <= MAX_BYTES})
        if not files:
            continue
        step = max(len(files) / per_generator, 1.0)
        picked += [(generator, files[int(i * step)]) for i in range(min(per_generator, len(files)))]
    return picked


def squash(text: str) -> str:
    """Text with white space folded (how prose is compared)."""
    return _WHITE.sub(" ", text.replace("\xa0", " ")).strip()


def code_text(pre: Any) -> str:
    """A ``<pre>``'s text as shown: ``<br>`` and block children end lines; trailing blanks and end lines dropped."""
    clone = copy.deepcopy(pre)
    for br in clone.iter("br"):
        br.tail = "\n" + (br.tail or "")
    for block in clone.xpath(".//div | .//p"):
        block.tail = "\n" + (block.tail or "")
    lines = str(clone.text_content()).replace("\xa0", " ").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def block_text(node: Any) -> str:
    """An element's text as a browser lays it out: block elements and ``<br>`` separate words."""
    clone = copy.deepcopy(node)
    for block in clone.iter(*_BLOCKS):
        block.tail = " " + (block.tail or "")
        block.text = " " + (block.text or "")
    return squash(str(clone.text_content()))


def heading_text(node: Any) -> str:
    """A heading's words without its glyphs."""
    return squash(str(node.text_content())).rstrip("¶§#\u200b ").strip()


def load(generator: str, path: Path) -> Gold | None:
    """The gold content of one page, or None when the page has no main element (an index, a redirect stub)."""
    import trafilatura

    raw = path.read_bytes()
    html = raw.decode("utf-8", errors="replace")
    tree = trafilatura.load_html(raw)
    if tree is None:
        return None
    _, _, main_path, removed = GENERATORS[generator]
    outside: set[str] = set()
    for node in tree.xpath(removed) if removed else []:
        outside |= {squash(str(node.text_content()))} | _chrome_strings(node, None)
        node.drop_tree()
    found = tree.xpath(main_path)
    if not found:
        return None
    main = found[0]
    chrome_words = {squash(str(node.text_content())) for node in main.xpath("." + GOLD_CHROME.replace("//", ".//"))}
    for node in main.xpath("." + GOLD_CHROME.replace("//", ".//")):
        node.drop_tree()
    gold = Gold(generator, str(path.relative_to(DOCS)) if path.is_relative_to(DOCS) else path.name, html)
    gold.text = block_text(main)
    if len(gold.text) < 200:
        return None
    # A code block inside a table cell is written on the cell's line (a GFM cell holds one line), not fenced;
    # an admonition's title (DocBook's "Note" h3) is its label, not a part of the page's outline.
    gold.code = [text for text in (code_text(pre) for pre in main.xpath(".//pre[not(ancestor::td or ancestor::th)]"))
                 if text.strip()]  # fmt: skip
    labels = "[not(ancestor::div[contains(' note tip warning caution important ', concat(' ', @class, ' '))])]"
    outline = main.xpath(".//*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6]" + labels)
    gold.headings = [text for text in map(heading_text, outline) if text]
    for table in main.xpath(".//table[not(ancestor::div[@class='admonitionblock'])]"):  # asciidoc: a note
        rows = [[squash(str(cell.text_content())) for cell in row.xpath("./th|./td")] for row in table.iter("tr")]
        rows = [row for row in rows if any(row)]
        if rows and max(len(row) for row in rows) > 1 and not table.xpath(".//table"):
            gold.tables.append(rows)
    words = _chrome_strings(tree, main) | {w for w in outside | chrome_words if 3 <= len(w) <= 80}
    gold.chrome = sorted(words - {""})
    gold.chrome = [words for words in gold.chrome if words not in gold.text]
    return gold


def _chrome_strings(tree: Any, main: Any) -> set[str]:
    """The words of the page outside its main element: each link's text and each element's own text."""
    inside = set(main.iter()) if main is not None else set()
    found: set[str] = set()
    for node in tree.iter():
        if node in inside or not isinstance(node.tag, str) or node.tag in ("script", "style", "head", "title"):
            continue
        words = squash(str(node.text_content())) if node.tag == "a" else squash(node.text or "")
        if 4 <= len(words) <= 80:
            found.add(words)
    return found
