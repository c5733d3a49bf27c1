"""Download stage: fetch one dump file completely and verifiably.

Dump files are large and mirrors are flaky, so a download writes to
``<name>.part``, resumes from the bytes already on disk after a dropped
connection (``Range`` request), retries only what retrying can fix, and moves
the file into place only once its checksum matches.  A killed run therefore
leaves either no file or a complete, verified one — plus a part to resume.

The retry and error-classification rules here are also used by dump discovery
for the small files it reads (index pages, ``dumpstatus.json``, checksum lists),
so every network read of a mirror behaves the same way.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import httpx
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)
from tqdm import tqdm

from tasks.dumps.checksums import Digests, digest_file, mismatches, require_match
from tasks.errors import ChecksumMismatchError, DownloadError, PermanentDownloadError, TransientDownloadError
from tasks.retry import RetryPolicy

log = logging.getLogger(__name__)

# Wikimedia asks clients to identify themselves; anonymous library user agents get throttled.
USER_AGENT = f"babelbench (Wikipedia dump downloader) python-httpx/{httpx.__version__}"

_CHUNK = 1 << 20
_CONTENT_RANGE = re.compile(r"^bytes (?:(\d+)-\d+|\*)/(\d+|\*)$")
_TRANSIENT_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)
_PERMANENT_HINTS = {
    400: "the mirror rejected the request as malformed; check the URL",
    401: "the mirror wants credentials; use a public mirror or configure the client's authentication",
    403: "the mirror refuses access (blocked client, proxy or private path); check the base URL and proxy settings",
    404: "the dump date or file name does not exist on this mirror; check --date / base URL",
    410: "the dump was removed from this mirror (old dates expire); pick a newer --date",
}

T = TypeVar("T")


@dataclass(frozen=True)
class DownloadResult:
    """What was downloaded, with both digests so the warehouse can record them."""

    url: str
    path: Path
    size: int
    sha1: str
    md5: str
    resumed: bool
    attempts: int


class ResourceNotFoundError(PermanentDownloadError):
    """HTTP 404 or a missing local file.

    Separate from other permanent errors because dump discovery treats "not
    there" as "this date is not available" rather than as a failure.
    """


class RetryableStatusError(TransientDownloadError):
    """An HTTP status worth retrying (408, 429, 5xx), with the server's Retry-After hint."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


def status_error(url: str, response: httpx.Response) -> DownloadError | None:
    """Classify a non-success HTTP status; None for 2xx."""
    code = response.status_code
    if 200 <= code < 300:
        return None
    label = f"{url}: {code} {response.reason_phrase}"
    if code in (408, 429) or code >= 500:
        return RetryableStatusError(f"{label}: the mirror is busy or failing", _retry_after(response))
    hint = _PERMANENT_HINTS.get(code, "the mirror rejected the request; check the URL")
    error_class = ResourceNotFoundError if code == 404 else PermanentDownloadError
    return error_class(f"{label}: {hint}")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        log.debug("ignoring a Retry-After header that is not a number of seconds: %r", value)
        return None


def transport_error(url: str, exc: httpx.RequestError) -> DownloadError:
    """Classify an httpx failure below the HTTP status level (drops, timeouts, bad URLs)."""
    description = f"{url}: {type(exc).__name__}: {exc or 'no details'}"
    if isinstance(exc, _TRANSIENT_TRANSPORT):
        return TransientDownloadError(description)
    return PermanentDownloadError(f"{description}; check the URL's scheme and host")


@contextmanager
def _request_errors(url: str) -> Iterator[None]:
    try:
        yield
    except httpx.RequestError as exc:
        raise transport_error(url, exc) from exc


def run_with_retries(
    action: Callable[[], T],
    *,
    what: str,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, int]:
    """Call ``action`` until it succeeds, retrying TransientDownloadError only.

    Returns the result and the number of attempts made, so callers can report
    how flaky the mirror was.  ``what`` names the resource in logs and errors.
    """
    retrying = Retrying(
        stop=stop_after_attempt(policy.attempts),
        wait=_backoff(policy),
        retry=retry_if_exception_type(TransientDownloadError),
        before_sleep=lambda state: _log_retry(what, policy, state),
        sleep=sleep,
    )
    try:
        for attempt in retrying:
            with attempt:
                result = action()
    except RetryError as exhausted:
        cause = exhausted.last_attempt.exception()
        raise TransientDownloadError(f"{what}: gave up after {policy.attempts} attempts; last error: {cause}") from cause
    return result, attempt.retry_state.attempt_number


