"""Which of trafilatura's passes an article is read with: the stricter ``favor_precision`` pass, unless it loses
much of the text or a code block (the plain pass's text is then kept)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from brave_search_mcp.reader.extract import extract

BOILERPLATE = "Share this story with your friends on every network you know today"
PAGE = (
    "<html><head><title>Tides</title></head><body><article><h1>Tides</h1>"
    + "".join(
        f"<p>In hour {n} the moon pulls the sea toward it, and the sea rises on both sides.</p>" for n in range(30)
    )
    + "<pre><code class='language-python'>height = amplitude * cos(omega * t)</code></pre>"
    + f"<p>{BOILERPLATE}</p></article></body></html>"
)


def read() -> str:
    url = "https://news.example/tides"
    return extract(
        url=url, final_url=url, kind="html", content_type="text/html", body=PAGE.encode(), charset=None
    ).markdown


@pytest.fixture
def precise_pass(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the stricter pass does to the plain pass's text (the first item, a function, is set by each test)."""
    import trafilatura

    real = trafilatura.extract
    change: list[Any] = [lambda text: text]

    def passes(tree: Any, **options: Any) -> str | None:
        strict = options.pop("favor_precision", False)
        text = real(tree, **options)
        return change[0](text or "") if strict else text

    monkeypatch.setattr(trafilatura, "extract", passes)
    return change


def test_the_precise_pass_is_taken_when_it_keeps_the_text_and_its_code(precise_pass: list[Any]) -> None:
    precise_pass[0] = lambda text: text.replace(BOILERPLATE, "")
    markdown = read()
    assert BOILERPLATE not in markdown and "```python\nheight = amplitude * cos(omega * t)\n```" in markdown


def test_the_plain_pass_is_kept_when_the_precise_one_drops_a_code_block(precise_pass: list[Any]) -> None:
    precise_pass[0] = lambda text: re.sub(r"```.*?```", "", text.replace(BOILERPLATE, ""), flags=re.S)
    markdown = read()
    assert "height = amplitude * cos(omega * t)" in markdown and BOILERPLATE in markdown


def test_the_plain_pass_is_kept_when_the_precise_one_loses_a_fifth_of_the_text_or_more(precise_pass: list[Any]) -> None:
    precise_pass[0] = lambda text: re.sub(r"In hour 1?\d the moon[^\n]*\n", "", text)  # 20 of 30 paragraphs
    assert "In hour 7 the moon" in read()
