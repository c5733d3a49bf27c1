"""The demo's XRAG-format sample: the bundled questions with the sample's own articles, in XRAG's release layout.

``xrag_questions.yaml`` holds cross-document questions written for the sample
world (their text in English, German and French, their type, and the English
titles of the two articles each needs and of two distractors).  This module
writes them as the released ``xrag.*.jsonl`` files are laid out — so the demo
imports them with ``babelbench import xrag`` like a real release — one line
per question and non-English language, in XRAG's multilingual-retrieval
setting: one supporting article in the question's language and one in
English, with one distractor in each.  The articles are the bodies of
``articles/*.yaml`` as plain text, so every answer is in what the model is
shown and in the corpus the demo builds; each is given with its URL on the
sample's wiki (the release's ``urls``), which names it in that corpus when
the benchmark is published.

Written rather than bundled: the file is derived from the YAML, so a fix to an
article reaches the questions' documents, and the repository keeps one copy.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from pydantic import Field

from tasks.errors import ConfigError
from tasks.sample.mirror import CONTENT_DIR, SampleContent, _read_yaml, _Spec, load_content
from tasks.text.wikitext import clean_wikitext
from tasks.warehouse.atomic import atomic_write_text

QUESTIONS_FILE = Path(__file__).with_name("xrag_questions.yaml")
#: The question languages written (XRAG's headline is over non-English languages; English is the pivot).
LANGS = ("de", "fr")
SETTING = "multilingual_retrieval"


class _Asked(_Spec):
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)


class SampleQuestion(_Spec):
    """One question of ``xrag_questions.yaml``."""

    id: str = Field(pattern=r"^[a-z0-9-]+$")
    type: Literal["aggregation", "comparison", "multihop", "set"]
    support: tuple[str, str]
    distractors: tuple[str, str]
    en: _Asked
    de: _Asked
    fr: _Asked


class _QuestionFile(_Spec):
    questions: tuple[SampleQuestion, ...] = Field(min_length=1)


def load_questions(path: Path = QUESTIONS_FILE) -> list[SampleQuestion]:
    """The questions, checked like the sample's articles (a bad entry is named by its position); ids unique."""
    questions = list(_read_yaml(path, _QuestionFile).questions)
    for position, question in enumerate(questions):
        if any(seen.id == question.id for seen in questions[:position]):
            raise ConfigError(f"{path}: questions.{position}: id {question.id!r} is used twice")
    return questions


def _article_texts(content: SampleContent) -> dict[tuple[str, str], tuple[str, str]]:
    """(English title, language) → the article's plain text and its URL on the sample's wiki (the wiki's base
    URL's folder and the title as MediaWiki writes it), for every topic with an English article."""
    sites = {site.lang: site for site in content.wikis}
    return {(topic.articles["en"].title, lang): (
        clean_wikitext(article.body, sites[lang].namespaces),
        sites[lang].base.rsplit("/", 1)[0] + "/" + quote(article.title.replace(" ", "_")))
        for topic in content.topics if "en" in topic.articles
        for lang, article in topic.articles.items()}


def xrag_lines(questions: list[SampleQuestion], texts: Mapping[tuple[str, str], tuple[str, str]]) -> list[dict]:
    """One release-format line per question and language of :data:`LANGS` (see the module notes)."""
    lines = []
    for question in questions:
        for lang in LANGS:
            shown = [(question.support[0], lang), (question.support[1], "en"),
                     (question.distractors[0], lang), (question.distractors[1], "en")]
            missing = [f"{title!r} in {code}" for title, code in shown if (title, code) not in texts]
            if missing:
                raise ConfigError(f"{QUESTIONS_FILE}: question {question.id!r} ({lang}) needs articles the sample"
                                  f" lacks: {', '.join(missing)}")
            order = list(range(len(shown)))
            random.Random(f"{question.id}:{lang}").shuffle(order)  # supporting articles are not always first
            asked: _Asked = getattr(question, lang)
            lines.append({"id": f"{question.id}-{lang}", "language": lang, "setting": SETTING,
                          "question": asked.question, "answer": asked.answer,
                          "en_question": question.en.question, "en_answer": question.en.answer,
                          "q_type": question.type, "articles": [texts[key][0] for key in shown],
                          "urls": [texts[key][1] for key in shown],
                          "is_support": [1, 1, 0, 0], "article_order": order})
    return lines


def write_xrag_sample(path: Path, content_dir: Path = CONTENT_DIR, questions_file: Path = QUESTIONS_FILE) -> Path:
    """Write the sample in XRAG's release layout to ``path`` (atomically) and return it."""
    lines = xrag_lines(load_questions(questions_file), _article_texts(load_content(content_dir)))
    atomic_write_text(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path
