"""Offline stand-ins for Brave Search: one fake, exposed as an httpx2 MockTransport and as a real local server.

Layout: ``brave.py`` (``FakeBrave``: the plumbing wired to the router, and the names callers import),
``router.py`` (path → route and the checks every request passes), ``routes/`` (one module per endpoint
family), the plumbing (``auth``, ``plan``, ``faults``, ``request_log``, ``exchange``, ``errors``, ``params``,
``vocab``), the two faces (``mock``, ``http_server``) and ``adapters`` (a small JsonFetch/StreamPost over any
transport).
"""

from .brave import *  # noqa: F403 (the names listed in brave.__all__)
from .brave import __all__ as _names
from .http_server import FakeBraveServer

__all__ = [*_names, "FakeBraveServer"]
