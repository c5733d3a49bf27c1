"""Per-language facts as data: one row per Wikipedia language edition, plus the user's overrides.

``languages.csv`` is generated (``python -m tasks.text.generate_languages``)
from pywikibot's Wikipedia family, CLDR (langcodes) and Snowball, so every
wiki the dump site publishes is known out of the box. A user changes or adds
rows without editing the package: a CSV with the same columns (only ``lang``
required; blank cells keep the packaged value, or the derived default for a new
language) in ``$BABELBENCH_HOME/languages.csv`` or the file named by
``BABELBENCH_LANGUAGES`` (``babelbench --languages FILE``). A bad override names
the file, line and field. Each rule's content enters the fingerprint of every
cell that names its language (``rule_digest``), so changing a rule recomputes
exactly the cells that depend on it.

Stages never branch on a language code; they look up its rule here.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

import pyarrow as pa

from tasks.errors import ConfigError
from tasks.settings import DEFAULT_HOME, HOME_ENV

RULES_FILE = "languages.csv"
OVERRIDES_ENV = "BABELBENCH_LANGUAGES"
OVERRIDES_FILE = "languages.csv"  # in the home

Segmenter = Literal["whitespace", "jieba", "fugashi", "icu"]
TruncateUnit = Literal["chars", "tokens"]

#: ISO 15924 scripts whose text does not separate words with spaces: they need a word segmenter.
UNSPACED_SCRIPTS = frozenset({"Hani", "Hans", "Hant", "Jpan", "Thai", "Laoo", "Khmr", "Mymr", "Tibt", "Tale", "Talu",
                              "Lana", "Bali", "Java"})
#: The CLIRMatrix length rule by whether the script is unspaced: about 600 characters, else about 200 tokens.
TRUNCATION: dict[bool, tuple[TruncateUnit, int]] = {True: ("chars", 600), False: ("tokens", 200)}
#: Template names used for disambiguation pages across many wikis, for a wiki without a hand-kept list.
DEFAULT_MARKERS = ("Disambig", "Disambiguation")

#: Elasticsearch's built-in language analyzers: a language whose analyzer is one of them is analysed by name.
ES_BUILTIN_ANALYZERS = frozenset({
    "arabic", "armenian", "basque", "bengali", "brazilian", "bulgarian", "catalan", "cjk", "czech",
    "danish", "dutch", "english", "estonian", "finnish", "french", "galician", "german", "greek",
    "hindi", "hungarian", "indonesian", "irish", "italian", "latvian", "lithuanian", "norwegian",
    "persian", "portuguese", "romanian", "russian", "serbian", "sorani", "spanish", "swedish",
    "thai", "turkish",
})
_CODE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_SCRIPT = re.compile(r"^[A-Z][a-z]{3}$")


@dataclass(frozen=True)
class LanguageRule:
    """What the pipeline needs to know about one language (one wiki).

    ``lang`` is the wiki code (``en``, ``be-tarask``, ``zh-yue``); ``bcp47`` the
    language tag it stands for (``yue``); ``wiki`` the database name that
    prefixes its dump files. ``truncate_unit``/``truncate_limit`` follow the
    CLIRMatrix rule. ``stemmer`` is a Snowball algorithm name or empty;
    ``analyzer`` an Elasticsearch analyzer. ``disambiguation_markers`` are
    template and category names (without the namespace prefix, compared
    case-insensitively), the fallback where a dump has no language-independent
    disambiguation signal.
    """

    lang: str
    name: str
    wiki: str
    bcp47: str
    script: str
    segmenter: Segmenter
    truncate_unit: TruncateUnit
    truncate_limit: int
    analyzer: str
    stemmer: str
    disambiguation_markers: tuple[str, ...]

    @property
    def needs_segmentation(self) -> bool:
        """True for scripts that do not separate words with spaces."""
        return self.segmenter != "whitespace"


COLUMNS = tuple(f.name for f in fields(LanguageRule))


def default_rule(lang: str, script: str) -> LanguageRule:
    """A new language's rule before its overrides: derived from its script, as the generator derives them."""
    unspaced = script in UNSPACED_SCRIPTS
    unit, limit = TRUNCATION[unspaced]
    return LanguageRule(lang=lang, name=lang, wiki=lang.replace("-", "_") + "wiki", bcp47=lang, script=script,
                        segmenter="icu" if unspaced else "whitespace", truncate_unit=unit, truncate_limit=limit,
                        analyzer="standard", stemmer="", disambiguation_markers=DEFAULT_MARKERS)


def _check(rule: LanguageRule) -> None:
    """Raise ValueError(field, problem) for a value no stage could use."""
    if not _CODE.match(rule.lang):
        raise ValueError("lang", f"{rule.lang!r} is not a wiki code (lower-case letters, digits and hyphens)")
    if not _SCRIPT.match(rule.script):
        raise ValueError("script", f"{rule.script!r} is not an ISO 15924 code such as Latn or Khmr")
    if rule.segmenter not in get_args(Segmenter):
        raise ValueError("segmenter", f"{rule.segmenter!r} is not one of {', '.join(get_args(Segmenter))}")
    if rule.truncate_unit not in get_args(TruncateUnit):
        raise ValueError("truncate_unit", f"{rule.truncate_unit!r} is not chars or tokens")
    if rule.truncate_limit <= 0:
        raise ValueError("truncate_limit", f"{rule.truncate_limit} is not a positive number")
    if rule.stemmer and rule.stemmer not in _snowball_algorithms():
        raise ValueError("stemmer", f"{rule.stemmer!r} is not a Snowball stemmer (known: "
                                    f"{', '.join(sorted(_snowball_algorithms()))})")


