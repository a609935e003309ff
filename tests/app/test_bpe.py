"""Stage 1.2 in AppTest: one sentence cut by the character vocabulary and by the byte-level
BPE, the merges in order, and the merges applied one by one. Expected tokens and IDs come
from the tokenizers themselves (tinyformer.corpus.vocabulary(), the Hugging Face BPE)."""

from __future__ import annotations

import pytest

from tests.app.helpers import (
    ONE_LANG,
    answer,
    assert_clean,
    open_page,
    page_text,
    reveal,
    tables,
    text_above,
)
from tinyformer.bpe import merge_run
from tinyformer.lessons.bpe_corpus import corpus_bpe, corpus_byte_entries
from tinyformer.lessons.corpus import vocabulary
from ui.example import Q1, Q2
from ui.i18n import catalogue

PAGE = "pages/01_bpe.py"


def cuts_on_page(at) -> list[list[list[str]]]:
    """The token tables, in page order, as [rows][columns] of text."""
    return [f.values.tolist() for f in tables(at) if f.index[0] in ("Token", "词元")]


def expected_cuts(text: str) -> tuple[list[list[str]], list[list[str]]]:
    chars, pieces = vocabulary().encode(text), corpus_bpe().encode(text)
    return ([list(chars.tokens), [str(i) for i in chars.ids]],
            [list(pieces.display), [str(i) for i in pieces.ids], list(pieces.hex)])


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return request.param, open_page(PAGE, request.param)


def test_defaults_cut_the_running_example_both_ways(default_page) -> None:
    lang, at = default_page
    assert_clean(at)
    chars, pieces = expected_cuts(Q1)
    shown = cuts_on_page(at)
    assert shown[0] == chars and shown[1] == pieces
    assert pieces[0][13] == "运费谁承担" and "<E5 93>" in pieces[0]  # a word, a partial character
    text = page_text(at)
    assert "\ufffd" not in text.replace("“\ufffd”", "")  # "�" only where the page names it
    assert text.count(catalogue(lang)["bpe.same_True"]) == 2  # both round trips give Q1 back
    assert "E5 93 81" in text  # 品's bytes, cut into <E5 93> + <81>
    assert ("运费 *shipping fee*" in text) == (lang == "en")
    assert "bpe." not in text and "errors." not in text
    # a byte's ID beside its value: the bytes of 商 (E5 95 86), as the vocabulary holds them
    entries = corpus_byte_entries()
    held = next(f for f in tables(at) if f.index[0] == 0 and f.shape[1] == 4)
    assert held.values.tolist() == [[f"{b:02X}", str(b), entries[b].char, str(entries[b].id)]
                                    for b in "商".encode()]
    assert held.values.tolist()[0] == ["E5", "229", "å", "161"]
    assert "「Ġ」" in text and f" {entries[0x20].id}" in text  # the space byte, moved


def test_the_merges_table_is_the_learned_order() -> None:
    at = open_page(PAGE)
    frame = at.dataframe[0].value
    bpe = corpus_bpe()
    assert len(frame) == len(bpe.merges) == 144
    assert list(frame.iloc[0, :3]) == ["<EF>", "<BC>", "<EF BC>"]
    assert list(frame.iloc[:, 2]) == [m.merged_display for m in bpe.merges]
    assert list(frame.iloc[:, 3]) == list(merge_run(bpe, Q1).uses)


def test_the_twin_button_and_a_shared_link_agree() -> None:
    at = open_page(PAGE)
    next(b for b in at.button if Q2 in b.label).click().run()
    assert at.text_input("bpe.text").value == Q2
    linked = open_page(PAGE, params={"bpe.text": Q2})
    assert cuts_on_page(at)[:2] == cuts_on_page(linked)[:2] == list(expected_cuts(Q2))


def test_characters_outside_the_corpus(lang) -> None:
    at = open_page(PAGE, lang)
    at.text_input("bpe.text").input("猫 运费").run()
    assert_clean(at)
    assert len(at.warning) == 1
    warning = at.warning[0].value
    assert "[UNK]" in warning and r"\<E7\> \<8C\> \<AB\>" in warning  # 猫, byte by byte
    chars, pieces = cuts_on_page(at)[:2]
    assert chars[1][:2] == ["1", "1"] and pieces == expected_cuts("猫 运费")[1]
    text = page_text(at)
    assert catalogue(lang)["bpe.same_True"] in text  # BPE gives the text back
    assert catalogue(lang)["bpe.same_False"] in text  # [UNK] does not


def test_an_empty_sentence_gives_one_message_and_the_merges_remain(lang) -> None:
    at = open_page(PAGE, lang)
    at.text_input("bpe.text").input("").run()
    assert not at.exception
    assert [e.value for e in at.error] == [catalogue(lang)["errors.bpe_text_empty"]]
    assert len(at.dataframe) == 1  # the learned merges are still shown


@pytest.mark.parametrize("params", [{"bpe.text": "运" * 41}, {"bpe.k": "999"},
                                    {"bpe.k": "abc"}, {"bpe.k": "-1"}, {"bpe.k": "2.5"}])
def test_a_bad_link_value_gives_one_note_and_the_default(params) -> None:
    at = open_page(PAGE, params=params)
    assert_clean(at)
    assert len(at.error) == 1 and "default" in at.error[0].value
    assert cuts_on_page(at)[:2] == list(expected_cuts(Q1))


@pytest.mark.parametrize("k", [0, 20, 144])
def test_the_first_k_merges_slider_and_its_link(k) -> None:
    bpe = corpus_bpe()
    now = bpe.first_merges(k).encode(Q1)
    at = open_page(PAGE)
    at.slider("_bpe.k~s").set_value(k).run()
    linked = open_page(PAGE, params={"bpe.k": str(k)})
    for page in (at, linked):
        assert_clean(page)
        assert cuts_on_page(page)[2] == [list(now.display), [str(i) for i in now.ids]]
        assert f"After the first {k} merges: **{len(now.ids)}** tokens" in page_text(page)
    if k:
        merge = bpe.merges[k - 1]
        assert f"Merge {k - 1}, the last one applied" in page_text(at)
        assert merge.merged_display.replace("<", r"\<").replace(">", r"\>") in page_text(at)


def test_the_choice_exercise_names_the_first_merge(lang) -> None:
    at = open_page(PAGE, lang)
    assert catalogue(lang)["bpe.ex_explain"] not in page_text(at)
    reveal(at, "bpe.first", 0)
    assert any(catalogue(lang)["bpe.ex_explain"] in s.value for s in at.success)


def test_the_byte_count_exercise_and_its_why() -> None:
    at = open_page(PAGE)
    above = text_above(at, "_bpe.ex.bytes.value")
    steps = "3 + 3 + 1 + 1 + 3 = 11"  # 运费12元: two characters, two digits, one character
    assert "11 bytes" not in above and steps not in page_text(at)  # predict first
    answer(at, "bpe.bytes", 10)
    assert len(at.warning) == 1 and steps in page_text(at)
    answer(at, "bpe.bytes", 11)
    assert len(at.success) == 1
    explained = catalogue("en")["bpe.ex3_explain"]
    assert explained not in page_text(at)
    reveal(at, "bpe.bytes_why", 1)
    assert any(explained in s.value for s in at.success)
