"""Offline stand-in for SearXNG: one fake, exposed as an httpx2 MockTransport and as a real local server."""

from .fake import ENGINES, FakeSearxng, RecordedRequest, Reply
from .http_server import FakeSearxngServer
from .limiter import BotLimiter

__all__ = ["ENGINES", "BotLimiter", "FakeSearxng", "FakeSearxngServer", "RecordedRequest", "Reply"]
