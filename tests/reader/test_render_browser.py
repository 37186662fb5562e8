"""App shells rendered in the real Chromium, and the address policy holding for every request a page makes.

Needs the system ``chromium`` (``.ci/run`` installs it; a missing one fails under CI, see testkit/programs.py) and
Playwright (the dev extra). One browser serves the module; the tests that need their own (never launched, killed)
make it. A real server on 127.0.0.2 counts every TCP connection it accepts: with only 127.0.0.1 opted in, the
hostile pages' fetch, image, iframe, WebSocket, beacon and redirects must not reach it once.
"""

from __future__ import annotations

import os
import signal
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from brave_search_mcp.models import errors
from brave_search_mcp.reader.addresses import AddressPolicy, system_resolver
from brave_search_mcp.reader.browser import MAX_REQUESTS, Rendered, Renderer, RenderFailed
from brave_search_mcp.reader.reading import UrlReader
from brave_search_mcp.state.base import StateBackend
from testkit.browsers import browser_processes
from testkit.clock import FakeClock
from testkit.programs import require
from testkit.settings import make_settings
from testkit.sites import FakeSite, Reply
from tests.reader import chromium
from tests.reader.chromium import CHROMIUM

pytestmark = pytest.mark.anyio
anyio_backend, renderer = chromium.anyio_backend, chromium.renderer  # the module's loop and browser (fixtures)
LOOPBACK_ONLY = AddressPolicy.from_entries(["127.0.0.1"])
MB = 1024 * 1024

DRAWN = r"""<!doctype html><html><head><title>Widget docs</title></head><body><div id="root"></div>
<script>
fetch('/api/doc').then(r => r.json()).then(doc => {
  document.getElementById('root').innerHTML = '<article><h1>' + doc.title + '</h1><p>' + doc.text + '</p>' +
    '<h2>Install</h2><pre><code class="language-python">' + doc.code + '</code></pre></article>';
});
</script></body></html>"""
DOC = (
    '{"title": "Widget guide", "text": "Widgets are drawn by scripts after the page loads, which a static read '
    'never sees.", "code": "import widget\\nwidget.install()\\n"}'
)


