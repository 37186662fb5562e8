"""DNS and the network as tests control them: a scripted resolver and a network backend that records connects.

``ScriptedDNS`` answers each name from a script (a list of answers is used in turn, the last one
repeating), so a test can make a name answer a public address first and a private one next — DNS
rebinding. ``RecordingNetwork`` is what the reader's pinned backend connects through: it records
every address it is asked to connect to and can send a (public, unreachable) address to a local site.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence

import httpcore2


class ScriptedDNS:
    """A resolver for ``UrlReader(resolver=...)``: names map to answers; unknown names do not exist."""

    def __init__(self, script: dict[str, Sequence[str] | Sequence[Sequence[str]]]) -> None:
        self._script = {name.lower(): _answers(value) for name, value in script.items()}
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        """The next answer for ``host``; socket.gaierror (EAI_NONAME) for a name not in the script."""
        self.calls.append(host)
        answers = self._script.get(host.lower())
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return answers.pop(0) if len(answers) > 1 else answers[0]


def _answers(value: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    if value and isinstance(value[0], str):
        return [[str(a) for a in value]]
    return [list(answer) for answer in value]


class RecordingNetwork(httpcore2.AsyncNetworkBackend):
    """Records each TCP connect's address; ``redirect`` sends chosen addresses to a local one instead."""

    def __init__(self, redirect: dict[str, str] | None = None) -> None:
        self._inner = httpcore2.AnyIOBackend()
        self._redirect = dict(redirect or {})
        self.connects: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """Record, then connect (to the redirect target when there is one)."""
        self.connects.append((host, port))
        target = self._redirect.get(host, host)
        return await self._inner.connect_tcp(
            target, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        """Never used by the reader."""
        raise httpcore2.ConnectError("no unix sockets in tests")

    async def sleep(self, seconds: float) -> None:
        """Delegate."""
        await self._inner.sleep(seconds)
