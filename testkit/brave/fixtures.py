"""The fake's own Brave answers on disk (``fixtures/``), loaded fresh for each fake so no test sees another's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES_DIR = Path(__file__).with_name("fixtures")


def load(name: str) -> dict[str, Any]:
    """``fixtures/<name>.json`` decoded."""
    data: dict[str, Any] = json.loads((FIXTURES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return data
