"""Ways out of the rendering browser that do not go through an HTTP request, tried against real Chromium.

The guard proxy sees every request Chromium makes through it; these pages try to send without one (WebRTC's
STUN, TURN and connectivity checks over UDP or straight TCP, WebTransport over QUIC). Real UDP and TCP sockets on
one port of 127.0.0.2 (refused: only 127.0.0.1 is opted in) count every datagram and connection, and get none.
WebSockets count against the render's connections; a page that navigates to a refused address is not read as the
browser's error page.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from brave_search_mcp.reader.addresses import AddressPolicy, system_resolver
from brave_search_mcp.reader.browser import MAX_REQUESTS, Renderer
from brave_search_mcp.reader.reading import UrlReader
from brave_search_mcp.state.base import StateBackend
from testkit.clock import FakeClock
from testkit.settings import make_settings
from testkit.sites import FakeSite
from tests.reader import chromium

pytestmark = pytest.mark.anyio
anyio_backend, renderer = chromium.anyio_backend, chromium.renderer  # the module's loop and browser (fixtures)
LOOPBACK_ONLY = AddressPolicy.from_entries(["127.0.0.1"])


class Counter:
    """Real UDP and TCP sockets on one port of 127.0.0.2 that count every datagram and connection they get."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.2", 0))
        self.socket.settimeout(0.05)
        self.port: int = self.socket.getsockname()[1]
        self.stream = socket.create_server(("127.0.0.2", self.port))
        self.stream.settimeout(0.05)
        self.received = 0
        self.running = True

    def serve(self) -> None:
        while self.running:
            for each in (self.socket, self.stream):
                try:
                    if each is self.stream:
                        self.stream.accept()[0].close()
                    else:
                        each.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                self.received += 1


SHELL = """<!doctype html><html><body><div id="root"></div>
<noscript>You need to enable JavaScript to run this app.</noscript>
<script>setTimeout(() => {{ location.href = '{to}'; }}, 50);</script></body></html>"""


@pytest.fixture
def udp() -> Iterator[Counter]:
    counter = Counter()
    thread = threading.Thread(target=counter.serve, daemon=True)
    thread.start()
    yield counter
    counter.running = False
    thread.join(5)
    counter.socket.close()
    counter.stream.close()


WEBRTC = """<!doctype html><html><body><div id="root">Waiting</div><script>
const at = '127.0.0.2:{port}';
async function tryAll() {{
  const pc = new RTCPeerConnection({{iceServers: [
    {{urls: 'stun:' + at}},
    {{urls: 'turn:' + at + '?transport=udp', username: 'u', credential: 'p'}},
    {{urls: 'turn:' + at + '?transport=tcp', username: 'u', credential: 'p'}},
  ]}});
  pc.createDataChannel('leak');
  await pc.setLocalDescription(await pc.createOffer());
  const peer = new RTCPeerConnection();
  await peer.setRemoteDescription(pc.localDescription);
  await peer.setLocalDescription(await peer.createAnswer());
  await pc.setRemoteDescription(peer.localDescription);
  await pc.addIceCandidate({{candidate: 'candidate:1 1 udp 2122260223 127.0.0.2 {port} typ host',
                            sdpMid: '0', sdpMLineIndex: 0}});
  await pc.addIceCandidate({{candidate: 'candidate:2 1 tcp 1518280447 127.0.0.2 {port} typ host tcptype passive',
                            sdpMid: '0', sdpMLineIndex: 0}});
  try {{ new WebTransport('https://' + at + '/').ready.catch(() => null); }} catch (e) {{}}
}}
tryAll().then(() => 'tried', e => 'failed: ' + e).then(said => {{
  document.getElementById('root').textContent = 'WebRTC ' + said;
}});
</script></body></html>"""


async def test_webrtc_and_webtransport_send_nothing_to_a_refused_address(
    renderer: Renderer, site: FakeSite, udp: Counter
) -> None:
    site.page("/rtc", WEBRTC.format(port=udp.port))
    drawn = await renderer.render(
        site.url("/rtc"), policy=LOOPBACK_ONLY, resolver=system_resolver, seconds=15, max_bytes=1024 * 1024
    )
    assert udp.received == 0
    assert "127.0.0.2" in drawn.refused  # TURN over TCP was asked of the guard proxy, which refused it
    assert "WebRTC tried" in drawn.html  # the page got as far as asking for every kind of candidate


async def test_websockets_count_against_the_renders_connections(renderer: Renderer, site: FakeSite) -> None:
    body = """<html><body><div id="root"></div><script>
      for (let i = 0; i < 400; i++) new WebSocket('ws://' + location.host + '/ws');
      document.getElementById('root').textContent = 'Opened sockets.';
    </script><script src="/slow.js"></script></body></html>"""
    site.page("/sockets", body)
    site.page("/slow.js", "", content_type="text/javascript", stall=4.0)  # sockets connect while it loads
    drawn = await renderer.render(
        site.url("/sockets"), policy=LOOPBACK_ONLY, resolver=system_resolver, seconds=15, max_bytes=1024 * 1024
    )
    assert "Opened sockets." in drawn.html
    assert 0 < site.count("/ws") < MAX_REQUESTS  # the page and its script were connections too


async def test_a_page_that_navigates_to_a_refused_address_reads_as_served_not_as_the_browsers_error(
    renderer: Renderer, backend: StateBackend, clock: FakeClock, site: FakeSite
) -> None:
    with FakeSite(host="127.0.0.2") as internal:
        internal.page("/admin", "<html><body><h1>Internal admin</h1></body></html>")
        site.page("/app", SHELL.format(to=internal.url("/admin")))
        reader = UrlReader(
            make_settings(read_allowed_hosts=("127.0.0.1",)), backend, clock, sleep=clock.sleep, renderer=renderer
        )
        result = await reader.read(site.url("/app"))
    document = result.document
    assert internal.requests == []
    assert document.drawn is False and "Access to 127.0.0.2 was denied" not in document.markdown
    assert document.render_note is not None and "navigated away" in document.render_note
    assert document.final_url == site.url("/app")
