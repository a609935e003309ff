"""Stage 2 in AppTest: Q, K, V as projections of X, and the X-itself comparison."""

import pytest
import torch

from tests.app.conftest import (
    BAD_CELLS,
    assert_clean,
    open_page,
    page_text,
    reveal,
    tables,
    type_bad,
)
from tinyformer.projection import identity_qkv, project_qkv, random_setup
from ui.figures import matrix_frame

PAGE = "pages/02_qkv.py"
TOKENS = ["运费", "谁", "承担", "？"]
# At the defaults: QKᵀ row 谁 = [3, 2, 1, 1], row ？ = [-3, -3, -2, 0]; XXᵀ has 2 on the diagonal.
DEFAULT_NUMBERS = [
    r"q_{0} = \begin{bmatrix}1 & 0 & 1\end{bmatrix}\,\begin{bmatrix}-1 & 0 \\ 0 & 1 \\ 0 & 0"
    r"\end{bmatrix} = \begin{bmatrix}-1.000 & 0.000\end{bmatrix}",
    r"k_{0} = \begin{bmatrix}1 & 0 & 1\end{bmatrix}",
    r"= \begin{bmatrix}0.000 & 3.000\end{bmatrix}",
    r"= \begin{bmatrix}2.000 & 1.000\end{bmatrix}",
    "「运费」 reading 「？」 scores 1.000, but 「？」 reading 「运费」 scores -3.000",
    "Best match of each row: 运费 → ？, 谁 → 运费, 承担 → 运费, ？ → ？.",
    "Best match of each row: 运费 → 运费, 谁 → 谁, 承担 → 承担, ？ → ？.",
    "Tokens that score highest on themselves: 1 of 4.",
    "Tokens that score highest on themselves: 4 of 4.",
]
X = torch.tensor([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, -1, 0]], dtype=torch.float64)
W = {"Wq": [[-1, 0], [0, 1], [0, 0]], "Wk": [[0, 1], [1, 0], [0, 2]],
     "Wv": [[1, 0], [0, 2], [1, 1]]}



def has_table(at, matrix, cols, rows=TOKENS) -> bool:
    expected = matrix_frame(matrix, cols, rows)
    return any(frame.equals(expected) for frame in tables(at))


def default_trace(**changes):
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in {**W, **changes}.items()}
    return project_qkv(X, w["Wq"], w["Wk"], w["Wv"])


def test_renders_in_both_languages(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    trace = default_trace()
    assert has_table(at, trace.scores, TOKENS)
    assert has_table(at, identity_qkv(X).scores, TOKENS)
    for name in ("q", "k", "v"):
        assert has_table(at, getattr(trace, name), ["0", "1"])


def test_defaults_show_the_hand_numbers():
    text = page_text(open_page(PAGE))
    for number in DEFAULT_NUMBERS:
        assert number in text, number


def test_typing_w_q_equal_to_w_k_makes_the_table_symmetric():
    at = open_page(PAGE)
    at.text_input("Wq").input("0, 1; 1, 0; 0, 2").run()
    assert_clean(at)
    trace = default_trace(Wq=W["Wk"])
    assert trace.scores[0].tolist() == [9, 6, 3, 3]
    assert has_table(at, trace.scores, TOKENS)
    assert page_text(at).count("This table is symmetric") == 2


def test_changing_w_v_changes_v_but_no_score():
    at = open_page(PAGE)
    at.text_input("Wv").input("5, 0; 0, 5; 0, 0").run()
    assert_clean(at)
    trace = default_trace(Wv=[[5, 0], [0, 5], [0, 0]])
    assert has_table(at, trace.v, ["0", "1"])
    assert has_table(at, default_trace().scores, TOKENS)


def test_shared_link_with_another_x_and_row():
    x = "1, 0, 0; 0, 1, 0; 0, 0, 1; 1, 1, 1"
    at = open_page(PAGE, state={"X": x, "row": 3})
    assert_clean(at)
    x_t = torch.tensor([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=torch.float64)
    w = {k: torch.tensor(v, dtype=torch.float64) for k, v in W.items()}
    trace = project_qkv(x_t, w["Wq"], w["Wk"], w["Wv"])
    assert has_table(at, trace.scores, TOKENS)
    assert has_table(at, identity_qkv(x_t).scores, TOKENS)
    text = page_text(at)
    assert r"q_{3} = \begin{bmatrix}1 & 1 & 1\end{bmatrix}" in text
    assert r"= \begin{bmatrix}-1.000 & 1.000\end{bmatrix}" in text  # q_3 = [-1, 1]
    assert "？ → 承担" in text


def test_x_itself_switch(lang):
    at = open_page(PAGE, lang, state={"same": True})
    assert_clean(at)
    assert has_table(at, X, ["0", "1", "2"])  # Q = K = V = X
    assert r"q_{0} = k_{0} = v_{0} = x_{0} = \begin{bmatrix}1 & 0 & 1\end{bmatrix}" in page_text(at)


def test_random_weights_from_a_shared_link():
    at = open_page(PAGE, state={"rand": True, "dx": 5, "dqk": 3, "wseed": 7})
    assert_clean(at)
    setup = random_setup(4, 5, 3, torch.Generator().manual_seed(7))
    trace = project_qkv(setup.x, setup.w_q, setup.w_k, setup.w_v)
    assert has_table(at, trace.q, ["0", "1", "2"])
    assert has_table(at, trace.scores, TOKENS)
    assert "never trained" in page_text(at)  # the random-weights note
    assert "**Q** [4 × 3]" in page_text(at)


def test_random_sliders_up_to_the_largest_sizes():
    at = open_page(PAGE, state={"rand": True})
    at.slider("dx").set_value(16).run()
    at.slider("dqk").set_value(16).run()
    at.slider("wseed").set_value(999).run()
    assert_clean(at)
    setup = random_setup(4, 16, 16, torch.Generator().manual_seed(999))
    trace = project_qkv(setup.x, setup.w_q, setup.w_k, setup.w_v)
    assert has_table(at, trace.v, [str(j) for j in range(16)])
    assert r"\cdots" in page_text(at)  # long rows are elided in the formula only


@pytest.mark.parametrize("key", ["X", "Wq", "Wk", "Wv"])
@pytest.mark.parametrize("bad", [*BAD_CELLS, "1, 2"])
def test_bad_input_shows_a_message_and_keeps_the_last_value(key, bad):
    at = type_bad(PAGE, key, bad)
    assert has_table(at, default_trace().scores, TOKENS)


def test_exercise_reveals_the_answer(lang):
    at = open_page(PAGE, lang)
    reveal(at, "qkv", 1)
    assert len(at.success) == 1
    assert "-3.000" in at.success[0].value
