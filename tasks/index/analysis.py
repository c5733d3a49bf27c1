"""How each language's text is analysed for BM25, derived from its language rule.

Both backends must cut words the same way for a language, or their rankings
stop being comparable. Scripts written without spaces (Chinese, Japanese,
Thai) are therefore segmented here, in Python, by the same segmenter the text
stage uses, and the words are joined with spaces; both engines then only split
on whitespace and lowercase. Every other language uses the engine's own word
tokenizer and stemmer, because analysing in Rust (tantivy) or on the cluster
(Elasticsearch) is many times faster than in Python.

What each engine supports is kept as data below; a new language needs a row in
``tasks/text/languages.csv``, never a branch here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tasks.text.languages import rule_for
from tasks.text.segment import tokenize
from tasks.text.truncate import truncate

TantivyTokenizer = Literal["simple", "word_regex", "whitespace"]

# Snowball stemmers compiled into tantivy 0.27 (rust-stemmers); the names are
# the Snowball names the language rules use. Hindi and Indonesian, for
# instance, have Snowball stemmers but not in tantivy, so they go unstemmed.
TANTIVY_STEMMERS = frozenset({
    "arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek", "hungarian",
    "italian", "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "tamil", "turkish",
})

# tantivy's fast "simple" tokenizer splits on any character that is not
# alphanumeric. In these scripts (ISO 15924 codes) a word contains a virama or
# another combining mark that is not alphabetic, so "simple" would cut words
# in two; they use a Unicode word pattern instead (about four times slower).
WORD_REGEX_SCRIPTS = frozenset({
    "Beng", "Deva", "Gujr", "Guru", "Knda", "Khmr", "Mlym", "Mymr", "Orya", "Sinh", "Taml", "Telu", "Tibt",
})
WORD_PATTERN = r"[\p{L}\p{M}\p{N}]+"

# Analyzers built into Elasticsearch 8/9 (no plugin needed). The language
# rules also name plugin analyzers (kuromoji, smartcn, nori, icu_analyzer,
# ukrainian); a cluster may lack those, so such languages fall back to
# "standard" (and kuromoji/smartcn are never needed: ja and zh are
# pre-segmented).
ES_BUILTIN_ANALYZERS = frozenset({
    "arabic", "armenian", "basque", "bengali", "brazilian", "bulgarian", "catalan", "cjk", "czech",
    "danish", "dutch", "english", "estonian", "finnish", "french", "galician", "german", "greek",
    "hindi", "hungarian", "indonesian", "irish", "italian", "latvian", "lithuanian", "norwegian",
    "persian", "portuguese", "romanian", "russian", "serbian", "sorani", "spanish", "swedish",
    "thai", "turkish",
})
ES_UNSTEMMED_ANALYZER = "standard"
# The custom analyzer (declared by the Elasticsearch backend) for text that
# was segmented in Python: whitespace split + lowercase, like tantivy's.
ES_PRESEGMENTED_ANALYZER = "babelbench_presegmented"


@dataclass(frozen=True)
class AnalysisPlan:
    """The analysis of one language's index, for both engines.

    ``presegment``: segment text in Python and join the words with spaces
    before it reaches the engine. ``tantivy_stemmer`` is None when stemming is
    off or tantivy has no stemmer for the language.
    """

    lang: str
    presegment: bool
    tantivy_tokenizer: TantivyTokenizer
    tantivy_stemmer: str | None
    es_analyzer: str


def plan_for(lang: str, stem: bool) -> AnalysisPlan:
    """The analysis of ``lang``; an unknown language is the ``ConfigError`` of ``rule_for``."""
    rule = rule_for(lang)
    if rule.needs_segmentation:
        return AnalysisPlan(lang, True, "whitespace", None, ES_PRESEGMENTED_ANALYZER)
    tokenizer: TantivyTokenizer = "word_regex" if rule.script in WORD_REGEX_SCRIPTS else "simple"
    stemmer = rule.stemmer if stem and rule.stemmer in TANTIVY_STEMMERS else None
    analyzer = rule.analyzer if stem and rule.analyzer in ES_BUILTIN_ANALYZERS else ES_UNSTEMMED_ANALYZER
    return AnalysisPlan(lang, False, tokenizer, stemmer, analyzer)


def _segmented(text: str, plan: AnalysisPlan) -> str:
    return " ".join(tokenize(text, plan.lang)) if plan.presegment else text


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
