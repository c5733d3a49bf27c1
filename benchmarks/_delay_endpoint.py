"""A loopback OpenAI-compatible endpoint that answers every request after a fixed delay, in its own process.

The throughput benchmark divides the inference stage's requests/s by this
server's ceiling (concurrency ÷ delay).  For the ratio to measure the stage
and not the server, the server must not spend the client's CPU: it runs in a
separate process (no shared GIL) on uvicorn's event loop, where a request
costs a fraction of a millisecond and the delay is an ``asyncio.sleep``.

``GET /stats`` returns ``{"requests": N}`` so a caller can check that a rerun
sent nothing.  Run: ``python benchmarks/_delay_endpoint.py --port P --delay S``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import uvicorn

Receive = Any
Send = Any


def _app(delay: float) -> Any:
    served = {"requests": 0}

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["method"] == "GET":
            await _send(send, served)
            return
        served["requests"] += 1
        await asyncio.sleep(delay)
        request = json.loads(body)
        text = "Velna"
        if scope["path"].endswith("/chat/completions"):
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}
            kind = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}
            kind = "text_completion"
        await _send(send, {"id": "x", "object": kind, "created": 0, "model": request.get("model", "m"),
                           "choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 1,
                                                          "total_tokens": 11}})

    return app


async def _send(send: Send, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class DelayEndpoint:
    """The endpoint as a child process for the length of a ``with`` block."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests_served(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as reply:
            return int(json.load(reply)["requests"])

    def __enter__(self) -> Self:
        self._process = subprocess.Popen([sys.executable, str(Path(__file__)), "--port", str(self.port),
                                          "--delay", str(self.delay)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.requests_served()
                return self
            except OSError:
                time.sleep(0.1)
        self._process.kill()
        raise RuntimeError("the delay endpoint did not start within 30 s")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, required=True)
    args = parser.parse_args()
    uvicorn.run(_app(args.delay), host="127.0.0.1", port=args.port, log_level="warning", access_log=False,
                backlog=2048)


if __name__ == "__main__":
    main()
