"""Stage 5.2 (context) in AppTest: 运费 enters both questions as one row and leaves as
two; each result appears once the exercise it answers is answered."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from tests.app.helpers import (
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
from tinyformer.lessons.checkpoint import load_model
from tinyformer.lessons.projection import random_setup
from ui.example import Q1, Q1_WORDS, Q2, Q2_WORDS
from ui.fmt import latex_vec, num
from ui.i18n import catalogue

PAGE = "pages/05_context.py"
# The random view's three exercises answered: the input rows and the outputs are drawn.
ANSWERED = {"_context.ex.same.answered": 1, "_context.ex.differ.answered": 0,
            "_context.ex.part.answered": 0.0}


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


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return open_page(PAGE, request.param, state=ANSWERED)


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
    text = page_text(at)  # a Chinese word may be wrapped in its language's <span>
    assert re.search(r"运费(</span>)? \*shipping fee\*", text)
    assert re.search(r"退货(</span>)? \*return \(of goods\)\*", text)


@pytest.mark.parametrize(("width", "seed"), [(6, 0), (4, 7), (1, 3)])
def test_edits_and_shared_links_give_the_same_numbers(width, seed) -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.slider("context.d").set_value(width).run()
    at.number_input("context.seed").set_value(seed).run()
    assert_clean(at)
    edited = page_text(at)
    linked = page_text(open_page(PAGE, params={"context.d": str(width),
                                               "context.seed": str(seed)}, state=ANSWERED))
    for number in shown_numbers(width, seed):
        assert number in edited and number in linked
    assert latex_vec(expected()["diff"]) not in edited


@pytest.mark.parametrize("params", [{"context.d": "99"}, {"context.d": "2.5"},
                                    {"context.d": "nan"}, {"context.seed": "abc"},
                                    {"context.seed": "1e300"}, {"context.seed": "-1"},
                                    {"context.seed": ""}])
def test_a_bad_link_value_gives_one_note_and_the_default(params) -> None:
    at = open_page(PAGE, params=params, state=ANSWERED)
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
    assert not at.success and not at.warning  # no result before any answer
    reveal(at, "context.same", 1)
    assert len(at.success) == 1 and "causal mask" in at.success[0].value


@pytest.mark.parametrize(("typed", "right"), [(0, True), (2, False)])
def test_how_many_input_numbers_differ(lang, typed, right) -> None:
    at = open_page(PAGE, lang)
    assert latex_vec(expected()["a"]["x"], 2) not in page_text(at)  # the rows answer it
    answer(at, "context.differ", typed)
    assert len(at.success) == (2 if right else 1)  # plus the page's own "equal" note
    assert len(at.warning) == (0 if right else 1)
    assert latex_vec(expected()["a"]["x"], 2) in page_text(at)


@pytest.mark.parametrize("right", [True, False])
def test_a_contribution_to_compute(right) -> None:
    e = expected()["b"]
    j = Q2_WORDS.index("退货")
    part = float(e["weights"][j] * e["v"][j, 0])
    at = open_page(PAGE, state={"_context.ex.same.answered": 1})
    assert latex_vec(expected()["diff"]) not in page_text(at)  # the parts answer it
    answer(at, "context.part", round(part, 3) if right else part + 0.1)
    assert len(at.success) == (1 if right else 0)
    steps = rf"a_{{\text{{「退货」}}}}\,v_{{\text{{「退货」}},0}} = {num(e['weights'][j])}\cdot"
    assert steps in explanations(at)  # the worked steps
    assert latex_vec(expected()["diff"]) in page_text(at)  # both answered: the outputs
    if right:  # the "why" beside the product
        reveal(at, "context.blend", 1)
        assert "Σ_j a_j v_j" in at.success[-1].value


def test_cells_explain_themselves() -> None:
    state = click(("context.read_a", 0, 3), ("context.read_b", 0, 5),
                  ("context.parts_b", 1, 0))
    at = open_page(PAGE, state={**state, **ANSWERED}, params={"context.shares": "6,0"})
    text = explanations(at)
    e = expected()
    assert "a_{5,3}" in text and r"\frac" in text and num(e["a"]["weights"][3]) in text
    assert r"a_{3,5} = e^{-\infty}" in text  # 承担 comes after 运费 in question 2
    returned = r"\text{「退货」}"
    assert rf"a_{{{returned}}}\,v_{{{returned},0}} = {num(e['b']['weights'][1])}" in text
    share = -float(e["b"]["weights"][0] * e["b"]["v"][0, 0])  # 无理由: question 2 only
    assert r"\Delta_{\text{「无理由」},0} = " in text and f"= {num(share)}" in text


# --- The trained model: 费 in both questions, numbers from the shipped model ----------

SAME_PLACE = "商品无理由退货，运费谁承担？"
TRAINED = {"context.model": "trained"}


def trained_numbers(question: str) -> dict:
    """From the shipped model's own trace: 费's attention rows (block by block, head by
    head), its rows before and after the blocks, and P(商), P(买) after the question."""
    trained = load_model()
    vocab, model = trained.vocab, trained.model
    ids = torch.tensor(vocab.encode(question).ids)
    trace, at = model.trace(ids), question.index("费")
    rows = torch.cat([b.attention.weights[0, :, at] for b in trace.blocks])  # [L * H, N]
    probs = torch.softmax(model(ids[None])[0][0, -1], -1)
    return {"at": at, "rows": rows, "token": model.token.weight[vocab.id_of("费")],
            "output": trace.blocks[-1].resid2[0, at],
            "shang": float(probs[vocab.id_of("商")]), "mai": float(probs[vocab.id_of("买")])}


@pytest.fixture(scope="module", params=ONE_LANG)
def trained_page(request):
    return request.param, open_page(PAGE, request.param, params=TRAINED)


def test_the_trained_view_shows_the_models_own_numbers(trained_page) -> None:
    lang, at = trained_page
    assert_clean(at)
    text = page_text(at)
    assert catalogue(lang)["kit.random_weights"] not in text  # no random weights here
    note = catalogue(lang)["context.trained_note"].replace("{stage.training}", "13.1")
    assert note.format(char="费") in text
    one, two = trained_numbers(Q1), trained_numbers(Q2)
    heat = [f for f in tables(at) if "费" in f.columns and len(f) == 4]
    assert heat[0].values.tolist() == [[f"{w:.2f}" for w in row] for row in one["rows"].tolist()]
    assert heat[1].values.tolist() == [[f"{w:.2f}" for w in row] for row in two["rows"].tolist()]
    differ = next(f for f in tables(at) if "0 / 32" in f.values)
    assert differ.iloc[:, 0].tolist() == ["0 / 32"] + ["32 / 32"] * 6
    gap = (one["output"] - two["output"]).abs().max()
    assert differ.iloc[-1, 1] == num(gap)  # the last block's output rows differ by this much
    shares = [f for f in tables(at) if len(f) == 5]
    reason = one["rows"][:, 2:7].sum(-1)  # 有质量问题 at positions 2..6
    assert shares[0].iloc[:4, 0].tolist() == [num(r) for r in reason]
    assert shares[1].iloc[:4, 0].tolist() == [num(r) for r in two["rows"][:, 0:5].sum(-1)]
    assert shares[0].iloc[4].tolist() == ["0.500", "0.200", "0.300"]  # even over 10
    for number in (one["shang"], two["shang"], one["mai"], two["mai"]):
        assert num(number) in at.info[-1].value
    assert one["shang"] > 0.9 and two["mai"] > 0.9  # 商 for the running example


def test_the_switch_and_a_shared_link_agree() -> None:
    at = open_page(PAGE, state=ANSWERED)
    assert latex_vec(expected()["diff"]) in page_text(at)  # the random view
    at.button_group("context.model").set_value("trained").run()
    assert_clean(at)
    assert at.query_params["context.model"] == "trained"
    linked = open_page(PAGE, params=TRAINED)
    assert [f.values.tolist() for f in tables(at)] == [f.values.tolist() for f in tables(linked)]
    at.button_group("context.model").set_value("random").run()
    assert latex_vec(expected()["diff"]) in page_text(at)  # back to the random numbers


def test_the_same_place_twin_makes_the_inputs_identical() -> None:
    at = open_page(PAGE, params={**TRAINED, "context.twin": "same_place"})
    assert_clean(at)
    differ = next(f for f in tables(at) if "0 / 32" in f.values)
    assert differ.iloc[:, 0].tolist() == ["0 / 32"] * 3 + ["32 / 32"] * 4
    other = trained_numbers(SAME_PLACE)
    heat = [f for f in tables(at) if "费" in f.columns and len(f) == 4][1]
    assert heat.values.tolist() == [[f"{w:.2f}" for w in r] for r in other["rows"].tolist()]


@pytest.mark.parametrize("params", [{"context.model": "maybe"},
                                    {**TRAINED, "context.twin": "q9"}])
def test_bad_model_links_give_one_note_and_the_default(params) -> None:
    at = open_page(PAGE, params=params, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == 1 and "default" in at.error[0].value
    if params["context.model"] == "maybe":
        assert latex_vec(expected()["diff"]) in page_text(at)
    else:
        assert at.radio("context.twin").value == "q2"


def test_a_trained_attention_cell_explains_itself() -> None:
    at = open_page(PAGE, params={**TRAINED, "context.trained_a": "0,5",
                                 "context.trained_b": "3,10"})
    text = explanations(at)
    weight = float(trained_numbers(Q1)["rows"][0, 5])
    assert "a_{9,5}" in text and r"\frac" in text and f"= {num(weight)}" in text
    assert r"a_{7,10} = e^{-\infty}" in text  # 承 comes after 费 in the twin


def test_a_missing_model_gives_one_translated_message(missing_model, lang) -> None:
    """No shipped model (a fresh checkout without assets/model): one message, the random
    view still works."""
    at = open_page(PAGE, lang, params=TRAINED, state=ANSWERED)
    assert_clean(at)
    message = catalogue(lang)["errors.trained_model_missing"].format(path=missing_model)
    assert [e.value for e in at.error] == [message]
    at.button_group("context.model").set_value("random").run()
    assert not at.error and latex_vec(expected()["diff"]) in page_text(at)
