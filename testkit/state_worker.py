"""A separate process that opens a state backend and acquires or fetches, so tests see real cross-process sharing.

Run as ``python -m testkit.state_worker --url URL --mode MODE ...``; prints one JSON line on stdout:
``{"starts": [...], "statuses": [...], "hits": [...], "waited": [...]}`` (wall-clock times).
Modes: ``acquire`` (N limiter acquires, each followed by a GET when --upstream is given), ``fetch``
(N cache get_or_fetch of one query, fetching from --upstream), ``hold`` (take the single-flight lease
of --query, print ``LEASED`` and hang until killed), ``open`` (open N fresh files, URL + ``.1`` … ``.N``, the
i-th at --start-at + (i - 1) × --every, and report which backend each became: ``{"backends": [...]}``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

from brave_search_mcp.config import parse_state_url
from brave_search_mcp.state.base import StateBackend
from brave_search_mcp.state.location import open_state
from testkit.brave.brave import VALID_KEY, WEB_PATH

REPO_ROOT = Path(__file__).resolve().parent.parent


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="state_worker")
    p.add_argument("--url", required=True)
    p.add_argument("--mode", choices=("acquire", "fetch", "hold", "open"), required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--burst", type=int, default=1)
    p.add_argument("--upstream", default=None, help="base URL of a FakeBraveServer")
    p.add_argument("--query", default="shared query")
    p.add_argument("--lease", type=float, default=30.0)
    p.add_argument("--start-at", type=float, default=0.0, help="wall time to begin at (a barrier across processes)")
    p.add_argument("--deadline", type=float, default=None, help="seconds from each call's start")
    p.add_argument("--every", type=float, default=0.25, help="open mode: seconds between two rounds")
    p.add_argument(
        "--cache-file",
        default=None,
        help="the default layout: the state in --url's file, the cache in this one (an older version's file beside "
        "it moved on the first opening)",
    )
    return p.parse_args(argv)


async def _open(args: argparse.Namespace, url: str, **options: Any) -> StateBackend:
    if args.cache_file is None:
        return await open_state(url, **options)
    state = parse_state_url(url).path
    return await open_state(None, default_path=state, cache_path=Path(args.cache_file), **options)


async def _open_rounds(args: argparse.Namespace) -> dict[str, Any]:
    """Open ``--count`` fresh files at the same moments as the other workers; which backend did each become?"""
    backends = []
    for i in range(1, args.count + 1):
        at = args.start_at + (i - 1) * args.every
        await anyio.sleep(max(0.0, at - time.time()))
        backend = await _open(args, f"{args.url}.{i}", cache_max_entries=10)
        backends.append(backend.health())
        await backend.aclose()
    return {"backends": backends}


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode == "open":
        return await _open_rounds(args)
    backend = await _open(args, args.url, cache_max_entries=100, lease_seconds=args.lease)
    out: dict[str, Any] = {"starts": [], "statuses": [], "hits": [], "waited": [], "errors": []}
    try:
        async with httpx2.AsyncClient(base_url=args.upstream or "http://127.0.0.1:9") as http:

            async def get() -> bytes:
                reply = await http.get(WEB_PATH, params={"q": args.query}, headers={"X-Subscription-Token": VALID_KEY})
                out["statuses"].append(reply.status_code)
                return reply.content

            async def hang() -> bytes:
                print("LEASED", flush=True)
                await anyio.sleep(60)
                return b""

            limiter = backend.limiter("brave", rate=args.rate, burst=args.burst)
            await anyio.sleep(max(0.0, args.start_at - time.time()))
            for _ in range(args.count):
                if args.mode == "acquire":
                    deadline = None if args.deadline is None else time.time() + args.deadline
                    try:
                        out["waited"].append((await limiter.acquire(deadline=deadline)).waited)
                    except Exception as exc:  # reported, not raised: the test judges it
                        out["errors"].append(type(exc).__name__)
                        continue
                    out["starts"].append(time.time())
                    if args.upstream:
                        await get()
                else:
                    fetch = hang if args.mode == "hold" else get
                    _value, hit = await backend.cache.get_or_fetch(args.query, fetch, 60.0)
                    out["hits"].append(hit)
                    out["starts"].append(time.time())
        out["health"] = backend.health()
    finally:
        await backend.aclose()
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the workload and print the JSON result."""
    result = anyio.run(_run, _parse(sys.argv[1:] if argv is None else argv))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def spawn(*args: str) -> subprocess.Popen[str]:
    """Start one worker process (stdout piped, stderr to a pipe as well) from the repository root."""
    return subprocess.Popen(
        [sys.executable, "-m", "testkit.state_worker", *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_workers(n: int, *args: str, timeout: float = 30.0, barrier: float = 2.0) -> list[dict[str, Any]]:
    """Run ``n`` workers that begin together ``barrier`` s from now; return their JSON results (raise on failure)."""
    start_at = f"{time.time() + barrier:.6f}"
    procs = [spawn(*args, "--start-at", start_at) for _ in range(n)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"worker failed ({proc.returncode}): {err[-2000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results
