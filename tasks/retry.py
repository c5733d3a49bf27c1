"""Which errors are worth retrying, shared by network code and Prefect retry conditions."""

from __future__ import annotations

import httpx

from tasks.errors import TransientDownloadError
from tasks.index.base import TransientSearchError

TRANSIENT_HTTP_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def is_transient(exc: BaseException) -> bool:
    """Timeouts, dropped connections, HTTP 408/429/5xx: a later attempt may succeed.

    Everything else — bad input, 404, auth, a checksum mismatch — fails at
    once so the operator sees the real cause instead of a retry storm.
    """
    if isinstance(exc, (TransientDownloadError, TransientSearchError)):
        return True
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code in TRANSIENT_HTTP_STATUS
    return isinstance(exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, ConnectionError, TimeoutError))
