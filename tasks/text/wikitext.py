"""Wikitext to plain text, and the template and category names a page uses.

Retrieval and question generation need the prose a reader sees, not markup:
templates, references, tables and media are dropped, links keep what they
display. Namespace prefixes are localised (``Kategorie:``, ``Категорія:``), so
callers pass the wiki's own names from ``<siteinfo>``; MediaWiki's canonical
English names are accepted too because every wiki understands them.

The conversion is a handful of regular-expression passes over the string
rather than a parse tree: on real articles a tree (mwparserfromhell's) costs a
Python object per node, most of them inside what the text drops anyway
(infobox and citation templates, references, tables), which made cleaning
five times slower than wikiextractor. Brackets that nest (templates, tables,
links in image captions) are matched with a stack or innermost first; anything
left unbalanced is removed by the residue filter at the end, so the output
carries no markup either way.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Mapping
from dataclasses import dataclass

from mwparserfromhell.definitions import URI_SCHEMES

FILE_NAMESPACE = 6
TEMPLATE_NAMESPACE = 10
CATEGORY_NAMESPACE = 14
CANONICAL_NAMESPACE_NAMES: dict[int, tuple[str, ...]] = {
    FILE_NAMESPACE: ("File", "Image"),
    TEMPLATE_NAMESPACE: ("Template",),
    CATEGORY_NAMESPACE: ("Category",),
}

# Tags whose content is not running prose (citations, tables, maths, media,
# code, page-rendering directives); every other tag keeps its inner text.
_DROPPED_TAGS = frozenset(
    {
        "ref", "references", "table", "gallery", "math", "chem", "ce", "timeline", "imagemap",
        "score", "graph", "mapframe", "maplink", "templatestyles", "templatedata", "hiero",
        "inputbox", "categorytree", "syntaxhighlight", "source", "indicator", "includeonly",
        "style", "script",
    }
)  # fmt: skip

# Comments first (they may hide any markup), then dropped tags with their
# content (a reference's citation templates go with it), then templates and
# tables by bracket matching.
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_DROPPED_NAMES = "|".join(sorted(_DROPPED_TAGS))
# (The content up to the first closing tag is taken in runs without "<" rather than one character at a time.)
_DROPPED_ELEMENT = re.compile(
    rf"<(?:(?P<name>{_DROPPED_NAMES})\b[^<>]*?/>"
    rf"|(?P<open>{_DROPPED_NAMES})\b[^<>]*(?<!/)>(?:[^<]++|<(?!/(?P=open)\s*>))*+</(?P=open)\s*>)",
    re.IGNORECASE | re.DOTALL,
)
# Template and argument braces anywhere; a table's braces only at the start of a line, as MediaWiki reads them.
# Patterns about line starts match the newline before the line, on the text with a newline put in front: a
# pattern that starts with a character lets ``re`` skip to its next occurrence, where ``^`` is tried everywhere
# (3-10x slower on wikitext).
# Without a "{|" a text has no table, and its table closers would be skipped anyway: templates alone are scanned
# for, at half the cost. (Capturing groups to tell the brackets apart made the scan three times slower.)
_BRACKET = re.compile(r"\{\{|\}\}|\n[ \t]*(?:\{\||\|\}(?!\}))")
_TEMPLATE_BRACKET = re.compile(r"\{\{|\}\}")
_OPEN_TEMPLATE, _OPEN_TABLE, _CLOSE_TABLE = "{{", "{|", "|}"
# Then what the text keeps something of. A link's target holds no brackets,
# pipe or newline, its label no other link (single brackets are fine: "[[A#n|[1]]]");
# matching only such links renders an image caption's links before the image
# itself is dropped, and external links go after, as their labels may hold links.
# (Runs of plain characters taken whole and never given back, "++" and "*+": the same matches, a third faster.)
_INNER_LINK = re.compile(r"\[\[([^\[\]|\n]*)(?:\|((?:[^\[\]]++|\[(?!\[)|\](?!\]))*+))?\]\]")
# MediaWiki's URL schemes (mwparserfromhell keeps the list): most need "//", a few ("mailto:") must not have it.
_URL_START = "|".join(
    f"{re.escape(scheme)}:{'//' if slashes else ''}" for scheme, slashes in sorted(URI_SCHEMES.items(), key=lambda item: -len(item[0]))
)
# As MediaWiki reads them: the URL ends at any space (U+3000 included), the label runs to "]" on the same line.
_EXTERNAL_LINK = re.compile(rf"\[(?<!\[\[)((?:{_URL_START}|//)[^\s\[\]<>\"]+)[^\S\n]*([^\]\n]*)\]", re.IGNORECASE)
_HEADING = re.compile(r"\n(=+)[ \t]*(.*?)[ \t]*\1[ \t]*$", re.MULTILINE)
_DEFINITION = re.compile(r"\n(;[^:\n]*):")  # ";term: definition" puts both on one line
_LINE_START_MARKUP = re.compile(r"\n(?:[*#:;]+|-{4,})")  # list and indent markers, rules
_LINE_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
# Bold and italic: two, three or five quotes show nothing, four are an
# apostrophe before bold and each quote past five an apostrophe, as MediaWiki
# renders them. Markup removed between two quotes leaves a gap mark, so that
# "''{{lang|…}}''" (empty italics) does not turn into four quotes.
_QUOTES = re.compile(r"''+")
_GAP = "\x00"
# The dropped tags are gone; others keep their content. Removed before the
# residue filter, so "'<nowiki/>'" becomes a run of quotes it then removes.
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")

# Language and interwiki prefixes are lowercase ASCII codes by convention
# ("en:", "wikt:", "zh-yue:"); article titles start with a capital on
# first-letter wikis, so this does not swallow titles such as "Re: Zero".
_INTERWIKI_PREFIX = re.compile(r"[a-z][a-z0-9-]*")
# "__NOTOC__", "__БЕЗЗМІСТУ__", but not the "__" inside a URL or a word.
_BEHAVIOUR_SWITCH = re.compile(r"(?<![^\W_])__(?:[^\W_]|_(?!_))+__")
# Safety net for markup the parser left as text (unbalanced brackets, unclosed
# tags): the output promises to carry none of it.
_RESIDUE = re.compile(r"\{\{|\}\}|\[\[|\]\]|\{\||\|\}|'{2,}|</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")
# what each of _RESIDUE's alternatives starts with (a substring test is far cheaper than the pattern)
_RESIDUE_MARKS = ("{{", "}}", "[[", "]]", "{|", "|}", "''", "<")
_BLANK_LINES = re.compile(r"\n\n\n+")  # (not "\n{3,}": a literal start is 10x faster to look for)


def name_key(name: str) -> str:
    """Compare page, template and namespace names the way MediaWiki does, minus first-letter subtleties.

    Underscores and spaces are the same character in titles and runs of them
    collapse; case is folded entirely because the marker lists are matched
    case-insensitively.
    """
    return " ".join(name.replace("_", " ").split()).casefold()


# Template and category names repeat across a whole wiki; keying each distinct one once is enough.
cached_name_key = functools.lru_cache(maxsize=1 << 16)(name_key)


def _namespace_keys(namespaces: Mapping[int, str], key: int) -> frozenset[str]:
    """The keys of every name a namespace answers to: the localised one and the canonical ones."""
    names = [*CANONICAL_NAMESPACE_NAMES.get(key, ()), namespaces.get(key, "")]
    return frozenset(name_key(name) for name in names if name)


def _split_prefix(title: str) -> tuple[str, str]:
    """(prefix, rest) of a link target; prefix is "" when there is no colon."""
    prefix, colon, rest = title.strip().lstrip(":").partition(":")
    return (prefix.strip(), rest) if colon else ("", title.strip().lstrip(":"))


def _template_name(text: str, start: int, end: int) -> str:
    """The name of the template whose text between the braces is ``text[start:end]``: up to the first ``|`` outside
    nested braces. Found without copying the template (an infobox holds kilobytes, and each nested one is named)."""
    pipe = text.find("|", start, end)
    stop = end if pipe < 0 else pipe
    if text.find("{", start, stop) < 0 and text.find("}", start, stop) < 0:  # no nested braces before it: most names
        return text[start:stop].strip()
    inner = text[start:end]
    depth = 0
    for index, char in enumerate(inner):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "|" and depth <= 0:
            return inner[:index].strip()
    return inner.strip()


def _gap(removed: re.Match[str]) -> str:
    """What replaces removed markup: nothing, or a gap mark when it sat between two quotes."""
    text, start, end = removed.string, removed.start(), removed.end()
    return _GAP if text[start - 1:start] == text[end:end + 1] == "'" else ""


def _apostrophes(quotes: re.Match[str]) -> str:
    run = len(quotes.group())
    return "'" if run == 4 else "'" * max(run - 5, 0)


@dataclass(frozen=True)
class PageText:
    """A page's plain text plus the names that classify it.

    ``templates`` are name keys of the templates it transcludes (without a
    ``Template:`` prefix) and ``categories`` those of the categories it is
    filed in; both are gathered while rendering, so a page is parsed and walked
    once.
    """

    text: str
    templates: frozenset[str]
    categories: frozenset[str]


class WikitextReader:
    """Reads the pages of one wiki into :class:`PageText`.

    A wiki names dozens of namespaces; their keys are made once here rather
    than for every page.
    """

    def __init__(self, namespaces: Mapping[int, str]) -> None:
        self.file_ns = _namespace_keys(namespaces, FILE_NAMESPACE)
        self.category_ns = _namespace_keys(namespaces, CATEGORY_NAMESPACE)
        self.template_ns = _namespace_keys(namespaces, TEMPLATE_NAMESPACE)
        self.local_ns = frozenset(name_key(name) for name in namespaces.values() if name)

    def read(self, wikitext: str) -> PageText:
        """Plain text of a page's wikitext with the templates and categories it uses."""
        renderer = _Renderer(self)
        text = _tidy(renderer.render(wikitext))
        return PageText(text, frozenset(renderer.templates), frozenset(renderer.categories))


