"""What the figures were measured on: a timing without its machine cannot be compared with anything."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

PACKAGES: tuple[str, ...] = ("brave-search-mcp", "mcp", "httpx2", "pydantic", "anyio", "cachetools")


@dataclass(frozen=True)
class Machine:
    """The facts printed beside the results."""

    date: str
    cpu_model: str
    logical_cpus: int
    ram_bytes: int | None
    os: str
    python: str
    packages: dict[str, str]
    load_average: tuple[float, float, float] | None = None  # 1, 5 and 15 minutes, when the run started


def cpu_model(cpuinfo: str) -> str:
    """The first ``model name`` of /proc/cpuinfo (``Hardware``/``Processor`` on some ARM boards)."""
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        for line in cpuinfo.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return "unknown"


def mem_total_bytes(meminfo: str) -> int | None:
    """``MemTotal`` of /proc/meminfo in bytes."""
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if name.strip() == "MemTotal" and parts and parts[0].isdigit():
            return int(parts[0]) * 1024
    return None


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def describe_machine() -> Machine:
    """Read the CPU, memory, OS, Python and package versions of this machine now."""
    cpuinfo = _read("/proc/cpuinfo")
    versions: dict[str, str] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return Machine(
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        cpu_model=cpu_model(cpuinfo) if cpuinfo else platform.processor() or "unknown",
        logical_cpus=os.cpu_count() or 0,
        ram_bytes=mem_total_bytes(_read("/proc/meminfo")),
        os=platform.platform(),
        python=f"{platform.python_implementation()} {sys.version.split()[0]}",
        packages=versions,
        load_average=_load_average(),
    )


def _load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except OSError:
        return None
