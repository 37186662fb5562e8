"""The rest of a complete summary answer: title, follow-ups, enrichments and entities, kept compact."""

from __future__ import annotations

import json

import pytest

from brave_search_mcp.models.summary import Reference
from tests.brave.summary_source import PENDING, complete, run, tok
from tests.conftest import BRAVE_BODIES

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------------------------------------
# The rest of a complete answer


async def test_title_and_followups_are_cleaned_and_capped() -> None:
    body = complete(
        tok("Body."),
        title="  <b>What is</b>   K2 &amp; why?  ",
        followups=["<i>how tall</i> is k2", 5, None, "", "how tall is k2", *(f"question {n}" for n in range(20))],
    )

    summary, _, _ = await run([body])

    assert summary.title == "What is K2 & why?"
    assert summary.followups == ["how tall is k2", *(f"question {n}" for n in range(9))]


async def test_missing_title_and_followups_are_empty() -> None:
    summary, _, _ = await run([complete(tok("Body."), title=["not", "text"], followups="not a list")])

    assert summary.title is None
    assert summary.followups == []
    assert summary.enrichments is None
    assert summary.entities_infos is None


async def test_enrichments_keep_only_a_compact_subset() -> None:
    body = complete(
        tok("Body."),
        enrichments={
            "raw": "raw text " * 100,
            "images": [{"url": "https://img.example.com/1.jpg", "type": "image"}],
            "entities": [{"uuid": "x", "name": "K2"}],
            "qa": [
                {"answer": f"<b>answer</b> {n}", "score": 0.9, "highlight": {"start": 0, "end": 1}} for n in range(5)
            ]
            + [{"score": 1.0}],
            "context": [{"title": f"Page {n}", "url": f"https://example.com/{n}", "meta_url": {}} for n in range(15)],
        },
    )

    summary, _, _ = await run([body])

    assert summary.enrichments is not None
    assert set(summary.enrichments) == {"context", "qa"}
    assert summary.enrichments["qa"] == ["answer 0", "answer 1", "answer 2"]
    assert summary.enrichments["context"] == [
        {"title": f"Page {n}", "url": f"https://example.com/{n}"} for n in range(10)
    ]
    assert len(summary.references) == 15  # every context page is a reference, even past the 10 kept above
    assert "raw text" not in json.dumps(summary.enrichments)


async def test_entities_infos_only_when_requested() -> None:
    infos = {"K2": {"provider": "wikipedia", "description": "Second-highest mountain."}}
    body = complete(tok("Body."), entities_infos=infos)

    requested, source, _ = await run([body], entity_info=True)
    not_requested, _, _ = await run([body])

    assert requested.entities_infos == infos
    assert not_requested.entities_infos is None
    assert ("entity_info", "1") in source.calls[0].params


async def test_large_entities_infos_keep_the_leading_entries_that_fit() -> None:
    infos = {f"Entity {n}": {"provider": "wikipedia", "description": "x" * 300} for n in range(40)}

    summary, _, _ = await run([complete(tok("Body."), entities_infos=infos)], entity_info=True)

    assert summary.entities_infos is not None
    kept = list(summary.entities_infos)
    assert 5 < len(kept) < 40
    assert kept == [f"Entity {n}" for n in range(len(kept))]
    assert len(json.dumps(summary.entities_infos, separators=(",", ":")).encode()) <= 4096


async def test_a_real_shaped_answer_reads_well() -> None:
    body = json.loads((BRAVE_BODIES / "summarizer_complete.json").read_text(encoding="utf-8"))
    ganymede = "https://en.wikipedia.org/wiki/Ganymede_(moon)"

    summary, _, _ = await run([PENDING, body], entity_info=True, inline_references=True)

    assert summary.title == body["title"]
    assert summary.text.startswith("The largest moon of Jupiter is Ganymede, 5,268 km across")
    assert "\n1. Ganymede: 5,268 km" in summary.text
    assert "\n2. Callisto: 4,821 km" in summary.text
    assert summary.references[0] == Reference(number=1, url=ganymede, title="Ganymede")
    assert len({r.url for r in summary.references}) == len(summary.references)
    assert summary.followups == body["followups"]
    assert summary.entities_infos == body["entities_infos"]
    assert summary.enrichments is not None
    assert "raw" not in summary.enrichments
    assert summary.polls == 2
