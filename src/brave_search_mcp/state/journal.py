"""What a process still owed the state file when it ended, kept in small owner-only files beside it until a process
reaches the file again.

A CLI search made while the state file was locked reached Brave, but the process exited before the file was back:
its count was lost and the spending cap with it. Now a process that ends owing requests (``owed``) writes its
batches, tokens included, to a journal file of its own (``<state file>.owed-<id>.json``, mode 0600, written
whole then renamed into place, so no reader sees half of one). Whichever process next reaches the store adopts every
journal file, sends the batches like its own (the store adds each token once: two processes racing to repay add it
once) and deletes the files. Meanwhile a process counting on memory starts from the journals' requests, so the cap
holds across the CLI, the skill and a server while the file stays locked.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brave_search_mcp.ratelimit.plan import MAX_MONTH_REQUESTS
from brave_search_mcp.state.owed import Batch

logger = logging.getLogger(__name__)

MAX_JOURNAL_FILES = 1000  # read at most this many at a time (a file each per process that ended owing)
MAX_JOURNAL_BYTES = 64 * 1024  # a bigger file was not written by this project
MAX_BATCHES = 256  # per file


@dataclass(frozen=True)
class Owed:
    """One journal batch: the counter it belongs to and the batch itself."""

    counter: str
    batch: Batch


def _batch(item: Any) -> Owed | None:
    """A journal entry as a batch, or None when it is not one this project writes."""
    if not isinstance(item, dict):
        return None
    counter, token, epoch = item.get("counter"), item.get("token"), item.get("epoch")
    delta, base, expires = item.get("delta"), item.get("base"), item.get("expires")
    if not (isinstance(counter, str) and isinstance(token, str) and 0 < len(token) <= 64 and len(counter) <= 512):
        return None
    if not (epoch is None or isinstance(epoch, str)) or isinstance(delta, bool) or isinstance(base, bool):
        return None
    if not (isinstance(delta, int) and abs(delta) <= MAX_MONTH_REQUESTS):
        return None
    if not (isinstance(base, int) and 0 <= base <= MAX_MONTH_REQUESTS):
        return None
    if not (isinstance(expires, int | float) and math.isfinite(expires)):
        return None
    return Owed(counter, Batch(token=token, delta=delta, base=base, epoch=epoch, expires=float(expires)))


class Journal:
    """The journal files beside one state file."""

    def __init__(self, state_file: Path) -> None:
        self._dir = state_file.parent
        self._prefix = f"{state_file.name}.owed-"

    def files(self) -> list[Path]:
        """The journal files there now (none when the directory cannot be read)."""
        try:
            names = sorted(n for n in os.listdir(self._dir) if n.startswith(self._prefix) and n.endswith(".json"))
        except OSError:
            return []
        return [self._dir / name for name in names[:MAX_JOURNAL_FILES]]

    def read(self, paths: list[Path]) -> list[Owed]:
        """Every batch those files hold; a damaged file is skipped with a warning (and deleted once adopted)."""
        found: list[Owed] = []
        for path in paths:
            try:
                with path.open("rb") as f:
                    raw = f.read(MAX_JOURNAL_BYTES + 1)
                items = json.loads(raw) if len(raw) <= MAX_JOURNAL_BYTES else None
            except FileNotFoundError:
                continue  # another process adopted it meanwhile
            except (OSError, ValueError, RecursionError) as exc:
                logger.warning("state: journal file %s unreadable (%s); skipped", path, type(exc).__name__)
                continue
            batches = [_batch(item) for item in items[:MAX_BATCHES]] if isinstance(items, list) else [None]
            if None in batches:
                logger.warning("state: journal file %s holds entries this version did not write; skipped", path)
                continue
            found.extend(b for b in batches if b is not None)
        return found

    def unseen(self, seen: set[str], wanted: Callable[[str], bool]) -> list[Owed]:
        """The batches of ``wanted`` counters whose tokens are not in ``seen`` (added to it now)."""
        found = [o for o in self.read(self.files()) if o.batch.token not in seen and wanted(o.counter)]
        seen.update(o.batch.token for o in found)
        return found

    def write(self, owed: list[Owed]) -> Path | None:
        """A new journal file holding ``owed`` (mode 0600, written whole then renamed into place); None when it
        cannot be written (logged: those requests are then missing from the month's count)."""
        items = [
            {
                "counter": o.counter,
                "token": o.batch.token,
                "delta": o.batch.delta,
                "base": o.batch.base,
                "epoch": o.batch.epoch,
                "expires": o.batch.expires,
            }
            for o in owed[:MAX_BATCHES]
        ]
        name = f"{self._prefix}{uuid.uuid4().hex}"
        temporary, path = self._dir / f".{name}.tmp", self._dir / f"{name}.json"
        try:
            self._dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(items, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            logger.warning("state: the requests owed to %s could not be kept (%s)", self._dir, exc)
            return None
        return path

    @staticmethod
    def remove(paths: list[Path]) -> None:
        """Delete journal files whose batches reached the store (or were written anew)."""
        for path in paths:
            with contextlib.suppress(OSError):
                path.unlink()
