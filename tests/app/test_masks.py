"""Stage 4 (masks): renders in both languages, shows the worked numbers, follows edits,
and survives bad input."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from tests.app.conftest import (
    BAD_CELLS,
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
    type_bad,
)
from ui.i18n import catalogue

PAGE = "pages/04_masks.py"
PADDED = ["[PAD]", "[PAD]", "运费", "谁", "承担", "？"]
Q0 = [[0.5, 0.5], [0.5, 0.5], [1, 0], [0, 1], [1, 1], [1, -1]]
K0 = [[1, 1], [1, 1], [1, 0], [0, 1], [1, 1], [0.5, 0.5]]


def fmt(v: float) -> str:
    text = f"{v:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def expected_weights(q, k, causal: bool, pad: bool) -> list[list[str]]:
    """Independent of tinyformer: plain softmax over the allowed cells, 0 elsewhere."""
    scores = torch.tensor(q, dtype=torch.float64) @ torch.tensor(k, dtype=torch.float64).T
    scores = scores / math.sqrt(2)
    rows = []
    for i in range(6):
        allowed = [(not causal or j <= i) and (not pad or j >= 2) for j in range(6)]
        exps = [math.exp(scores[i, j]) if allowed[j] else 0.0 for j in range(6)]
        total = sum(exps)
        rows.append([fmt(e / total if total else 0.0) for e in exps])
    return rows



def weights_table(at) -> list[list[str]]:
    return tables(at)[-1].values.tolist()  # the weights are the page's last table


def text_of(frame: pd.DataFrame) -> list[list[str]]:
    return frame.values.tolist()


def test_renders_in_both_languages(lang: str) -> None:
    at = open_page(PAGE, lang)
    assert_clean(at)
    assert at.title[0].value.startswith("4 · ")
    assert len(at.radio) == 1  # the exercise
    assert "masks." not in page_text(at)  # no untranslated key


def test_causal_pattern_for_four_positions_is_lower_triangular() -> None:
    at = open_page(PAGE)
    causal = text_of(tables(at)[0])
    assert causal == [["1" if j <= i else "0" for j in range(4)] for i in range(4)]
    assert r"0 & -\infty & -\infty & -\infty" in page_text(at)


def test_combined_mask_blocks_padding_and_the_future() -> None:
    at = open_page(PAGE)
    combined = text_of(tables(at)[1])
    assert combined == [["1" if 2 <= j <= i else "0" for j in range(6)] for i in range(6)]


def test_default_scores_masked_scores_and_weights() -> None:
    at = open_page(PAGE)
    before, after = text_of(tables(at)[2]), text_of(tables(at)[3])
    assert before[3][:4] == ["0.707", "0.707", "0.000", "0.707"]  # 谁 before the mask
    assert after[3] == ["−∞", "−∞", "0.000", "0.707", "−∞", "−∞"]  # and after it
    assert all(cell == "−∞" for cell in after[0] + after[1])
    weights = weights_table(at)
    assert weights == expected_weights(Q0, K0, causal=True, pad=True)
    assert weights[3][2:4] == ["0.330", "0.670"]
    assert weights[0] == weights[1] == ["0.000"] * 6  # fully blocked [PAD] rows
    text = page_text(at)
    assert "all 26 blocked weights are exactly 0" in text
    assert "[0.000, 0.000, 1.000, 1.000, 1.000, 1.000]" in text
    assert "Fully blocked rows: [PAD] (0), [PAD] (1)" in text


def test_padding_off_lets_real_tokens_read_pad() -> None:
    at = open_page(PAGE)
    at.toggle("pad").set_value(False).run()
    assert_clean(at)
    weights = weights_table(at)
    assert weights == expected_weights(Q0, K0, causal=True, pad=False)
    assert weights[2][:3] == ["0.333", "0.333", "0.333"]  # 运费 spreads onto both [PAD]
    assert "Fully blocked rows" not in page_text(at)


def test_causal_off_lets_rows_read_later_tokens() -> None:
    at = open_page(PAGE, state={"causal": False})  # a shared link
    assert_clean(at)
    assert weights_table(at) == expected_weights(Q0, K0, causal=False, pad=True)
    assert text_of(tables(at)[1])[2] == ["0", "0", "1", "1", "1", "1"]
    assert "[1.000, 1.000, 1.000, 1.000, 1.000, 1.000]" in page_text(at)


def test_both_masks_off_allows_every_cell() -> None:
    at = open_page(PAGE, state={"causal": False, "pad": False})
    assert_clean(at)
    assert text_of(tables(at)[1]) == [["1"] * 6 for _ in range(6)]
    assert weights_table(at) == expected_weights(Q0, K0, causal=False, pad=False)
    assert "all 0 blocked weights" in page_text(at)


def test_editing_the_last_key_changes_only_the_last_row() -> None:
    at = open_page(PAGE)
    before = weights_table(at)
    k_new = [*K0[:5], [3, 0]]
    at.text_input("K").input("1, 1; 1, 1; 1, 0; 0, 1; 1, 1; 3, 0").run()
    assert_clean(at)
    after = weights_table(at)
    assert after[:5] == before[:5]
    assert after[5] != before[5]
    assert after == expected_weights(Q0, k_new, causal=True, pad=True)


def test_shared_link_with_new_queries() -> None:
    q_new = [[0, 0], [0, 0], [1, 0], [2, 0], [0, 2], [1, 1]]
    at = open_page(PAGE, state={"Q": "0, 0; 0, 0; 1, 0; 2, 0; 0, 2; 1, 1"})
    assert_clean(at)
    assert weights_table(at) == expected_weights(q_new, K0, causal=True, pad=True)


@pytest.mark.parametrize("key", ["Q", "K"])
@pytest.mark.parametrize(
    "bad", [*BAD_CELLS, "1, 0; 0, 1", "; ".join(["1, 2, 3"] * 6)],
)
def test_bad_matrix_input_shows_an_error_and_keeps_the_last_value(key: str, bad: str) -> None:
    at = type_bad(PAGE, key, bad)
    assert_clean(at)
    assert weights_table(at) == expected_weights(Q0, K0, causal=True, pad=True)


@pytest.mark.parametrize(("key", "bad"), [("causal", "maybe"), ("pad", 3), ("pad", None)])
def test_bad_toggle_value_in_a_link_shows_an_error(key: str, bad: object) -> None:
    at = open_page(PAGE, state={key: bad})
    assert_clean(at)
    assert at.error
    assert weights_table(at) == expected_weights(Q0, K0, causal=True, pad=True)


def test_exercise_reveals_the_answer(lang: str) -> None:
    at = open_page(PAGE, lang)
    reveal(at, "masks", 0)
    assert_clean(at)
    explanation = catalogue(lang)["masks.ex_explain"]
    assert any(explanation in s.value for s in at.success)


def test_clicked_cells_explain_themselves() -> None:
    at = open_page(PAGE, state=click(("causal_map", 2, 1), ("mask_map", 0, 1),
                                     ("before_map", 5, 3), ("after_map", 3, 1),
                                     ("weights_map", 3, 3)))
    assert_clean(at)
    text = explanations(at)
    assert "「承担」 (position 2) may read 「谁」 (position 1)" in text
    assert "「[PAD]」 (position 0) may not read position 1 for two reasons" in text
    assert r"$(1\cdot0 + -1\cdot1) / \sqrt{2} = -0.707$" in text  # before: no arrow
    assert r"$(0\cdot1 + 1\cdot1) / \sqrt{2} = 0.707\ \rightarrow\ -\infty$" in text
    assert "it is padding, not part of the request" in text
    assert r"$a_{33} = e^{0.707} / (e^{0.000} + e^{0.707}) = 0.670$" in text


def test_clicked_blocked_and_empty_rows(lang: str) -> None:
    at = open_page(PAGE, lang, state=click(("causal_map", 0, 3), ("weights_map", 0, 0)))
    assert_clean(at)
    text = explanations(at)
    cat = catalogue(lang)
    assert cat["masks.cell_future"].format(i="运费", j="？", pi=0, pj=3) in text
    assert cat["masks.cell_empty_row"].format(i="[PAD]", pi=0) in text
    at = open_page(PAGE, lang, state=click(("weights_map", 3, 5)))
    assert r"$a_{35} = 0$" in explanations(at)
