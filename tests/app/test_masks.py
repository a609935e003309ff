"""Stage 5.1 (masks): renders in both languages, shows the worked facts of docs/curriculum.md
(CURRICULUM 4) and the full formula with M, numbers positions from the valid flags, follows
edits and shared links, and survives bad input. The weights wait for the a₂,₂ exercise."""

from __future__ import annotations

import math

import pytest
import torch

from tests.app.helpers import (
    BAD_CELL,
    _walk,
    answer,
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

PAGE = "pages/05_masks.py"
Q0 = [[0.5, 0.5], [0.5, 0.5], [1, 0], [0, 1], [1, 1], [1, -1]]
K0 = [[1, 1], [1, 1], [1, 0], [0, 1], [1, 1], [0.5, 0.5]]
INF = "−∞"
ANSWERED = {"_masks.ex.self.answered": 1.0}  # the a₂,₂ exercise: the weights are drawn


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


def cells(at, index: int) -> list[list[str]]:
    """The page's tables in order: targets, causal M, mask in use, position ids, scaled
    scores, masked scores, weights (once the exercise is answered), then the running
    example's masked scores (and its weights and output A once answered)."""
    return tables(at)[index].values.tolist()


def weights(at) -> list[list[str]]:
    return cells(at, 6)


def test_renders_in_both_languages_with_targets_and_the_chain_rule(lang: str) -> None:
    at = open_page(PAGE, lang, state=ANSWERED)
    assert_clean(at)
    assert at.title[0].value.startswith("5.1 · ")
    inputs, targets = cells(at, 0)
    assert inputs == ["运费", "谁", "承担", "？", "商家"]
    assert targets == ["谁", "承担", "？", "商家", "承担"]  # the inputs shifted by one
    text = page_text(at)
    assert r"P(x_0, \ldots, x_{n-1}) = \prod_{t=0}^{n-1} P(x_t \mid x_{<t})" in text
    assert r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V" in text
    assert "P(承担 | 运费 谁 承担 ？ 商家)" in text
    assert catalogue(lang)["masks.self_note"].format(word="商家", target="承担", pos=4) in text
    finite = {"zh": "有限负数", "en": "large finite negative number"}[lang]
    assert finite in text  # what libraries add instead of −∞, on the empty rows' note
    links = [n.proto.page for n in _walk(at.main) if n.type == "page_link"]
    assert links[:3] == ["scaling", "residual_norm", "softmax"]  # the strip's two, then 3


def test_causal_mask_is_shown_as_the_additive_m() -> None:
    at = open_page(PAGE)
    assert cells(at, 1) == [["0" if j <= i else INF for j in range(5)] for i in range(5)]
    # No boolean 1/0 table beside it: "0" only ever means "may read".
    for index in (1, 2):
        assert not any(cell == "1" for row in cells(at, index) for cell in row)


def test_mask_in_use_blocks_padding_and_the_future() -> None:
    at = open_page(PAGE)
    mask = cells(at, 2)
    assert mask == [["0" if 2 <= j <= i else INF for j in range(6)] for i in range(6)]
    # The 4 real tokens' block is the causal pattern for 4 positions.
    assert [row[2:] for row in mask[2:]] == [["0" if j <= i else INF for j in range(4)]
                                             for i in range(4)]


def test_position_ids_count_real_tokens_only() -> None:
    at = open_page(PAGE)
    ids = cells(at, 3)
    assert ids[0] == ["[PAD]", "[PAD]", "运费", "谁", "承担", "？"]
    assert ids[1:] == [["0", "0", "1", "1", "1", "1"], ["0", "0", "0", "1", "2", "3"]]
    assert len(tables(at)) == 7 and "This appears once you have answered" in page_text(at)


def test_default_scores_and_weights() -> None:
    at = open_page(PAGE, state=ANSWERED)
    assert cells(at, 4)[3] == ["0.707", "0.707", "0.000", "0.707", "0.707", "0.354"]  # 谁
    assert cells(at, 5)[3] == [INF, INF, "0.000", "0.707", INF, INF]  # 谁 after the mask
    assert all(cell == INF for cell in cells(at, 5)[0] + cells(at, 5)[1])
    w = weights(at)
    assert w == expected_weights(Q0, K0, causal=True, pad=True)
    assert w[3][2:4] == ["0.330", "0.670"]
    assert w[0] == w[1] == ["0.000"] * 6  # fully blocked [PAD] rows
    text = page_text(at)
    assert "all 26 blocked weights are exactly 0" in text
    assert "[0.000, 0.000, 1.000, 1.000, 1.000, 1.000]" in text
    assert "Fully blocked rows: [PAD] (0), [PAD] (1)" in text
    assert "allows only itself and earlier positions" in text


@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_link_to_a_step_shows_the_steps_up_to_it(step: int) -> None:
    at = open_page(PAGE, params={"masks.hand.step": str(step)}, state=ANSWERED)
    assert_clean(at)
    frames = tables(at)[4:-3]  # after the targets, the two masks and the ids; the chain last
    assert len(frames) == step
    assert frames[-1].values.tolist()[3][3] == ("0.670" if step == 3 else "0.707")
    assert ("all 26 blocked weights are exactly 0" in page_text(at)) == (step == 3)


def test_padding_off_lets_real_tokens_read_pad() -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.toggle("masks.pad").set_value(False).run()
    assert_clean(at)
    w = weights(at)
    assert w == expected_weights(Q0, K0, causal=True, pad=False)
    assert w[2][:3] == ["0.333", "0.333", "0.333"]  # 运费 spreads onto both [PAD]
    assert "Fully blocked rows" not in page_text(at)
    assert at.query_params["masks.pad"] == "false"


@pytest.mark.parametrize(("causal", "pad"), [(False, True), (False, False)])
def test_shared_link_with_masks_switched_off(causal: bool, pad: bool) -> None:
    params = {"masks.causal": str(causal).lower(), "masks.pad": str(pad).lower()}
    at = open_page(PAGE, params=params, state=ANSWERED)
    assert_clean(at)
    assert weights(at) == expected_weights(Q0, K0, causal=causal, pad=pad)
    blocked = sum(row.count(INF) for row in cells(at, 2))
    assert f"all {blocked} blocked weights are exactly 0" in page_text(at)


def test_editing_the_last_key_changes_only_the_last_row() -> None:
    at = open_page(PAGE, state=ANSWERED)
    before = weights(at)
    at.text_input("masks.K").input("1, 1; 1, 1; 1, 0; 0, 1; 1, 1; 3, 0").run()
    assert_clean(at)
    after = weights(at)
    assert after[:5] == before[:5] and after[5] != before[5]
    assert after == expected_weights(Q0, [*K0[:5], [3, 0]], causal=True, pad=True)


def test_shared_link_with_new_queries() -> None:
    q_new = [[0, 0], [0, 0], [1, 0], [2, 0], [0, 2], [1, 1]]
    at = open_page(PAGE, params={"masks.Q": "0, 0; 0, 0; 1, 0; 2, 0; 0, 2; 1, 1"},
                   state=ANSWERED)
    assert_clean(at)
    assert weights(at) == expected_weights(q_new, K0, causal=True, pad=True)


@pytest.mark.parametrize("key", ["masks.Q", "masks.K"])
@pytest.mark.parametrize("bad", [BAD_CELL, "1, 0; 0, 1", "; ".join(["1, 2, 3"] * 6)])
def test_bad_matrix_input_shows_an_error_and_keeps_the_last_value(key: str, bad: str) -> None:
    at = type_bad(PAGE, key, bad)
    assert_clean(at)
    scaled = torch.tensor(Q0) @ torch.tensor(K0).T / math.sqrt(2)  # the defaults, kept
    assert cells(at, 4) == [[fmt(v) for v in row] for row in scaled.tolist()]


@pytest.mark.parametrize("params", [{"masks.causal": "maybe"}, {"masks.pad": "3"},
                                    {"masks.K": "1, x"}])
def test_bad_link_value_gives_one_note_and_the_default(params: dict) -> None:
    at = open_page(PAGE, params=params, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == 1
    assert weights(at) == expected_weights(Q0, K0, causal=True, pad=True)


def test_choice_exercise_reveals_the_answer(lang: str) -> None:
    at = open_page(PAGE, lang)
    reveal(at, "masks.later", 0)
    explanation = catalogue(lang)["masks.ex_explain"]
    assert any(explanation in s.value for s in at.success)
    assert "do not change in a single digit" in catalogue("en")["masks.ex_explain"]


@pytest.mark.parametrize(("typed", "right"), [(1.0, True), (0.333, False)])
def test_self_weight_exercise(lang: str, typed: float, right: bool) -> None:
    at = open_page(PAGE, lang)
    assert "a_{2,2}" not in explanations(at)  # the steps appear only after answering
    answer(at, "masks.self", typed)
    assert len(at.success) == 1 + (1 if right else 0)  # the zero check is a success too
    steps = explanations(at)
    assert "a_{2,2}" in steps and r"\frac{e^{0.707}}{e^{0.707}}" in steps  # reads only itself


def test_self_weight_exercise_follows_the_padding_toggle() -> None:
    at = open_page(PAGE, params={"masks.pad": "false"})
    answer(at, "masks.self", 0.333)
    assert any("0.333" in s.value for s in at.success)


def test_clicked_cells_explain_themselves() -> None:
    at = open_page(PAGE, state={**ANSWERED, **click(
        ("masks.causal_map", 2, 1), ("masks.mask_map", 0, 1), ("masks.scores_map", 5, 3),
        ("masks.weights_map", 3, 3))})
    assert_clean(at)
    text = explanations(at)
    assert "「承担」 (position 2) may read 「谁」 (position 1)" in text
    assert "M_{2,1} = 0" in text
    assert "「[PAD]」 (position 0) may not read position 1 for two reasons" in text
    assert r"M_{0,1} = -\infty" in text
    assert r"\frac{1\cdot0 + (-1)\cdot1}{\sqrt{2}} = \frac{-1.000}{1.414} = -0.707" in text
    assert "a_{3,3}" in text and r"\frac{e^{0.707}}{e^{0.000} + e^{0.707}}" in text
    assert r"\frac{2.028}{3.028} = 0.670" in text


def test_clicked_blocked_cells_and_empty_rows(lang: str) -> None:
    at = open_page(PAGE, lang, params={"masks.scores_map": "3,4", "masks.weights_map": "0,0",
                                       "masks.causal_map": "0,3"}, state=ANSWERED)
    assert_clean(at)
    text, cat = explanations(at), catalogue(lang)
    assert cat["masks.cell_future"].format(i="运费", j="？", pi=0, pj=3) in text
    assert r"\tilde s_{3,4} = 0.707 + (-\infty) = -\infty" in text  # q_3·k_4/√2, then M
    assert cat["masks.cell_empty_row"].format(i="[PAD]", pi=0) in text
    at = open_page(PAGE, lang, params={"masks.weights_map": "3,5"}, state=ANSWERED)
    assert r"a_{3,5} = e^{-\infty}" in explanations(at)


def test_a_scaled_score_before_the_mask_explains_itself(lang: str) -> None:
    at = open_page(PAGE, lang, params={"masks.raw_map": "3,4"})  # 谁 reading a later 承担
    assert_clean(at)
    text = explanations(at)
    assert catalogue(lang)["masks.cell_scaled"].format(i="谁", j="承担") in text
    assert r"\frac{0\cdot1 + 1\cdot1}{\sqrt{2}} = \frac{1.000}{1.414} = 0.707" in text
