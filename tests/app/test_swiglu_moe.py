"""Stage 8.2 in AppTest: SwiGLU's two branches and its gate (3 x 0.2 = 0.6), the MoE router
over six tokens, and total / active parameters (80 M and 20 M). The routing is checked
against a reference written with torch.topk and F.linear on the page's seeded data. What
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
from tinyformer.moe import random_moe
from ui.example import TAIL6
from ui.fmt import latex_vec, num
from ui.i18n import catalogue

PAGE = "pages/08_swiglu_moe.py"
SWIGLU = ["[0.731, -0.269, 1.762]", "[3.000, 2.000, 0.500]", "[2.193, -0.538, 0.881]",
          "[2.193, 0.343]"]
COUNTS = [r"8 \times 10{,}000{,}000 = 80{,}000{,}000", r"2 \times 10{,}000{,}000 = 20{,}000{,}000",
          "80 M", "20 M"]
# Every exercise answered (as session state, no extra run): the gated parts show.
ANSWERED = {"_swiglu_moe.ex.gate.answered": 2, "_swiglu_moe.ex.why_renorm.answered": 0,
            "_swiglu_moe.ex.renorm.answered": 0.6, "_swiglu_moe.ex.memory.answered": 1}


def page(lang: str = "en", **kwargs):
    """The page with its exercises answered."""
    return open_page(PAGE, lang, state=ANSWERED | kwargs.pop("state", {}), **kwargs)


def reference(n_experts: int = 8, k: int = 2, seed: int = 0):
    """Dense weights [T, E] and outputs [T, d] for the page's seeded tokens and experts."""
    setup = random_moe(len(TAIL6), 4, 8, n_experts, seed)  # the data, not the maths
    ex = setup.experts
    probs = torch.softmax(setup.x @ setup.w_router, dim=-1)
    top = torch.topk(probs, k, dim=-1)
    weights = top.values / top.values.sum(-1, keepdim=True)
    dense = torch.zeros_like(probs).scatter(-1, top.indices, weights)
    outputs = torch.stack([
        sum(w * F.linear(F.relu(F.linear(x, ex.w1[e].T, ex.b1[e])), ex.w2[e].T, ex.b2[e])
            for w, e in zip(weights[t], top.indices[t].tolist(), strict=True))
        for t, x in enumerate(setup.x)])
    load = torch.bincount(top.indices.flatten(), minlength=n_experts)
    return dense, outputs, load


def charts(at) -> list[str]:
    """The keys of the page's Plotly charts, without the kit's suffix."""
    return [str(c.key).split("~")[0] for c in at.get("plotly_chart")]


def shown(frame) -> list[list[str]]:
    return [list(row) for row in frame.values]


@pytest.fixture(scope="module")
def default_page():
    return {lang: page(lang) for lang in ONE_LANG}


@pytest.mark.parametrize("lang", ONE_LANG)
def test_defaults_show_the_worked_numbers(default_page, lang):
    at = default_page[lang]
    assert_clean(at)
    text = page_text(at)
    for number in [*SWIGLU, *COUNTS, r"0.2 \cdot 3 = 0.600", "SiLU(0.342) = 0.200"]:
        assert number in text, number
    assert len(at.info) >= 1  # the random-weights note
    # SwiGLU's three d x (8/3)d matrices hold as many weights as two d x 4d ones: 8d².
    assert (r"2 \cdot 4096 \cdot 16384 = 134{,}217{,}728,\qquad 3 \cdot 4096 \cdot "
            r"\tfrac{32768}{3} = 134{,}217{,}728") in text
    assert "h = 11008" in text and "135,266,304" in text  # Llama rounds h up to 256s


def test_router_weights_and_outputs_match_the_reference():
    at = open_page(PAGE)  # in English: the load sentence is read back
    dense, outputs, load = reference()
    weights_table = tables(at)[1]
    assert list(weights_table.columns) == [f"E{e}" for e in range(8)]  # counted from 0
    assert shown(weights_table) == [[num(v) for v in row] for row in dense.tolist()]
    assert latex_vec(outputs[2]) in page_text(at)  # 运费, the token chosen by default
    assert f"the busiest expert gets {int(load.max())}" in page_text(at)


def test_fewer_experts_and_top_1():
    at = open_page(PAGE)
    at.slider("swiglu_moe.E").set_value(4).run()
    at.slider("swiglu_moe.k").set_value(1).run()
    assert_clean(at)
    dense, outputs, _ = reference(4, 1)
    weights_table = tables(at)[1]
    assert shown(weights_table) == [[num(v) for v in row] for row in dense.tolist()]
    assert all(list(row).count("1.000") == 1 for row in weights_table.values)
    at.selectbox("swiglu_moe.tok").set_value(0).run()  # 问题
    assert latex_vec(outputs[0]) in page_text(at)
    assert at.query_params["swiglu_moe.E"] == "4" and at.query_params["swiglu_moe.tok"] == "0"


@pytest.mark.parametrize(("lang", "message"), [("en", "between 1 and 8 experts (now 9)"),
                                               ("zh", "1 到 8 个专家（现在是 9 个）")])
