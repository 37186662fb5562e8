"""The SQLite state file's heartbeat of the processes that share a plan (``peers``): a row per process, its last
beat, kept and counted in one transaction.

Several processes on one host share a file (a stdio server per MCP client, the CLI, the skill), and a disk that
refuses writes takes all of them to memory at once: each then paces at its share, as Redis replicas do. A row no
process of this project wrote (a time ahead of the clock, a member that is no process id) is deleted before
counting.
"""

from __future__ import annotations

import sqlite3

from brave_search_mcp.state.sqlite_conn import FileConnection

PEER_ID_CHARS = 32  # ``peers.Peers.member``: a uuid's hex


class SqliteHeartbeat:
    """``peers.Heartbeat`` on the state file (table ``peers``)."""

    def __init__(self, state: FileConnection) -> None:
        self._state = state

    async def beat(self, member: str, now: float, alive: float) -> int:
        """Note ``member`` alive at ``now``; how many members are."""

        def work(conn: sqlite3.Connection) -> int:
            conn.execute("INSERT OR REPLACE INTO peers VALUES (?, ?)", (member, now))
            conn.execute(
                "DELETE FROM peers WHERE NOT (t >= ? AND t <= ?) OR typeof(member) != 'text' OR length(member) != ?"
                " OR member GLOB '*[^0-9a-f]*'",
                (now - alive, now + alive, PEER_ID_CHARS),
            )
            return int(conn.execute("SELECT count(*) FROM peers").fetchone()[0])

        return await self._state.run(work)

    async def leave(self, member: str) -> None:
        """Forget ``member``."""
        await self._state.run(lambda conn: conn.execute("DELETE FROM peers WHERE member = ?", (member,)))