@functools.lru_cache(maxsize=1 << 16)
def _template_key(name: str, template_ns: frozenset[str]) -> str:
    """The key of a transcluded template's name, without a ``Template:`` prefix in any of its spellings."""
    prefix, rest = _split_prefix(name)
    return name_key(rest if name_key(prefix) in template_ns else name)


class _Renderer:
    """Turns one page's wikitext into the text a reader sees, noting templates and categories on the way."""

    def __init__(self, wiki: WikitextReader) -> None:
        self.wiki = wiki
        self.templates: set[str] = set()
        self.categories: set[str] = set()

    def render(self, wikitext: str) -> str:
        text = self._strip_blocks(wikitext)
        if "[" in text:
            while "[[" in text:
                rendered = _INNER_LINK.sub(self._wikilink, text)
                if rendered == text:
                    break
                text = rendered
            text = _EXTERNAL_LINK.sub(lambda match: match.group(2) or "", text)
        text = _HEADING.sub(lambda match: f"\n\n\n{match.group(2)}\n", "\n" + text)  # (each keeps the newline)
        text = _LINE_START_MARKUP.sub("\n", _DEFINITION.sub("\n\\1 ", text))[1:]
        if "<" in text:
            text = _HTML_TAG.sub(_gap, _LINE_BREAK.sub("\n", text))
        if "''" in text:
            text = _QUOTES.sub(_apostrophes, text)
        text = text.replace(_GAP, "")
        if "__" in text:  # (the pattern's lookbehind is tried at every position: most pages have no switch)
            text = _BEHAVIOUR_SWITCH.sub("", text)
        return _ENTITY.sub(lambda match: html.unescape(match.group()), text) if "&" in text else text

    def _note_template(self, name: str) -> None:
        self.templates.add(_template_key(name, self.wiki.template_ns))

    def _strip_blocks(self, wikitext: str) -> str:
        """``wikitext`` without comments, dropped tags, templates and tables, noting template names.

        Braces are matched with a stack; an unbalanced opener stays in the text
        (the residue filter removes it). Templates nested in a template's
        parameters are noted too; those inside a table are not, since the
        table is dropped unread.
        """
        text = _DROPPED_ELEMENT.sub(_gap, _COMMENT.sub(_gap, wikitext))
        if "{" not in text:
            return text
        text = "\n" + text  # a table at the very start is at a line start too (see _BRACKET)
        stack: list[tuple[bool, int]] = []  # (is a table, start) of the open brackets
        tables = 0  # open tables in the stack: a template inside one is not noted
        spans: list[tuple[int, int]] = []  # outermost matched spans, in order
        for match in (_BRACKET if "{|" in text else _TEMPLATE_BRACKET).finditer(text):
            bracket = match.group()[-2:]
            if bracket == _OPEN_TEMPLATE:
                stack.append((False, match.start()))
                continue
            if bracket == _OPEN_TABLE:
                stack.append((True, match.start() + 1))  # a table starts after its newline
                tables += 1
                continue
            table = bracket == _CLOSE_TABLE
            depth = len(stack) - 1 if stack and stack[-1][0] == table else next(
                (i for i in range(len(stack) - 2, -1, -1) if stack[i][0] == table), None)
            if depth is None:
                continue  # a closer without its opener stays as text
            start = stack[depth][1]
            tables -= sum(is_table for is_table, _ in stack[depth:])
            del stack[depth:]
            if not table and not tables:
                self._note_template(_template_name(text, start + 2, match.start()))
            if not stack:
                while spans and spans[-1][0] >= start:
                    spans.pop()
                spans.append((start, match.end()))
        pieces, at = [], 1
        for start, end in spans:
            pieces += [text[at:start], _GAP if text[start - 1:start] == text[end:end + 1] == "'" else ""]
            at = end
        pieces.append(text[at:])
        return "".join(pieces)

    def _wikilink(self, match: re.Match[str]) -> str:
        title, label = match.group(1, 2)
        if ":" not in title:  # most links: no namespace, no interwiki
            return label if label is not None and label.strip() != "" else title.strip()
        title = title.strip()
        prefix, rest = _split_prefix(title)
        key = cached_name_key(prefix) if prefix else ""  # (most links have no prefix)
        if not title.startswith(":"):
            if key in self.wiki.category_ns:
                self.categories.add(cached_name_key(rest))
                return ""
            if key in self.wiki.file_ns:
                return ""
        has_label = label is not None and label.strip() != ""
        if prefix and key not in self.wiki.local_ns and _INTERWIKI_PREFIX.fullmatch(prefix) and not has_label:
            return ""
        return label if has_label else title.lstrip(":")


def _tidy(text: str) -> str:
    """Strip leftover markup, collapse spaces inside lines and keep single blank lines between paragraphs.

    Each line's words are joined by single spaces (``str.split`` cuts at every Unicode space, which is one pass in
    C rather than one per kind of space), then runs of blank lines become one. The residue net runs only where
    one of its marks is left (rarely).
    """
    if any(mark[0] in text and mark in text for mark in _RESIDUE_MARKS):  # (one character is found 10x faster)
        text = _RESIDUE.sub("", text)
    text = "\n".join([" ".join(line.split()) for line in text.split("\n")])
    return _BLANK_LINES.sub("\n\n", text).strip()


def read_wikitext(wikitext: str, namespaces: Mapping[int, str]) -> PageText:
    """Plain text of a page's wikitext with the templates and categories it uses (one page; a dump's pages go
    through one :class:`WikitextReader`)."""
    return WikitextReader(namespaces).read(wikitext)


def clean_wikitext(wikitext: str, namespaces: Mapping[int, str]) -> str:
    """Plain text of a page's wikitext: prose, link labels and headings, without markup."""
    return read_wikitext(wikitext, namespaces).text
