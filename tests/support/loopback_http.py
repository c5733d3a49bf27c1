"""A loopback HTTP server for tests, with Range support and per-path fault injection.

It binds 127.0.0.1 on an ephemeral port and serves in daemon threads, from a
dict of paths and/or a directory (with nginx-style index pages, like a dump
mirror); a POST gets only what a fault programs for its path (else 404).  Faults
are programmed per path: a queue of canned replies (503, 429 with Retry-After
…), a reply for every request (404, 403), a connection dropped
after N bytes, a stalled response, a server that ignores Range.  Every request
is recorded so tests can assert what the client sent.  The server stops when
its ``with`` block ends, and on its own after ``lifetime`` seconds so a stuck
test cannot leave it running.
"""

from __future__ import annotations

import html
import sys
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import quote, unquote, urlsplit


@dataclass(frozen=True)
class Reply:
    """A canned response: status, extra headers, body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # keys lower-cased
    body: bytes = b""


class _State:
    """Content, faults and the request log, shared by the handler threads."""

    def __init__(self, files: dict[str, bytes], root: Path | None) -> None:
        self.lock = threading.Lock()
        self.files = dict(files)
        self.root = root.resolve() if root is not None else None
        self.queued: dict[str, deque[Reply]] = defaultdict(deque)
        self.fixed: dict[str, Reply] = {}
        self.drops: dict[str, int] = {}
        self.stalls: dict[str, float] = {}
        self.range_ignored: set[str] = set()
        self.requests: list[RecordedRequest] = []

    def take_fault(self, path: str) -> tuple[Reply | None, int | None, float]:
        """The canned reply, drop point and stall for this request; one-shot faults are consumed."""
        with self.lock:
            reply = self.queued[path].popleft() if self.queued[path] else self.fixed.get(path)
            return reply, self.drops.pop(path, None), self.stalls.pop(path, 0.0)

    def resolve(self, path: str) -> bytes | Path | None:
        """Bytes for a served file, a Path for a directory under root, None when absent."""
        if path in self.files:
            return self.files[path]
        if self.root is None:
            return None
        candidate = (self.root / path.lstrip("/")).resolve()
        if not candidate.is_relative_to(self.root) or not candidate.exists():
            return None
        return candidate if candidate.is_dir() else candidate.read_bytes()


def _index_page(directory: Path, url_path: str) -> bytes:
    links = ['<a href="../">../</a>']
    for entry in sorted(directory.iterdir()):
        name = entry.name + ("/" if entry.is_dir() else "")
        links.append(f'<a href="{quote(name)}">{html.escape(name)}</a>')
    body = "<br>\n".join(links)
    return f"<html><head><title>Index of {html.escape(url_path)}</title></head><body>\n{body}\n</body></html>\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5  # idle keep-alive connections end on their own
    server: QuietServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - signature of the base class
        """Keep test output quiet; the request log is in ``LoopbackServer.requests``."""

    def _arrive(self, body: bytes = b"") -> tuple[str, Reply | None, int | None]:
        """Record the request and wait out its stall; its path, canned reply and drop point."""
        state = self.server.state
        path = unquote(urlsplit(self.path).path)
        with state.lock:
            state.requests.append(RecordedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()},
                                                  body))
        reply, drop_after, stall = state.take_fault(path)
        time.sleep(stall)
        return path, reply, drop_after

    def do_GET(self) -> None:  # noqa: N802 - name fixed by http.server
        state = self.server.state
        path, reply, drop_after = self._arrive()
        if reply is not None:
            self._send(reply.status, reply.body, reply.headers)
            return
        content = state.resolve(path)
        if content is None:
            self._send(404, b"not found\n")
        elif isinstance(content, Path):
            if path.endswith("/"):
                self._send(200, _index_page(content, path), {"Content-Type": "text/html; charset=utf-8"})
            else:
                self._send(301, b"", {"Location": path + "/"})
        else:
            self._send_file(path, content, drop_after)

    def do_POST(self) -> None:  # noqa: N802 - name fixed by http.server
        """Faults only: nothing here takes uploads, so a POST gets its path's canned reply, else 404."""
        _, reply, _ = self._arrive(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if reply is None:
            self._send(404, b"not found\n")
        else:
            self._send(reply.status, reply.body, reply.headers)

    def _send_file(self, path: str, content: bytes, drop_after: int | None) -> None:
        size = len(content)
        status, start, headers = 200, 0, {"Accept-Ranges": "bytes"}
        requested = self.headers.get("Range", "")
        if requested.startswith("bytes=") and path not in self.server.state.range_ignored:
            first, _, last = requested.removeprefix("bytes=").partition("-")
            start = int(first)
            if start >= size:
                self._send(416, b"", {"Content-Range": f"bytes */{size}"})
                return
            end = min(int(last), size - 1) if last else size - 1
            content = content[start : end + 1]
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        if drop_after is None:
            self._send(status, content, headers)
            return
        # promise the whole body, send part of it, hang up: a dropped connection
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content[:drop_after])
        self.wfile.flush()
        self.close_connection = True

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class QuietServer(ThreadingHTTPServer):
    """A threaded HTTP server on 127.0.0.1 and an ephemeral port; handlers reach the test's state as ``server.state``."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, state: object, handler: type[BaseHTTPRequestHandler]) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), handler)

    def handle_error(self, request: object, client_address: object) -> None:
        """Stay quiet when a client hangs up first (what timeout tests do); report anything else."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class BackgroundServer:
    """Serves a :class:`QuietServer` on a daemon thread for a ``with`` block, and at most ``lifetime`` seconds
    so that a stuck test cannot leave it running."""

    def __init__(self, server: QuietServer, lifetime: float) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._deadline = threading.Timer(lifetime, self.stop)
        self._deadline.daemon = True
        self._stopped = threading.Event()

    def __enter__(self) -> Self:
        self._thread.start()
        self._deadline.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.release()
        self._deadline.cancel()
        self._server.shutdown()
        self._server.server_close()

    def release(self) -> None:
        """Called first on stop: let handlers that are still waiting finish."""

    @property
    def root_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"


