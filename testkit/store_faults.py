"""The faults a shared store meets, done for real to a running store: a redis-server killed, paused, stopped or
full; a SQLite state file locked by a stuck process, corrupt, read-only or on a full disk.

Each ``Fault`` owns its store for one run (``open``: the environment that points replicas at it), does the fault
(``strike``, given the replicas' process ids) and undoes it (``lift``). ``testkit.faults`` runs replicas through
them.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from brave_search_mcp.state.sqlite_file import STATE_TABLES, connect
from brave_search_mcp.user_files import default_state_path
from testkit.redis_server import RedisServer
from testkit.stdio import as_user, user_dirs

GARBAGE = b"not a database: garbage written over the state file " * 100


class Fault(Protocol):
    """One fault of one store."""

    name: str
    store: str  # "redis" or "sqlite"
    how: str  # how it is done, for the table

    def open(self) -> contextlib.AbstractContextManager[dict[str, str]]:
        """The store, running, for one run: the environment settings that point a replica at it."""
        ...

    def strike(self, pids: Sequence[int]) -> None:
        """Do the fault (the replicas' process ids, for faults of the process itself)."""
        ...

    def lift(self, pids: Sequence[int]) -> None:
        """Undo it: the store works again."""
        ...


class _Redis:
    """A redis-server of its own per run."""

    store = "redis"

    def __init__(self) -> None:
        self.server: RedisServer | None = None

    @contextlib.contextmanager
    def open(self) -> Iterator[dict[str, str]]:
        with RedisServer() as server:
            self.server = server
            yield {"BRAVE_SEARCH_STATE": server.url}

    @property
    def running(self) -> RedisServer:
        assert self.server is not None
        return self.server


class RedisKilled(_Redis):
    name, how = "killed", "kill -9, started again empty (no persistence) a second later"

    def strike(self, pids: Sequence[int]) -> None:
        self.running.kill()

    def lift(self, pids: Sequence[int]) -> None:
        self.running.start()


class RedisPaused(_Redis):
    name, how = "paused", "kill -STOP, then kill -CONT"

    def strike(self, pids: Sequence[int]) -> None:
        self.running.pause()

    def lift(self, pids: Sequence[int]) -> None:
        self.running.resume()


class RedisRestarted(_Redis):
    name, how = "restarted", "SIGTERM (a clean shutdown), started again empty"

    def strike(self, pids: Sequence[int]) -> None:
        self.running.stop()

    def lift(self, pids: Sequence[int]) -> None:
        self.running.start()


class RedisFull(_Redis):
    name, how = "full", "CONFIG SET maxmemory 1 with noeviction: every write answers OOM; then maxmemory 0"

    def strike(self, pids: Sequence[int]) -> None:
        self.running.config("maxmemory-policy", "noeviction")
        self.running.config("maxmemory", "1")

    def lift(self, pids: Sequence[int]) -> None:
        self.running.config("maxmemory", "0")


class _Sqlite:
    """The default SQLite files of a user of its own (state and cache directories under a fresh home)."""

    store = "sqlite"

    def __init__(self) -> None:
        self.home: Path | None = None

    @contextlib.contextmanager
    def open(self) -> Iterator[dict[str, str]]:
        with tempfile.TemporaryDirectory(prefix="store-fault-") as home:
            self.home = Path(home)
            yield user_dirs(self.home)
            self._undo()

    def _undo(self) -> None:
        """Whatever the fault left that would stop the directory from being removed."""

    @property
    def state_file(self) -> Path:
        assert self.home is not None
        with as_user(self.home):
            return default_state_path()


class SqliteLocked(_Sqlite):
    name, how = "locked", "another process holds a write transaction (BEGIN IMMEDIATE) until released"

    def __init__(self) -> None:
        super().__init__()
        self._holder: subprocess.Popen[str] | None = None

    def strike(self, pids: Sequence[int]) -> None:
        code = (
            "import sqlite3, sys\n"
            f"c = sqlite3.connect({str(self.state_file)!r}, isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE'); c.execute('DELETE FROM records WHERE 0')\n"
            "print('held', flush=True); sys.stdin.read()\n"
        )
        command = [sys.executable, "-c", code]
        self._holder = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._holder.stdout is not None
        if self._holder.stdout.readline().strip() != "held":
            raise RuntimeError("the lock holder did not take the lock")

    def lift(self, pids: Sequence[int]) -> None:
        self._undo()

    def _undo(self) -> None:
        holder, self._holder = self._holder, None
        if holder is not None:
            assert holder.stdin is not None and holder.stdout is not None
            holder.stdin.close()  # EOF: the holder exits, ending its transaction
            holder.wait(timeout=10)
            holder.stdout.close()


class SqliteCorrupt(_Sqlite):
    name, how = "corrupt", "garbage written over the state file (its WAL gone), then another process opens it"

    moved = False  # whether the opening moved the file aside

    def strike(self, pids: Sequence[int]) -> None:
        self.state_file.write_bytes(GARBAGE)
        for suffix in ("-wal", "-shm"):  # else a live WAL still holds every page and the file reads as sound
            Path(f"{self.state_file}{suffix}").unlink(missing_ok=True)
        connect(self.state_file, tables=STATE_TABLES).close()  # as any new session of the user would
        self.moved = self.state_file.with_name(self.state_file.name + ".corrupt").exists()

    def lift(self, pids: Sequence[int]) -> None:
        """Nothing: the opening moved the file aside and made it afresh."""


class SqliteReadOnly(_Sqlite):
    name, how = "read-only", "the state file and its WAL made immutable (chattr +i), then writable again"

    def __init__(self) -> None:
        super().__init__()
        self._made: list[Path] = []

    def _files(self) -> list[Path]:
        return [self.state_file, Path(f"{self.state_file}-wal")]

    def strike(self, pids: Sequence[int]) -> None:
        for path in self._files():
            subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)
            self._made.append(path)

    def lift(self, pids: Sequence[int]) -> None:
        self._undo()

    def _undo(self) -> None:
        made, self._made = self._made, []
        for path in made:
            subprocess.run(["chattr", "-i", str(path)], check=True, capture_output=True)