@lru_cache(maxsize=1)
def _snowball_algorithms() -> frozenset[str]:
    import Stemmer

    return frozenset(Stemmer.algorithms())


def _apply(base: LanguageRule, row: dict[str, str]) -> LanguageRule:
    """``base`` with the row's non-blank cells; raises ValueError(field, problem) on a bad value."""
    changes: dict[str, object] = {}
    for name, raw in row.items():
        value = (raw or "").strip()
        if name == "lang" or not value:
            continue
        if name == "truncate_limit":
            try:
                changes[name] = int(value)
            except ValueError:
                raise ValueError(name, f"{value!r} is not a whole number") from None
        elif name == "disambiguation_markers":
            changes[name] = tuple(marker.strip() for marker in value.split("|") if marker.strip())
        else:
            changes[name] = value
    rule = replace(base, **changes)  # type: ignore[arg-type]
    _check(rule)
    return rule


def _rows(text: str, source: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of a rules CSV; ``#`` lines are comments. An unknown column is an error naming it."""
    lines = text.splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip() and not line.startswith("#")]
    if not numbered:
        return []
    reader = csv.DictReader(line for _, line in numbered)
    header_line = numbered[0][0]
    unknown = [name for name in reader.fieldnames or [] if name not in COLUMNS]
    if unknown or "lang" not in (reader.fieldnames or []):
        problem = f"unknown column(s) {unknown}" if unknown else "no 'lang' column"
        raise ConfigError(f"{source}, line {header_line}: {problem}; columns are {', '.join(COLUMNS)}")
    return [(numbered[index + 1][0], row) for index, row in enumerate(reader)]


def _packaged() -> dict[str, LanguageRule]:
    text = resources.files("tasks.text").joinpath(RULES_FILE).read_text(encoding="utf-8")
    rules = {}
    for line, row in _rows(text, f"tasks/text/{RULES_FILE}"):
        try:
            rules[row["lang"]] = _apply(default_rule(row["lang"], row["script"]), row)
        except ValueError as exc:
            field, problem = exc.args
            raise ConfigError(f"tasks/text/{RULES_FILE}, line {line}, field {field!r}: {problem}") from None
    return rules


def overrides_path() -> Path | None:
    """The user's overrides file: ``$BABELBENCH_LANGUAGES``, else ``languages.csv`` in the home if it exists."""
    named = os.environ.get(OVERRIDES_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"{OVERRIDES_ENV}={named}: no such file of language rules")
        return path.resolve()
    in_home = Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser() / OVERRIDES_FILE
    return in_home.resolve() if in_home.is_file() else None


def _with_overrides(rules: dict[str, LanguageRule], path: Path) -> dict[str, LanguageRule]:
    merged = dict(rules)
    for line, row in _rows(path.read_text(encoding="utf-8"), str(path)):
        lang = (row.get("lang") or "").strip()
        try:
            if not lang:
                raise ValueError("lang", "empty: every row names the wiki code it sets")
            base = merged.get(lang) or default_rule(lang, (row.get("script") or "").strip() or "Latn")
            merged[lang] = _apply(base, row)
        except ValueError as exc:
            field, problem = exc.args
            raise ConfigError(f"{path}, line {line}, field {field!r}: {problem}") from None
    return merged


@lru_cache(maxsize=1)
def all_rules() -> dict[str, LanguageRule]:
    """Every known language rule (packaged, then overridden), keyed by wiki code.

    Rules are looked up once per document in hot paths (truncation, index
    analysis), so they are resolved once per process: a lookup is a cached
    call, not an environment read and a file check (those cost ~11 µs a
    document). Whatever changes ``BABELBENCH_LANGUAGES``/``BABELBENCH_HOME`` or
    the file afterwards calls ``reload_rules()`` — the CLI and every flow run do.
    """
    path = overrides_path()
    packaged = _packaged()
    return _with_overrides(packaged, path) if path is not None else packaged


def reload_rules() -> None:
    """Forget the loaded rules, so the next lookup resolves and reads the overrides file again."""
    all_rules.cache_clear()


def rule_for(lang: str) -> LanguageRule:
    """The rule of one language; an unknown code is a configuration error that suggests the closest known codes."""
    try:
        return all_rules()[lang]
    except KeyError:
        from tasks.text.codes import unknown_code

        raise unknown_code(lang) from None


def rule_digest(lang: str) -> str | None:
    """A hash of ``lang``'s effective rule, for the fingerprints of cells in that language; None if unknown."""
    rule = all_rules().get(lang)
    if rule is None:
        return None
    return _digest(asdict(rule))


def rules_digest() -> str:
    """A hash of every effective rule: the warehouse's ``language_rules`` mirror is rewritten only when it changes."""
    return _digest([asdict(rule) for rule in all_rules().values()])


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def rules_table() -> pa.Table:
    """The effective rules (packaged table and the user's overrides) as one table, for the warehouse's
    ``language_rules`` mirror."""
    rows = [asdict(rule) | {"disambiguation_markers": list(rule.disambiguation_markers)} for rule in all_rules().values()]
    schema = pa.schema([(field.name, pa.list_(pa.string()) if field.name == "disambiguation_markers"
                         else pa.int32() if field.name == "truncate_limit" else pa.string())
                        for field in fields(LanguageRule)])
    return pa.Table.from_pylist(rows, schema=schema)
