"""Each content type read from a real local site: what the model gets, and that no body can end in a traceback."""

from __future__ import annotations

import json

import pytest

from brave_search_mcp.models.errors import ParseError, UnsupportedContent
from testkit.sites import FakeSite
from testkit.sites.pages import page, paper_pdf

from .conftest import MakeReader, read


@pytest.mark.anyio
async def test_an_article_keeps_its_story_and_drops_the_site_around_it(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/bridge", page("article.html"))
    answer, text = await read(make_reader(), site.url("/bridge"))
    content = answer["content"]
    assert answer["title"] == "Why the river town rebuilt its wooden bridge"
    assert answer["site"] == "The Valley Ledger"
    assert answer["published"] == "2025-04-17"
    assert "## The cost argument" in content
    assert "- Timber span: 610,000 euros" in content
    # The prose keeps a link's words; its URL would cost the model tokens in the middle of the text, so it is
    # listed with the page's links instead, absolute, when asked for.
    assert "report at the town hall or download it here." in content and "](" not in content
    assert "Links" not in text and "links" not in answer
    linked, linked_text = await read(make_reader(), site.url("/bridge"), links="same_site")
    report = site.url("/documents/bridge-report-2025.pdf")
    assert linked["links"] == [{"text": "download it here", "url": report}] and linked["links_total"] == 1
    assert f"Links (in the content, on this site): 1.\n- [download it here]({report})" in linked_text
    for boilerplate in ("214 partners", "Garden sheds", "All rights reserved", "Subscribe for 1 euro", "lakeside spa"):
        assert boilerplate not in content, boilerplate
    assert answer["next_start_char"] is None and answer["total_chars"] == len(content)
    assert text.startswith("# Why the river town rebuilt its wooden bridge\nURL: http://127.0.0.1:")
    assert "Site: The Valley Ledger · Published: 2025-04-17 · Type: web page" in text


@pytest.mark.anyio
async def test_a_docs_page_keeps_code_blocks_whole(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/retries.html", page("docs.html"))
    answer, _ = await read(make_reader(), site.url("/retries.html"))
    content = answer["content"]
    # highlighted code: spans gone, indentation, blank lines (two in a row too) and the language kept
    assert (
        '```python\nfrom quayside import job, Retry\n\n\n@job(retry=Retry(attempts=5, backoff="exponential"))\n'
        "def send_invoice(invoice_id: int) -> None:\n    invoice = load(invoice_id)\n\n    if invoice.sent:\n"
    ) in content
    assert "```toml\n[queues.billing]\nretry.attempts = 5" in content
    assert "```console\n$ quayside dead-letters list" in content
    assert "| 6 | 16 s | 10 s |" in content
    assert "`Permanent`" in content
    assert "Quickstart" not in content and "cookies for analytics" not in content and "Show source" not in content
    assert [h["text"] for h in answer["headings"]] == [
        "Retry policies",
        "Declaring a policy",
        "How back-off is computed",
        "Giving up early",
        "Inspecting dead letters",
        "See also",
    ]


@pytest.mark.anyio
async def test_a_forum_thread_keeps_every_post(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/t/starter", page("forum.html"))
    answer, _ = await read(make_reader(), site.url("/t/starter"))
    content = answer["content"]
    for said in ("smells sharply of acetone", "Feed twice a day", 'print(f"{time}', "smells like yoghurt"):
        assert said in content, said
    assert "Trending threads" not in content and "Proofing baskets" not in content


@pytest.mark.anyio
async def test_a_pdf_is_read_page_by_page(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/paper.pdf", paper_pdf(), content_type="application/pdf")
    answer, text = await read(make_reader(), site.url("/paper.pdf"))
    assert answer["title"] == "Measuring queue latency in small job runners"
    assert answer["published"] == "2025-03-05"
    assert [h["text"] for h in answer["headings"]] == ["Page 1", "Page 2", "Page 3"]
    assert "## Page 2\n\n1 Method\nEach runner processed 200,000 jobs" in answer["content"]
    assert "Type: PDF" in text
    only, _ = await read(make_reader(), site.url("/paper.pdf"), section="page 3")
    assert only["content"].startswith("## Page 3") and "Method" not in only["content"]


@pytest.mark.anyio
async def test_a_pdf_sent_as_octet_stream_is_sniffed(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/download", paper_pdf(), content_type="application/octet-stream")
    answer, _ = await read(make_reader(), site.url("/download"))
    assert answer["content_type"] == "application/octet-stream" and "Page 1" in answer["content"]


@pytest.mark.anyio
async def test_a_broken_pdf_is_a_parse_error(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/bad.pdf", b"%PDF-1.4\n this is not a pdf at all", content_type="application/pdf")
    with pytest.raises((ParseError, UnsupportedContent)) as caught:
        await make_reader().read(site.url("/bad.pdf"))
    assert "Traceback" not in caught.value.message


@pytest.mark.anyio
async def test_plain_text_passes_through_with_its_layout(make_reader: MakeReader, site: FakeSite) -> None:
    body = "NOTES\n\n    indented line\n\tand a tab\n# not a heading in plain text\nend\x1b[31m red\x1b[0m"
    site.page("/notes.txt", body, content_type="text/plain; charset=utf-8")
    answer, _ = await read(make_reader(), site.url("/notes.txt"))
    assert answer["content"] == "NOTES\n\n    indented line\n\tand a tab\n# not a heading in plain text\nend red"
    assert answer["headings"] == []


@pytest.mark.anyio
async def test_json_is_pretty_printed_in_a_fence_or_plain(make_reader: MakeReader, site: FakeSite) -> None:
    site.page("/api", json.dumps({"name": "quayside", "tags": ["jobs", "queues"]}), content_type="application/json")
    answer, _ = await read(make_reader(), site.url("/api"))
    assert answer["content"] == '```json\n{\n  "name": "quayside",\n  "tags": [\n    "jobs",\n    "queues"\n  ]\n}\n```'
    plain, _ = await read(make_reader(), site.url("/api"), format="text")
    assert plain["content"].startswith('{\n  "name": "quayside"') and "```" not in plain["content"]


@pytest.mark.anyio
async def test_markdown_passes_through_and_has_an_outline(make_reader: MakeReader, site: FakeSite) -> None:
    body = "# Guide\n\nIntro with a [link](https://example.com).\n\n## Setup\n\n```sh\nmake\n```\n\n## Use\n\nRun it."
    site.page("/README.md", body, content_type="text/markdown; charset=utf-8")
    answer, _ = await read(make_reader(), site.url("/README.md"))
    assert answer["content"] == body
    assert [h["text"] for h in answer["headings"]] == ["Guide", "Setup", "Use"]
    assert answer["title"] == "Guide"  # a markdown file's first top-level heading names it
    plain, _ = await read(make_reader(), site.url("/README.md"), format="text")
    assert plain["content"] == "Guide\n\nIntro with a link.\n\nSetup\n\nmake\n\nUse\n\nRun it."


@pytest.mark.anyio
async def test_a_markdown_file_served_as_text_plain_is_read_as_markdown(
    make_reader: MakeReader, site: FakeSite
) -> None:
    site.page("/CHANGES.md", "# Changes\n\n## 1.2\n\nFixed it.", content_type="text/plain")
    answer, _ = await read(make_reader(), site.url("/CHANGES.md"))
    assert [h["text"] for h in answer["headings"]] == ["Changes", "1.2"]


HTML_CAFE = "<html><head><title>Café</title></head><body><article><h1>Café crème</h1><p>{}</p></article></body></html>"
WORDS = "Un café crème coûte deux euros à la gare, déjà servi près de la fenêtre. " * 4


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (HTML_CAFE.format(WORDS).encode("utf-8"), "text/html; charset=utf-8"),
        (HTML_CAFE.format(WORDS).encode("utf-8"), "text/html; charset=iso-8859-1"),  # mislabelled UTF-8
        (HTML_CAFE.format(WORDS).encode("cp1252"), "text/html"),  # undeclared Windows-1252
        (HTML_CAFE.format(WORDS).encode("cp1252"), "text/html; charset=utf-8"),  # mislabelled Latin
        (HTML_CAFE.format(WORDS).encode("utf-8"), "text/html; charset=x-no-such-charset"),
        (HTML_CAFE.format(WORDS).encode("utf-8"), "text/html; charset=base64"),  # a codec, but not for text
        (
            HTML_CAFE.replace("<head>", '<head><meta charset="windows-1252">').format(WORDS).encode("cp1252"),
            "text/html",
        ),
        ("\ufeff".encode() + HTML_CAFE.format(WORDS).encode("utf-8"), "text/html; charset=iso-8859-1"),  # BOM wins
    ],
)
async def test_charsets_from_header_meta_bom_or_detection(
    make_reader: MakeReader, site: FakeSite, body: bytes, content_type: str
) -> None:
    site.page("/cafe", body, content_type=content_type)
    answer, _ = await read(make_reader(), site.url("/cafe"))
    assert "Un café crème coûte deux euros à la gare" in answer["content"]
    assert answer["title"].startswith("Café")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (
            b"<html><body><p>ok \xff\xfe\xc3\x28 bytes \x80\x81 here and more words to read</p></body></html>",
            "text/html",
        ),
        (b"\xff\xfe\xfd\x00\x00\x01 random bytes \xc0\xaf", "text/plain; charset=utf-8"),
        (b"\x00" * 300, "text/html"),
        (b"", "text/html"),
        (b"<html><body>" + b"<div>" * 5000 + b"deep" + b"</div>" * 5000 + b"</body></html>", "text/html"),
        (b'{"a": [[[[[[[[[[' + b"[" * 5000, "application/json"),
        (b"\xef\xbb\xbf\xff\xfe broken after a BOM", "text/plain"),
    ],
)
async def test_bad_bytes_never_end_in_a_traceback(
    make_reader: MakeReader, site: FakeSite, body: bytes, content_type: str
) -> None:
    site.page("/bad", body, content_type=content_type)
    answer, text = await read(make_reader(), site.url("/bad"))
    assert isinstance(answer["content"], str)
    assert "\x00" not in text and "Traceback" not in text
    text.encode("utf-8")  # valid UTF-8 all the way through


@pytest.mark.anyio
async def test_invisible_and_bidi_characters_are_removed_from_code(make_reader: MakeReader, site: FakeSite) -> None:
    code = "if access_level != \u202e\u2066user\u2069\u2066:  # admin only\nprint('ok')\u200b"
    site.page("/trojan.txt", code, content_type="text/plain")
    answer, _ = await read(make_reader(), site.url("/trojan.txt"))
    assert answer["content"] == "if access_level != user:  # admin only\nprint('ok')"


@pytest.mark.anyio
async def test_a_crash_inside_the_extractor_is_a_parse_error(
    make_reader: MakeReader, site: FakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trafilatura

    def explode(*args: object, **kwargs: object) -> str:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(trafilatura, "extract", explode)
    site.page("/deep", page("article.html"))
    with pytest.raises(ParseError) as caught:
        await make_reader().read(site.url("/deep"))
    assert caught.value.message == "The page's HTML could not be read (RecursionError)."
