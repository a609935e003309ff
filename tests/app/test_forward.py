"""Stage 11 (the full forward pass) in AppTest: the article's printed run in both languages,
edits and shared links, every bad input, the step-by-step walk, both exercises and a
cell explanation. Expected numbers come from PyTorch's own functions or from TinyDecoder
(itself checked against the article and a functional rebuild in tests/unit)."""

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
    display_math,
    explanations,
    open_page,
    page_text,
    reveal,
)
from tinyformer.lessons import trace as tr
from tinyformer.lessons.checkpoint import load_model
from tinyformer.lessons.forward_pass import BLOCK_STEPS, HEAD_STEPS, TAIL_STEPS
from tinyformer.model import TinyDecoder
from ui.example import Q1, Q2
from ui.i18n import catalogue

PAGE = "pages/11_forward.py"
IDS = [3, 8, 12, 5, 17, 42, 23, 6]
ARTICLE = ["1,784", "[1, 8, 50]", "[1, 2, 8, 8]", "(40, 0.0538), (20, 0.0472), (35, 0.0444)"]
FIRST_ROW = "row 0 = [1, 0, 0, 0, 0, 0, 0, 0]"
# Both exercises answered: the run (its shapes and rows answer them) is drawn only then.
ANSWERED = {"_forward.ex.shape.answered": 0, "_forward.ex.a00.answered": 1.0}


def opened(params=None, lang: str = "en", state=None):
    """The page as a learner sees it after answering both exercises."""
    return open_page(PAGE, lang, params=params, state={**ANSWERED, **(state or {})})


def first_query(model: TinyDecoder, ids: list[int]) -> torch.Tensor:
    """Q of block 0 from PyTorch's own functions: LayerNorm, then the first `width` rows of
    the fused QKV weight (they are W_q)."""
    block, width = model.blocks[0], model.token.weight.shape[1]
    x = model.token.weight[ids] + model.position.weight[: len(ids)]
    norm = F.layer_norm(x, (width,), block.norm1.weight, block.norm1.bias)
    return F.linear(norm, block.qkv.weight[:width]).detach()  # [N, width]


def top3(model: TinyDecoder, ids: list[int]) -> str:
    return ", ".join(f"({i}, {p:.4f})" for i, p in model.trace(ids).top(3))


def test_defaults_show_the_articles_run(lang: str) -> None:
    at = opened(lang=lang)
    assert_clean(at)
    assert at.title[0].value.startswith("11 · ")
    text = page_text(at)
    for number in ARTICLE:
        assert number in text
    assert text.count("[1, 0, 0, 0, 0, 0, 0, 0]") == 2  # the first row of each of the 2 heads
    assert "8 / 2 = **4**" in text
    assert catalogue(lang)["kit.random_weights"] in text
    assert catalogue(lang)["forward.causal_on"] in text
    assert "forward." not in text and "errors." not in text  # every key is translated
    assert "0 · ID 3" in text and "7 · ID 6" in text  # the token embeddings' table, rows by ID
    last = TinyDecoder.seeded(7).trace(IDS).attention_weights[0, 0, -1].tolist()
    assert "[" + ", ".join(f"{w:.3f}" for w in last) + "]" in text  # 3 decimals, every one


def test_four_heads_have_width_two_and_the_same_logits_shape() -> None:
    at = opened()
    at.button_group("forward.heads").set_value(4).run()
    assert_clean(at)
    text = page_text(at)
    assert "8 / 4 = **2**" in text and "[1, 8, 50]" in text and "[1, 4, 8, 8]" in text
    assert text.count(FIRST_ROW) == 4 and "1,784" in text  # heads regroup, they add nothing
    assert top3(TinyDecoder.seeded(7, heads=4), IDS) in text
    assert at.query_params["forward.heads"] == "4"


def test_causal_off_reads_the_future_and_says_so() -> None:
    at = opened()
    at.toggle("forward.causal").set_value(False).run()
    assert_clean(at)
    text = page_text(at)
    assert FIRST_ROW not in text and "[1, 8, 50]" in text  # still computes, same shapes
    weights = TinyDecoder.seeded(7, causal=False).trace(IDS).attention_weights
    later = float(weights[0, 0, 0, 1:].sum())  # head 0, row 0, positions after it
    assert len(at.warning) == 1 and f"{later:.3f}" in at.warning[0].value
    assert top3(TinyDecoder.seeded(7, causal=False), IDS) in text


