"""Offline stand-ins for Brave Search: one fake, exposed as an httpx2 MockTransport and as a real local server."""

from .brave import VALID_KEY, FakeBrave, RecordedRequest, Reply
from .http_server import FakeBraveServer

__all__ = ["VALID_KEY", "FakeBrave", "FakeBraveServer", "RecordedRequest", "Reply"]
