"""Stage 5.2 in AppTest: 运费 enters both questions as one row and leaves as two."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.app.conftest import (
    answer,
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from tinyformer.projection import random_setup
from ui.example import Q1_WORDS, Q2_WORDS
from ui.fmt import latex_vec, num

PAGE = "pages/05_context.py"


def expected(width: int = 4, seed: int = 0) -> dict:
    """Independent of tinyformer.context: the seeded table and weights, then PyTorch's
    own causal attention; 运费's row in each question."""
    vocab = list(dict.fromkeys(Q1_WORDS + Q2_WORDS))
    setup = random_setup(len(vocab), width, width, torch.Generator().manual_seed(seed))
    out = {}
    for name, words in (("a", Q1_WORDS), ("b", Q2_WORDS)):
        x = setup.x[[vocab.index(w) for w in words]]  # [N, d]
        q, k, v = x @ setup.w_q, x @ setup.w_k, x @ setup.w_v
        at = words.index("运费")
        scores = (q[at] @ k.T / width ** 0.5).masked_fill(torch.arange(len(words)) > at,
                                                          float("-inf"))
        weights = torch.softmax(scores, -1)  # [N]
        o = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)[0, at]
        out[name] = {"x": x[at], "weights": weights, "v": v, "o": o}
    out["diff"] = out["a"]["o"] - out["b"]["o"]
    return out


def shown_numbers(width: int = 4, seed: int = 0) -> list[str]:
    e = expected(width, seed)
    return [latex_vec(e["a"]["x"], 2), latex_vec(e["a"]["o"]), latex_vec(e["b"]["o"]),
            latex_vec(e["diff"])]


@pytest.fixture(scope="module", params=("zh", "en"))
def default_page(request):
    return open_page(PAGE, request.param)


def test_defaults_show_one_input_row_and_two_output_rows(default_page) -> None:
    assert_clean(default_page)
    text = page_text(default_page)
    for number in shown_numbers():
        assert number in text
    e = expected()
    row = latex_vec(e["a"]["x"], 2)
    assert text.count(row) == 2  # x⁽¹⁾ and x⁽²⁾ of 运费, printed equal
    assert latex_vec(e["a"]["o"]) != latex_vec(e["b"]["o"])
    assert len(default_page.success) == 1  # "equal in all 4 numbers", as compared
    weights = [f for f in tables(default_page) if "运费" in f.index and "谁" in f.columns]
    assert weights[0].values.tolist()[0] == [num(w) for w in e["a"]["weights"]]
    assert weights[1].values.tolist()[0] == [num(w) for w in e["b"]["weights"]]


def test_english_view_glosses_the_words() -> None:
    at = open_page(PAGE, "en")
    assert "运费 *shipping fee*" in page_text(at) and "退货 *return (of goods)*" in page_text(at)


@pytest.mark.parametrize(("width", "seed"), [(6, 0), (4, 7), (1, 3)])
def test_edits_and_shared_links_give_the_same_numbers(width, seed) -> None:
    at = open_page(PAGE)
    at.slider("context.d").set_value(width).run()
    at.number_input("context.seed").set_value(seed).run()
    assert_clean(at)
    edited = page_text(at)
    linked = page_text(open_page(PAGE, params={"context.d": str(width),
                                               "context.seed": str(seed)}))
    for number in shown_numbers(width, seed):
        assert number in edited and number in linked
    assert latex_vec(expected()["diff"]) not in edited


@pytest.mark.parametrize("params", [{"context.d": "99"}, {"context.d": "2.5"},
                                    {"context.d": "nan"}, {"context.seed": "abc"},
                                    {"context.seed": "1e300"}, {"context.seed": "-1"},
                                    {"context.seed": ""}])
def test_a_bad_link_value_gives_one_note_and_the_default(params) -> None:
    at = open_page(PAGE, params=params)
    assert_clean(at)
    assert len(at.error) == 1 and "default" in at.error[0].value
    for number in shown_numbers():
        assert number in page_text(at)


def test_a_seed_past_its_bound_is_refused() -> None:
    at = open_page(PAGE)
    at.number_input("context.seed").set_value(10**6).run()
    assert_clean(at)
    assert 0 <= at.number_input("context.seed").value <= 9999


def test_choice_exercise() -> None:
    at = open_page(PAGE, "en")
    assert len(at.success) == 1 and not at.warning  # only the page's "equal" note
    reveal(at, "context.same", 1)
    assert len(at.success) == 2 and "causal mask" in at.success[0].value


@pytest.mark.parametrize(("typed", "right"), [(0, True), (2, False)])
def test_how_many_input_numbers_differ(lang, typed, right) -> None:
    at = open_page(PAGE, lang)
    answer(at, "context.differ", typed)
    assert len(at.success) == (2 if right else 1)  # plus the page's own "equal" note
    assert len(at.warning) == (0 if right else 1)
    assert latex_vec(expected()["a"]["x"], 2) in page_text(at)


@pytest.mark.parametrize("right", [True, False])
def test_a_contribution_to_compute(right) -> None:
    e = expected()["b"]
    j = Q2_WORDS.index("退货")
    part = float(e["weights"][j] * e["v"][j, 0])
    at = open_page(PAGE)
    answer(at, "context.part", round(part, 3) if right else part + 0.1)
    assert len(at.success) == (2 if right else 1)
    steps = rf"a_{{\text{{「退货」}}}}\,v_{{\text{{「退货」}},1}} = {num(e['weights'][j])}\cdot"
    assert steps in explanations(at)  # the worked steps


def test_cells_explain_themselves() -> None:
    state = click(("context.read_a", 0, 3), ("context.read_b", 0, 5),
                  ("context.parts_b", 1, 0))
    at = open_page(PAGE, state=state, params={"context.shares": "6,0"})
    text = explanations(at)
    e = expected()
    assert "a_{5,3}" in text and r"\frac" in text and num(e["a"]["weights"][3]) in text
    assert r"a_{3,5} = e^{-\infty}" in text  # 承担 comes after 运费 in question 2
    returned = r"\text{「退货」}"
    assert rf"a_{{{returned}}}\,v_{{{returned},1}} = {num(e['b']['weights'][1])}" in text
    share = -float(e["b"]["weights"][0] * e["b"]["v"][0, 0])  # 无理由: question 2 only
    assert r"\Delta_{\text{「无理由」},1} = " in text and f"= {num(share)}" in text
