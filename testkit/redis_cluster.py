"""A real Redis Cluster of three masters on 127.0.0.1 for tests: three ``redis-server --cluster-enabled yes``
processes joined by ``redis-cli --cluster create`` (no replicas), every wait bounded."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from types import TracebackType

from testkit.redis_server import RedisServer, command, redis_server_binary
from testkit.tracked_server import free_port

MASTERS = 3
READY_TIMEOUT_SECONDS = 20.0


def redis_cluster_unavailable() -> str | None:
    """Why a cluster cannot be made here (a program missing), or None."""
    if redis_server_binary() is None:
        return "redis-server is not installed (apt-get install -y redis-server)"
    if shutil.which("redis-cli") is None:
        return "redis-cli is not installed (apt-get install -y redis-tools)"
    return None


class RedisClusterServers:
    """Three cluster-enabled redis-servers, each master of a third of the hash slots, without persistence."""

    def __init__(self) -> None:
        self.nodes: list[RedisServer] = []

    @property
    def url(self) -> str:
        """``redis+cluster://`` and one node: the client learns the others from it."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def start(self) -> RedisClusterServers:
        """Start the nodes, join them, and wait until every node says the cluster is ok (bounded)."""
        try:
            for _ in range(MASTERS):
                bus = str(free_port())  # the default, port + 10000, may lie past 65535
                node = RedisServer(
                    extra=("--cluster-enabled", "yes", "--cluster-port", bus, "--cluster-node-timeout", "2000")
                )
                self.nodes.append(node.start())
            addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
            created = subprocess.run(
                ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True,
                text=True,
                timeout=READY_TIMEOUT_SECONDS,
                check=False,
            )
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout[-300:]}{created.stderr[-300:]}")
            deadline = time.monotonic() + READY_TIMEOUT_SECONDS
            while not all(_cluster_ok(node.port) for node in self.nodes):
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster did not become ok in time")
                time.sleep(0.05)
        except BaseException:
            self.close()
            raise
        return self

    def flush(self) -> None:
        """Empty every node (between tests)."""
        for node in self.nodes:
            command(node.port, "FLUSHALL", timeout=2.0)

    def close(self) -> None:
        """Stop every node and remove their directories."""
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.close()
        self.nodes = []

    def __enter__(self) -> RedisClusterServers:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _cluster_ok(port: int) -> bool:
    """Whether the node on ``port`` says the cluster is ok (every slot served)."""
    import redis

    with contextlib.suppress(redis.RedisError), redis.Redis(port=port, socket_timeout=1.0) as r:
        return bool(r.cluster("INFO").get("cluster_state") == "ok")
    return False