class LoopbackServer(BackgroundServer):
    """Context manager: ``with LoopbackServer(files={...}, root=tmp_path) as server: ...``."""

    def __init__(self, files: dict[str, bytes] | None = None, root: Path | None = None, lifetime: float = 60.0) -> None:
        self._state = _State(files or {}, root)
        super().__init__(QuietServer(self._state, _Handler), lifetime)

    @property
    def base_url(self) -> str:
        return self.root_url

    def url(self, path: str) -> str:
        return self.base_url + path

    def add(self, path: str, data: bytes) -> None:
        with self._state.lock:
            self._state.files[path] = data

    def queue(self, path: str, *replies: Reply) -> None:
        """Answer the next requests for ``path`` with these replies, in order, then serve normally."""
        with self._state.lock:
            self._state.queued[path].extend(replies)

    def always(self, path: str, reply: Reply) -> None:
        """Answer every request for ``path`` with ``reply`` (after any queued ones)."""
        with self._state.lock:
            self._state.fixed[path] = reply

    def drop_after(self, path: str, n_bytes: int) -> None:
        """On the next GET of ``path`` only, send ``n_bytes`` of the body and close the connection."""
        with self._state.lock:
            self._state.drops[path] = n_bytes

    def stall(self, path: str, seconds: float) -> None:
        """On the next GET of ``path`` only, wait ``seconds`` before answering."""
        with self._state.lock:
            self._state.stalls[path] = seconds

    def ignore_range(self, path: str) -> None:
        """Answer ranged requests for ``path`` with the whole file (200), like servers without Range support."""
        with self._state.lock:
            self._state.range_ignored.add(path)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    def requests_for(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]
