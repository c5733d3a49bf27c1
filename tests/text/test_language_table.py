"""The language table: generated from pywikibot/CLDR/Snowball, overridable by the user, reachable by any code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.inference.language import ResponseLanguage, response_language
from tasks.stage import Stage, fingerprint
from tasks.text import generate_languages
from tasks.text.codes import bcp47, wiki_code
from tasks.text.language_id import lingua_supports
from tasks.text.languages import OVERRIDES_ENV, RULES_FILE, all_rules, reload_rules, rule_for


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An empty home with no overrides file; rules are re-read before and after the test."""
    monkeypatch.setenv("BABELBENCH_HOME", str(tmp_path))
    monkeypatch.delenv(OVERRIDES_ENV, raising=False)
    reload_rules()
    yield tmp_path
    reload_rules()


def test_the_table_regenerates_identically() -> None:
    packaged = Path(generate_languages.__file__).with_name(RULES_FILE).read_text(encoding="utf-8")
    assert generate_languages.render(generate_languages.rows()) == packaged


def test_every_wikipedia_edition_is_known_with_its_own_code(home: Path) -> None:
    rules = all_rules()
    assert len(rules) >= 330
    # wiki codes that differ from ISO codes, with the dump prefix and the language tag each stands for
    expected = {
        "simple": ("simplewiki", "en"), "be-tarask": ("be_x_oldwiki", "be-tarask"), "zh-yue": ("zh_yuewiki", "yue"),
        "zh-min-nan": ("zh_min_nanwiki", "nan"), "als": ("alswiki", "gsw"), "no": ("nowiki", "nb"),
        "zh-classical": ("zh_classicalwiki", "lzh"), "bat-smg": ("bat_smgwiki", "sgs"),
    }
    for lang, (wiki, tag) in expected.items():
        assert (rules[lang].wiki, rules[lang].bcp47) == (wiki, tag), lang
    for lang in ("fi", "sv", "fa", "sw", "vi", "hy", "mr", "km", "da", "hu", "ms", "nl", "pl", "tr", "te", "yo"):
        assert lang in rules, lang


def test_segmentation_truncation_and_stemming_follow_the_script_and_snowball(home: Path) -> None:
    # unspaced scripts: a segmenter and the 600-character cut; zh and ja keep their dictionary segmenters
    for lang, segmenter in {"zh": "jieba", "ja": "fugashi", "th": "icu", "lo": "icu", "km": "icu", "my": "icu",
                            "bo": "icu", "zh-yue": "icu"}.items():
        rule = rule_for(lang)
        assert (rule.segmenter, rule.truncate_unit, rule.truncate_limit) == (segmenter, "chars", 600), lang
    for lang in ("en", "fi", "hy", "ka", "ta", "am", "ar", "ko", "zh-min-nan"):  # zh-min-nan is written in Latin
        rule = rule_for(lang)
        assert (rule.segmenter, rule.truncate_unit, rule.truncate_limit) == ("whitespace", "tokens", 200), lang
    # Snowball has Finnish, Armenian and Basque stemmers, none for Swahili or Khmer
    assert [rule_for(lang).stemmer for lang in ("fi", "hy", "eu", "sw", "km")] == ["finnish", "armenian", "basque", "", ""]
    assert (rule_for("hy").script, rule_for("ka").script, rule_for("am").script) == ("Armn", "Geor", "Ethi")


def test_a_home_overrides_file_changes_and_adds_rows(home: Path) -> None:
    (home / "languages.csv").write_text(
        "# my rules\nlang,stemmer,disambiguation_markers,script\nfi,,Täsmennyssivu|Disambig,\nxx-demo,,,Khmr\n",
        encoding="utf-8")
    reload_rules()
    fi = rule_for("fi")
    assert fi.stemmer == "finnish"  # a blank cell keeps the packaged value
    assert fi.disambiguation_markers == ("Täsmennyssivu", "Disambig")
    new = rule_for("xx-demo")  # a new language: its segmentation follows its script
    assert (new.script, new.segmenter, new.truncate_unit, new.wiki) == ("Khmr", "icu", "chars", "xx_demowiki")


def test_the_environment_names_another_overrides_file(home: Path, tmp_path_factory: pytest.TempPathFactory,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "languages.csv").write_text("lang,name\nfi,From the home\n", encoding="utf-8")
    named = tmp_path_factory.mktemp("rules") / "team.csv"
    named.write_text("lang,name\nfi,From the team file\n", encoding="utf-8")
    monkeypatch.setenv(OVERRIDES_ENV, str(named))
    reload_rules()
    assert rule_for("fi").name == "From the team file"


