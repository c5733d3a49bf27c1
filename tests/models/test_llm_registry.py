"""The model registry (YAML, env overrides, errors naming file and entry), prices, estimates, prompt templates."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.llm import LLMRequest, ModelSpec, estimate_cost, load_registry, render, template_hash
from tasks.llm.registry import MODELS_ENV, PACKAGED_GEMMA

TWO_MODELS = """\
models:
  - name: vllm-qwen
    backend: openai
    model: Qwen/Qwen2.5-7B-Instruct
    base_url: http://gpu-box:8000/v1
    mode: chat
    max_concurrency: 16
  - name: hosted
    backend: openai
    model: gpt-4o
    api_key_env: OPENAI_API_KEY
    rpm: 500
    tpm: 30000
    price_in: 2.5
    price_out: 10
"""


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No registry override, and a home without models.yaml."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.delenv(MODELS_ENV, raising=False)
    monkeypatch.setenv("BABELBENCH_HOME", str(home))
    return home


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_without_a_file_the_builtin_registry_offers_the_free_local_model(clean_env: Path) -> None:
    registry = load_registry()
    assert registry.names == ["local", "abstain", "extractive", "oracle", "reference-judge"]  # baselines need no model
    assert (registry.get("abstain").backend, registry.get("abstain").model) == ("baseline", "abstain")
    local = registry.get("local")
    assert (local.backend, local.model, local.mode) == ("llamacpp", PACKAGED_GEMMA, "completion")
    assert local.cost_usd(10_000, 10_000) == 0.0


def test_home_file_is_read_and_typed(clean_env: Path) -> None:
    _write(clean_env / "models.yaml", TWO_MODELS)
    registry = load_registry()
    assert registry.names == ["vllm-qwen", "hosted"]
    assert registry.source == str(clean_env / "models.yaml")
    qwen = registry.get("vllm-qwen")
    assert (qwen.base_url, qwen.max_concurrency, qwen.api_key_env, qwen.rpm) == ("http://gpu-box:8000/v1", 16, None, None)
    hosted = registry.get("hosted")
    assert (hosted.rpm, hosted.tpm, hosted.mode) == (500, 30000, "chat")
    # 1000 tokens in at $2.5/M and 500 out at $10/M: 0.0025 + 0.005
    assert hosted.cost_usd(1000, 500) == pytest.approx(0.0075)


def test_env_override_wins_over_the_home_file(clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(clean_env / "models.yaml", TWO_MODELS)
    other = _write(tmp_path / "elsewhere.yaml", "models:\n  - {name: only, backend: openai, model: m, base_url: http://x/v1}\n")
    monkeypatch.setenv(MODELS_ENV, str(other))
    assert load_registry().names == ["only"]


def test_env_override_to_a_missing_file_is_an_error_naming_it(clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope.yaml"
    monkeypatch.setenv(MODELS_ENV, str(missing))
    with pytest.raises(ConfigError, match=f"{MODELS_ENV}={missing}: no such file"):
        load_registry()


def test_invalid_field_names_file_entry_line_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path / "models.yaml", TWO_MODELS.replace("max_concurrency: 16", "max_concurrency: 0"))
    with pytest.raises(ConfigError) as error:
        load_registry(path)
    message = str(error.value)
    assert message.startswith(f"{path}: models[0] (line 2) 'vllm-qwen': max_concurrency:")
    assert "greater than or equal to 1" in message


def test_unknown_backend_and_misspelt_field_are_reported(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.yaml", TWO_MODELS.replace("backend: openai\n    model: gpt-4o", "backend: ollama\n    model: gpt-4o"))
    with pytest.raises(ConfigError, match=r"models\[1\] \(line 8\) 'hosted': backend:"):
        load_registry(path)
    path = _write(tmp_path / "b.yaml", TWO_MODELS.replace("rpm: 500", "rpms: 500"))
    with pytest.raises(ConfigError, match=r"models\[1\] \(line 8\) 'hosted': rpms: Extra inputs are not permitted"):
        load_registry(path)


def test_duplicate_names_and_bad_shapes_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "dup.yaml", TWO_MODELS.replace("name: hosted", "name: vllm-qwen"))
    with pytest.raises(ConfigError, match=r"models\[1\] \(line 8\) 'vllm-qwen': the name is already used by models\[0\]"):
        load_registry(path)
    path = _write(tmp_path / "list.yaml", "- name: a\n")
    with pytest.raises(ConfigError, match="a mapping with a `models:` list"):
        load_registry(path)
    path = _write(tmp_path / "broken.yaml", "models:\n  - name: [unclosed\n")
    with pytest.raises(ConfigError, match=rf"{path} at line 3, column 1: not valid YAML"):
        load_registry(path)


def test_backend_specific_rules(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.yaml", "models:\n  - {name: l, backend: llamacpp, model: x.gguf, base_url: http://h/v1}\n")
    with pytest.raises(ConfigError, match="runs in-process"):
        load_registry(path)
    with pytest.raises(ValueError, match="anthropic models are chat models"):
        ModelSpec(name="c", backend="anthropic", model="claude", mode="completion")


def test_unknown_model_name_lists_the_known_ones(clean_env: Path) -> None:
    _write(clean_env / "models.yaml", TWO_MODELS)
    with pytest.raises(ConfigError, match=r"no model named 'gpt5' \(known: vllm-qwen, hosted\)"):
        load_registry().get("gpt5")


def test_cost_estimate_counts_prompt_chars_over_four_plus_max_tokens() -> None:
    spec = ModelSpec(name="p", backend="openai", model="m", price_in=1.0, price_out=3.0)
    requests = [
        LLMRequest(prompt="x" * 9, max_tokens=10),  # ceil(9/4) = 3 in, 10 out
        LLMRequest(messages=[{"role": "system", "content": "abcd"}, {"role": "user", "content": "efgh"}], max_tokens=5),  # 2 in, 5 out
    ]
    tokens, usd = estimate_cost(spec, requests)
    assert tokens == 3 + 10 + 2 + 5
    assert usd == pytest.approx((5 * 1.0 + 15 * 3.0) / 1_000_000)


def test_a_request_is_either_chat_or_completion() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        LLMRequest(prompt="a", messages=[{"role": "user", "content": "b"}])
    with pytest.raises(ValueError, match="exactly one of"):
        LLMRequest()


def test_templates_render_strictly_and_hash_their_file_text() -> None:
    text = render("example_capital", country="Kenya")
    assert text.endswith("Country: Kenya\nCapital:")  # no trailing newline: the model continues the line
    assert "{#" not in text
    source = (Path(__file__).resolve().parents[2] / "tasks" / "llm" / "templates" / "example_capital.j2").read_text(encoding="utf-8")
    assert template_hash("example_capital") == hashlib.sha256(source.encode("utf-8")).hexdigest()
    with pytest.raises(ConfigError, match="example_capital.j2: 'country' is undefined"):
        render("example_capital")
    with pytest.raises(ConfigError, match=r"no prompt template 'missing'.*known: .*example_capital"):
        render("missing")


def test_the_guide_s_registry_example_loads_as_documented(tmp_path: Path) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "models-and-backends.md").read_text()
    block = guide.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "models.yaml"
    path.write_text(block)
    registry = load_registry(path)
    assert registry.names == ["qwen", "gpt-4o-mini", "gpt-4o"]
    qwen, hosted, from_block = registry.models
    assert (qwen.backend, qwen.mode, qwen.base_url, qwen.rpm, qwen.tpm) == ("openai", "chat", "http://127.0.0.1:8000/v1", 600, 200000)
    # 1M input tokens at $0.15 and 1M output tokens at $0.60
    assert hosted.api_key_env == "OPENAI_API_KEY" and hosted.cost_usd(1_000_000, 1_000_000) == pytest.approx(0.75)
    assert (from_block.api_key_secret, from_block.api_key_env) == ("openai-key", None)


def test_a_key_comes_one_way_only() -> None:
    with pytest.raises(ValueError, match="api_key_env or api_key_secret, not both"):
        ModelSpec(name="x", backend="openai", model="m", api_key_env="K", api_key_secret="k")
