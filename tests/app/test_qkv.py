"""Stage 2 in AppTest: Q, K, V as three projections of X, the score tables with and
without them, and why rows are mixed at all (「运费」 in both questions)."""

from __future__ import annotations

import pytest
import torch

from tests.app.helpers import (
    BAD_CELL,
    _walk,
    answer,
    assert_clean,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
    type_bad,
)
from tinyformer.lessons.chain import DEFAULTS, VOCAB, run_chain
from tinyformer.lessons.projection import identity_qkv, project_qkv, random_setup, two_contexts
from ui.example import Q1_WORDS, Q2_WORDS, TAIL4
from ui.figures import matrix_frame

PAGE = "pages/02_qkv.py"
TOKENS = list(TAIL4)
# The running example's hand model (tinyformer/lessons/chain.py): X [4 × 2], W [2 × 2]
X = torch.tensor(DEFAULTS["X"], dtype=torch.float64)
W = {name: DEFAULTS[name] for name in ("Wq", "Wk", "Wv")}
# At the defaults: q_0 = [1, 0], q_2 = [2, 1], k_1 = [1, 1], so s_{2,1} = 3 (the exercise).
DEFAULT_NUMBERS = [
    r"x_{0} = \begin{bmatrix}1.000 & 0.000\end{bmatrix}",
    r"q_{0} = x_{0} W_q &= \begin{bmatrix}1 & 0\end{bmatrix}\begin{bmatrix}1 & 0 \\ 1 & 1"
    r"\end{bmatrix} \\ &= \begin{bmatrix}1.000 & 0.000\end{bmatrix}",
    r"k_{0} = x_{0} W_k &= \begin{bmatrix}1 & 0\end{bmatrix}",
    r"= \begin{bmatrix}0.000 & 1.000\end{bmatrix}",
    "Best match of each row: 运费 → 谁, 谁 → 承担, 承担 → 承担, ？ → ？.",
    "Best match of each row: 运费 → 运费, 谁 → 谁, 承担 → 承担, ？ → ？.",
    "Words that score highest on themselves: 2 of 4.",
    "Words that score highest on themselves: 4 of 4.",
    "QKᵀ happens to be symmetric too, because W_q W_kᵀ is",
]


# The exercises answered, as if by the learner: the score tables they gate are drawn.
ANSWERED = {"_qkv.ex.s21.answered": 3.0, "_qkv.ex.qk.answered": 1, "_qkv.ex.wv.answered": 1}


def opened(lang: str = "en", **kwargs):
    """The page with its exercises answered (open_page's other arguments as given)."""
    return open_page(PAGE, lang, state=ANSWERED, **kwargs)


def weights(**changes) -> dict[str, torch.Tensor]:
    return {k: torch.tensor(v, dtype=torch.float64) for k, v in {**W, **changes}.items()}


def trace(x=X, **changes):
    w = weights(**changes)
    return project_qkv(x, w["Wq"], w["Wk"], w["Wv"])


def has_table(at, matrix, cols, rows=TOKENS) -> bool:
    expected = matrix_frame(matrix, cols, rows)
    return any(frame.equals(expected) for frame in tables(at))


def columns(n: int) -> list[str]:
    return [str(j) for j in range(n)]


def in_order(at) -> str:
    """The page's text in the order a learner reads it (page_text groups by kind)."""
    return "\n".join(str(node.value) for node in _walk(at.main)
                     if isinstance(getattr(node, "value", None), str))


def contexts(seed: int = 0, **changes):
    """Both questions with the hand model's table: 无理由 and 退货 are not in it."""
    w = weights(**changes)
    table = dict(zip(VOCAB, run_chain().table, strict=True))
    return two_contexts("运费", Q1_WORDS, Q2_WORDS, table,
                        torch.Generator().manual_seed(seed), w["Wq"], w["Wk"], w["Wv"])


def test_renders_in_both_languages_with_the_switch_note(lang):
    at = opened(lang)
    assert_clean(at)
    tr = trace()
    assert has_table(at, tr.scores, TOKENS) and has_table(at, identity_qkv(X).scores, TOKENS)
    for name in ("q", "k", "v"):
        assert has_table(at, getattr(tr, name), columns(2))
    note = at.info[0].value  # where the tokens change from characters to words
    assert all(word in note for word in ("运费", "承担", "问题"))
    assert ("sub-word" in note) if lang == "en" else ("子词" in note)
    assert ("运费 *shipping fee*" in page_text(at)) == (lang == "en")  # glosses


def test_defaults_show_the_hand_numbers():
    text = page_text(opened())
    for number in DEFAULT_NUMBERS:
        assert number in text, number


