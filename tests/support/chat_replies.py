"""What a chat model says to each of babelbench's prompt templates, for the loopback fake endpoint.

The replies have the shapes real chat models give — a preamble, markdown
emphasis, numbered lists, a closing remark — around an answer made from the
instance the prompt asks about (the part after its worked examples), so no
reply repeats a template's example and different items get different
answers.  Their content is mechanical (a model cannot be faked): what the
tests check is that each item is followed through the stages to its status.
:func:`install` makes a :class:`FakeLLMServer` answer every template this
way; :func:`echoing` turns a reply into that of a model that first repeats
its prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.support.fake_llm_server import FakeLLMServer

Responder = Callable[[str], str]


def _after_last(prompt: str, label: str) -> str:
    """The text after the last ``label`` of ``prompt``: the instance's, since the worked examples come first."""
    return prompt[prompt.rindex(label) + len(label):]


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?。！？])\s*", text.strip(), maxsplit=1)[0]


def related(verdict: str = "yes") -> Responder:
    """The relatedness check (xrag_related): the JSON verdict the schema asks for, with a sentence of reasoning."""

    def reply(prompt: str) -> str:
        first = _after_last(prompt, "\nFirst: ").split(". ")[0]
        second = _after_last(prompt, "\nSecond: ").split(". ")[0]
        return json.dumps({"justification": f"I compared {first} with {second}.", "verdict": verdict})

    return reply


def summary(prompt: str) -> str:
    """xrag_summary: the article's first sentence as its summary, in a tag between two remarks."""
    text = _after_last(prompt, "\nArticle (").partition("\n")[2].rsplit("\nSummary:", 1)[0]
    return f"Here is a summary of the article:\n\n<summary>{_first_sentence(text)}</summary>\n\nAll names are kept."


def simple_qa(prompt: str) -> str:
    """xrag_simple_qa: two numbered pairs in markdown, made from the summary's first and last words."""
    words = _after_last(prompt, "\nSummary: ").strip().rstrip(".。").split()
    return ("Here are two questions about the summary:\n\n"
            f"1. **Question:** What does the summary say about {' '.join(words[:2])}?\n"
            f"   **Answer:** {' '.join(words[:5])}\n"
            f"2. **Question:** How does the summary about {' '.join(words[:2])} end?\n"
            f"   **Answer:** {' '.join(words[-4:])}\n")


def typed_questions(prompt: str) -> str:
    """xrag_q_*: as many questions as asked, each after a "Uses:" line naming the n-th fact of A and of B."""
    wanted = re.search(r"Write up to (\d+) ([\w-]+) question", prompt)
    assert wanted is not None, "not a typed-question prompt"
    count, qtype = int(wanted.group(1)), wanted.group(2)
    title_a = _after_last(prompt, "\nArticle A: ").split("\n")[0]
    title_b = _after_last(prompt, "\nArticle B: ").split("\n")[0]
    questions = [f"**Uses:** A{n}, B{n}\n**Question:** What links fact {n} of {title_a} to fact {n} of {title_b}"
                 f" ({qtype})?" for n in range(1, count + 1)]
    return f"Here are {qtype} questions that need both articles:\n\n" + "\n\n".join(questions)


def answer(prompt: str) -> str:
    """xrag_answer: the facts' answers joined, in the tag, after a preamble."""
    facts = _after_last(prompt, "\nFacts: ").split("\n")[0].split(" | ")
    return f"From the facts given:\n\n**Answer:** <answer>{'; '.join(f.rsplit(' — ', 1)[-1] for f in facts)}</answer>"


def eclektic_qa(prompt: str) -> str:
    """eclektic_qa: one labelled pair in markdown made from the passage's opening, then an offer of more."""
    passage = _after_last(prompt, "\nPassage: ").strip()
    return ("Sure! Here is a quiz question about the passage:\n\n"
            f"**Question:** Which words follow “{passage[:24].strip()}” in the text?\n"
            f"**Answer:** {passage[24:48].strip()}\n\nLet me know if you would like another one.")


def prescreen(verdicts: tuple[str, str, str] = ("yes", "yes", "yes")) -> Responder:
    """qc_prescreen: the three verdicts in the JSON object the schema asks for, pretty-printed."""
    natural, answerable, correct = verdicts
    return lambda prompt: json.dumps({"justification": "I checked the item against the documents.", "natural": natural,
                                      "answerable": answerable, "correct": correct}, indent=2)


def distractor_check(verdict: str = "no") -> Responder:
    """distractor_check: the JSON verdict, in a markdown code block as some chat models write it."""
    return lambda prompt: ("```json\n" + json.dumps({"justification": "I read the document with the question in mind.",
                                                      "verdict": verdict}) + "\n```")


def copied_translation(prompt: str) -> str:
    """translate: the target label, then the source text copied unchanged — a small model's failure to translate."""
    target = re.search(r"Translate the last text from \w+ into (\w+)", prompt)
    assert target is not None, "not a translation prompt"
    source_line = prompt.rstrip().rsplit("\n", 1)[-1]  # "<Source>: <text>": chat prompts end with it
    return f"**{target.group(1)}:** {source_line.split(': ', 1)[1]}"


def echoing(reply: str | Responder, *, rewrap: bool = False) -> Responder:
    """A model that repeats its prompt — re-wrapped into one line with ``rewrap`` — and then says ``reply``."""

    def respond(prompt: str) -> str:
        repeated = " ".join(prompt.split()) if rewrap else prompt
        return f"{repeated}\n\n{reply if isinstance(reply, str) else reply(prompt)}"

    return respond


#: A phrase of each template's instruction, found in its prompts only.
NEEDLES = {
    "xrag_related": "Two encyclopedia articles are shown.",
    "xrag_summary": "Summarise the article in",
    "xrag_simple_qa": "simple quiz questions in",
    "xrag_q": "Here are facts from two articles, A and B.",
    "xrag_answer": "Answer the question in",
    "eclektic_qa": "Read the passage and write one quiz question",
    "qc_prescreen": "Check a quiz item against its source documents",
    "distractor_check": "A document is a good distractor only if",
    "translate": "Translate the last text from",
}


def install(server: FakeLLMServer) -> None:
    """Answer every template's prompts as a chat model would: related pairs, passing screens, kept distractors."""
    for template, reply in {
        "xrag_related": related(), "xrag_summary": summary, "xrag_simple_qa": simple_qa, "xrag_q": typed_questions,
        "xrag_answer": answer, "eclektic_qa": eclektic_qa, "qc_prescreen": prescreen(),
        "distractor_check": distractor_check(), "translate": copied_translation,
    }.items():
        server.answer(NEEDLES[template], reply)