class CountingServer(socketserver.ThreadingTCPServer):
    """A real HTTP server on 127.0.0.2 that counts every connection it accepts (and would answer it)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.2", 0), _Secret)
        self.accepted = 0
        self.lock = threading.Lock()

    def verify_request(self, request: Any, client_address: Any) -> bool:
        with self.lock:
            self.accepted += 1
        return True

    def url(self, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.2:{self.server_address[1]}{path}"


class _Secret(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.recv(4096)
        self.request.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecret")


@pytest.fixture
def internal() -> Iterator[CountingServer]:
    server = CountingServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


async def draw(renderer: Renderer, url: str, *, max_bytes: int = 16 * MB) -> Rendered:
    """One render with only 127.0.0.1 opted in, as the reader would ask for it."""
    return await renderer.render(url, policy=LOOPBACK_ONLY, resolver=system_resolver, seconds=15, max_bytes=max_bytes)


def reader_for(backend: StateBackend, clock: FakeClock, renderer: Renderer | None, **settings: Any) -> UrlReader:
    values: dict[str, Any] = {"read_allowed_hosts": ("127.0.0.1",), **settings}
    return UrlReader(make_settings(**values), backend, clock, sleep=clock.sleep, renderer=renderer)


async def test_a_shell_page_reads_as_the_text_headings_and_code_its_scripts_draw(
    renderer: Renderer, backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    site.page("/app", DRAWN)
    site.page("/api/doc", DOC, content_type="application/json")
    reader = reader_for(backend, clock, renderer)
    result = await reader.read(site.url("/app"))
    document = result.document
    assert document.drawn is True and document.render_note is None
    assert "# Widget guide" in document.markdown
    assert "## Install" in document.markdown
    assert "```python\nimport widget\nwidget.install()\n```" in document.markdown
    assert "never sees" in document.markdown
    assert document.hops == (("127.0.0.1", ("127.0.0.1",)),)
    again = await reader.read(site.url("/app"))  # the rendered page is cached like any other
    assert again.cached is True and again.document.drawn is True
    assert site.count("/api/doc") == 1
    never = await reader.read(site.url("/app"), render="never")
    assert never.document.drawn is False and "Widget guide" not in never.document.markdown


async def test_render_always_draws_an_ordinary_page_too(
    renderer: Renderer, backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    body = "<html><body><h1>Plain</h1><p>" + "Served as HTML. " * 30 + "</p><script>document.body.insertAdjacentHTML("
    site.page("/mixed", body + "'beforeend', '<p>Added by a script after load.</p>')</script></body></html>")
    reader = reader_for(backend, clock, renderer)
    static = await reader.read(site.url("/mixed"))
    assert static.document.drawn is False and "Added by a script" not in static.document.markdown
    drawn = await reader.read(site.url("/mixed"), render="always")
    assert drawn.document.drawn is True and "Added by a script after load." in drawn.document.markdown


async def test_service_workers_never_load(renderer: Renderer, site: FakeSite) -> None:
    body = """<html><body><div id="root">Waiting</div><script>
      navigator.serviceWorker.register('/sw.js').then(() => 'registered', e => 'refused: ' + e.name)
        .then(said => { document.getElementById('root').textContent = said; });
    </script></body></html>"""
    site.page("/worker", body)
    site.page("/sw.js", "self.addEventListener('fetch', () => {});", content_type="text/javascript")
    drawn = await draw(renderer, site.url("/worker"))
    assert '<div id="root">' in drawn.html  # the page ran (Playwright answers the registration itself)...
    assert site.count("/sw.js") == 0  # ...but no worker script was ever fetched, so none can run


async def test_a_static_page_never_launches_the_browser(
    backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    site.page("/plain", "<html><body><h1>Plain</h1><p>" + "Served as HTML, read as HTML. " * 20 + "</p></body></html>")
    own = Renderer(CHROMIUM)
    result = await reader_for(backend, clock, own).read(site.url("/plain"))
    assert result.document.drawn is False and result.document.render_note is None
    assert own.launches == 0 and own.describe()["running"] is False
    await own.aclose()


HOSTILE = """<!doctype html><html><body><div id="root"></div>
<img src="{i}/pixel.png"><iframe src="{i}/frame"></iframe>
<script>
const tries = [
  fetch('{i}/fetch', {{mode: 'no-cors'}}).catch(() => 'refused'),
  fetch('/hop', {{mode: 'no-cors'}}).catch(() => 'refused'),
  fetch('/ok').then(r => r.text()),
  new Promise(done => {{ const ws = new WebSocket('{ws}/socket'); ws.onerror = ws.onclose = () => done('closed'); }}),
];
navigator.sendBeacon('{i}/beacon', 'leak');
Promise.allSettled(tries).then(() => {{
  const text = 'It tried to reach the network. '.repeat(5);
  document.getElementById('root').innerHTML = '<h1>Hostile page</h1><p>' + text + '</p>';
}});
</script></body></html>"""


async def test_a_page_cannot_reach_a_refused_address_by_any_request(
    renderer: Renderer, site: FakeSite, internal: CountingServer
) -> None:
    site.page("/hostile", HOSTILE.format(i=internal.url(""), ws=internal.url("", scheme="ws")))
    site.redirect("/hop", internal.url("/after-redirect"))
    site.page("/ok", "allowed", content_type="text/plain")
    drawn = await draw(renderer, site.url("/hostile"))
    assert "Hostile page" in drawn.html  # the page ran to its end: every attempt was made and answered
    assert site.count("/ok") == 1  # the same page's allowed request went through the same proxy
    assert site.count("/hop") == 1
    assert "127.0.0.2" in drawn.refused
    assert internal.accepted == 0
    assert dict(drawn.hops) == {"127.0.0.1": ("127.0.0.1",)}


async def test_a_frame_redirected_to_a_private_address_is_never_sent(
    renderer: Renderer, site: FakeSite, internal: CountingServer
) -> None:
    site.page("/framed", '<html><body><h1>Outer</h1><iframe src="/inner"></iframe></body></html>')
    site.redirect("/inner", internal.url("/admin"))
    drawn = await draw(renderer, site.url("/framed"))
    assert site.count("/inner") == 1
    assert internal.accepted == 0
    assert drawn.refused == ("127.0.0.2",)


async def test_the_page_itself_is_checked_in_the_browser_too(renderer: Renderer, internal: CountingServer) -> None:
    with pytest.raises(RenderFailed, match="ERR_HTTP_RESPONSE_CODE_FAILURE"):  # the proxy's 403, not the page
        await draw(renderer, internal.url("/"))
    assert internal.accepted == 0


async def test_a_page_that_never_finishes_loading_answers_what_it_drew_by_the_deadline(
    renderer: Renderer, backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    body = """<html><body><div id="root"></div><script>document.getElementById('root').innerHTML =
      '<h1>Early text</h1><p>' + 'Drawn before the slow script answered. '.repeat(4) + '</p>';</script>
      <script src="/slow.js"></script></body></html>"""
    site.page("/slow", body)
    site.route("/slow.js", Reply(body=b"", content_type="text/javascript", stall=60))
    reader = reader_for(backend, clock, renderer, read_timeout_seconds=4.0)
    with anyio.fail_after(8):  # the read's own deadline bounds it, not the page
        result = await reader.read(site.url("/slow"))
    assert result.document.drawn is True
    assert "Drawn before the slow script answered." in result.document.markdown
    assert (await reader.read(site.url("/slow"))).cached is False  # an unfinished render is not kept


async def test_a_page_that_opens_a_thousand_requests_is_capped(
    renderer: Renderer, backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    body = """<html><body><div id="root"></div><script>
      for (let i = 0; i < 1000; i++) fetch('/n?' + i).catch(() => null);
      document.getElementById('root').innerHTML = '<h1>Flood</h1><p>' + 'A page that asks a lot. '.repeat(5) + '</p>';
    </script></body></html>"""
    site.page("/flood", body)
    for i in range(1000):
        site.page(f"/n?{i}", "x", content_type="text/plain")
    result = await reader_for(backend, clock, renderer).read(site.url("/flood"))
    assert "A page that asks a lot." in result.document.markdown
    sent = sum(1 for seen in site.requests if seen.path.startswith("/n?"))
    assert 0 < sent < MAX_REQUESTS  # the page itself is one of the render's requests


async def test_a_render_receives_at_most_its_bytes(renderer: Renderer, site: FakeSite) -> None:
    body = """<html><body><div id="root">Waiting</div><script>
      fetch('/big').then(r => r.text()).then(t => { document.getElementById('root').textContent = 'got ' + t.length; })
        .catch(() => { document.getElementById('root').textContent = 'cut off'; });
    </script></body></html>"""
    site.page("/heavy", body)
    site.page("/big", "x" * (2 * MB), content_type="text/plain")
    drawn = await draw(renderer, site.url("/heavy"), max_bytes=MB)
    assert site.count("/big") == 1
    assert '<div id="root">cut off</div>' in drawn.html
    assert drawn.complete is False


async def test_a_page_that_starts_a_download_still_reads_and_nothing_is_saved(
    renderer: Renderer, backend: StateBackend, clock: FakeClock, site: FakeSite, tmp_path: Path
) -> None:
    body = """<html><body><div id="root"></div><script>
      const text = 'Downloads start by themselves. '.repeat(4);
      document.getElementById('root').innerHTML = '<h1>Get the file</h1><p>' + text + '</p>';
      const a = document.createElement('a');
      a.href = '/file.bin'; a.download = 'file.bin'; document.body.append(a); a.click();
    </script></body></html>"""
    site.page("/download", body)
    site.page("/file.bin", b"\0" * 1024, content_type="application/octet-stream",
              headers={"Content-Disposition": "attachment; filename=file.bin"})  # fmt: skip
    before = set(Path.cwd().iterdir())
    result = await reader_for(backend, clock, renderer).read(site.url("/download"))
    assert result.document.drawn is True and "Downloads start by themselves." in result.document.markdown
    assert set(Path.cwd().iterdir()) == before


async def test_a_cached_rendered_page_is_checked_against_the_policy_in_force(
    renderer: Renderer, backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    with FakeSite(host="127.0.0.3") as data:
        data.page("/doc", DOC, content_type="application/json", headers={"Access-Control-Allow-Origin": "*"})
        site.page("/app", DRAWN.replace("/api/doc", data.url("/doc")))
        wide = reader_for(backend, clock, renderer, read_allowed_hosts=("127.0.0.1", "127.0.0.3"))
        first = await wide.read(site.url("/app"))
        assert first.document.drawn is True and "Widget guide" in first.document.markdown
        assert ("127.0.0.3", ("127.0.0.3",)) in first.document.hops
        narrow = reader_for(backend, clock, renderer)  # the same shared cache, 127.0.0.3 no longer opted in
        with pytest.raises(errors.FetchBlocked, match=r"127\.0\.0\.3"):
            await narrow.read(site.url("/app"))


async def test_a_browser_that_will_not_start_leaves_the_static_read_and_says_why(
    backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    site.page("/app", DRAWN)
    broken = Renderer(require("false", "coreutils"))  # an executable that exits at once: no browser
    result = await reader_for(backend, clock, broken).read(site.url("/app"))
    assert result.document.drawn is False
    assert result.document.render_note is not None and "did not start" in result.document.render_note
    assert broken.launches == 0 and broken.describe()["running"] is False
    await broken.aclose()


async def test_a_killed_browser_is_relaunched_by_the_next_read(
    backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    site.page("/app", DRAWN)
    site.page("/api/doc", DOC, content_type="application/json")
    own = Renderer(CHROMIUM)
    reader = reader_for(backend, clock, own, read_cache_ttl_seconds=0)
    try:
        assert (await reader.read(site.url("/app"))).document.drawn is True
        victims = browser_processes()
        assert victims, "the launched browser is a child of this process"
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        second = await reader.read(site.url("/app"))
        assert second.document.drawn is True and "Widget guide" in second.document.markdown
        assert own.launches == 2
    finally:
        await own.aclose()