@pytest.mark.parametrize(("content", "line", "field", "words"), [
    ("lang,segmenter\nfi,whitespace\nkm,spaces\n", 3, "segmenter", "'spaces'"),
    ("lang,truncate_limit\n\nfi,many\n", 3, "truncate_limit", "'many'"),
    ("lang,stemmer\nsw,swahili\n", 2, "stemmer", "Snowball"),
    ("lang,script\nXX,Latn\n", 2, "lang", "wiki code"),
    ("lang,name\n,Nameless\n", 2, "lang", "empty"),
])
def test_a_bad_override_names_file_line_and_field(home: Path, content: str, line: int, field: str, words: str) -> None:
    path = home / "languages.csv"
    path.write_text(content, encoding="utf-8")
    reload_rules()
    with pytest.raises(ConfigError) as caught:
        all_rules()
    message = str(caught.value)
    assert f"{path}, line {line}, field '{field}'" in message and words in message


def test_an_unknown_override_column_is_refused(home: Path) -> None:
    (home / "languages.csv").write_text("lang,segmentor\nfi,icu\n", encoding="utf-8")
    reload_rules()
    with pytest.raises(ConfigError, match=r"line 1: unknown column\(s\) \['segmentor'\]"):
        all_rules()


def test_an_override_changes_the_fingerprints_of_exactly_its_languages_cells(home: Path) -> None:
    stage = Stage("index", 1)
    cells = ("demo:fi", "demo:sv", "demo:fi>sv", "demo:sv>en", "bench/xrag/fi/model", "demo")
    before = {cell: fingerprint(stage, cell, {}, {}) for cell in cells}
    (home / "languages.csv").write_text("lang,stemmer\nfi,\n", encoding="utf-8")  # blank: unchanged
    reload_rules()
    assert {cell: fingerprint(stage, cell, {}, {}) for cell in cells} == before
    (home / "languages.csv").write_text("lang,truncate_limit\nfi,150\n", encoding="utf-8")
    reload_rules()
    changed = {cell for cell in cells if fingerprint(stage, cell, {}, {}) != before[cell]}
    assert changed == {"demo:fi", "demo:fi>sv", "bench/xrag/fi/model"}


@pytest.mark.parametrize(("code", "wiki"), [
    ("fi", "fi"), ("fin", "fi"), ("swh", "sw"), ("zh_cn", "zh"), ("zh_hk", "zh"), ("zh_tw", "zh"), ("zh-Hant", "zh"),
    ("cmn", "zh"), ("no", "no"), ("nb", "no"), ("nob", "no"), ("pt-BR", "pt"), ("yue", "zh-yue"),
    ("yue-Hant-HK", "zh-yue"), ("be-x-old", "be-tarask"), ("be_x_old", "be-tarask"), ("zh_yue", "zh-yue"),
    ("nan", "zh-min-nan"), ("gsw", "als"), ("simple", "simple"), ("khm", "km"), ("iw", "he"), ("EN", "en"),
])
def test_codes_at_the_edges_map_to_wiki_codes(home: Path, code: str, wiki: str) -> None:
    assert wiki_code(code) == wiki


def test_exports_map_wiki_codes_back_to_language_tags(home: Path) -> None:
    assert [bcp47(lang) for lang in ("zh-yue", "no", "als", "fi")] == ["yue", "nb", "gsw", "fi"]


def test_an_unknown_code_suggests_the_closest_known_ones(home: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        wiki_code("englsh")
    assert "unknown language code 'englsh'" in str(caught.value) and "en (English)" in str(caught.value)
    with pytest.raises(ConfigError, match="unknown language code 'fiu'.*fi \\(Finnish\\)"):
        rule_for("fiu")


def test_languages_lingua_cannot_detect_are_placed_by_script_never_guessed(home: Path) -> None:
    assert [lingua_supports(lang) for lang in ("sw", "fi", "km", "lo", "my", "zh-yue", "am")] == \
        [True, True, False, False, False, False, False]
    khmer = "ភ្នំពេញគឺជារាជធានីនៃប្រទេសកម្ពុជា"
    # Khmer script is Khmer's alone: in the language, with no probability (no nearest language lingua knows)
    assert response_language(khmer, "km") == ResponseLanguage("ok", "km")
    assert response_language("Nairobi ni mji mkuu wa Kenya na mji mkubwa zaidi nchini.", "sw").status == "ok"
