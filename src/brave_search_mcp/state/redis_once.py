"""The calls whose fate a Redis client cannot know: a booking (or a give-back) that failed may still run on the server.

Each booking script runs at most once per call (``redis_scripts.once``: a marker key keeps its reply). A call that
failed (its timeouts spent, the server paused or gone) was counted on memory instead (``shared``), yet a paused
server that comes back runs it too. So the store remembers these calls' markers per counter, and the outage's merge
looks at them on the server: a marker with a booking's reply means the server counted that request already (the
merge adds one fewer), no marker means it never ran (the merge leaves a void reply there, so a copy arriving later
changes nothing). The month's count then equals the requests sent, with no allowance for a paused server.
"""

from __future__ import annotations

# How long a call's reply (or the void one the merge leaves) is kept: both copies of a call sent again wait in the
# server's sockets while it is busy or paused and run one after the other once it is back, before any merge.
ONCE_KEPT_MS = 60_000
MAX_UNSURE = 256  # per counter: a long outage's failed calls are few (the store is tried once per retry interval)


class UnsureCalls:
    """Per counter, the markers of the booking (+1) and give-back (-1) calls that failed, until a merge settles
    them."""

    def __init__(self) -> None:
        self._calls: dict[str, list[tuple[str, int]]] = {}

    def note(self, counter: str, marker: str, sign: int) -> None:
        """A call on ``counter`` with ``marker`` failed: it may have run (``sign``: +1 a booking, -1 a give-back)."""
        calls = self._calls.setdefault(counter, [])
        calls.append((marker, sign))
        del calls[:-MAX_UNSURE]

    def of(self, counter: str) -> list[tuple[str, int]]:
        """The markers to settle with ``counter``'s next merge."""
        return list(self._calls.get(counter, ()))

    def settled(self, counter: str, calls: list[tuple[str, int]]) -> None:
        """A merge looked at ``calls`` on the server: forgotten (others noted meanwhile are kept)."""
        done = set(calls)
        left = [call for call in self._calls.get(counter, ()) if call not in done]
        if left:
            self._calls[counter] = left
        else:
            self._calls.pop(counter, None)