def test_another_seed_and_other_ids() -> None:
    at = opened()
    at.number_input("forward.seed").set_value(8).run()
    at.text_input("forward.ids").input("1, 2, 3").run()
    assert_clean(at)
    text = page_text(at)
    assert "[1, 3, 50]" in text and "[1, 2, 3, 3]" in text
    assert top3(TinyDecoder.seeded(8), [1, 2, 3]) in text
    assert top3(TinyDecoder.seeded(7), IDS) not in text
    assert at.query_params["forward.ids"] == "1, 2, 3"


def test_a_shared_link_reproduces_the_page() -> None:
    params = {"forward.seed": "8", "forward.ids": "1, 2, 3", "forward.width": "12",
              "forward.heads": "3", "forward.layers": "2", "forward.step": "b1.weights"}
    at = opened(params)
    assert_clean(at)
    text = page_text(at)
    model = TinyDecoder.seeded(8, width=12, heads=3, layers=2)
    assert top3(model, [1, 2, 3]) in text and f"{model.config.parameter_count:,}" in text
    assert "12 / 3 = **4**" in text
    assert at.select_slider("forward.step").value == "b1.weights"


@pytest.mark.parametrize(
    ("typed", "key"),
    [("", "ids_empty"), ("3, a", "ids_not_whole"), ("3, 8.5", "ids_not_whole"),
     (", ".join(["1"] * 17), "ids_too_many"), ("3, 50", "ids_outside_vocab"),
     ("-1, 3", "ids_outside_vocab")],
)
def test_bad_ids_give_one_message_and_the_articles_ids(typed: str, key: str) -> None:
    at = opened()
    at.text_input("forward.ids").input(typed).run()
    assert_clean(at)
    assert len(at.error) == 1
    message = at.error[0].value
    assert message.endswith(catalogue("en")[f"errors.{key}"].rsplit(". ", 1)[-1])
    for number in ARTICLE:  # the rest of the page works on the article's IDs
        assert number in page_text(at)


def test_bad_ids_message_is_translated() -> None:
    at = open_page(PAGE, "zh", params={"forward.ids": "3, 50"})
    assert at.error[0].value == catalogue("zh")["errors.ids_outside_vocab"].format(id=50, last=49)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_width_8_with_3_heads_is_a_translated_message(lang: str) -> None:
    at = opened(lang=lang)
    at.button_group("forward.heads").set_value(3).run()
    assert_clean(at)
    expected = catalogue(lang)["errors.width_not_divisible"].format(width=8, heads=3)
    assert [e.value for e in at.error] == [expected]
    assert len(at.radio) >= 1 and len(at.number_input) >= 2  # exercises and inputs still work
    at.button_group("forward.width").set_value(12).run()  # 12 / 3 = 4: it runs again
    assert not at.error and "12 / 3 = **4**" in page_text(at)


def test_bad_link_values_fall_back_with_one_note_each() -> None:
    params = {"forward.heads": "5", "forward.width": "abc", "forward.causal": "maybe",
              "forward.seed": "1e300", "forward.step": "b7.q"}
    at = opened(params)
    assert_clean(at)
    assert len(at.error) == len(params)
    for number in ARTICLE:
        assert number in page_text(at)


def test_the_walk_visits_every_step_in_order() -> None:
    at = opened({"forward.layers": "2"})
    slider = at.select_slider("forward.step")
    expected = [*HEAD_STEPS, *(f"b{b}.{s}" for b in range(2) for s in BLOCK_STEPS), *TAIL_STEPS]
    assert list(slider.options) == [slider.format_func(s) for s in expected]
    for step in expected:
        at.select_slider("forward.step").set_value(step).run()
        assert not at.exception, step
        assert display_math(at) >= 2, step  # the formula, symbolic and with the numbers
    at.select_slider("forward.step").set_value("b1.q").run()
    at.button_group("forward.layers").set_value(1).run()  # block 2 is gone
    assert_clean(at)
    assert not at.error and at.select_slider("forward.step").value == "tok"


def test_both_exercises_then_the_run(lang: str) -> None:
    """Predict first: neither answer is on the page before its exercise is answered; the
    run, which shows both, waits for both. A wrong number gets the steps too."""
    at = open_page(PAGE, lang)
    kit = catalogue(lang)
    explanation = kit["forward.ex_explain"]
    waiting = kit["kit.after_answer"]
    steps = "$e^s / e^s = 1$"
    text = page_text(at)
    assert "[1, 2, 8, 8]" not in text and "[1, 0, 0, 0, 0, 0, 0, 0]" not in text
    assert explanation not in text and steps not in text
    assert text.count(waiting) == 2  # the run and the walk
    reveal(at, "forward.shape", 0)
    assert any(explanation in s.value and kit["kit.right"] in s.value for s in at.success)
    assert "**[1, 2, 8, 8]**" not in page_text(at)  # still waiting for the second answer
    answer(at, "forward.a00", 0.5)
    wrong = kit["kit.not_quite_number"].format(typed="0.500", answer="1.000")
    assert wrong in [m.value for m in at.warning] and steps in explanations(at)
    text = page_text(at)
    assert waiting not in text and all(number in text for number in ARTICLE)


