"""One HTTP exchange's transport failures as the typed errors an agent can act on, for every upstream client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx2

from brave_search_mcp.models import errors
from brave_search_mcp.render.text import seconds_text


@contextmanager
def typed_transport_errors(upstream: str, timeout: float, safe: Callable[[str, int], str]) -> Iterator[None]:
    """Translate what httpx2 and anyio raise into TIMEOUT / NETWORK_ERROR / PARSE_ERROR (retryable where it helps).

    Wrap ``anyio.fail_after(timeout)`` inside this block, so its ``TimeoutError`` is translated too.
    """
    try:
        yield
    except (TimeoutError, httpx2.TimeoutException):
        raise timeout_error(upstream, timeout) from None
    except httpx2.DecodingError as exc:
        raise errors.ParseError(f"{upstream}'s answer could not be decompressed ({safe(str(exc), 120)}).") from None
    except (httpx2.UnsupportedProtocol, httpx2.LocalProtocolError, httpx2.StreamError) as exc:
        raise network_error(upstream, exc, safe(str(exc), 160), retryable=False) from None
    except httpx2.HTTPError as exc:
        raise network_error(upstream, exc, safe(str(exc), 160), retryable=True) from None


def timeout_error(upstream: str, seconds: float) -> errors.UpstreamTimeout:
    """An attempt that got no complete answer in time."""
    return errors.UpstreamTimeout(
        f"{upstream} did not answer within {seconds_text(seconds)}.", details={"timeout_seconds": round(seconds, 3)}
    )


def network_error(upstream: str, exc: Exception, reason: str, *, retryable: bool) -> errors.NetworkError:
    """A connection-level failure, named by its exception type; ``reason`` is already made safe to show."""
    text = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
    return errors.NetworkError(
        f"Could not reach {upstream} ({text}).", retryable=retryable, details={"reason": type(exc).__name__}
    )
