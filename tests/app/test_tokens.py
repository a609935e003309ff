"""Stage 1 in AppTest: token IDs from the classroom vocabulary, the lookup X [N, d],
positions, 「运费」 in both questions, and a left-padded batch."""

from __future__ import annotations

import re

import pytest
import torch

from tests.app.conftest import assert_clean, open_page, page_text, reveal, tables
from tinyformer.positional import sinusoidal
from tinyformer.tokenizer import position_table, random_table
from ui.fmt import num

PAGE = "pages/01_tokens.py"
Q2 = "无理由退货，运费谁承担？"
VOCAB = 72  # 2 specials + the classroom corpus's 70 distinct characters


def table(at, first_row: str):
    """The page's table whose first row is labelled `first_row`."""
    for element in tables(at):
        frame = element
        if len(frame.index) and frame.index[0] == first_row:
            return frame
    raise AssertionError(f"no table starting with {first_row!r}")


def rows_as_text(matrix: torch.Tensor) -> list[list[str]]:
    return [[num(v) for v in row] for row in matrix.tolist()]


def test_defaults_show_ids_shapes_and_the_lookup(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    text = page_text(at)
    ids = table(at, "Token" if lang == "en" else "词元")
    assert list(ids.iloc[1]) == [str(i) for i in range(2, 16)]  # 商品有质量问题，运费谁承担？
    assert str(VOCAB) in text and "[14, 8]" in text
    assert r"x_{0} = E[2]" in text and r"x_{13} = E[15]" in text
    assert r"\mathbb{R}^{14 \times 8}" in text
    assert len(at.info) >= 1  # the random-weights note
    labels = [w.label for kind in ("text_input", "slider", "number_input", "toggle", "button")
              for w in getattr(at, kind)]
    assert not [s for s in [*labels, text] if re.search(r"\btokens\.[a-z]", s)]  # translated


def test_x_rows_are_the_seeded_table_rows_and_positions_add(lang):
    at = open_page(PAGE, lang)
    E, P = random_table(VOCAB, 8, 0), position_table("learned", 32, 8, 0)
    first = "商"
    x = [frame for frame in tables(at) if frame.index[0] == first]
    assert len(x) == 2  # X and X + P, both labelled by token
    assert x[0].values.tolist() == rows_as_text(E[2:16])
    assert x[1].values.tolist() == rows_as_text(E[2:16] + P[:14])
    text = page_text(at)
    assert f"{num(E[2, 0])} + ({num(P[0, 0])}) = {num(E[2, 0] + P[0, 0])}" in text


def test_yunfei_starts_from_the_same_rows_in_both_questions(lang):
    at = open_page(PAGE, lang)
    E, P = random_table(VOCAB, 8, 0), position_table("learned", 32, 8, 0)
    label = "运 · Q1 · pos 8" if lang == "en" else "运 · 问1 · 位置 8"
    before, after = [e for e in tables(at) if e.index[0] == label]
    assert before.values.tolist() == rows_as_text(E[[10, 10, 11, 11]])
    assert after.values.tolist() == rows_as_text(E[[10, 10, 11, 11]] + P[[8, 6, 9, 7]])
    result = at.success[0].value
    assert "10, 11" in result and "0.000" in result
    gap = (P[8:10] - P[6:8]).abs().max()
    assert num(gap) in result


def test_batch_is_left_padded(lang):
    at = open_page(PAGE, lang)
    batch = table(at, "Sentence 1 · tokens" if lang == "en" else "句子 1 · 词元")
    assert list(batch.iloc[4]) == [str(i) for i in [0, 0, 16, 17, 18, 19, 20, 9, 10, 11, 12,
                                                    13, 14, 15]]
    assert list(batch.iloc[5]) == ["0", "0"] + ["1"] * 12
    assert list(batch.iloc[3])[:3] == ["[PAD]", "[PAD]", "无"]
    assert "[2, 14]" in page_text(at)


def test_typing_a_sentence_updates_ids_and_shapes():
    at = open_page(PAGE)
    at.text_input("text").input("运费运费").run()
    assert_clean(at)
    assert list(table(at, "Token").iloc[1]) == ["10", "11", "10", "11"]
    text = page_text(at)
    assert "[4, 8]" in text and r"x_{3} = E[11]" in text
    assert len(table(at, "10 · 运")) == 2  # two distinct rows of E for four positions
    # The batch now pads sentence 1 to the twin's length.
    batch = table(at, "Sentence 1 · tokens")
    assert list(batch.iloc[1]) == ["0"] * 8 + ["10", "11", "10", "11"]


def test_twin_button_and_shared_link_agree():
    at = open_page(PAGE)
    at.button[1].click().run()
    assert at.text_input("text").value == Q2
    from_button = list(table(at, "Token").iloc[1])
    from_link = list(table(open_page(PAGE, state={"text": Q2}), "Token").iloc[1])
    assert from_button == from_link == ["16", "17", "18", "19", "20", "9", "10", "11", "12",
                                        "13", "14", "15"]
    assert "[12, 8]" in page_text(at)


def test_width_seed_and_sinusoidal_positions_from_a_link():
    at = open_page(PAGE, state={"d": 12, "seed": 5, "sin": True})
    assert_clean(at)
    E = random_table(VOCAB, 12, 5)
    assert table(at, "商").values.tolist() == rows_as_text(E[2:16])
    assert table(at, "pos 0").values.tolist() == rows_as_text(sinusoidal(14, 12))
    assert "[14, 12]" in page_text(at)


def test_slider_changes_the_width():
    at = open_page(PAGE)
    at.slider("d").set_value(4).run()
    assert_clean(at)
    assert table(at, "商").shape == (14, 4)
    assert "[14, 4]" in page_text(at)


def test_unknown_characters_become_unk():
    at = open_page(PAGE)
    at.text_input("text").input("ok运费").run()
    assert_clean(at)
    assert list(table(at, "Token").iloc[1]) == ["1", "1", "10", "11"]
    assert "「o」" in at.warning[0].value and "[UNK]" in at.warning[0].value


@pytest.mark.parametrize("bad", ["NaN", "inf", "1e300", "1, 2; 3"])
def test_number_like_text_is_just_unknown_characters(bad):
    at = open_page(PAGE)
    at.text_input("text").input(bad).run()
    assert not at.exception
    assert len(at.warning) == 1  # every character is outside the vocabulary
    assert set(table(at, "Token").iloc[1]) == {"1"}


@pytest.mark.parametrize("key", ["text", "text2"])
def test_empty_and_too_long_text_show_a_message(key):
    at = open_page(PAGE)
    at.text_input(key).input("").run()
    assert not at.exception and len(at.error) == 1
    at.text_input(key).input("运费" * 20).run()
    assert not at.exception and len(at.error) == 1
    assert "40" in at.error[0].value and "32" in at.error[0].value
    if key == "text":
        assert "[32, 8]" in page_text(at)  # the first 32 characters are used


def test_too_long_message_is_translated():
    at = open_page(PAGE, "zh", state={"text": "运" * 33})
    assert "只使用前 32 个字符" in at.error[0].value


@pytest.mark.parametrize(
    "state",
    [{"d": 1000}, {"d": 3}, {"d": float("nan")}, {"d": "abc"}, {"seed": -5},
     {"seed": 1e300}, {"seed": float("inf")}, {"sin": "rotary"}, {"sin": None}],
)
def test_impossible_settings_from_a_link_fall_back_to_defaults(state):
    at = open_page(PAGE, state=state)
    assert not at.exception
    assert len(at.error) == 1
    assert "[14, 8]" in page_text(at)


def test_exercise_reveals_the_answer(lang):
    at = open_page(PAGE, lang)
    reveal(at, "tokens", 2)
    assert len(at.success) == 2  # the 「运费」 result and the exercise
    assert "ID 10" in at.success[1].value


def test_markdown_characters_in_typed_text_are_shown_literally():
    at = open_page(PAGE)
    at.text_input("text").input("$x$ *a* `b` \\").run()
    assert_clean(at)
    warning = at.warning[0].value
    assert "「\\$」" in warning and "「\\*」" in warning and "「\\\\」" in warning