def test_a_query_cell_explains_itself_with_its_own_numbers() -> None:
    at = opened({"forward.step": "b0.q"}, state=click(("forward.map_b0_q_0", 3, 5)))
    q = first_query(TinyDecoder.seeded(7), IDS)
    text = explanations(at)
    assert "q_{3,5}" in text and f"= {q[3, 5]:.3f}" in text
    assert at.query_params["forward.map_b0_q_0"] == "3,5"


def test_scores_and_weights_cells_blocked_and_open() -> None:
    params = {"forward.step": "b0.scores", "forward.map_b0_scores_1": "0,3",
              "forward.map_b0_scores_0": "7,2"}
    text = explanations(opened(params))
    assert r"s_{0,3} = -\infty" in text and r"\sqrt{4}" in text  # head width 8 / 2
    weights = TinyDecoder.seeded(7).trace(IDS).attention_weights
    params = {"forward.step": "b0.weights", "forward.map_b0_weights_0": "7,2"}
    text = explanations(opened(params))
    assert f"= {float(weights[0, 0, 7, 2]):.3f}" in text and r"a_{7,2}" in text


def test_a_link_asking_for_a_gpu() -> None:
    at = opened({"device": "cuda"})
    assert_clean(at)
    text = page_text(at)
    if torch.cuda.is_available():
        assert "**CUDA**" in text and "1,784" in text  # top-3 within float tolerance: tests/unit
    else:
        assert catalogue("en")["kit.no_cuda"] in text and "**CPU**" in text
        for number in ARTICLE:
            assert number in text


# --- The trained model: the running example through the shipped weights --------------

TRAINED = {"forward.model": "trained"}


def trained_top3(question: str) -> tuple[str, str]:
    """The shipped model's own forward pass: its top 3 after the question, as the page
    writes them, and the most probable character."""
    trained = load_model()
    ids = torch.tensor(trained.vocab.encode(question).ids)
    probs = torch.softmax(trained.model(ids[None])[0][0, -1], -1)
    top = probs.topk(3)
    names = [f"({i}「{trained.vocab.tokens[i]}」, {p:.4f})"
             for i, p in zip(top.indices.tolist(), top.values.tolist(), strict=True)]
    return ", ".join(names), trained.vocab.tokens[int(top.indices[0])]


@pytest.fixture(scope="module", params=ONE_LANG)
def trained_page(request):
    return request.param, opened(TRAINED, request.param)


def test_the_trained_model_runs_the_running_example(trained_page) -> None:
    lang, at = trained_page
    assert_clean(at)
    text = page_text(at)
    config = load_model().model.config
    assert f"**{config.parameter_count:,}**" in text and "[1, 14, 115]" in text
    assert "[1, 2, 14, 14]" in text and "32 / 2 = **16**" in text
    top3, first = trained_top3(Q1)
    assert top3 in text and first == "商"  # the answer's first character: 商 of 商家
    assert text.count("row 0 = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]" if lang == "en"
                      else "= [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]") == 2
    assert catalogue(lang)["kit.random_weights"] not in text  # no random weights shown
    assert catalogue(lang)["forward.trained_note"].split("}")[-1] in text
    assert "0 · 商" in text and "13 · ？" in text  # rows named by their characters
    assert not re.search(r"\b(forward|errors)\.[a-z_]+\b(?!=)", text)  # all translated


def test_the_switch_the_twin_and_a_shared_link() -> None:
    at = opened()
    at.button_group("forward.model").set_value("trained").run()
    at.radio("forward.question").set_value("q2").run()
    assert_clean(at)
    top3, first = trained_top3(Q2)
    assert top3 in page_text(at) and first == "买"
    assert at.query_params["forward.question"] == "q2"
    linked = opened({**TRAINED, "forward.question": "q2", "forward.step": "b1.weights"})
    assert top3 in page_text(linked)
    assert linked.select_slider("forward.step").value == "b1.weights"
    at.button_group("forward.model").set_value("random").run()
    for number in ARTICLE:  # back to the article's program
        assert number in page_text(at)


@pytest.mark.parametrize("params", [{"forward.model": "maybe"},
                                    {**TRAINED, "forward.question": "q7"}])
