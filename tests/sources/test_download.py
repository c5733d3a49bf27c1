"""Download stage against a loopback mirror with injected faults, and local copies."""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import pydantic
import pytest

from tasks.dumps.download import DownloadResult, download
from tasks.errors import ChecksumMismatchError, PermanentDownloadError, TransientDownloadError
from tasks.retry import RetryPolicy
from tests.support.loopback_http import LoopbackServer, Reply

PAYLOAD = random.Random(20260101).randbytes(300_000)
PAYLOAD_SHA1 = hashlib.sha1(PAYLOAD).hexdigest()
PAYLOAD_MD5 = hashlib.md5(PAYLOAD).hexdigest()
PATH = "/enwiki/20260101/enwiki-20260101-page_props.sql.gz"
NAME = "enwiki-20260101-page_props.sql.gz"
FAST = RetryPolicy(attempts=4, initial_delay=0.001, max_delay=30.0, jitter=0.0)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(files={PATH: PAYLOAD}) as running:
        yield running


class Sleeps(list[float]):
    """Records the waits the retry loop asks for instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def fetch(server: LoopbackServer, dest: Path, **options: object) -> tuple[DownloadResult, Sleeps]:
    sleeps = Sleeps()
    options.setdefault("policy", FAST)
    result = download(server.url(PATH), dest, progress=False, sleep=sleeps, **options)  # type: ignore[arg-type]
    return result, sleeps


def test_dropped_connection_resumes_from_the_bytes_on_disk(server: LoopbackServer, tmp_path: Path) -> None:
    server.drop_after(PATH, 100_000)

    result, sleeps = fetch(server, tmp_path, sha1=PAYLOAD_SHA1)

    first, second = server.requests_for(PATH)
    assert "range" not in first.headers
    assert second.headers["range"] == "bytes=100000-"
    assert (tmp_path / NAME).read_bytes() == PAYLOAD
    assert (result.sha1, result.md5, result.size) == (PAYLOAD_SHA1, PAYLOAD_MD5, len(PAYLOAD))
    assert result.resumed is True
    assert result.attempts == 2
    assert len(sleeps) == 1
    assert not (tmp_path / f"{NAME}.part").exists()


def test_part_left_by_an_earlier_run_is_resumed_and_hashed(server: LoopbackServer, tmp_path: Path) -> None:
    (tmp_path / f"{NAME}.part").write_bytes(PAYLOAD[:1234])

    result, _ = fetch(server, tmp_path, sha1=PAYLOAD_SHA1, md5=PAYLOAD_MD5)

    (only,) = server.requests_for(PATH)
    assert only.headers["range"] == "bytes=1234-"
    assert result.resumed is True and result.attempts == 1
    assert (tmp_path / NAME).read_bytes() == PAYLOAD


def test_server_ignoring_range_restarts_from_zero(server: LoopbackServer, tmp_path: Path) -> None:
    (tmp_path / f"{NAME}.part").write_bytes(b"stale bytes that are not the file")
    server.ignore_range(PATH)

    result, _ = fetch(server, tmp_path, sha1=PAYLOAD_SHA1)

    assert server.requests_for(PATH)[0].headers["range"] == "bytes=33-"
    assert (tmp_path / NAME).read_bytes() == PAYLOAD
    assert result.resumed is False


def test_416_on_a_complete_part_verifies_it_without_refetching(server: LoopbackServer, tmp_path: Path) -> None:
    (tmp_path / f"{NAME}.part").write_bytes(PAYLOAD)

    result, _ = fetch(server, tmp_path, sha1=PAYLOAD_SHA1)

    assert len(server.requests_for(PATH)) == 1
    assert result.resumed is True
    assert (tmp_path / NAME).read_bytes() == PAYLOAD


def test_part_longer_than_the_remote_file_is_discarded(server: LoopbackServer, tmp_path: Path) -> None:
    (tmp_path / f"{NAME}.part").write_bytes(PAYLOAD + b"trailing garbage")

    result, _ = fetch(server, tmp_path)

    first, second = server.requests_for(PATH)
    assert first.headers["range"] == f"bytes={len(PAYLOAD) + 16}-"
    assert "range" not in second.headers
    assert result.attempts == 2 and result.sha1 == PAYLOAD_SHA1


def test_503_then_200_is_retried(server: LoopbackServer, tmp_path: Path) -> None:
    server.queue(PATH, Reply(503))

    result, sleeps = fetch(server, tmp_path, sha1=PAYLOAD_SHA1)

    assert result.attempts == 2
    assert len(server.requests_for(PATH)) == 2
    assert sleeps == [pytest.approx(0.001)]  # initial_delay, no jitter
    assert (tmp_path / NAME).read_bytes() == PAYLOAD


def test_retry_after_is_honoured_and_capped(server: LoopbackServer, tmp_path: Path) -> None:
    server.queue(PATH, Reply(429, {"Retry-After": "7"}), Reply(503, {"Retry-After": "120"}))

    result, sleeps = fetch(server, tmp_path)

    assert sleeps == [7.0, 30.0]  # the second is capped by max_delay
    assert result.attempts == 3


def test_retry_is_logged_with_the_cause_and_delay(server: LoopbackServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server.queue(PATH, Reply(429, {"Retry-After": "7"}))

    with caplog.at_level(logging.WARNING, logger="tasks.dumps.download"):
        fetch(server, tmp_path)

    (record,) = caplog.records
    assert "429" in record.getMessage() and "7.00 s" in record.getMessage()


def test_read_timeout_is_transient(server: LoopbackServer, tmp_path: Path) -> None:
    server.stall(PATH, 1.0)

    result, _ = fetch(server, tmp_path, timeout=0.2)

    assert result.attempts == 2 and result.sha1 == PAYLOAD_SHA1


def test_gives_up_after_the_last_attempt(server: LoopbackServer, tmp_path: Path) -> None:
    server.always(PATH, Reply(502))

    with pytest.raises(TransientDownloadError, match="gave up after 4 attempts") as caught:
        fetch(server, tmp_path)

    assert "502" in str(caught.value)
    assert len(server.requests_for(PATH)) == 4
    assert not (tmp_path / NAME).exists()


@pytest.mark.parametrize(("algorithm", "wrong"), [("sha1", "0" * 40), ("md5", "f" * 32)])
def test_wrong_checksum_leaves_nothing_behind(server: LoopbackServer, tmp_path: Path, algorithm: str, wrong: str) -> None:
    actual = PAYLOAD_SHA1 if algorithm == "sha1" else PAYLOAD_MD5

    with pytest.raises(ChecksumMismatchError) as caught:
        fetch(server, tmp_path, **{algorithm: wrong})

    message = str(caught.value)
    assert NAME in message and wrong in message and actual in message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("status", "hint"), [(404, "check --date / base URL"), (403, "refuses access")])
def test_permanent_errors_fail_at_once(server: LoopbackServer, tmp_path: Path, status: int, hint: str) -> None:
    server.always(PATH, Reply(status))

    with pytest.raises(PermanentDownloadError) as caught:
        fetch(server, tmp_path)

    message = str(caught.value)
    assert server.url(PATH) in message and str(status) in message and hint in message
    assert len(server.requests_for(PATH)) == 1


def test_existing_verified_file_is_not_downloaded_again(server: LoopbackServer, tmp_path: Path) -> None:
    (tmp_path / NAME).write_bytes(PAYLOAD)

    result, _ = fetch(server, tmp_path, sha1=PAYLOAD_SHA1)

    assert server.requests == []
    assert result.attempts == 0 and result.md5 == PAYLOAD_MD5


def test_existing_file_with_wrong_content_is_replaced(server: LoopbackServer, tmp_path: Path) -> None:
    (tmp_path / NAME).write_bytes(b"an older, different file")

    result, _ = fetch(server, tmp_path, sha1=PAYLOAD_SHA1)

    assert len(server.requests_for(PATH)) == 1 and result.attempts == 1
    assert (tmp_path / NAME).read_bytes() == PAYLOAD


@pytest.mark.parametrize("as_url", [Path.as_uri, str], ids=["file-url", "plain-path"])
def test_local_sources_are_copied_and_verified(tmp_path: Path, as_url: object) -> None:
    source = tmp_path / "mirror" / NAME
    source.parent.mkdir()
    source.write_bytes(PAYLOAD)

    result = download(as_url(source), tmp_path / "out", sha1=PAYLOAD_SHA1, md5=PAYLOAD_MD5, progress=False)  # type: ignore[operator]

    assert result.path == tmp_path / "out" / NAME
    assert result.path.read_bytes() == PAYLOAD
    assert (result.size, result.attempts, result.resumed) == (len(PAYLOAD), 1, False)
    with pytest.raises(ChecksumMismatchError):
        download(as_url(source), tmp_path / "again", sha1="1" * 40, progress=False)  # type: ignore[operator]
    assert list((tmp_path / "again").iterdir()) == []


def test_missing_local_source_is_permanent(tmp_path: Path) -> None:
    with pytest.raises(PermanentDownloadError, match="no such file"):
        download(str(tmp_path / "absent.bz2"), tmp_path / "out", progress=False)


def test_retry_policy_is_frozen_and_validated() -> None:
    policy = RetryPolicy()
    assert (policy.attempts, policy.initial_delay, policy.max_delay, policy.jitter) == (5, 1.0, 60.0, 1.0)
    with pytest.raises(pydantic.ValidationError):
        policy.attempts = 2  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        RetryPolicy(attempts=0)
