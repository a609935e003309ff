"""Stage 8.1 in AppTest: the FFN hand example of docs/curriculum.md, stage 8, live; the
activation switch; the collapse without an activation; the running example's hand model
with its own weights, every position alone. Expected numbers come from PyTorch's own
functions, not from tinyformer, except the hand model's (tinyformer.lessons.chain, checked
against PyTorch in tests/unit/test_chain.py). What
answers an exercise shows only once it is answered: most tests open the page with every
exercise answered."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.app.helpers import (
    BAD_CELL,
    ONE_LANG,
    answer,
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from tinyformer.lessons.chain import ChainParams, run_chain
from ui.fmt import vec

PAGE = "pages/08_ffn.py"
W1 = [[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]]
W2 = [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
ACT = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}
MERGED = r"\begin{bmatrix}1.000 & 1.000 \\ 0.000 & 0.000\end{bmatrix}"
# Every exercise answered (as session state, no extra run): the gated parts show.
ANSWERED = {"_ffn.ex.neg.answered": 1, "_ffn.ex.y2.answered": 1.0, "_ffn.ex.merge.answered": 0}


def page(lang: str = "en", **kwargs):
    """The page with its exercises answered."""
    return open_page(PAGE, lang, state=ANSWERED | kwargs.pop("state", {}), **kwargs)


def expected(x, act="relu", w1=W1, w2=W2, b1=(0, 0, 0), b2=(0, 0)) -> dict[str, str]:
    """The steps as the page writes them, from F.linear and PyTorch's activations."""
    x, w1, w2 = (torch.tensor(v, dtype=torch.float64) for v in (x, w1, w2))
    b1, b2 = (torch.tensor(v, dtype=torch.float64) for v in (b1, b2))
    h = F.linear(x, w1.T, b1)
    a = ACT[act](h)
    return {"h": vec(h), "a": vec(a), "y": vec(F.linear(a, w2.T, b2)),
            "flat": vec(F.linear(h, w2.T, b2), 6)}


@pytest.fixture(scope="module")
def default_page():
    return {lang: page(lang) for lang in ONE_LANG}


@pytest.mark.parametrize("lang", ONE_LANG)
def test_defaults_show_the_worked_numbers(default_page, lang):
    at = default_page[lang]
    assert_clean(at)
    text = page_text(at)
    for number in ("[1.000, -1.000, 2.000]", "[1.000, 0.000, 2.000]", "[1.000, 2.000]",
                   MERGED, "[1.000000, 1.000000]", "-0.159", "-0.269"):
        assert number in text, number
    assert expected([1, -1]) == {"h": "[1.000, -1.000, 2.000]", "a": "[1.000, 0.000, 2.000]",
                                 "y": "[1.000, 2.000]", "flat": "[1.000000, 1.000000]"}
    # Without the activation: x (W1 W2) = [1, 1], the two-step result, both written out.
    assert text.count("[1.000000, 1.000000]") == 2
    assert "8d²" in text and "12d²" in text  # the FFN's share of a block's parameters
    assert "h[0] = 1.000" in tables(at)[0].columns[0]  # one number of decimals in the table


def test_the_running_example_takes_its_own_weights_here():
    """chain.W2 is edited on this stage: its FFN output follows, one row per position,
    and the stage's link carries it; the small example above keeps its own W₂."""
    at = open_page(PAGE)
    at.text_input("chain.W2").input("1, 0; 0, 1; 1, 1").run()
    assert_clean(at)
    w2 = torch.tensor([[1.0, 0], [0, 1], [1, 1]], dtype=torch.float64)
    run = run_chain(ChainParams(**{**ChainParams.defaults().__dict__, "W2": w2}))
    out = tables(at)[-1]
    assert out.values.tolist() == [[f"{v:.3f}" for v in row] for row in run.ffn.output.tolist()]
    assert at.query_params["chain.W2"] == "1, 0; 0, 1; 1, 1"
    assert "[1.000, 2.000]" in page_text(at)  # the small example's own output is unchanged
    assert "largest difference 0" in page_text(at)


def test_sliders_and_the_activation_switch_update_every_step():
    at = open_page(PAGE)
    labels = [s.label for s in at.slider]
    assert labels[:3] == ["x[0]", "x[1]", "W₁[0,0]"] and "b₂[1]" in labels  # counted from 0
    at.slider("_ffn.x~1").set_value(1.0).run()  # x = [1, 1]
    want = expected([1, 1])
    text = page_text(at)
    assert all(want[k] in text for k in ("h", "a", "y"))
    assert at.query_params["ffn.x"] == "1, 1"
    at.button_group("ffn.act").set_value("gelu").run()
    want = expected([1, 1], "gelu")
    text = page_text(at)
    assert_clean(at)
    assert want["a"] in text and want["y"] in text
    assert at.query_params["ffn.act"] == "gelu"


