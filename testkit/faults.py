"""The store fault suite: stdio replicas of the server on one shared store, searches in flight while the store fails.

Each run starts the fake Brave over HTTP (a 50/s plan, 0.1 s per answer), the store, and ``replicas`` real
``python -m brave_search_mcp`` processes on it (``BRAVE_SEARCH_STATE_RETRY_SECONDS=0.5``). After one search each
(the first learns the plan), every replica gets ``calls`` searches at once in one pipe write; once a quarter of them
reached Brave the fault strikes (``store_faults``), and every replica gets half as many again while it lasts. Then
the status tool is asked what it says, the fault is lifted, and each replica's status is polled until its state is
shared again. Figures: searches answered and failed, requests Brave billed (its 200s) against the month's count in
the store once every replica is back (lost: billed but not counted), and the seconds from the lift until every
replica used the store again.

``python -m testkit.faults`` runs every fault and prints the table; ``--write docs/reliability.md`` replaces the table
there. tests/test_state_faults.py runs each fault and asserts nothing failed and nothing was lost.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio

from testkit.brave.brave import FakeBrave
from testkit.brave.http_server import FakeBraveServer
from testkit.stdio import RpcSession, server_env, stdio_server
from testkit.store_faults import FAULTS, Fault, unavailable

PLAN_PER_SECOND = 50
LATENCY_SECONDS = 0.1
RETRY_SECONDS = 0.5
HOLD_SECONDS = 1.5  # how long the fault lasts at least (a locked file: more than the 1 s a call may wait on it)
RECOVERY_LIMIT_SECONDS = 20.0
CALL_TIMEOUT_SECONDS = 60.0
TABLE_START, TABLE_END = "<!-- faults:start -->", "<!-- faults:end -->"


@dataclass
class Outcome:
    """What one fault run did."""

    fault: str
    store: str
    how: str
    replicas: int
    calls: int = 0
    answered: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    billed: int = 0  # requests Brave answered with success (what it bills)
    counted: int = 0  # the month's count in the store once every replica was back
    status: str = ""  # what the status tool said while the store failed
    reason: str = ""
    recovery_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # what the replicas logged (WARNING and above)

    @property
    def lost(self) -> int:
        """Requests billed that the spending cap did not count."""
        return max(0, self.billed - self.counted)

    @property
    def over(self) -> int:
        """Requests counted twice (a booking a paused server ran after its caller gave up on it): errs safe."""
        return max(0, self.counted - self.billed)


def _search(i: int, tag: str) -> bytes:
    import json

    call = {"name": "brave_web_search", "arguments": {"query": f"{tag} {i}"}}
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call}).encode() + b"\n"


async def _burst(rpc: RpcSession, first: int, n: int, tag: str) -> list[int]:
    ids = list(range(first, first + n))
    await rpc.send_raw(b"".join(_search(i, tag) for i in ids))
    return ids


async def _replies(rpc: RpcSession, ids: Sequence[int], out: Outcome) -> None:
    for i in ids:
        result = (await rpc.response(i, timeout=CALL_TIMEOUT_SECONDS))["result"]
        out.calls += 1
        if result["isError"]:
            out.failed[result["structuredContent"]["error"]["code"]] += 1
        else:
            out.answered += 1


async def _status(rpc: RpcSession) -> dict[str, Any]:
    result, _ = await rpc.call_tool("brave_web_search_status", {})
    report: dict[str, Any] = result["structuredContent"]
    return report


async def _until(fake: FakeBrave, hits: int) -> None:
    """Until the fake saw ``hits`` requests (polled: it answers in threads of its own), bounded."""
    for _ in range(int(CALL_TIMEOUT_SECONDS / 0.01)):
        if fake.hits() >= hits:
            return
        await anyio.sleep(0.01)
    raise TimeoutError(f"the fake saw {fake.hits()} requests, not {hits}")


async def run_fault(fault: Fault, *, replicas: int = 2, calls: int = 15) -> Outcome:
    """One run of ``fault`` (see the module)."""
    out = Outcome(fault.name, fault.store, fault.how, replicas)
    fake = FakeBrave(rate_per_second=PLAN_PER_SECOND, monthly_limit=0)
    with (
        FakeBraveServer(fake, latency=LATENCY_SECONDS) as upstream,
        fault.open() as store_env,
        _Logs() as logs,
    ):
        env = server_env(upstream.base_url)
        env.update(BRAVE_SEARCH_STATE_RETRY_SECONDS=str(RETRY_SECONDS), BRAVE_SEARCH_LOG_LEVEL="WARNING", **store_env)
        if "BRAVE_SEARCH_STATE" not in store_env:
            del env["BRAVE_SEARCH_STATE"]  # the default: SQLite in the user's directories
        async with AsyncExitStack() as stack:
            rpcs = [await stack.enter_async_context(stdio_server(env, stderr=logs.pipe)) for _ in range(replicas)]
            logs.spawned()
            pids = [rpc.pid for rpc in rpcs]
            for n, rpc in enumerate(rpcs):  # the first learns the plan (its probe), the others start from it
                await _replies(rpc, await _burst(rpc, 1 + n * 1000, 1, "warm up"), out)
            before = fake.hits()
            bursts = [await _burst(rpc, 10_000, calls, f"replica {n}") for n, rpc in enumerate(rpcs)]
            await _until(fake, before + replicas * calls // 4)
            fault.strike(pids)
            struck = time.monotonic()
            bursts += [await _burst(rpc, 20_000, calls // 2, f"during {n}") for n, rpc in enumerate(rpcs)]
            report = await _status(rpcs[0])  # its own store operations meet the fault too
            out.status, out.reason = report["status"], "; ".join(report["reasons"])
            async with anyio.create_task_group() as tg:
                for rpc, first, during in zip(rpcs, bursts[:replicas], bursts[replicas:], strict=True):
                    tg.start_soon(_replies, rpc, [*first, *during], out)  # one reader per replica's stdout
            await anyio.sleep(max(0.0, HOLD_SECONDS - (time.monotonic() - struck)))
            fault.lift(pids)
            out.recovery_seconds = await _recovered(rpcs, out)
            for rpc in rpcs:  # each one's next operation adds what it counted meanwhile
                report = await _status(rpc)
            out.counted = report["throttle"]["month"]["requests"]
        out.billed = fake.hits("/web/search", status=200)
    out.warnings = logs.lines()
    return out


class _Logs:
    """The replicas' stderr, through a pipe as a host gives it (a file would share the disk-full fault), drained by
    a thread of its own."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.pipe: IO[bytes] = os.fdopen(write, "wb")
        self._read = os.fdopen(read, "rb")
        self._data = bytearray()
        self._thread = threading.Thread(target=self._drain, name="replica-logs", daemon=True)

    def _drain(self) -> None:
        for chunk in iter(lambda: self._read.read1(65536), b""):
            self._data += chunk

    def __enter__(self) -> _Logs:
        self._thread.start()
        return self

    def spawned(self) -> None:
        """The replicas hold the write end now: this process's copy goes, so the pipe ends when they exit."""
        self.pipe.close()

    def __exit__(self, *exc: object) -> None:
        if not self.pipe.closed:
            self.pipe.close()
        self._thread.join(timeout=10)
        self._read.close()

    def lines(self) -> list[str]:
        """Every line the replicas wrote to stderr."""
        return [line for line in self._data.decode(errors="replace").splitlines() if line.strip()]