def test_bad_model_links_give_one_note_and_the_default(params) -> None:
    at = opened(params)
    assert_clean(at)
    assert len(at.error) == 1
    expected = ARTICLE[0] if params["forward.model"] == "maybe" else trained_top3(Q1)[0]
    assert expected in page_text(at)


def test_every_trained_intermediate_in_order() -> None:
    at = opened(TRAINED)
    slider = at.select_slider("forward.step")
    expected = [*HEAD_STEPS, *(f"b{b}.{s}" for b in range(2) for s in BLOCK_STEPS), *TAIL_STEPS]
    assert list(slider.options) == [slider.format_func(s) for s in expected]
    for step in ("b1.weights", "b1.ffn_hidden", "logits", "probs"):
        at.select_slider("forward.step").set_value(step).run()
        assert not at.exception, step
        assert display_math(at) >= 2, step


def test_trained_cells_are_the_models_own_numbers() -> None:
    trained = load_model()
    model, ids = trained.model, list(trained.vocab.encode(Q1).ids)
    at = opened({**TRAINED, "forward.step": "b0.q"}, state=click(("forward.map_b0_q_0", 13, 20)))
    q = first_query(model, ids)
    text = explanations(at)
    assert "q_{13,20}" in text and f"= {q[13, 20]:.3f}" in text
    probs = torch.softmax(model(torch.tensor(ids)[None])[0][0, -1], -1)
    at = opened({**TRAINED, "forward.step": "probs", "forward.probs": "0,2"})
    text = explanations(at)  # 5 IDs to a row: row 0, column 2 is ID 2, 「商」
    assert "ID 2「商」" in text and f"= {float(probs[2]):.4f}" in text


def test_a_missing_model_gives_one_translated_message(missing_model, lang) -> None:
    """No shipped model: one message instead of the run; the exercises and the switch
    back to random weights still work."""
    at = opened(TRAINED, lang)
    assert_clean(at)
    message = catalogue(lang)["errors.trained_model_missing"].format(path=missing_model)
    assert [e.value for e in at.error] == [message]
    assert len(at.radio) >= 2  # the exercise and the question still drawn
    at.button_group("forward.model").set_value("random").run()
    assert not at.error and ARTICLE[0] in page_text(at)


# --- Trace a number back (tinyformer/lessons/trace.py; its numbers: tests/unit) ---------
def breadcrumb(at) -> str:
    return next(m.value for m in at.markdown if " ← " in m.value)


def test_a_logit_traced_back_to_an_id_and_its_link_reopened() -> None:
    """The trained model's logit of 商 at 「？」: a click starts the trail and a click on
    an input goes one step back; the link to the whole trail, down to the ID of 「？」,
    shows its breadcrumb (every step's numbers: tests/unit/test_trace.py)."""
    at = opened({**TRAINED, "forward.step": "logits"},
                state=click(("forward.map_logits_0", 13, 2)))
    at.button("_forward.trace~map_logits_0").click().run()
    assert at.query_params["forward.trace"] == "logits-0-13-2"
    at.button("_forward.trace~src0").click().run()
    assert_clean(at)
    run = tr.text_run(load_model(), Q1)
    whole = tr.trail_to_ids(run, tr.Address("logits", 0, 13, 2))
    assert at.query_params["forward.trace"] == tr.trail_text(whole[:2])  # its first input
    trail = tr.trail_text(whole)
    linked = opened({**TRAINED, "forward.step": "logits", "forward.trace": trail})
    assert_clean(linked)
    crumbs = breadcrumb(linked)
    mark = f"{load_model().vocab.id_of('？')}「？」"  # the question mark's ID, named
    assert crumbs.startswith("Logits $z_{13,2}$ 2「商」 ← Final LayerNorm")
    assert crumbs.endswith(f"ID at position 13: {mark}")
    done = catalogue("en")["forward.trace_done"].format(i=13, tok=mark, n=len(whole))
    assert done in [s.value for s in linked.success]
    linked.button("_forward.trace~undo").click().run()  # one step back towards the logit
    assert linked.query_params["forward.trace"] == tr.trail_text(whole[:-1])


def test_a_forged_trail_falls_back_with_a_note() -> None:
    at = opened({"forward.trace": "logits-0-7-40~tok-0-3-0"})  # no input of that logit
    assert_clean(at)
    note = catalogue("en")["input.bad_link"].format(name=catalogue("en")["forward.trace_label"])
    assert [e.value for e in at.error] == [note]
    assert "forward.trace" not in at.query_params
