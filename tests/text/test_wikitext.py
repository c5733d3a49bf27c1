"""Wikitext cleaning on small hand-written strings; every expected text was worked out by hand."""

from __future__ import annotations

import pytest

from tasks.text.wikitext import clean_wikitext, name_key, read_wikitext

UK = {0: "", 6: "Файл", 10: "Шаблон", 14: "Категорія"}
JA = {0: "", 6: "ファイル", 10: "Template", 14: "Category"}
RESIDUE = ("{{", "}}", "[[", "]]", "<ref", "'''", "{|")


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        pytest.param("Столиця — [[Київ|місто Київ]], не [[Львів]]а.", "Столиця — місто Київ, не Львіва.", id="links keep label or title"),
        pytest.param("Відстань {{convert|5|km|mi}} від центру.", "Відстань від центру.", id="template inside text"),
        pytest.param(
            'Факт.<ref name="a">Джерело {{cite web|url=https://x.example|title=X}}</ref> Далі<ref name="a"/>.',
            "Факт. Далі.",
            id="refs, with content and self-closing",
        ),
        pytest.param("Перед\n{| class=\"wikitable\"\n|-\n! Рік !! Подія\n|-\n| 1991 || Незалежність\n|}\nПісля", "Перед\n\nПісля", id="table"),
        pytest.param("Текст.\n[[Категорія:Фізики України|Комар]]\n[[Category:Physicists]]", "Текст.", id="localised and canonical categories"),
        pytest.param("[[Файл:Photo.jpg|thumb|200px|Підпис із [[посилання]]]]Текст.", "Текст.", id="localised file link with caption"),
        pytest.param("[[Image:Old.png|thumb|Old caption]] [[File:New.svg|left]]Текст", "Текст", id="canonical file links"),
        pytest.param("Див. [[:Категорія:Фізики|список фізиків]].", "Див. список фізиків.", id="visible category link"),
        pytest.param("Вступ\n== Історія ==\nТекст", "Вступ\n\nІсторія\n\nТекст", id="heading on its own line"),
        pytest.param("'''Київ''' — ''столиця'' '''''України'''''", "Київ — столиця України", id="bold and italic quotes"),
        pytest.param("<small>дрібно</small> <span style=\"color:red\">червоно</span><br/>далі", "дрібно червоно\nдалі", id="html tags keep inner text"),
        pytest.param("__TOC__Текст __NOTOC__ кінець", "Текст кінець", id="behaviour switches"),
        pytest.param("а<!-- прихований коментар -->б", "аб", id="comment"),
        pytest.param("Текст [[en:Physics]] [[wikt:слово|слово]]", "Текст слово", id="language link dropped, labelled interwiki kept"),
        pytest.param("[https://example.org Приклад] і https://bare.example [https://nolabel.example]", "Приклад і https://bare.example", id="external links"),
        pytest.param("A&nbsp;B &amp; C", "A B & C", id="entities"),
        pytest.param("а   б\t в\n\n\n\nг", "а б в\n\nг", id="whitespace collapses, paragraph break kept"),
        pytest.param("x<math>e^{i\\pi}</math>y<gallery>A.jpg|a</gallery>z", "xyz", id="non-prose tags dropped"),
    ],
)
def test_clean_wikitext_examples(wikitext: str, expected: str) -> None:
    assert clean_wikitext(wikitext, UK) == expected


def test_japanese_file_and_category_names_come_from_the_namespace_map() -> None:
    wikitext = "[[ファイル:Tokyo.jpg|thumb|東京の写真]]'''東京'''は[[日本]]の首都。\n[[Category:日本の都市]]"
    assert clean_wikitext(wikitext, JA) == "東京は日本の首都。"
    # Without the localised name, "ファイル:" is just a link target and its caption leaks.
    assert "東京の写真" in clean_wikitext(wikitext, {0: ""})


def test_malformed_markup_leaves_no_residue() -> None:
    wikitext = "Початок {{незакритий шаблон і [[незакрите посилання та '''жирний\n{| незакрита таблиця\n<ref>незакрите"
    text = clean_wikitext(wikitext, UK)
    assert not [token for token in RESIDUE if token in text]
    assert text.startswith("Початок")


def test_read_wikitext_collects_templates_and_categories() -> None:
    wikitext = (
        "{{Шаблон:Disambig}} {{ infobox_person |name={{nested one}} }} текст "
        "[[Категорія:Фізики_України|sort]] [[category:Physicists]] [[:Категорія:Не тут]]"
    )
    page = read_wikitext(wikitext, UK)
    assert page.templates == {"disambig", "infobox person", "nested one"}
    assert page.categories == {"фізики україни", "physicists"}
    assert page.text == "текст Категорія:Не тут"  # a leading colon makes a visible link, not a filing


def test_name_key_normalises_like_mediawiki_titles() -> None:
    assert name_key("  Set_index__article ") == "set index article"
    assert name_key("Неоднозначність") == name_key("неоднозначність")


def test_spaces_collapse_inside_lines_and_paragraphs_keep_one_blank_line() -> None:
    # tabs, a no-break space, an ideographic space and a carriage return are spaces; a line's ends are trimmed;
    # four line breaks are one blank line; a behaviour switch goes, a URL's double underscore stays
    text = " a \t b\xa0\xa0c \n\n\n\n  d\u3000e \r\n f __NOTOC__ \nx__y "
    assert clean_wikitext(text, {}) == "a b c\n\nd e\nf\nx__y"


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        pytest.param("{| class=\"wikitable\"\n| a\n|}\nПісля", "Після", id="table on the first line"),
        pytest.param("  {|\n| a\n|}\nПісля", "Після", id="indented table on the first line"),
        pytest.param("== Історія ==\nТекст", "Історія\n\nТекст", id="heading on the first line"),
        pytest.param("* пункт\n# номер\n; термін: визначення\n----\nкінець", "пункт\nномер\nтермін визначення\n\nкінець",
                     id="list, definition and rule markers, the first line included"),
    ],
)
def test_line_start_markup_is_read_on_the_first_line_too(wikitext: str, expected: str) -> None:
    assert clean_wikitext(wikitext, UK) == expected


def test_a_template_name_with_braces_before_its_first_pipe_is_read_whole() -> None:
    page = read_wikitext("а {{#if:{{{a|}}}|x}} б {{Cite web |title=T}}", UK)
    assert {"#if:{{{a|}}}", "cite web"} <= page.templates
    assert page.text == "а б"


def test_every_unicode_space_inside_a_line_becomes_one_plain_space() -> None:
    # Every character Unicode (as Python reads it) calls a space, the newline apart: runs of them are one space
    # inside a line and nothing at its ends; only "\n" ends a line.
    others = [chr(c) for c in range(0x110000) if chr(c).isspace() and chr(c) != "\n"]
    assert len(others) > 20
    assert clean_wikitext("a" + "".join(others) + "b", {}) == "a b"
    for space in others:
        assert clean_wikitext(f"{space}a{space}b{space}{space}\n{space}c{space}\n\n\n\nd", {}) == "a b\nc\n\nd", hex(ord(space))