def test_a_shared_link_reproduces_the_page():
    params = {"ffn.x": "2, 0.5", "ffn.act": "silu", "ffn.W2": "1, 0; 0, 2; -1, 1",
              "ffn.b1": "0.5, 0, -1", "ffn.b2": "1, 0"}
    at = page(params=params)
    assert_clean(at)
    want = expected([2, 0.5], "silu", w2=[[1, 0], [0, 2], [-1, 1]], b1=[0.5, 0, -1], b2=[1, 0])
    text = page_text(at)
    for key in ("h", "a", "y", "flat"):
        assert want[key] in text
    assert text.count(want["flat"]) == 2  # with biases, one merged map still agrees


def test_bad_link_values_fall_back_with_a_note():
    at = open_page(PAGE, params={"ffn.act": "tanh", "ffn.x": "abc", "ffn.hand.step": "9"})
    assert_clean(at)
    assert len(at.error) == 3
    assert "[1.000, 2.000]" in page_text(at)


@pytest.mark.parametrize(("key", "wrong_shape"), [
    ("ffn.x", "1, 2, 3"), ("ffn.W1", "1, 0; 0, 1"), ("ffn.W2", "1, 0; 0, 1"),
    ("ffn.b1", "0, 0"), ("ffn.b2", "0, 0, 0"), ("chain.W1", "1, 2; 3, 4"),
])
def test_bad_input_in_every_box_shows_one_message(key, wrong_shape):
    at = page()
    for bad in (BAD_CELL, wrong_shape):
        at.text_input(key).input(bad).run()
        assert not at.exception
        assert len(at.error) == 1, (key, bad)
        text = page_text(at)
        assert "[1.000, 2.000]" in text and MERGED in text  # the last valid values


def test_choice_exercise(lang):
    at = open_page(PAGE, lang)
    before = len(at.success)  # the page's own "both agree" note
    assert "−0.159" not in page_text(at)  # the explanation's numbers, unicode minus
    assert "-0.159" not in page_text(at)  # GELU(−1) in the table under the curves
    reveal(at, "ffn.neg", 1)
    assert len(at.success) == before + 1 and "−0.159" in at.success[0].value
    assert "-0.159" in tables(at)[0].to_string()  # the curves' table, now shown


@pytest.mark.parametrize(("typed", "right"), [(1.0, True), (2.0, False)])
def test_number_exercise_without_the_activation(typed, right):
    at = open_page(PAGE)
    assert "y = h W₂ + b₂" not in page_text(at) and MERGED not in page_text(at)
    answer(at, "ffn.y2", typed)
    verdicts = [s for s in at.success if s.value.startswith("Right")] if right else at.warning
    assert len(verdicts) == 1
    assert "y = h W₂ + b₂ = [1.000, 1.000]" in explanations(at)
    assert MERGED not in page_text(at)  # the "why" exercise beside it is not answered yet
    if right:
        reveal(at, "ffn.merge", 0)
        assert MERGED in page_text(at)


def test_cells_explain_themselves():
    at = page(state=click(("ffn.chain_out", 3, 0)))
    text = explanations(at)
    # Row 3 (「？」), column 0: its hidden values times column 0 of the chain's W₂,
    # counted from 0 as in the labels and slider names (W₁[0,2]).
    assert r"f_{3,0} = 1.161\cdot1 + 0\cdot0 + 0\cdot(-1) = 1.161" in text
    assert "Output 0 of" in text
    at = page(params={"ffn.chain_hidden": "3,1"})
    # H[？] = [1.161, -0.807] times column 1 of W₁, [-1, 1]: -1.968, cut by ReLU
    assert (r"a_{3,1} = \mathrm{ReLU}(1.161\cdot(-1) + (-0.807)\cdot1) = "
            r"\mathrm{ReLU}(-1.968) = 0.000") in explanations(at)


def test_step_by_step_link():
    at = open_page(PAGE, params={"ffn.hand.step": "1"})
    text = page_text(at)
    assert "[1.000, -1.000, 2.000]" in text
    assert r"\mathrm{ReLU}\left(" not in text  # step 2 is not shown yet


def test_bias_sliders_move_the_result():
    at = page()
    at.slider("_ffn.b2~1").set_value(0.5).run()  # b₂ = [0, 0.5]
    want = expected([1, -1], b2=[0, 0.5])
    assert want["y"] in page_text(at) and want["flat"] in page_text(at)
    assert at.query_params["ffn.b2"] == "0, 0.5"
