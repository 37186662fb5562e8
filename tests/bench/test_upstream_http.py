"""bench.upstream_http: the GET transports side by side. No timing is asserted: the section is rendered from given
figures, and a tiny pass runs for real against the fake to show every way reads the whole body."""

from __future__ import annotations

import pytest

import bench.upstream_http as upstream_http
from bench.__main__ import SIDE_BENCHES
from bench.upstream import load_recorded_page, make_fake
from testkit.brave.brave import VALID_KEY
from testkit.brave.http_server import FakeBraveServer


def test_the_section_gives_each_way_as_a_ratio_to_httpx2s_own_transport() -> None:
    text = upstream_http.render({"httpx2's": (1.0, 0.8), "ours": (0.25, 0.2)})
    assert "| httpx2's | 1.000 ms | 1.00× | 0.800 ms | 1.00× |" in text
    assert "| ours | 0.250 ms | 0.25× | 0.200 ms | 0.25× |" in text
    assert any(module == "bench.upstream_http" for module, _ in SIDE_BENCHES)


@pytest.mark.anyio
async def test_every_way_fetches_the_recorded_page_from_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_http, "REQUESTS", 2)
    monkeypatch.setattr(upstream_http, "ROUNDS", 1)
    monkeypatch.setattr(upstream_http, "PASSES", 1)
    fake = make_fake(load_recorded_page(), rate_per_second=1000, keys=(VALID_KEY,))
    with FakeBraveServer(fake) as up:
        figures = await upstream_http.measure(up.base_url)
    assert len(figures) == 3 and all(one >= 0 and many >= 0 for one, many in figures.values())
    assert fake.hits("/res/v1/web/search") == 3 * (20 + 2 + upstream_http.AT_ONCE)  # warm-up, one at a time, a round
