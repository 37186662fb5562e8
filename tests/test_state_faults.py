"""Issue 36 item 7: the store fault suite on real processes (testkit.faults): stdio replicas sharing a real
redis-server or the default SQLite files, searches in flight while the store is killed, paused, stopped or full,
locked, corrupt, read-only or on a full disk. No search fails, no billed request goes uncounted, status names the
fault while it lasts, and every replica uses the store again within seconds of its return. docs/reliability.md shows
the same runs' figures (``python -m testkit.faults``)."""

from __future__ import annotations

import pytest

from testkit.faults import RETRY_SECONDS, run_fault
from testkit.programs import require
from testkit.store_faults import FAULTS, Fault, RedisKilled, SqliteCorrupt, unavailable

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("make", FAULTS, ids=lambda f: f"{f.store}-{f.name}".replace(" ", "-"))
async def test_a_store_fault_fails_no_search_and_loses_no_count(make: type[Fault]) -> None:
    if make.store == "redis":
        require("redis-server", ".ci/run installs it: apt-get install -y redis-server")
    if (why := unavailable(make)) is not None:
        pytest.skip(why)
    fault = make()
    big = make is RedisKilled  # the done-when: three replicas, twenty searches each in flight
    out = await run_fault(fault, replicas=3 if big else 2, calls=20 if big else 15)
    assert out.answered == out.calls and not out.failed, (out.failed, out.warnings[-5:])
    assert out.lost == 0, (out.billed, out.counted)
    assert out.over == 0, (out.billed, out.counted)  # a booking a paused server ran late is settled, not added
    assert out.status != "ok" and "shared state unavailable" in out.reason, (out.status, out.reason)
    if isinstance(fault, SqliteCorrupt):
        assert fault.moved and any("was replaced by a new file" in line for line in out.warnings)
    outages = [line for line in out.warnings if "unavailable (" in line]
    assert 1 <= len(outages) <= 2 * out.replicas  # one line per replica, state and cache, not one per call
    assert not [line for line in out.warnings if "Traceback" in line or "Logging error" in line]
    assert out.recovery_seconds < RETRY_SECONDS + 3.0