def test_moving_w_q_0_1_breaks_the_symmetry_of_the_hand_model():
    at = opened()
    text = page_text(at)
    assert text.count("This table is symmetric") == 2  # W_q W_kᵀ = [[0, 1], [1, 2]]
    averages = next(frame for frame in tables(at) if frame.index[0] == "运费 · question 1")
    at.slider("_chain.Wq~1").set_value(1.0).run()  # W_q[0,1]: 0 -> 1
    assert_clean(at)
    assert at.text_input("chain.Wq").value == "1, 1; 1, 1"
    tr = trace(Wq=[[1, 1], [1, 1]])
    assert not tr.symmetric and has_table(at, tr.scores, TOKENS)
    text = page_text(at)
    assert text.count("This table is symmetric") == 1 and "This table is not symmetric" in text
    assert "happens to be symmetric" not in text
    # no query enters the prefix averages: another W_q leaves them as they were
    assert next(frame for frame in tables(at) if frame.index[0] == "运费 · question 1").equals(
        averages)


def test_changing_w_v_changes_v_and_what_is_passed_on_but_no_score():
    at = opened()
    before = contexts()
    at.text_input("chain.Wv").input("2, 0; 0, 4").run()
    assert_clean(at)
    assert has_table(at, trace(Wv=[[2, 0], [0, 4]]).v, columns(2))
    assert has_table(at, trace().scores, TOKENS)  # the scores did not move
    after = contexts(Wv=[[2, 0], [0, 4]])
    a = after.a
    assert torch.equal(a.average, 2 * before.a.average)  # the averages are made of V
    avg = next(frame for frame in tables(at) if frame.index[0] == "运费 · question 1")
    assert avg.values.tolist()[0] == matrix_frame(a.average[a.at("运费")][None], columns(2),
                                                  ["运费 · question 1"]).values.tolist()[0]


def test_a_weight_slider_is_named_and_moves_only_its_own_number():
    at = opened()
    assert at.slider("_chain.Wq~0").label == "W_q[0,0]"
    assert at.slider("_chain.Wk~3").label == "W_k[1,1]"
    assert at.slider("_chain.X~1").label == "运费 · x[1]"
    at.slider("_chain.Wq~3").set_value(2.0).run()  # W_q[1,1]: 1 -> 2
    assert at.text_input("chain.Wq").value == "1, 0; 1, 2"
    assert has_table(at, trace(Wq=[[1, 0], [1, 2]]).scores, TOKENS)


def test_shared_link_with_another_x_and_row():
    x = "1, 0; 0, 1; 1, 1; 2, 0"
    at = opened(params={"chain.X": x, "qkv.row": "3"})
    assert_clean(at)
    x_t = torch.tensor([[1, 0], [0, 1], [1, 1], [2, 0]], dtype=torch.float64)
    assert has_table(at, trace(x_t).scores, TOKENS)
    assert has_table(at, identity_qkv(x_t).scores, TOKENS)
    text = page_text(at)
    assert r"q_{3} = x_{3} W_q &= \begin{bmatrix}2 & 0\end{bmatrix}" in text
    assert r"= \begin{bmatrix}2.000 & 0.000\end{bmatrix}" in text  # q_3 = [2, 0]
    assert "？ → 谁" in text
    assert at.query_params["chain.X"] == x  # the link keeps the hand model's rows


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_a_link_to_a_step_shows_the_steps_up_to_it(step):
    at = open_page(PAGE, params={"qkv.hand.step": str(step), "qkv.row": "3"})  # 「？」
    assert_clean(at)
    text = page_text(at)
    shown = [rf"{n}_{{3}} = x_{{3}} W_{n}" in text for n in "qkv"]
    assert [r"x_{3} = \begin{bmatrix}1.000 & -1.000" in text, *shown] == \
        [k < step for k in range(4)]
    assert has_table(at, trace().q, columns(2))  # the tables are not steps: always there


def test_random_weights_from_a_shared_link_are_labelled():
    at = opened(params={"qkv.rand": "true", "qkv.d": "5", "qkv.dk": "3", "qkv.seed": "7"})
    assert_clean(at)
    setup = random_setup(4, 5, 3, torch.Generator().manual_seed(7))
    tr = project_qkv(setup.x, setup.w_q, setup.w_k, setup.w_v)
    assert has_table(at, tr.q, columns(3)) and has_table(at, tr.scores, TOKENS)
    assert page_text(at).count("never trained") == 2  # the inputs, and the context rows


