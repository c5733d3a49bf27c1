"""Keeping API keys out of every message that is stored or logged.

A provider's error text is worth keeping — it says what to fix — but some
endpoints (proxies, gateways, debugging servers) echo the request back in it,
the ``Authorization`` header included, and that text ends up in
``llm_calls.error``, in items' ``reason`` columns and in the logs.  So every
:class:`~tasks.llm.types.LLMError` passes its message through :func:`redact`
when it is made: that is the one place every failure of a model call goes
through, whichever backend raised it and wherever it is later written.

Two things are masked: the key values this process has read from registry
entries' ``api_key_env`` variables or Prefect Secret blocks
(:func:`remember_secret`, called by :func:`tasks.llm.backends.api_key`, the
only reader of keys), and — in case a
key reached the endpoint some other way — common secret shapes:
``Bearer …``/``Basic …`` credentials, ``sk-…`` keys and ``api_key=…``-style
assignments.
"""

from __future__ import annotations

import re
import threading

MASK = "[redacted]"

_known: set[str] = set()
_known_lock = threading.Lock()
_SHAPES = re.compile(
    r"(?P<label>\b(?:bearer|basic)\s+|\b(?:api[_-]?key|access[_-]?token|secret)[\"']?\s*[:=]\s*[\"']?)"
    r"(?P<value>[\w.~+/=-]{8,})"
    r"|\bsk-[\w-]{16,}",
    re.IGNORECASE,
)


def remember_secret(value: str) -> None:
    """Mask ``value`` in every later :func:`redact` of this process."""
    if value:
        with _known_lock:
            _known.add(value)


def redact(text: str) -> str:
    """``text`` with every remembered key and every secret-shaped token replaced by ``[redacted]``."""
    with _known_lock:
        known = sorted(_known, key=len, reverse=True)  # a key containing another is masked whole
    for value in known:
        text = text.replace(value, MASK)
    return _SHAPES.sub(lambda match: (match.group("label") or "") + MASK, text)
