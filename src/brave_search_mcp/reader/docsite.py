"""Which element of a documentation page is its content, and which parts of it are the site's controls.

Documentation generators mark their content plainly (Sphinx ``div[role=main]``, rustdoc
``section#main-content``, mdBook ``main``, Node's ``#apicontent``...), so for a page one of them made, the
reader takes that element instead of guessing with an article extractor, and prunes the chrome the
generator puts inside it: headerlink glyphs, "source" links, rustdoc's "[−]" and "Expand description",
DocBook's navigation tables, tables of contents that repeat the headings, edit-this-page and
previous/next links. A page no known generator made returns None: articles stay with trafilatura.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A generator is recognised by what only it writes (a blog's ``nav#sidebar`` alone is not mdBook); its content
# is the first of its ``main`` paths that matches.
_SIGNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("rustdoc", "//meta[@name='generator' and @content='rustdoc'] | //body[contains(@class, 'rustdoc')]",
     ("//section[@id='main-content']",)),
    ("node", "//div[@id='apicontent']", ("//div[@id='apicontent']",)),
    ("docusaurus", "//div[contains(concat(' ', normalize-space(@class), ' '), ' theme-doc-markdown ')]",
     ("//div[contains(concat(' ', normalize-space(@class), ' '), ' theme-doc-markdown ')]",)),
    ("mkdocs", "//article[contains(@class, 'md-content__inner')]",
     ("//article[contains(@class, 'md-content__inner')]",)),
    ("mdbook", "//comment()[contains(., 'Book generated using mdBook')] | //nav[@id='sidebar'][//*[@id='menu-bar']]",
     ("//div[@id='content']/main", "//main")),
    ("asciidoc", "//meta[@name='generator' and starts-with(@content, 'AsciiDoc')]", ("//body",)),
    ("docbook", "//meta[@name='generator' and starts-with(@content, 'DocBook')] | //div[@class='navheader']",
     ("//body",)),
    # Python-Markdown's permalinks are headerlinks too: Sphinx is the one that also loads ``_static/``
    ("sphinx", "//a[contains(concat(' ', normalize-space(@class), ' '), ' headerlink ')]"
     "[//script[contains(@src, '_static/')] | //link[contains(@href, '_static/')]]",
     ("//*[@role='main']", "//div[@id='docs-content']", "//div[@id='yui-main']//div[contains(@class, 'yui-g')]",
      "//div[@class='body']", "//main")),  # a page with headerlinks and none of these is left to trafilatura
)  # fmt: skip

# Never content, wherever they are inside the content element.
_DROP_TAGS = ("script", "style", "noscript", "template", "nav", "form", "button", "input", "select", "textarea",
              "svg", "iframe", "object", "embed", "canvas", "link", "meta")  # fmt: skip
_DROP_CLASSES = frozenset({
    "headerlink", "hash-link", "srclink", "rightside", "out-of-band", "hideme", "test-arrow", "tooltip",
    "copybtn", "md-clipboard", "md-source-file", "md-content__button", "navheader", "navfooter", "toc",
    "theme-doc-breadcrumbs", "breadcrumbs", "theme-doc-version-badge", "theme-doc-toc-mobile",
    "theme-edit-this-page", "theme-doc-footer", "pagination-nav", "edit-this-page", "viewcode-link",
    "linenos", "sphinxsidebar", "related", "cookie-banner", "cookie-consent", "cookie-notice", "consent-banner",
    "headerlinks", "notable-traits", "md-sidebar", "md-footer", "md-header", "version-picker", "language-picker",
    "search", "searchbox", "nav-wrapper", "nav-chapters", "menu-bar",
})  # fmt: skip
_DROP_IDS = frozenset({"toc", "toctitle", "footer", "footer-text", "toggle-all-docs", "copy-path", "toc-picker",
                       "gtoc", "rustdoc-toc", "menu-bar", "sidebar", "searchbox", "search"})  # fmt: skip
_ANCHOR_CLASSES = frozenset({"anchor", "mark", "header-anchor"})  # in-page anchors whose text is a glyph
_LOCAL_TOC = frozenset({"contents", "local"})  # Sphinx's ``.. contents::`` box repeats the page's headings
_CONTROL_TEXT = frozenset({"Read more", "[−]", "[+]", "Expand description", "Copy item path"})


@dataclass(frozen=True)
class DocPage:
    """A page a documentation generator made: which one, and its content element (pruned of chrome)."""

    generator: str
    main: Any


def find_docs(tree: Any) -> DocPage | None:
    """The content element of a page a known documentation generator made, pruned; None for any other page."""
    for generator, sign, paths in _SIGNS:
        if not tree.xpath(sign):
            continue
        for path in paths:
            found = tree.xpath(path)
            if found:
                prune(found[0])
                return DocPage(generator, found[0])
        return None
    return None


def prune(main: Any) -> None:
    """Take the site's controls out of ``main`` (its text around them stays)."""
    doomed = [node for node in main.iter() if isinstance(node.tag, str) and node is not main and _is_chrome(node)]
    for node in doomed:
        drop(node)
    for anchor in [node for node in main.iter("a") if not str(node.text_content()).strip()]:
        drop(anchor)  # emptied by the pruning ("[source]"), or an anchor only


def _is_chrome(node: Any) -> bool:
    tag = node.tag
    if tag in _DROP_TAGS:
        return True
    classes = set(str(node.get("class") or "").split())
    if classes & _DROP_CLASSES or str(node.get("id") or "") in _DROP_IDS:
        return True
    if (classes >= {"topic"} and classes & _LOCAL_TOC) or (tag == "div" and classes >= {"contents", "local"}):
        return True
    if tag == "a" and classes & _ANCHOR_CLASSES and len(str(node.text_content()).strip()) <= 1:
        return True
    return tag in ("a", "summary") and str(node.text_content()).strip() in _CONTROL_TEXT


def drop(node: Any) -> None:
    """Remove ``node`` and what it holds, keeping the text that follows it."""
    parent = node.getparent()
    if parent is None:
        return
    tail = node.tail
    previous = node.getprevious()
    if tail:
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(node)