def unavailable(fault: type[Fault]) -> str | None:
    """Why ``fault`` cannot be done here (None: it can)."""
    return can_make_read_only() if fault is SqliteReadOnly else None


def can_make_read_only() -> str | None:
    """Why the read-only fault cannot be done here (None: it can): a file already open stays writable to its
    process whatever its mode, so the immutable attribute is needed (root with CAP_LINUX_IMMUTABLE, on a file
    system that has it)."""
    if os.geteuid() != 0:
        return "only root can make a file that is already open read-only (chattr +i)"
    with tempfile.NamedTemporaryFile(prefix="immutable-") as probe:
        made = subprocess.run(["chattr", "+i", probe.name], capture_output=True, text=True, check=False)
        if made.returncode != 0:
            return f"chattr +i is refused here ({made.stderr.strip()})"
        subprocess.run(["chattr", "-i", probe.name], check=True)
    return None


class SqliteDiskFull(_Sqlite):
    name, how = "disk full", "RLIMIT_FSIZE of the replicas set to 1 byte (prlimit; Python ignores SIGXFSZ), then lifted"

    def strike(self, pids: Sequence[int]) -> None:
        for pid in pids:
            _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (1, hard))  # every write to a file fails: EFBIG

    def lift(self, pids: Sequence[int]) -> None:
        for pid in pids:
            _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))


FAULTS: tuple[type[Fault], ...] = (
    RedisKilled,
    RedisPaused,
    RedisRestarted,
    RedisFull,
    SqliteLocked,
    SqliteCorrupt,
    SqliteReadOnly,
    SqliteDiskFull,
)