def _backoff(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    """Exponential backoff with jitter, unless the server said how long to wait."""
    exponential = wait_exponential_jitter(multiplier=policy.initial_delay, max=policy.max_delay, jitter=policy.jitter)

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, RetryableStatusError) and error.retry_after is not None:
            return min(error.retry_after, policy.max_delay)
        return exponential(state)

    return wait


def _log_retry(what: str, policy: RetryPolicy, state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    delay = state.next_action.sleep if state.next_action is not None else 0.0
    log.warning(
        "%s: attempt %d of %d failed (%s); retrying in %.2f s", what, state.attempt_number, policy.attempts, error, delay
    )


def local_path(url: str) -> Path | None:
    """The filesystem path behind a file:// URL or a plain path; None for http(s)."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        return None
    if parts.scheme == "file":
        return Path(url2pathname(parts.path))
    if parts.scheme == "":
        return Path(url)
    raise PermanentDownloadError(f"{url}: unsupported URL scheme {parts.scheme!r}; use http(s)://, file:// or a local path")


def _open_local(path: Path, url: str) -> BinaryIO:
    try:
        return path.open("rb")
    except FileNotFoundError as exc:
        raise ResourceNotFoundError(f"{url}: no such file; check the mirror directory and --date") from exc
    except OSError as exc:
        raise PermanentDownloadError(f"{url}: cannot read ({exc.strerror}); check the path and its permissions") from exc


@contextmanager
def http_client(client: httpx.Client | None) -> Iterator[httpx.Client]:
    """The caller's client (its pool, proxy, auth) or a short-lived one of our own."""
    if client is not None:
        yield client
        return
    with httpx.Client(follow_redirects=True, headers={"User-Agent": USER_AGENT}) as own:
        yield own


def fetch_bytes(
    url: str, *, client: httpx.Client | None = None, policy: RetryPolicy | None = None, timeout: float = 60.0
) -> bytes:
    """Read a small mirror file (index page, dumpstatus.json, checksum list) under the download rules."""
    path = local_path(url)
    if path is not None:
        with _open_local(path, url) as handle:
            return handle.read()
    with http_client(client) as http:

        def get() -> bytes:
            with _request_errors(url):
                response = http.get(url, timeout=timeout, follow_redirects=True)
            error = status_error(url, response)
            if error is not None:
                raise error
            return response.content

        content, _ = run_with_retries(get, what=url, policy=policy or RetryPolicy())
    return content


class _PartFile:
    """The bytes of a download so far and their running digests.

    Kept across attempts, so a retry after a dropped connection continues both
    the file and the hashes instead of rereading what is already on disk.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.digests, self.size = digest_file(path) if path.exists() else (Digests(), 0)
        self.resumed = False

    def restart(self) -> None:
        self.path.write_bytes(b"")
        self.digests, self.size = Digests(), 0
        self.resumed = False

    def append(self, chunks: Iterable[bytes], bar: tqdm) -> None:
        with self.path.open("ab") as out:
            for chunk in chunks:
                out.write(chunk)
                self.digests.update(chunk)
                self.size += len(chunk)
                bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())


def _content_range(response: httpx.Response) -> tuple[int | None, int | None]:
    """(first byte, full size) from a Content-Range header; None where absent or unknown."""
    match = _CONTENT_RANGE.match(response.headers.get("Content-Range", "").strip())
    if match is None:
        return None, None
    start, total = match.groups()
    return (int(start) if start else None), (int(total) if total != "*" else None)


def _http_attempt(url: str, part: _PartFile, http: httpx.Client, timeout: float, bar: tqdm) -> None:
    """One GET of the rest of the file; raises TransientDownloadError when it stops short."""
    offset = part.size
    headers = {"Accept-Encoding": "identity"}  # the stored bytes must be the published ones
    if offset:
        headers["Range"] = f"bytes={offset}-"
    with _request_errors(url), http.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as response:
        if offset and response.status_code == 416:
            _accept_unsatisfiable_range(url, part, response)
            return
        error = status_error(url, response)
        if error is not None:
            raise error
        total = _expected_size(url, part, response, offset)
        bar.reset(total=total)
        bar.update(part.size)
        part.append(response.iter_raw(), bar)  # unbuffered: a drop must not lose received bytes
    if total is not None and part.size < total:
        raise TransientDownloadError(f"{url}: connection closed after {part.size} of {total} bytes")


def _expected_size(url: str, part: _PartFile, response: httpx.Response, offset: int) -> int | None:
    """Full file size promised by the response, after aligning the part with what the server sends."""
    if response.status_code == 206:
        start, total = _content_range(response)
        if start != offset:
            part.restart()
            raise TransientDownloadError(f"{url}: asked for bytes from {offset}, the server sent a range from {start}; starting over")
        part.resumed = offset > 0
        log.info("%s: resuming at byte %d", url, offset)
        return total
    if offset:
        log.info("%s: the server ignored the Range request; downloading from the start", url)
        part.restart()
    length = response.headers.get("Content-Length", "")
    return int(length) if length.isdigit() else None


def _accept_unsatisfiable_range(url: str, part: _PartFile, response: httpx.Response) -> None:
    """A 416 after a Range request means the part may already be whole; the size and checksum decide."""
    _, total = _content_range(response)
    if total is not None and total != part.size:
        held = part.size
        part.restart()
        raise TransientDownloadError(f"{url}: the file has {total} bytes but {part.path} held {held}; starting over")
    part.resumed = True
    log.info("%s: %s already holds the whole file (%d bytes); verifying it", url, part.path, part.size)


def _copy_local(source: Path, url: str, part: _PartFile, bar: tqdm) -> None:
    part.restart()
    with _open_local(source, url) as handle:
        bar.reset(total=os.fstat(handle.fileno()).st_size)
        part.append(iter(lambda: handle.read(_CHUNK), b""), bar)


def _file_name(url: str) -> str:
    path = local_path(url)
    name = path.name if path is not None else unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    if not name:
        raise PermanentDownloadError(f"{url}: the URL does not name a file")
    return name


def _already_there(target: Path, *, sha1: str | None, md5: str | None) -> tuple[Digests, int] | None:
    """Digests of an existing destination file that can be kept, else None.

    Only a complete file is ever renamed into place, so an existing one without
    a checksum to compare is trusted; with a checksum it must match.
    """
    if not target.is_file():
        return None
    digests, size = digest_file(target)
    problems = mismatches(digests, sha1=sha1, md5=md5)
    if problems:
        log.warning("%s exists but does not match (%s); downloading it again", target, "; ".join(problems))
        return None
    log.info("%s is already downloaded%s", target, "" if sha1 or md5 else " (no checksum given to verify it)")
    return digests, size


def download(
    url: str,
    dest_dir: Path,
    *,
    sha1: str | None = None,
    md5: str | None = None,
    policy: RetryPolicy | None = None,
    progress: bool = True,
    timeout: float = 60.0,
    client: httpx.Client | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> DownloadResult:
    """Download (or copy, for file:// URLs and local paths) ``url`` into ``dest_dir``.

    The file appears in ``dest_dir`` only once complete and, when ``sha1`` or
    ``md5`` is given, verified; a mismatch deletes the bytes and raises
    ChecksumMismatchError.  ``sleep`` is how retries wait (injectable, so tests
    and callers with their own clock need not block).
    """
    name = _file_name(url)
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / name
    existing = _already_there(target, sha1=sha1, md5=md5)
    if existing is not None:
        digests, size = existing
        return DownloadResult(url, target, size, digests.sha1, digests.md5, resumed=False, attempts=0)

    part = _PartFile(dest_dir / f"{name}.part")
    source = local_path(url)
    with tqdm(unit="B", unit_scale=True, unit_divisor=1024, desc=name, disable=not progress) as bar:
        if source is not None:
            _copy_local(source, url, part, bar)
            attempts = 1
        else:
            with http_client(client) as http:
                _, attempts = run_with_retries(
                    lambda: _http_attempt(url, part, http, timeout, bar),
                    what=url,
                    policy=policy or RetryPolicy(),
                    sleep=sleep,
                )

    try:
        require_match(str(target), part.digests, sha1=sha1, md5=md5)
    except ChecksumMismatchError:
        part.path.unlink(missing_ok=True)
        raise
    os.replace(part.path, target)
    log.info("%s: saved %s (%d bytes, %d attempt(s))", url, target, part.size, attempts)
    return DownloadResult(url, target, part.size, part.digests.sha1, part.digests.md5, part.resumed, attempts)
