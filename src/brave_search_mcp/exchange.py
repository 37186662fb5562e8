"""One HTTP exchange's transport failures as the typed errors an agent can act on, for every upstream client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx2

from . import errors
from .wire import network_error, timeout_error


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
