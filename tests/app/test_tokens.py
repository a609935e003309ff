"""Stage 1 in AppTest: token IDs from the classroom vocabulary, the lookup X [N, d],
positions, 「运费」 in both questions, and a left-padded batch."""

from __future__ import annotations

import re

import pytest
import torch

from tests.app.helpers import (
    answer,
    assert_clean,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from tinyformer.positional import sinusoidal
from tinyformer.tokenizer import position_table, random_table
from ui.fmt import num, term

PAGE = "pages/01_tokens.py"
Q2 = "无理由退货，运费谁承担？"
VOCAB = 72  # 2 specials + the classroom corpus's 70 distinct characters
Q1_IDS = [str(i) for i in range(2, 16)]  # 商品有质量问题，运费谁承担？
Q2_IDS = ["16", "17", "18", "19", "20", "9", "10", "11", "12", "13", "14", "15"]


# The exercises answered, as if by the learner: what they gate is drawn.
ANSWERED = {"_tokens.ex.rows.answered": 2, "_tokens.ex.gap.answered": 0.0,
            "_tokens.ex.gap_why.answered": 1}


def table(at, first_row: str):
    """The page's table (st.table or heatmap) whose first row is labelled `first_row`."""
    for frame in tables(at):
        if len(frame.index) and frame.index[0] == first_row:
            return frame
    raise AssertionError(f"no table starting with {first_row!r}")


def ids_row(at) -> list[str]:
    return list(table(at, "Token").iloc[1])


def rows_as_text(matrix: torch.Tensor) -> list[list[str]]:
    return [[num(v) for v in row] for row in matrix.tolist()]


def learned(d: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    return random_table(VOCAB, d, seed), position_table("learned", 32, d, seed)


def test_defaults_show_ids_shapes_and_the_lookup(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    text = page_text(at)
    assert list(table(at, "Token" if lang == "en" else "词元").iloc[1]) == Q1_IDS
    assert f"{VOCAB} " in text and "[14, 8]" in text
    assert r"x_{0} = E[2]" in text and r"x_{13} = E[15]" in text
    assert r"\mathbb{R}^{14 \times 8}" in text
    assert "never trained" in text or "从未训练" in text  # E and P are random: labelled
    labels = [w.label for kind in ("text_input", "slider", "number_input", "toggle", "button")
              for w in getattr(at, kind)]
    assert not [s for s in [*labels, text] if re.search(r"\btokens\.[a-z]", s)]  # translated
    glossed = "运费 *shipping fee*" in text  # English glosses where the words first appear
    assert glossed == (lang == "en")


def test_the_length_limit_agrees_with_the_counter(lang):
    """The label says 32 characters, and a longer sentence keeps its first 32 (the kit
    says so: tests/app/test_kit.py)."""
    at = open_page(PAGE, lang)
    assert all("32" in at.text_input(key).label for key in ("tokens.text", "tokens.text2"))
    at.text_input("tokens.text").input("运" * 40).run()
    assert at.query_params["tokens.text"] == "运" * 32


def test_x_rows_are_the_seeded_table_rows_and_positions_add():
    at = open_page(PAGE)
    E, P = learned()
    assert table(at, "2 · 商").values.tolist() == rows_as_text(E[2:16])  # the rows used
    x, summed = [frame for frame in tables(at) if frame.index[0] == "商"]  # X, X + P
    assert x.values.tolist() == rows_as_text(E[2:16])
    assert summed.values.tolist() == rows_as_text(E[2:16] + P[:14])
    assert f"= {num(E[2, 0])} + ({num(P[0, 0])}) = {num(E[2, 0] + P[0, 0])}" in page_text(at)


def test_yunfei_starts_from_the_same_rows_in_both_questions(lang):
    at = open_page(PAGE, lang, state=ANSWERED)
    E, P = learned()
    label = "运 · Q1 · pos 8" if lang == "en" else "运 · 问题 1 · 位置 8"
    before, after = [frame for frame in tables(at) if frame.index[0] == label]
    assert before.values.tolist() == rows_as_text(E[[10, 10, 11, 11]])
    assert after.values.tolist() == rows_as_text(E[[10, 10, 11, 11]] + P[[8, 6, 9, 7]])
    result = at.success[0].value
    assert "10, 11" in result and "0.000" in result
    assert num((P[8:10] - P[6:8]).abs().max()) in result


def test_batch_is_left_padded_and_translated(lang):
    at = open_page(PAGE, lang)
    batch = table(at, "Row 0 · tokens" if lang == "en" else "第 0 行 · 词元")
    assert list(batch.iloc[5]) == ["0", "0", *Q2_IDS]
    assert list(batch.iloc[6]) == ["0", "0"] + ["1"] * 12
    assert list(batch.iloc[4])[:3] == ["[PAD]", "[PAD]", "无"]
    # position IDs count real tokens: row 1 starts at 0 after its padding, as it would alone
    assert list(batch.iloc[3]) == [str(i) for i in range(14)]
    assert list(batch.iloc[7]) == ["–", "–", *map(str, range(12))]
    assert "[2, 14]" in page_text(at)
    if lang == "zh":  # no English left in the Chinese table
        assert not [name for name in batch.index if re.search("[a-z]", name)]


def test_typing_a_sentence_updates_ids_and_shapes():
    at = open_page(PAGE)
    at.text_input("tokens.text").input("运费运费").run()
    assert_clean(at)
    assert ids_row(at) == ["10", "11", "10", "11"]
    text = page_text(at)
    assert "[4, 8]" in text and r"x_{3} = E[11]" in text
    assert len(table(at, "10 · 运")) == 2  # two distinct rows of E for four positions
    assert list(table(at, "Row 0 · tokens").iloc[1]) == ["0"] * 8 + ["10", "11", "10", "11"]
    assert at.query_params["tokens.text"] == "运费运费"  # the edit is in the URL


def test_question_button_and_shared_link_agree():
    at = open_page(PAGE)
    next(b for b in at.button if Q2 in b.label).click().run()
    assert at.text_input("tokens.text").value == Q2
    from_link = open_page(PAGE, params={"tokens.text": Q2})
    assert ids_row(at) == ids_row(from_link) == Q2_IDS
    assert "[12, 8]" in page_text(at)


def test_width_seed_and_sinusoidal_positions_from_a_link():
    at = open_page(PAGE, params={"tokens.d": "12", "tokens.seed": "5", "tokens.sin": "true"})
    assert_clean(at)
    E = random_table(VOCAB, 12, 5)
    assert table(at, "商").values.tolist() == rows_as_text(E[2:16])
    assert table(at, "pos 0").values.tolist() == rows_as_text(sinusoidal(14, 12))
    assert "[14, 12]" in page_text(at)


def test_slider_changes_the_width():
    at = open_page(PAGE)
    at.slider("tokens.d").set_value(4).run()
    assert_clean(at)
    assert table(at, "商").shape == (14, 4)
    assert "[14, 4]" in page_text(at)


@pytest.mark.parametrize(("typed", "ids"), [("ok运费", ["1", "1", "10", "11"]),
                                            ("NaN", ["1"] * 3), ("inf", ["1"] * 3),
                                            ("1e300", ["1"] * 5), ("1, 2; 3", ["1"] * 7)])
def test_characters_outside_the_vocabulary_become_unk(typed, ids):
    at = open_page(PAGE)
    at.text_input("tokens.text").input(typed).run()
    assert_clean(at)
    assert ids_row(at) == ids
    assert len(at.warning) == 1 and "[UNK]" in at.warning[0].value


def test_markdown_characters_in_typed_text_are_shown_literally():
    at = open_page(PAGE)
    at.text_input("tokens.text").input("$x$ *a* `b` \\").run()
    assert_clean(at)
    warning = at.warning[0].value
    assert "「\\$」" in warning and "「\\*」" in warning and "「\\\\」" in warning


@pytest.mark.parametrize(("lang", "message"), [("en", "The sentence is empty"),
                                               ("zh", "句子是空的")])
def test_an_empty_sentence_is_one_translated_message(lang, message):
    at = open_page(PAGE, lang, state=ANSWERED)
    at.text_input("tokens.text").input("").run()
    assert not at.exception
    assert [e.value for e in at.error] == [at.error[0].value] and message in at.error[0].value
    assert len(at.success) == 1  # the rest of the page still renders: 「运费」 in both questions
    assert "[2, 12]" in page_text(at)  # and the batch, now just the second sentence


@pytest.mark.parametrize(
    "params",
    [{"tokens.d": "1000"}, {"tokens.d": "3"}, {"tokens.d": "nan"}, {"tokens.d": "abc"},
     {"tokens.seed": "-5"}, {"tokens.seed": "1e300"}, {"tokens.seed": "inf"},
     {"tokens.sin": "rotary"}, {"tokens.text": "运" * 33}],
)
def test_a_bad_link_value_gives_one_note_and_the_default(params):
    at = open_page(PAGE, params=params)
    assert not at.exception
    assert len(at.error) == 1
    assert "[14, 8]" in page_text(at) and ids_row(at) == Q1_IDS


def test_choice_exercise_reveals_the_answer(lang):
    at = open_page(PAGE, lang)
    repeat = "A repeated character repeats its row." if lang == "en" else "重复的字符会重复同一行。"
    assert "P[2]" not in page_text(at) and repeat not in page_text(at)
    reveal(at, "tokens.rows", 2)
    assert len(at.success) == 1  # the 「运费」 result waits for its own exercises
    assert "ID 10" in at.success[0].value and "P[2]" in at.success[0].value
    assert repeat in page_text(at)


@pytest.mark.parametrize(("params", "p8", "p6"), [
    ({}, None, None),  # learned positions, seed 0
    ({"tokens.sin": "true"}, "0.989", "-0.279"),  # sin(8) and sin(6)
])
def test_number_exercise_hides_then_checks_the_position_gap(lang, params, p8, p6):
    at = open_page(PAGE, lang, params=params)
    P = sinusoidal(32, 8) if params else learned()[1]
    gap = float(P[8, 0] - P[6, 0])
    steps = r"P_{8,0} - P_{6,0} ="
    assert steps not in explanations(at) and num(gap) not in page_text(at)
    after = "运 · Q1 · pos 8" if lang == "en" else "运 · 问题 1 · 位置 8"
    assert len([f for f in tables(at) if f.index[0] == after]) == 1  # before positions only
    answer(at, "tokens.gap", gap)
    assert any(num(gap) in s.value for s in at.success)
    assert f"{steps} {num(P[8, 0])} - " in explanations(at)
    if p8:
        assert f"= {p8} - ({p6}) = 1.269" in explanations(at)
    if not params:  # the rest does not depend on the kind of positions
        reveal(at, "tokens.gap_why", 1)
        assert len([f for f in tables(at) if f.index[0] == after]) == 2  # and after them
        answer(at, "tokens.gap", gap + 0.1)
        assert at.warning


def test_clicked_cells_explain_their_numbers():
    E, P = learned()
    at = open_page(PAGE, params={"tokens.x_map": "1,0", "tokens.sum_map": "8,0"})
    text = explanations(at)
    assert rf"X_{{1,0}} = E_{{3,0}} = {num(E[3, 0])}" in text
    assert rf"(X+P)_{{8,0}} = {term(E[10, 0], 3)} + {term(P[8, 0], 3)}" in text
    assert f"= {num(E[10, 0] + P[8, 0])}" in text


def test_sinusoidal_cells_show_their_formula():
    at = open_page(PAGE, params={"tokens.sin": "true", "tokens.p_map": "1,0"})
    assert r"P_{1,0} = \sin\left(1 / 10000^{0/8}\right) = 0.841" in explanations(at)
    at = open_page(PAGE, params={"tokens.sin": "true", "tokens.p_map": "1,1"})
    assert r"P_{1,1} = \cos\left(1 / 10000^{0/8}\right) = 0.540" in explanations(at)
