"""Wikitext to plain text, and the template and category names a page uses.

Retrieval and question generation need the prose a reader sees, not markup:
templates, references, tables and media are dropped, links keep what they
display. Namespace prefixes are localised (``Kategorie:``, ``Категорія:``), so
callers pass the wiki's own names from ``<siteinfo>``; MediaWiki's canonical
English names are accepted too because every wiki understands them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import mwparserfromhell
from mwparserfromhell.nodes import (
    ExternalLink,
    Heading,
    HTMLEntity,
    Node,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

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
_LINE_BREAK_TAGS = frozenset({"br"})

# Language and interwiki prefixes are lowercase ASCII codes by convention
# ("en:", "wikt:", "zh-yue:"); article titles start with a capital on
# first-letter wikis, so this does not swallow titles such as "Re: Zero".
_INTERWIKI_PREFIX = re.compile(r"[a-z][a-z0-9-]*")
_BEHAVIOUR_SWITCH = re.compile(r"__(?:[^\W_]|_(?!_))+__")
# Safety net for markup the parser left as text (unbalanced brackets, unclosed
# tags): the output promises to carry none of it.
_RESIDUE = re.compile(r"\{\{|\}\}|\[\[|\]\]|\{\||\|\}|'{2,}|</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>")
_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def name_key(name: str) -> str:
    """Compare page, template and namespace names the way MediaWiki does, minus first-letter subtleties.

    Underscores and spaces are the same character in titles and runs of them
    collapse; case is folded entirely because the marker lists are matched
    case-insensitively.
    """
    return " ".join(name.replace("_", " ").split()).casefold()


def _namespace_keys(namespaces: Mapping[int, str], key: int) -> frozenset[str]:
    """The keys of every name a namespace answers to: the localised one and the canonical ones."""
    names = [*CANONICAL_NAMESPACE_NAMES.get(key, ()), namespaces.get(key, "")]
    return frozenset(name_key(name) for name in names if name)


def _split_prefix(title: str) -> tuple[str, str]:
    """(prefix, rest) of a link target; prefix is "" when there is no colon."""
    prefix, colon, rest = title.strip().lstrip(":").partition(":")
    return (prefix.strip(), rest) if colon else ("", title.strip().lstrip(":"))


def _strip(code: Wikicode) -> str:
    return code.strip_code().strip()


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


class _Renderer:
    """Turns parsed wikitext into the text a reader sees, noting templates and categories on the way."""

    def __init__(self, namespaces: Mapping[int, str]) -> None:
        self.file_ns = _namespace_keys(namespaces, FILE_NAMESPACE)
        self.category_ns = _namespace_keys(namespaces, CATEGORY_NAMESPACE)
        self.template_ns = _namespace_keys(namespaces, TEMPLATE_NAMESPACE)
        self.local_ns = {name_key(name) for name in namespaces.values() if name}
        self.templates: set[str] = set()
        self.categories: set[str] = set()

    def render(self, nodes: Iterable[Node]) -> str:
        return "".join(self._node(node) for node in nodes)

    def _code(self, code: Wikicode | None) -> str:
        return self.render(code.nodes) if code is not None else ""

    def _node(self, node: Node) -> str:
        if isinstance(node, Text):
            return _BEHAVIOUR_SWITCH.sub("", node.value)
        if isinstance(node, HTMLEntity):
            return node.normalize()
        if isinstance(node, Wikilink):
            return self._wikilink(node)
        if isinstance(node, ExternalLink):
            return self._code(node.title) if node.brackets else str(node.url)
        if isinstance(node, Heading):
            return f"\n\n{self._code(node.title).strip()}\n"
        if isinstance(node, Tag):
            return self._tag(node)
        if isinstance(node, Template):
            self._note_template(node)
        return ""  # templates, template arguments and comments show nothing

    def _note_template(self, template: Template) -> None:
        name = _strip(template.name)
        prefix, rest = _split_prefix(name)
        self.templates.add(name_key(rest if name_key(prefix) in self.template_ns else name))
        for parameter in template.params:
            for nested in parameter.value.ifilter_templates(recursive=False):
                self._note_template(nested)

    def _wikilink(self, link: Wikilink) -> str:
        title = str(link.title).strip()
        prefix, rest = _split_prefix(title)
        key = name_key(prefix)
        if not title.startswith(":"):
            if key in self.category_ns:
                self.categories.add(name_key(rest))
                return ""
            if key in self.file_ns:
                return ""
        has_label = link.text is not None and str(link.text).strip() != ""
        if prefix and key not in self.local_ns and _INTERWIKI_PREFIX.fullmatch(prefix) and not has_label:
            return ""
        return self._code(link.text) if has_label else title.lstrip(":")

    def _tag(self, tag: Tag) -> str:
        name = str(tag.tag).strip().lower()
        if name in _DROPPED_TAGS:
            return ""
        if name in _LINE_BREAK_TAGS:
            return "\n"
        return self._code(tag.contents)


def _tidy(text: str) -> str:
    """Strip leftover markup, collapse spaces inside lines and keep single blank lines between paragraphs."""
    text = _RESIDUE.sub("", text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def read_wikitext(wikitext: str, namespaces: Mapping[int, str]) -> PageText:
    """Plain text of a page's wikitext with the templates and categories it uses."""
    renderer = _Renderer(namespaces)
    text = _tidy(renderer.render(mwparserfromhell.parse(wikitext).nodes))
    return PageText(text, frozenset(renderer.templates), frozenset(renderer.categories))


def clean_wikitext(wikitext: str, namespaces: Mapping[int, str]) -> str:
    """Plain text of a page's wikitext: prose, link labels and headings, without markup."""
    return read_wikitext(wikitext, namespaces).text
