"""Whether a page read statically is an app shell: the content a browser would show is drawn by JavaScript.

A React, Vue, Angular or Next.js page served without server rendering reads as its ``<noscript>`` line or as
nothing at all. Rendering costs a browser, so it is done only when both hold: the static read found little
text (``TINY_TEXT``) and the HTML says why (an empty root element beside scripts, a ``<noscript>``
asking for JavaScript, a framework's hydration marker, a body of scripts only). Pure and cheap: one lxml parse.
"""

from __future__ import annotations

import re
from typing import Any

TINY_TEXT = 300  # characters of extracted markdown: below this a page may be a shell
_ROOT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "svelte", "app-root", "react-root", "main"})
_ROOT_TAGS = frozenset({"app-root"})  # Angular's default root component
_MARKERS = (  # framework hydration and bootstrap markers, as they appear in the HTML
    ("__NEXT_DATA__", "Next.js data"),
    ("window.__NUXT__", "Nuxt state"),
    ("__remixContext", "Remix context"),
    ("data-reactroot", "a React root"),
    ("ng-version", "an Angular root"),
    ("data-server-rendered", "a Vue root"),
    ("data-v-app", "a Vue app"),
    ("astro-island", "an Astro island"),
    ("data-sveltekit", "a SvelteKit app"),
)
_ASKS_FOR_JS = re.compile(
    r"\b(?:enable|turn on|requires?|needs?|activate|allow)\b.{0,60}javascript"
    r"|javascript.{0,40}\b(?:required|enabled|disabled|needed)",
    re.I | re.S,
)
_CODE_TYPES = frozenset({"", "module", "text/javascript", "application/javascript", "text/babel"})
_FEW_CHARS = 20  # an "empty" root may hold a spinner's word or two


def is_thin(markdown: str) -> bool:
    """Whether a static read found too little text to be the page a visitor sees."""
    return len(markdown.strip()) < TINY_TEXT


def shell_reason(html: str) -> str | None:
    """Why this HTML is an app shell (a short phrase for logs and tests), or None when it is an ordinary page."""
    from trafilatura import load_html

    try:
        tree = load_html(html)
    except (ValueError, TypeError):
        return None
    if tree is None:
        return None
    scripts = [s for s in tree.iter("script") if (s.get("type") or "").strip().lower() in _CODE_TYPES]
    if scripts:
        for element in tree.iter():
            if not isinstance(element.tag, str):
                continue
            named = element.get("id") in _ROOT_IDS or element.tag in _ROOT_TAGS
            if named and len(element.text_content().strip()) <= _FEW_CHARS:
                which = element.get("id") or element.tag
                return f"an empty #{which} beside scripts"
    for noscript in tree.iter("noscript"):
        if _ASKS_FOR_JS.search(noscript.text_content() or ""):
            return "a <noscript> asking for JavaScript"
    for marker, what in _MARKERS:
        if marker in html:
            return f"{what} in the HTML"
    body = tree.find("body")
    if scripts and body is not None and len(_visible_text(body)) <= _FEW_CHARS:
        return "a body of scripts only"
    return None


def _visible_text(element: Any) -> str:
    """The text a visitor would see without scripts: scripts, styles, templates and noscript left out."""
    hidden = "ancestor::script or ancestor::style or ancestor::noscript or ancestor::template"
    found = element.xpath(f".//text()[not({hidden})]")
    return "".join(str(text) for text in found).strip()
