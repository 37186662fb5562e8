"""Offline stand-ins for Brave Search: one fake, exposed as an httpx2 MockTransport and as a real local server.

Layout: ``brave.py`` (``FakeBrave``: the plumbing wired to the router), ``router.py`` (path → route and the
checks every request passes), ``routes/`` (one module per endpoint family), the plumbing (``auth``, ``plan``,
``faults``, ``request_log``, ``exchange``, ``errors``, ``params``, ``vocab``), the two faces (``mock``,
``http_server``) and ``adapters`` (a small JsonFetch/StreamPost over any transport).
"""

from .brave import (
    CHAT_PATH,
    DESCRIPTIONS_PATH,
    FAULTS,
    FIXTURES_DIR,
    IMAGES_PATH,
    LLM_PATH,
    NEWS_PATH,
    PLACE_PATH,
    POIS_PATH,
    SUMMARIZER_PATH,
    VALID_KEY,
    VIDEOS_PATH,
    WEB_PATH,
    FakeBrave,
    RecordedRequest,
    Reply,
)
from .http_server import FakeBraveServer

__all__ = [
    "CHAT_PATH",
    "DESCRIPTIONS_PATH",
    "FAULTS",
    "FIXTURES_DIR",
    "IMAGES_PATH",
    "LLM_PATH",
    "NEWS_PATH",
    "PLACE_PATH",
    "POIS_PATH",
    "SUMMARIZER_PATH",
    "VALID_KEY",
    "VIDEOS_PATH",
    "WEB_PATH",
    "FakeBrave",
    "FakeBraveServer",
    "RecordedRequest",
    "Reply",
]
