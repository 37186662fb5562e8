"""Programs tests run for real (redis-server, tinyproxy, shellcheck, the client CLIs): skipped where one is not
installed, but where CI installs them (``CI`` set: ``.ci/run`` exports ``CI=true``) a missing one fails the tests: a CI
that cannot install a program must go red, not quietly test less.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def under_ci() -> bool:
    """Whether this run is CI's, which promises every program (``CI`` set, as CI systems and ``.ci/run`` do)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skip the calling test (or module, at import) with ``reason``; under CI fail instead."""
    if under_ci():
        pytest.fail(f"CI must run these tests, but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require(program: str, install: str) -> str:
    """The path of ``program``; else skip, or fail under CI (``install``: how CI gets it)."""
    found = shutil.which(program)
    if found is None:
        unavailable(f"{program} is not installed ({install})")
    return found
