"""Errors that name what went wrong and where, so an operator can act on them.

Every error raised for bad input carries the file (or URL / item) and, when it
is known, the position where reading broke. Stages turn these into rows with a
status instead of losing the work done before the fault.
"""

from __future__ import annotations


class BabelbenchError(Exception):
    """Base class: every error the project raises on purpose."""


class InputFormatError(BabelbenchError, ValueError):
    """A file is corrupt, truncated or not in the expected format.

    ``source`` names the file, ``position`` says where it broke (a byte offset,
    a line number, or both, as the parser knows them).
    """

    def __init__(self, source: str, position: str | None, reason: str) -> None:
        self.source = source
        self.position = position
        self.reason = reason
        where = f"{source} at {position}" if position else source
        super().__init__(f"{where}: {reason}")


class TruncatedInputError(InputFormatError):
    """The input ends before a complete record (a killed download looks like this).

    Records read before ``position`` are complete and may be kept.
    """

    def __init__(self, source: str, position: str | None, reason: str, last_item: str | None = None) -> None:
        self.last_item = last_item
        super().__init__(source, position, reason)


class DownloadError(BabelbenchError):
    """A download failed; the message says whether retrying can help."""


class PermanentDownloadError(DownloadError):
    """Retrying will not help (404, 403, bad request): fix the URL or the credentials."""


class TransientError(BabelbenchError):
    """A failure a later attempt may not repeat (overload, a dropped connection): what retry logic retries."""


class TransientDownloadError(DownloadError, TransientError):
    """Timeouts, connection resets, HTTP 429 and 5xx: worth retrying with backoff."""


class ChecksumMismatchError(DownloadError):
    """The downloaded bytes do not match the published checksum; the file is not registered."""


class ConfigError(BabelbenchError, ValueError):
    """A configuration or command-line value is invalid; the message says which and why."""
