"""Issue 12's context figures: tools/list bytes for all tools together, and the text bytes of each new tool's
default answer on the fake upstream's data, beside the raw Brave JSON the official server passes through."""

from __future__ import annotations

import json

import anyio
from mcp import Client

from brave_search_mcp.brave.client import BraveClient
from brave_search_mcp.faces.mcp_server import build_server
from testkit.brave.brave import FakeBrave
from testkit.settings import make_settings

from .tables import table

CALLS = {
    "brave_web_search": {"query": "hello world"},
    "brave_llm_context": {"query": "rust async runtimes"},
    "brave_local_search": {"query": "coffee", "location": "san francisco ca united states"},
    "brave_answer": {"question": "What is the tallest mountain?"},
}


async def run_new_tools() -> str:
    """The section for docs/benchmarks.md."""
    fake = FakeBrave(rate_per_second=1000)
    settings = make_settings()
    async with (
        BraveClient(settings, transport=fake.mock_transport()) as client,
        Client(build_server(settings, client)) as mcp,
    ):
        tools = (await mcp.list_tools()).tools
        listed = json.dumps(
            {"tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]},
            separators=(",", ":"),
        )
        rows = []
        for name, arguments in CALLS.items():
            result = await mcp.call_tool(name, arguments)
            text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
            rows.append((f"`{name}`", f"{len(text.encode()):,} B"))
    per_tool = ", ".join(
        f"{t.name} {len(json.dumps(t.model_dump(mode='json', by_alias=True, exclude_none=True)))} B" for t in tools
    )
    return (
        f"`tools/list` for all {len(tools)} tools: **{len(listed.encode()):,} bytes** (target ≤ 15,000; Brave's "
        f"official server 2.1.4: 110,731 for its eight, as the side-by-side measures it). Per tool: {per_tool}.\n\n"
        + table(("default call on the fake upstream", "text the model reads"), rows)
        + "\n"
        "peers.md records no per-tool text figure for the official server's LLM-context, local or answer tools. "
        "It passes Brave's JSON through as text, so the raw JSON is the comparison: for the same fake answers "
        "that is 1,660 B for the LLM context (ours ~980 B), 3,529 B for three places (ours ~850 B) and a "
        "1,282 B answer stream (ours ~260 B for the fixture's answer), measured when the tools were written.\n"
    )


if __name__ == "__main__":
    print(anyio.run(run_new_tools))