async def _recovered(rpcs: Sequence[RpcSession], out: Outcome) -> float:
    """Seconds until every replica's status says its state is shared again: each is asked a search (which tries the
    state and the cache when their retry time has come) and then its status, every 0.1 s."""
    started = time.monotonic()
    waiting = list(rpcs)
    with anyio.fail_after(RECOVERY_LIMIT_SECONDS):
        for round_ in range(int(RECOVERY_LIMIT_SECONDS / 0.1)):
            for n, rpc in enumerate(waiting):
                await _replies(rpc, await _burst(rpc, 30_000 + 100 * round_ + n, 1, "recovering"), out)
            waiting = [rpc for rpc in waiting if (await _status(rpc))["state"].get("degraded")]
            if not waiting:
                break
            await anyio.sleep(0.1)
    return round(time.monotonic() - started, 2)


def render(outcomes: Sequence[Outcome]) -> str:
    """The markdown table docs/reliability.md shows."""
    rows = [
        "| store | fault | how | replicas | searches | answered | failed | Brave billed | counted | lost | "
        "status meanwhile | back in (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        failed = ", ".join(f"{n} {code}" for code, n in sorted(o.failed.items())) or "0"
        counted = f"{o.counted}" + (f" (+{o.over})" if o.over else "")
        status = o.status + (f": {_cause(o.reason)}" if "unavailable (" in o.reason else "")
        rows.append(
            f"| {o.store} | {o.fault} | {o.how} | {o.replicas} | {o.calls} | {o.answered} | {failed} | "
            f"{o.billed} | {counted} | {o.lost} | {status} | {o.recovery_seconds:.2f} |"
        )
    return "\n".join(rows)


def _cause(reason: str) -> str:
    """The store's failure in a status reason, without paths and ports (they differ on every run)."""
    found = re.search(r"unavailable \((.*?)\); using", reason)
    text = found.group(1) if found else reason
    text = re.sub(r"(/[^/\s:]+)+/([^/\s:]+)", r"\2", text)  # a path: its file name
    text = re.sub(r"127\.0\.0\.1:\d+", "redis", text)
    return text if len(text) <= 60 else text[:59] + "…"


def write(doc: Path, table: str) -> None:
    """Replace the table between the markers in ``doc``."""
    text = doc.read_text()
    head, _, rest = text.partition(TABLE_START)
    _, _, tail = rest.partition(TABLE_END)
    if not rest:
        raise SystemExit(f"{doc} has no {TABLE_START} … {TABLE_END} markers")
    doc.write_text(f"{head}{TABLE_START}\n{table}\n{TABLE_END}{tail}")


async def _all() -> list[Outcome]:
    outcomes = []
    for make in FAULTS:
        why = unavailable(make)
        if why is not None:
            print(f"{make.store} {make.name}: not done here ({why})", file=sys.stderr)
            continue
        fault = make()
        big = fault.store == "redis" and fault.name == "killed"  # the figure: 3 replicas x 20 in flight
        outcomes.append(await run_fault(fault, replicas=3 if big else 2, calls=20 if big else 15))
        print(f"{fault.store} {fault.name}: done", file=sys.stderr)
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """Run every fault; print the table (and write it into ``--write``'s document)."""
    parser = argparse.ArgumentParser(prog="python -m testkit.faults", description=__doc__.split("\n")[0])
    parser.add_argument("--write", type=Path, help="replace the table in this document (docs/reliability.md)")
    args = parser.parse_args(argv)
    table = render(anyio.run(_all))
    print(table)
    if args.write is not None:
        write(args.write, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
