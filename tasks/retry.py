"""Which errors are worth retrying and how persistently: shared by downloads, model calls, search backends and
Prefect retry conditions."""

from __future__ import annotations

import httpx
from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import TransientError


class RetryPolicy(BaseModel):
    """How persistently to retry a flaky endpoint (a mirror, a model server).

    A pydantic model so that flows can expose it as a typed, hashable parameter.
    """

    model_config = ConfigDict(frozen=True)

    attempts: int = Field(5, ge=1, description="Total tries, the first one included.")
    initial_delay: float = Field(1.0, ge=0, description="Seconds before the first retry; doubles each time.")
    max_delay: float = Field(60.0, ge=0, description="Cap on any single wait, Retry-After included.")
    jitter: float = Field(1.0, ge=0, description="Random extra seconds (0..jitter), so parallel workers do not retry in step.")


TRANSIENT_HTTP_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def is_transient(exc: BaseException) -> bool:
    """Timeouts, dropped connections, HTTP 408/429/5xx: a later attempt may succeed.

    Everything else — bad input, 404, auth, a checksum mismatch — fails at
    once so the operator sees the real cause instead of a retry storm.
    """
    if isinstance(exc, TransientError):
        return True
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code in TRANSIENT_HTTP_STATUS
    return isinstance(exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, ConnectionError, TimeoutError))
