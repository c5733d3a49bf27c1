"""How each language's text is analysed for BM25, derived from its language rule.

Both backends must cut words the same way for a language, or their rankings
stop being comparable. Scripts written without spaces (Chinese, Japanese,
Thai, Khmer …) are therefore segmented here, in Python, by the same segmenter
the text stage uses, and the words are joined with spaces; both engines then
only split on whitespace and lowercase. So are languages whose Snowball
stemmer tantivy lacks (Hindi, Indonesian, Armenian, Nepali …): their words are
lower-cased and stemmed here with PyStemmer, so every language with a Snowball
stemmer is stemmed, identically on both engines. Every other language uses the
engine's own word tokenizer and stemmer, because analysing in Rust (tantivy)
or on the cluster (Elasticsearch) is many times faster than in Python.

What each engine supports is kept as data below; a new language needs a row in
``tasks/text/languages.csv``, never a branch here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from tasks.text.languages import ES_BUILTIN_ANALYZERS, rule_for
from tasks.text.segment import tokenize
from tasks.text.truncate import truncate

TantivyTokenizer = Literal["simple", "word_regex", "whitespace"]

# Snowball stemmers compiled into tantivy 0.27 (rust-stemmers); the names are
# the Snowball names the language rules use. Hindi and Indonesian, for
# instance, have Snowball stemmers but not in tantivy: they are stemmed in
# Python before indexing (``AnalysisPlan.python_stemmer``).
TANTIVY_STEMMERS = frozenset({
    "arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek", "hungarian",
    "italian", "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "tamil", "turkish",
})

# tantivy's fast "simple" tokenizer splits on any character that is not
# alphanumeric. In these scripts (ISO 15924 codes) a word contains a virama or
# another combining mark that is not alphabetic, so "simple" would cut words
# in two; they use a Unicode word pattern instead (about four times slower).
WORD_REGEX_SCRIPTS = frozenset({
    "Beng", "Cakm", "Deva", "Gujr", "Guru", "Knda", "Khmr", "Limb", "Mlym", "Mtei", "Mymr", "Orya", "Sinh", "Taml",
    "Telu", "Thaa", "Tibt",
})
WORD_PATTERN = r"[\p{L}\p{M}\p{N}]+"

# Analyzers built into Elasticsearch 8/9 (no plugin needed). The language
# rules also name plugin analyzers (kuromoji, smartcn, nori, icu_analyzer,
# ukrainian); a cluster may lack those, so such languages fall back to
# "standard" (and kuromoji/smartcn are never needed: ja and zh are
# pre-segmented).
ES_UNSTEMMED_ANALYZER = "standard"
# The custom analyzer (declared by the Elasticsearch backend) for text that
# was segmented in Python: whitespace split + lowercase, like tantivy's.
ES_PRESEGMENTED_ANALYZER = "babelbench_presegmented"


@dataclass(frozen=True)
class AnalysisPlan:
    """The analysis of one language's index, for both engines.

    ``presegment``: segment text in Python and join the words with spaces
    before it reaches the engine; ``python_stemmer`` (a Snowball name) also
    lower-cases and stems those words there. ``tantivy_stemmer`` is None when
    stemming is off or tantivy has no stemmer for the language.
    """

    lang: str
    presegment: bool
    tantivy_tokenizer: TantivyTokenizer
    tantivy_stemmer: str | None
    es_analyzer: str
    python_stemmer: str | None = None


def plan_for(lang: str, stem: bool) -> AnalysisPlan:
    """The analysis of ``lang``; an unknown language is the ``ConfigError`` of ``rule_for``."""
    rule = rule_for(lang)
    python_stemmer = rule.stemmer if stem and rule.stemmer and rule.stemmer not in TANTIVY_STEMMERS else None
    if rule.needs_segmentation or python_stemmer:
        return AnalysisPlan(lang, True, "whitespace", None, ES_PRESEGMENTED_ANALYZER, python_stemmer)
    tokenizer: TantivyTokenizer = "word_regex" if rule.script in WORD_REGEX_SCRIPTS else "simple"
    stemmer = rule.stemmer if stem and rule.stemmer in TANTIVY_STEMMERS else None
    analyzer = rule.analyzer if stem and rule.analyzer in ES_BUILTIN_ANALYZERS else ES_UNSTEMMED_ANALYZER
    return AnalysisPlan(lang, False, tokenizer, stemmer, analyzer)


@lru_cache(maxsize=None)
def _snowball(name: str) -> Callable[[list[str]], list[str]]:
    """PyStemmer's stemmer ``name`` (one per process: it is a C object that keeps a cache)."""
    import Stemmer

    return Stemmer.Stemmer(name).stemWords


def _segmented(text: str, plan: AnalysisPlan) -> str:
    if not plan.presegment:
        return text
    words = tokenize(text, plan.lang)
    if plan.python_stemmer:
        words = _snowball(plan.python_stemmer)([word.lower() for word in words])
    return " ".join(words)


def prepare_document(title: str, text: str, plan: AnalysisPlan, truncate_body: bool) -> tuple[str, str]:
    """(title, body) as the engine indexes them.

    Only the body is cut to the CLIRMatrix length (titles are short and are
    what queries match); cutting comes first so a segmenter never spends time
    on text that is thrown away.
    """
    body = truncate(text, plan.lang) if truncate_body else text
    return _segmented(title, plan), _segmented(body, plan)


def prepare_query(query: str, plan: AnalysisPlan) -> str:
    """The query text the engine analyses: segmented like the documents were."""
    return _segmented(query, plan)