def test_top_k_above_the_experts_is_one_message(lang, message):
    at = page(lang)
    at.slider("swiglu_moe.k").set_value(9).run()
    assert_clean(at)
    assert len(at.error) == 1 and message in at.error[0].value
    assert "80 M" in page_text(at)  # the rest of the page still renders
    at = page(lang)
    at.number_input("swiglu_moe.pk").set_value(9).run()  # the count's own top-k
    assert len(at.error) == 1 and message in at.error[0].value
    assert "[2.193, 0.343]" in page_text(at)


def test_editing_the_sizes_of_the_count():
    at = open_page(PAGE)
    at.number_input("swiglu_moe.n").set_value(64).run()
    at.number_input("swiglu_moe.pk").set_value(8).run()
    at.number_input("swiglu_moe.mpe").set_value(1.5).run()
    text = page_text(at)
    assert r"64 \times 1{,}500{,}000 = 96{,}000{,}000" in text
    assert r"8 \times 1{,}500{,}000 = 12{,}000{,}000" in text
    assert "96 M" in text and "12 M" in text


def test_the_gate_sliders():
    at = page()
    at.slider("_swiglu_moe.s~s").set_value(0.5).run()
    text = page_text(at)
    assert r"0.5 \cdot 3 = 1.500" in text
    assert f"SiLU({num(_silu_at(0.5))}) = 0.500" in text


def _silu_at(gate: float) -> float:
    """g with SiLU(g) = gate, by bisection on PyTorch's own F.silu."""
    lo, hi = -1.2785, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(F.silu(torch.tensor(mid, dtype=torch.float64))) < gate \
            else (lo, mid)
    return lo


def test_a_shared_link_and_bad_link_values():
    at = page(params={"swiglu_moe.x": "2, 1", "swiglu_moe.seed": "3",
                                 "swiglu_moe.k": "3"})
    assert_clean(at)
    assert latex_vec(F.silu(torch.tensor([2.0, 1.0, 1.0]))) in page_text(at)  # x W_gate
    dense, _, _ = reference(8, 3, 3)
    assert shown(tables(at)[1]) == [[num(v) for v in row] for row in dense.tolist()]
    bad = {"swiglu_moe.E": "0", "swiglu_moe.k": "abc", "swiglu_moe.mpe": "1e300",
           "swiglu_moe.tok": "7", "swiglu_moe.s": "nan", "swiglu_moe.dw": "0"}
    at = page(params=bad)
    assert_clean(at)
    assert len(at.error) == len(bad)
    text = page_text(at)
    assert all(number in text for number in COUNTS)


@pytest.mark.parametrize(("key", "wrong_shape"), [
    ("swiglu_moe.x", "1, 2, 3"), ("swiglu_moe.Wg", "1, 0; 0, 1"), ("swiglu_moe.Wu", "1, 2, 3"),
    ("swiglu_moe.Wd", "1, 0, 0; 0, 1, 1")])
def test_bad_input_in_every_box_shows_one_message(key, wrong_shape):
    at = page()
    for bad in (BAD_CELL, wrong_shape):
        at.text_input(key).input(bad).run()
        assert not at.exception
        assert len(at.error) == 1, (key, bad)
        assert "[2.193, 0.343]" in page_text(at)  # the last valid values


def test_exercises_come_before_what_answers_them(lang):
    at = open_page(PAGE, lang)
    figures = catalogue(lang)["swiglu_moe.figures_note"]
    text = page_text(at)
    assert SWIGLU[0] not in text and "0.3 / (0.3 + 0.2)" not in text and figures not in text
    assert "_swiglu_moe.silu" not in charts(at)  # the curve of every possible gate
    right = catalogue(lang)["kit.right"]
    for exercise, choice in (("swiglu_moe.gate", 2), ("swiglu_moe.memory", 1),
                             ("swiglu_moe.why_renorm", 0)):
        reveal(at, exercise, choice)
    assert sum(s.value.startswith(right) for s in at.success) == 3
    text = page_text(at)
    assert all(number in text for number in SWIGLU) and figures in text
    assert "_swiglu_moe.silu" in charts(at)
    answer(at, "swiglu_moe.renorm", 0.6)
    assert "0.3 / (0.3 + 0.2) = 0.6" in explanations(at)


def test_wrong_answers_are_corrected():
    at = open_page(PAGE)
    reveal(at, "swiglu_moe.memory", 0)
    assert len(at.warning) == 1 and "80 million" in at.warning[0].value
    answer(at, "swiglu_moe.renorm", 0.3)
    assert any("0.600" in w.value for w in at.warning)


def test_cells_explain_themselves():
    dense, _, _ = reference()
    chosen = int(dense[2].argmax())
    unused = int(dense[2].argmin())
    at = page(state=click(("swiglu_moe.weights", 2, chosen), ("swiglu_moe.probs", 2, 0)))
    text = explanations(at)
    assert rf"w_{{2,{chosen}}} = \frac{{" in text and f"= {num(dense[2, chosen])}" in text
    assert "p_{2,0} &= " in text
    at = open_page(PAGE, params={"swiglu_moe.weights": f"2,{unused}"})
    assert "is not among the top-k experts of 「运费」" in explanations(at)


def test_step_by_step_link():
    text = page_text(page(params={"swiglu_moe.hand.step": "2"}))
    assert "[3.000, 2.000, 0.500]" in text and "[2.193, 0.343]" not in text
