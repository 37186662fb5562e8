"""Real-world-shaped pages the project owns (its own words), for read_url tests and the bench.

``page(name)`` loads a saved page from ``pages/`` (article, docs with code, forum thread, and a PDF
paper); ``big_page(size)`` writes a long documentation page of about ``size`` bytes with the
boilerplate real sites carry (navigation, banners, footers), for size and speed measurements.
"""

from __future__ import annotations

from pathlib import Path

from .pdf import make_pdf

PAGES = Path(__file__).resolve().parent / "pages"
SAVED = ("article.html", "docs.html", "forum.html", "paper.pdf")

PAPER_PAGES: tuple[tuple[str, ...], ...] = (
    (
        "Measuring queue latency in small job runners",
        "Abstract",
        "We compare three ways of measuring how long a job waits in a queue before",
        "a worker picks it up: timestamps at enqueue, sampling the queue length, and",
        "tracing spans. Timestamps are cheapest and most accurate below 10 ms.",
    ),
    (
        "1 Method",
        "Each runner processed 200,000 jobs of 5 ms with four workers.",
        "Latency was recorded at enqueue and at start; clocks were monotonic.",
        "Sampling ran every 100 ms; tracing used one span per job.",
    ),
    (
        "2 Results",
        "Median wait: 1.8 ms (timestamps), 2.4 ms (sampling), 2.0 ms (tracing).",
        "The 99th percentile differed most: sampling missed short spikes entirely.",
        "3 Conclusion",
        "Record two timestamps per job; derive everything else from them.",
    ),
)


def page(name: str) -> bytes:
    """The bytes of a saved page (``SAVED`` lists them)."""
    return (PAGES / name).read_bytes()


def paper_pdf() -> bytes:
    """The PDF paper as ``make_pdf`` writes it (``pages/paper.pdf`` holds the same bytes)."""
    return make_pdf(PAPER_PAGES, title="Measuring queue latency in small job runners")


_CHROME_TOP = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>The complete field guide to harbour cranes</title><meta property="og:site_name" content="Harbour Notes">
<meta property="article:published_time" content="2025-06-01T09:00:00Z"></head><body>
<nav class="menu"><ul><li><a href="/">Home</a></li><li><a href="/guides">Guides</a></li>
<li><a href="/about">About</a></li></ul></nav>
<div id="cookie-banner">Cookies help us count readers. <button>Fine</button></div>
<main><article><h1>The complete field guide to harbour cranes</h1>
<p>This guide walks through every crane you are likely to meet on a working quay, chapter by chapter.</p>
"""
_CHROME_BOTTOM = """</article></main>
<footer><p>Harbour Notes · written by volunteers · <a href="/privacy">Privacy</a></p></footer></body></html>"""


def _chapter(number: int) -> str:
    kinds = ("gantry", "level-luffing", "mobile harbour", "floating", "straddle carrier", "reach stacker")
    kind = kinds[number % len(kinds)]
    rows = "".join(
        f"<tr><td>{kind} {number}.{row}</td><td>{20 + (number * 7 + row * 3) % 60} t</td>"
        f"<td>{30 + (number + row) % 25} m</td></tr>"
        for row in range(4)
    )
    return (
        f"<h2>Chapter {number}: the {kind} crane</h2>\n"
        f"<p>Chapter {number} looks at the {kind} crane: what it lifts, how it moves along the quay and why "
        f"operators choose it. A {kind} crane is judged first by its safe working load and its outreach, then "
        f"by how quickly it can cycle between ship and shore without swinging the load.</p>\n"
        f"<h3>Loads and reach ({number})</h3>\n"
        f"<table><tr><th>Model</th><th>Load</th><th>Outreach</th></tr>{rows}</table>\n"
        f"<p>Operators on the night shift in chapter {number}'s case study logged "
        f"{100 + number * 13 % 400} lifts per shift, with wind stops counted separately.</p>\n"
        f"<ul><li>Check the anemometer before the first lift.</li><li>Walk the rail for debris.</li>"
        f"<li>Test the emergency stop at the start of every shift ({number}).</li></ul>\n"
        f'<pre><code class="language-python">def safe_load(rated_t: float, wind_ms: float) -&gt; float:\n'
        f"    factor = 1.0 if wind_ms &lt; 10 else 0.{8 - number % 3}\n\n    return rated_t * factor\n</code></pre>\n"
        f'<div class="ad">Advertisement: hi-vis jackets, chapter {number} special</div>\n'
    )


def big_page(size: int = 2_000_000) -> bytes:
    """A long, well-formed documentation page of about ``size`` bytes (chapters until the size is reached)."""
    parts = [_CHROME_TOP]
    total = len(_CHROME_TOP) + len(_CHROME_BOTTOM)
    number = 1
    while total < size:
        chapter = _chapter(number)
        parts.append(chapter)
        total += len(chapter)
        number += 1
    parts.append(_CHROME_BOTTOM)
    return "".join(parts).encode("utf-8")
