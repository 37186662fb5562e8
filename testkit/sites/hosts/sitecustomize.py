"""Test-only DNS for a real server subprocess: names in TESTKIT_FAKE_HOSTS resolve to the addresses given there.

Put this folder on the subprocess's PYTHONPATH with ``TESTKIT_FAKE_HOSTS="intranet.example=10.1.2.3"``: the
server's own code then resolves that name through ``socket.getaddrinfo`` as it would a real DNS answer, so a
test can prove end to end that a name resolving to a private address is refused (nothing is connected).
"""

from __future__ import annotations

import os
import socket
from typing import Any

_real_getaddrinfo = socket.getaddrinfo


def _fake_hosts() -> dict[str, str]:
    pairs = (item.partition("=") for item in os.environ.get("TESTKIT_FAKE_HOSTS", "").split(",") if item)
    return {name.strip().lower(): address.strip() for name, _, address in pairs}


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host  # anyio passes IDNA bytes
    address = _fake_hosts().get(name.lower()) if isinstance(name, str) else None
    return _real_getaddrinfo(address or host, port, *args, **kwargs)


socket.getaddrinfo = _getaddrinfo
