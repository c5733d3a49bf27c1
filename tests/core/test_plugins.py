"""The plugin registry: every built-in of every kind registered and conforming, Protocol checks at registration
and first load, unknown names, entry points of an installed distribution found and loaded lazily."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Protocol

import pytest

from tasks.arena.bradley_terry import Battle
from tasks.arena.rating import RATING_METHODS
from tasks.errors import ConfigError
from tasks.features.registry import FEATURES
from tasks.imports.common import IMPORTERS, import_cell
from tasks.index.registry import INDEX_BACKENDS, get_backend
from tasks.llm.backends import LLM_BACKENDS
from tasks.llm.registry import ModelSpec
from tasks.placement import Placement
from tasks.plugins import Kind, register, register_lazy, unregister
from tasks.rankers.base import RANKERS, make_ranker


class Widget(Protocol):
    """A Protocol for the kinds these tests declare: one attribute, one method."""

    size: int

    def spin(self, times: int) -> int:
        ...


class GoodWidget:
    size = 3

    def spin(self, times: int) -> int:
        return self.size * times


class Wheel:  # no spin()
    size = 1


def _kind(*, classes: bool = False) -> Kind[Widget]:
    """A kind of its own for one test (kinds live for the process), and an entry-point group nobody else uses."""
    return Kind(f"widget-{uuid.uuid4().hex[:8]}", Widget, "widget", classes=classes)


# -- every built-in is registered and meets its kind's Protocol ------------------------------------------------

def test_every_published_dataset_is_an_importer_with_its_recipe_and_default_name() -> None:
    # (recipe, default name) of each layout as the import docs describe them; a CLIR collection takes its directory's
    expected = {"mkqa": ("mkqa", "mkqa"), "eclektic": ("eclektic", "eclektic"), "xrag": ("xrag", "xrag"),
                "miracl": ("mirage", "mirage"), "clirmatrix": ("clirmatrix", None)}
    assert set(IMPORTERS.names()) >= set(expected)
    for name, (recipe, default) in expected.items():
        importer = IMPORTERS.get(name)  # loaded and checked against Importer here
        assert (importer.recipe, importer.default_name) == (recipe, default)


def test_an_importer_without_locate_reads_the_source_as_given_and_names_the_cell_after_the_benchmark(
        tmp_path: Path) -> None:
    source = tmp_path / "mkqa.jsonl.gz"
    source.touch()
    assert import_cell("mkqa", source, None) == ("mkqa", "mkqa")
    assert import_cell("miracl", tmp_path, "mine") == ("mine", "mine")
    collection = tmp_path / "wiki-col"
    collection.mkdir()
    (collection / "en.de.test.jsonl").touch()  # <query lang>.<doc lang>.<split>.jsonl: a CLIRMatrix collection
    assert import_cell("clirmatrix", collection, None) == ("wiki-col", "clir:wiki-col")


def test_every_index_backend_is_a_search_index_class_named_as_registered() -> None:
    assert set(INDEX_BACKENDS.names()) >= {"tantivy", "elasticsearch"}
    for name in ("tantivy", "elasticsearch"):
        assert INDEX_BACKENDS.get(name).name == name  # the name an index's manifest records


def test_every_llm_backend_is_a_class_with_complete_and_aclose() -> None:
    assert set(LLM_BACKENDS.names()) >= {"openai", "llamacpp", "anthropic", "baseline"}
    for name in ("openai", "llamacpp", "anthropic", "baseline"):
        backend = LLM_BACKENDS.get(name)
        assert isinstance(backend, type) and callable(backend.complete) and callable(backend.aclose)


def test_every_mirage_feature_is_registered_with_what_it_needs() -> None:
    # 9 computed without a model, 3 by cross-encoders (which read the shown passages), 2 graded by an LLM
    computed = ["target_language", "english_language", "citation_map_at_10", "citation_recall_at_10", "answer_bleu",
                "answer_rouge_l", "extra_answer_chars", "extra_code_switching", "extra_refusal"]
    model_based = ["support_entailment", "support_neutral", "reranker_score"]
    graded = {"answer_overlap_score": "grade_overlap", "fluency_score": "grade_fluency"}
    assert FEATURES.names()[:14] == [*computed, *model_based, *graded]
    for name in computed + model_based:
        feature = FEATURES.get(name)
        assert (feature.passages, feature.template) == (name in model_based, None)
    for name, template in graded.items():
        assert (FEATURES.get(name).passages, FEATURES.get(name).template) == (False, template)


def test_a_graded_feature_without_a_grader_says_so() -> None:
    from tasks.features.registry import FeatureNeeds

    with pytest.raises(ConfigError, match="feature 'fluency_score' is graded by an LLM: name the grader"):
        FEATURES.get("fluency_score").compute([], FeatureNeeds())


def test_every_ranker_is_made_from_its_spec() -> None:
    from tasks.placement import DeviceConfig, resolve

    assert set(RANKERS.names()) >= {"bm25", "dense"}
    cpu = resolve(DeviceConfig(device="cpu"))
    assert make_ranker("bm25", cpu, backend="elasticsearch").name == "bm25:elasticsearch"
    assert make_ranker("dense@ivf:some/model", cpu).name == "dense@ivf:some/model"
    with pytest.raises(ConfigError, match=r"ranker 'bm25@hnsw': bm25 searches the tantivy index, it takes no @INDEX"):
        make_ranker("bm25@hnsw", cpu)


def test_bradley_terry_is_the_registered_rating_method() -> None:
    method = RATING_METHODS.get("bradley-terry")
    # a beats b on 3 queries, b beats a on 1: σ(β_a − β_b) = 3/4, β_a − β_b = ln 3, centred at ±ln(3)/2 ≈ ±0.5493
    battles = [Battle(str(n), "en", "a", "b", winner) for n, winner in enumerate("aaab")]
    assert method.rateable(battles, "drop")
    fitted = method.ratings(battles, bootstrap=20, seed=0, ties="drop")["models"]
    assert fitted["a"]["rating"] == pytest.approx(math.log(3) / 2, abs=1e-4)
    assert fitted["b"]["rating"] == pytest.approx(-math.log(3) / 2, abs=1e-4)


# -- unknown names ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("look_up", "message"), [
    (lambda: IMPORTERS.get("natural-questions"),
     "unknown dataset 'natural-questions' (known: clirmatrix, eclektic, hf, miracl, mkqa, xrag)"),
    (lambda: get_backend("lucene"), "unknown index backend 'lucene' (known: elasticsearch, tantivy)"),
    (lambda: make_ranker("colbert:some/model", Placement("cpu", "fp32")), "unknown ranker 'colbert' (known: bm25, dense)"),
    (lambda: RATING_METHODS.get("elo"), "unknown rating method 'elo' (known: bradley-terry)"),
    (lambda: FEATURES.get("answer_meteor"), "unknown feature 'answer_meteor' (known: answer_bleu, answer_overlap_score,"),
])
def test_an_unknown_name_is_a_config_error_naming_the_kind_and_the_known_names(look_up, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        look_up()
    assert str(error.value).startswith(message)


def test_an_unknown_llm_backend_is_refused_when_the_registry_entry_is_read() -> None:
    with pytest.raises(ValueError, match=r"backend\n.*unknown LLM backend 'ollama' \(known: anthropic, baseline,"
                                         r" llamacpp, openai\)"):
        ModelSpec(name="m", backend="ollama", model="llama3")


# -- the Protocol is checked at registration, or at the first load of a path -----------------------------------

def test_a_plugin_missing_a_method_is_refused_at_registration() -> None:
    kind = _kind()
    with pytest.raises(ConfigError, match=r"widget 'wheel' \(tests.core.test_plugins:Wheel\) does not implement Widget:"
                                          r" it has no spin\(\)"):
        register(kind.name, "wheel")(Wheel)
    with pytest.raises(ConfigError, match="unknown widget 'wheel'"):
        kind.get("wheel")  # nothing was registered


def test_a_plugin_missing_an_attribute_is_refused_at_registration() -> None:
    kind = _kind()

    class Unsized:
        def spin(self, times: int) -> int:
            return times

    with pytest.raises(ConfigError, match=r"widget 'unsized' .* does not implement Widget: it has no size$"):
        register(kind.name, "unsized")(Unsized())


def test_a_kind_of_classes_refuses_an_instance_and_a_class_without_the_methods() -> None:
    kind = _kind(classes=True)
    with pytest.raises(ConfigError, match=r"widget 'good' \(tests.core.test_plugins:GoodWidget\) is not a class"):
        register(kind.name, "good")(GoodWidget())
    with pytest.raises(ConfigError, match=r"it has no spin\(\)"):
        register(kind.name, "wheel")(Wheel)
    register(kind.name, "good")(GoodWidget)
    assert kind.get("good")().spin(2) == 6  # 3 × 2


def test_a_path_is_checked_when_it_is_first_loaded() -> None:
    kind = _kind()
    register_lazy(kind.name, "wheel", "tests.core.test_plugins:Wheel")  # not imported yet, so not checked yet
    with pytest.raises(ConfigError, match=r"widget 'wheel' \(tests.core.test_plugins:Wheel\) does not implement Widget"):
        kind.get("wheel")
    register_lazy(kind.name, "gone", "tests.no_such_module:Widget")
    with pytest.raises(ConfigError, match=r"widget 'gone': cannot load tests.no_such_module:Widget \(No module"):
        kind.get("gone")


def test_a_plugin_registered_before_its_kind_is_checked_when_the_kind_is_declared() -> None:
    name = f"widget-{uuid.uuid4().hex[:8]}"
    register(name, "wheel")(Wheel)
    with pytest.raises(ConfigError, match=r"widget 'wheel' .* it has no spin\(\)"):
        Kind(name, Widget, "widget")


def test_a_name_cannot_be_taken_twice_by_different_plugins() -> None:
    kind = _kind()
    register(kind.name, "good")(GoodWidget())
    with pytest.raises(ConfigError, match=r"widget 'good' is registered already \(tests.core.test_plugins:GoodWidget\)"):
        register(kind.name, "good")(GoodWidget())  # another object
    register_lazy(kind.name, "lazy", "tests.core.test_plugins:GoodWidget")
    register_lazy(kind.name, "lazy", "tests.core.test_plugins:GoodWidget")  # the same path again is the same plugin
    with pytest.raises(ConfigError, match="is registered already"):
        register_lazy(kind.name, "lazy", "tests.core.test_plugins:Wheel")
    unregister(kind.name, "lazy")
    register_lazy(kind.name, "lazy", "tests.core.test_plugins:Wheel")  # free again


# -- entry points of an installed distribution ------------------------------------------------------------------

def _distribution(root: Path, entry_points: str) -> Path:
    """A distribution as pip installs one: a module, and a ``.dist-info`` folder with its metadata and
    ``entry_points.txt``, in ``root`` (to be put on ``sys.path``)."""
    (root / "toy_plugins.py").write_text(textwrap.dedent('''
        from pathlib import Path

        class ToyIndex:
            name = "toy"

            def __init__(self, *, depth: int = 1) -> None:
                self.depth = depth

            def build(self, lang, docs, path, config):
                raise NotImplementedError

            def search(self, index, lang, queries, k, config):
                return [[(self.depth, 1.0)] for _ in queries]

            def drop(self, index):
                pass

        class ToyWidget:
            size = 5

            def spin(self, times):
                return self.size * times

        WIDGET = ToyWidget()
    '''))
    info = root / "toy_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    return root


def test_an_entry_point_is_found_by_name_and_imported_only_when_looked_up(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kind = _kind()
    monkeypatch.syspath_prepend(str(_distribution(tmp_path, f"[babelbench.{kind.name}]\ntoy = toy_plugins:WIDGET\n")))
    monkeypatch.delitem(sys.modules, "toy_plugins", raising=False)
    register(kind.name, "good")(GoodWidget())
    assert kind.names() == ["good", "toy"]
    assert "toy_plugins" not in sys.modules  # listed from the metadata alone
    assert kind.get("toy").spin(2) == 10  # 5 × 2
    assert "toy_plugins" in sys.modules


def test_an_entry_point_taking_a_registered_name_names_its_distribution(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    kind = _kind()
    monkeypatch.syspath_prepend(str(_distribution(tmp_path, f"[babelbench.{kind.name}]\ngood = toy_plugins:WIDGET\n")))
    register_lazy(kind.name, "good", "tests.core.test_plugins:GoodWidget")
    with pytest.raises(ConfigError, match=rf"the entry point good = toy_plugins:WIDGET of toy-plugins \(group"
                                          rf" babelbench.{kind.name}\) names a widget that is registered already"
                                          r" \(tests.core.test_plugins:GoodWidget\)"):
        kind.names()


def test_an_installed_index_backend_is_used_by_name(tmp_path: Path) -> None:
    """A fresh process, as a user's would be: the built-ins and the distribution's backend side by side, the
    backend's module imported by the first lookup of its name, its constructor given the options."""
    _distribution(tmp_path, "[babelbench.index-backend]\ntoy = toy_plugins:ToyIndex\n")
    code = textwrap.dedent("""
        import sys
        from tasks.index.registry import INDEX_BACKENDS, get_backend
        print(sorted(INDEX_BACKENDS.names()), "toy_plugins" in sys.modules)
        print(get_backend("toy", depth=7).search(None, "en", ["q"], 1, None), "toy_plugins" in sys.modules)
        try:
            get_backend("lucene")
        except ValueError as exc:
            print(exc)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[2], env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.stdout.splitlines() == ["['elasticsearch', 'tantivy', 'toy'] False", "[[(7, 1.0)]] True",
                                          "unknown index backend 'lucene' (known: elasticsearch, tantivy, toy)"]


def test_listing_the_built_ins_imports_none_of_their_modules() -> None:
    """Names come from the registrations: no engine, SDK or model library loads until a plugin is used."""
    code = textwrap.dedent("""
        import sys
        from tasks.imports.common import IMPORTERS
        from tasks.index.registry import INDEX_BACKENDS
        from tasks.llm.backends import LLM_BACKENDS
        from tasks.rankers.base import RANKERS
        for kind in (IMPORTERS, INDEX_BACKENDS, LLM_BACKENDS, RANKERS):
            kind.names()
        print(sorted(m for m in ("tasks.imports.xrag", "tasks.index.embedded", "tasks.index.elastic", "openai",
                                 "tasks.llm.backends.llamacpp", "tasks.rankers.dense", "faiss") if m in sys.modules))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.stdout.strip() == "[]"