def test_random_sliders_up_to_the_largest_sizes():
    at = open_page(PAGE, params={"qkv.rand": "true"})
    for key, value in (("qkv.d", 16), ("qkv.dk", 16), ("qkv.seed", 999)):
        at.slider(key).set_value(value).run()
    assert_clean(at)
    setup = random_setup(4, 16, 16, torch.Generator().manual_seed(999))
    tr = project_qkv(setup.x, setup.w_q, setup.w_k, setup.w_v)
    assert has_table(at, tr.v, columns(16))
    assert r"\cdots" in page_text(at)  # long rows are elided in the formula only


@pytest.mark.parametrize(("key", "bad"), [("chain.X", BAD_CELL), ("chain.Wq", "1, 2"),
                                         ("chain.Wk", BAD_CELL), ("chain.Wv", "1, 2")])
def test_bad_input_shows_a_message_and_keeps_the_last_value(key, bad):
    at = type_bad(PAGE, key, bad)
    assert has_table(at, trace().q, columns(2))


@pytest.mark.parametrize("params", [{"qkv.rand": "maybe"}, {"qkv.row": "9"},
                                    {"qkv.d": "99", "qkv.rand": "true"}, {"qkv.dk": "0",
                                                                          "qkv.rand": "true"}])
def test_a_bad_link_value_gives_one_note_and_the_default(lang, params):
    at = open_page(PAGE, lang, params=params)
    assert not at.exception and len(at.error) == 1
    if "qkv.rand" not in params or params["qkv.rand"] != "true":
        assert has_table(at, trace().q, columns(2))


def test_the_score_tables_wait_for_their_exercises(lang):
    at = open_page(PAGE, lang)
    assert not has_table(at, trace().scores, TOKENS)
    steps = r"s_{2,1} = q_2 \cdot k_1 = 2\cdot1 + 1\cdot1 = 3.000"
    assert steps not in explanations(at) and "3.000" not in page_text(at)
    answer(at, "qkv.s21", -1.0)
    assert at.warning and steps in explanations(at)
    assert not has_table(at, trace().scores, TOKENS)  # the "why" exercise is still open
    reveal(at, "qkv.qk", 1)
    assert has_table(at, trace().scores, TOKENS)
    v_note = "W_v appears in neither" if lang == "en" else "两张分数表里都没有 W_v"
    assert v_note not in page_text(at)
    reveal(at, "qkv.wv", 1)
    assert v_note in page_text(at)
    assert any("W_q" in s.value and "W_k" in s.value for s in at.success)


def test_yunfei_has_the_same_rows_in_both_questions_until_rows_are_mixed(lang):
    at = open_page(PAGE, lang)  # exercises unanswered: this section does not wait for them
    cmp = contexts()
    q1 = "question 1" if lang == "en" else "问题 1"
    per_row = next(frame for frame in tables(at) if frame.index[0] == f"运费 · q · {q1}")
    rows = per_row.values.tolist()
    assert rows[0::2] == rows[1::2]  # Q1 and Q2 alike, row by row
    assert rows[0:2] == [["1.000", "0.000"]] * 2 and rows[4] == ["1.000", "0.000"]
    assert "0.000" in at.success[0].value  # the largest difference, computed
    avg = next(frame for frame in tables(at) if frame.index[0] == f"运费 · {q1}")
    values = avg.values.tolist()  # 运费 · Q1, 谁 · Q1, 运费 · Q2, 谁 · Q2: prefix averages
    a, b = cmp.a, cmp.b
    expected = [a.average[5], a.average[6], b.average[3], b.average[4]]
    assert values == [[f"{float(v):.3f}" for v in row] for row in expected]
    assert len({tuple(row) for row in values}) == 4  # every prefix differs, so every average
    prefix = "「商品 · 有 · 质量 · 问题 · ， · 运费」"
    weights = ("1/6 at 「运费」 and 1/7 at 「谁」" if lang == "en"
               else "「运费」处是 1/6，「谁」处是 1/7")
    assert prefix in page_text(at) and weights in page_text(at)


def test_clicked_cells_explain_their_numbers():
    at = opened(params={"qkv.q_map": "3,1", "qkv.s_proj": "3,0", "qkv.ctx_map": "4,1",
                        "qkv.avg_map": "1,0"})
    text = explanations(at)
    assert r"q_{3,1} = x_{3} \cdot W_q[:, 1] = 1\cdot0 + (-1)\cdot1 = -1.000" in text
    assert r"s_{3,0} = q_3 \cdot k_0 = 0\cdot0 + (-1)\cdot1 = -1.000" in text
    assert r"v_{5,1} = 1\cdot0 + 0\cdot2 = 0.000" in text  # 运费 is at 5 in Q1
    v = contexts().a.qkv.v[:7, 0]  # 谁 is at 6 in Q1: it averages rows 0..6
    mean = f"{float(v.mean()):.3f}"
    assert r"\bar v_{6,0} = \frac{" in text and "}{7} = " + mean in text
