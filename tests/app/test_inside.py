"""Stage 13.2 (inside the trained model) in AppTest: the shipped model's answers, its
P(商)/P(买) and P(商家)/P(买家), every head's answering row and the shares it adds up to,
beside an even spread; typed questions, shared links, questions outside the corpus's
pattern, both exercises and the cell explanations. Expected numbers come from
tinyformer.probe on the shipped model and, independently, from a plain forward pass."""

from __future__ import annotations

import json

import pytest
import torch

from serving.results import Index, Shelf
from tests.app.helpers import (
    ONE_LANG,
    _walk,
    answer,
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
    text_above,
)
from tinyformer.lessons import interventions as iv
from tinyformer.lessons import train as tr
from tinyformer.lessons.checkpoint import load_model
from tinyformer.lessons.example import RUNNING_EXAMPLE, TWIN, TWIN_SAME_PLACE
from tinyformer.lessons.probe import probe
from ui.fmt import num
from ui.i18n import catalogue
from ui.training import model_code

PAGE = "pages/13_inside.py"
FULL_KEY = "_inside.full.open"  # the expander of every head's full table, opened on demand
FULL_OPEN = {FULL_KEY: True}
OTHER = "衣服破损，运费谁承担？"  # a corpus question: merchant pays
# A learner's model from stage 13.1 (tiny: it trains in well under a second)
YOURS = tr.TrainSettings(layers=1, heads=1, width=8, steps=12, learning_rate=0.01, seed=201)


@pytest.fixture(scope="module")
def trained():
    return load_model()


@pytest.fixture(scope="module")
def answered(trained) -> dict:
    """The three exercises answered (as the session stores them): the bars and the
    answering rows, which answer them, are drawn only then."""
    insp = probe(trained, RUNNING_EXAMPLE)
    return {"_inside.ex.word.answered": round(insp.word.merchant, 3),
            "_inside.ex.why.answered": 0, "_inside.ex.even.answered": 2}


def bar_texts(at) -> list[str]:
    """The exact numbers written on the page's bar charts, in page order."""
    texts = []
    for node in _walk(at.main):
        if node.type == "plotly_chart":
            for trace in json.loads(node.proto.spec)["data"]:
                if trace.get("type") == "bar":
                    texts.extend(trace["text"])
    return texts


def expected_numbers(insp) -> list[str]:
    rows = [num(v) for head in insp.heads for v in head.shares] + list(map(num, insp.uniform))
    bars = [insp.first_token.merchant, insp.word.merchant, insp.first_token.buyer,
            insp.word.buyer]
    return rows + [f"{v:.4f}" for v in bars]


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request, answered):
    return open_page(PAGE, request.param, state=answered)


def test_defaults_show_both_questions_measured(default_page, trained):
    at = default_page
    assert_clean(at)
    assert at.title[0].value.startswith("13.2 · ")
    text, bars = page_text(at), bar_texts(at)
    assert "inside." not in text and "errors." not in text  # every key is translated
    for question, words in ((RUNNING_EXAMPLE, "商家承担。"), (TWIN, "买家承担。")):
        insp = probe(trained, question)
        assert insp.greedy_answer == words and f"**{words}**" in text
        for number in expected_numbers(insp):
            assert number in text or number in bars
    assert "487" in text and "490" in text and "1960" in text  # the shipped model's record


def test_the_probabilities_agree_with_a_plain_forward_pass(default_page, trained):
    ids = torch.tensor([trained.vocab.encode(RUNNING_EXAMPLE).ids])
    with torch.no_grad():
        probs = torch.softmax(trained.model(ids)[0][0, -1], -1)  # [V]
    p_shang = float(probs[trained.vocab.encode("商").ids[0]])
    p_mai = float(probs[trained.vocab.encode("买").ids[0]])
    assert bar_texts(default_page)[:2] == [f"{p_shang:.4f}", f"{p_mai:.4f}"]


def test_a_typed_question_and_its_shared_link_agree(trained, answered):
    at = open_page(PAGE, state=answered)
    at.text_input("inside.q2").input(OTHER).run()
    assert_clean(at)
    assert at.query_params["inside.q2"] == OTHER
    insp = probe(trained, OTHER)
    typed = page_text(at) + " ".join(bar_texts(at))
    linked_at = open_page(PAGE, params={"inside.q2": OTHER}, state=answered)
    linked = page_text(linked_at) + " ".join(bar_texts(linked_at))
    for number in expected_numbers(insp):
        assert number in typed and number in linked
    assert f"**{insp.greedy_answer}**" in typed


@pytest.mark.parametrize(("typed", "key"), [
    ("", "trained_question_empty"),
    ("请问abc，运费谁承担？", "trained_question_unknown"),
    (RUNNING_EXAMPLE * 2 + "商品", "trained_question_too_long"),  # 30 characters
    ("运费谁承担？", "trained_question_pattern"),
])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_questions_outside_the_pattern_get_one_message_and_no_answer(typed, key, lang):
    at = open_page(PAGE, lang)
    at.text_input("inside.q1").input(typed).run()
    assert_clean(at)
    assert len(at.error) == 1
    start = catalogue(lang)[f"errors.{key}"].split("{")[0][:8]
    assert at.error[0].value.startswith(start)
    text = page_text(at)
    assert "**商家承担。**" not in text  # no continuation for the refused question
    assert "**买家承担。**" in text  # the other question still works


def test_bad_link_values_fall_back_with_a_note(trained, answered):
    # A trained model is named by a link, but this learner never trained it.
    at = open_page(PAGE, params={"inside.q1": "商" * 41, "inside.which": "q9",
                                 "inside.model": model_code(YOURS)},
                   state={**answered, **FULL_OPEN})
    assert_clean(at)
    assert len(at.error) == 2  # one note per bad value, each question back to its default
    assert "**商家承担。**" in page_text(at)
    assert [i.value for i in at.info if i.value == catalogue("en")["training.model_not_here"]]
    assert "inside.model" not in at.query_params  # the shipped model: the default


def test_the_model_the_learner_trained_can_be_chosen(answered):
    result = tr.train(YOURS, report_every=YOURS.steps)  # one report: the last step
    shelf = Shelf(Index())  # what stage 13.1 left in this learner's session
    shelf.keep(YOURS, (result, []))
    at = open_page(PAGE, params={"inside.model": model_code(YOURS)},
                   state={**answered, "_training.shelf": shelf})
    assert_clean(at)
    assert at.radio("inside.model").value == model_code(YOURS)
    text = page_text(at) + " ".join(bar_texts(at))
    assert catalogue("en")["inside.model_facts_yours"].split("{")[0] in text
    assert f"trained for 12 steps on {len(result.corpus.train)}" in text
    assert f"it names the right payer {result.heldout.correct} times" in text
    insp = probe(tr.as_trained(result), RUNNING_EXAMPLE)
    assert f"**{insp.greedy_answer}**" in text
    for number in expected_numbers(insp):
        assert number in text
    at.radio("inside.model").set_value("shipped").run()  # back to the shipped model
    assert "**商家承担。**" in page_text(at) and "inside.model" not in at.query_params


def test_number_exercise_chain_rule_then_why_then_the_bars(trained):
    insp = probe(trained, RUNNING_EXAMPLE)
    at = open_page(PAGE)
    assert num(insp.word.merchant) not in text_above(at, "_inside.ex.word.value")
    assert not bar_texts(at)  # the bars print P(商家): not before both answers
    answer(at, "inside.word", 0.5)
    assert len(at.warning) == 1
    answer(at, "inside.word", round(insp.word.merchant, 3))
    assert len(at.success) == 1
    assert f"= {num(insp.word.merchant, 4)}$" in explanations(at)
    assert not bar_texts(at)  # the why is still open
    reveal(at, "inside.why", 0)
    p2 = num(insp.word.merchant / insp.first_token.merchant)
    assert catalogue("en")["inside.ex3_explain"].format(p2=p2) in at.success[-1].value
    assert f"{insp.word.merchant:.4f}" in bar_texts(at)


def test_choice_exercise_compares_with_an_even_spread(trained):
    insp = probe(trained, RUNNING_EXAMPLE)
    shares = [h.shares.reason for h in insp.heads]
    even = insp.uniform.reason
    right = 0 if min(shares) > even else 1 if max(shares) < even else 2
    at = open_page(PAGE)
    assert num(shares[0]) not in text_above(at, "_inside.ex.even.choice")
    assert not tables(at)  # every head's row and share answer it
    reveal(at, "inside.even", right)
    assert len(at.success) == 1 and num(shares[-1]) in at.success[0].value
    assert len(tables(at)) == 7  # two answering rows and two share tables; before/after: 3


def test_a_clicked_row_cell_shows_the_sum_it_belongs_to(trained, answered):
    insp = probe(trained, RUNNING_EXAMPLE)
    at = open_page(PAGE, state={**answered, **click(("inside.rows_q1", 2, 6))})  # 「题」
    text = explanations(at)
    row = insp.attention[1, 0, -1]
    terms = " + ".join(num(float(row[j])) for j in insp.reason_positions)
    assert f"{terms} = {num(insp.heads[2].shares.reason)}" in text
    assert "Block 1 · head 0" in text and r"s^{(1,0)}" in text  # row 2: counted from 0
    at = open_page(PAGE, params={"inside.rows_q2": "0,8"}, state=answered)  # 「谁」: the rest
    twin = probe(trained, TWIN)
    assert f"= {num(twin.heads[0].shares.rest)}" in explanations(at)


def test_every_block_and_head_of_the_chosen_question(trained, answered):
    at = open_page(PAGE, state=answered)
    assert len(tables(at)) == 7  # closed: the rows, shares and before/after, no full one
    assert not [r for r in at.radio if r.key == "inside.which"]
    at.session_state[FULL_KEY] = True  # the learner opens the section
    at.run()
    at.radio("inside.which").set_value("q2").run()
    assert_clean(at)
    twin = probe(trained, TWIN)
    # The four full matrices come last; 12 x 12 cells carry their numbers in the cells.
    for frame, (b, h) in zip(tables(at)[-4:], [(0, 0), (0, 1), (1, 0), (1, 1)], strict=True):
        assert frame.shape == (12, 12)
        assert list(frame.iloc[-1]) == [num(float(v)) for v in twin.attention[b, h, -1]]


def test_a_link_asking_for_a_gpu_runs_on_the_cpu_with_a_note():
    at = open_page(PAGE, params={"device": "cuda"})
    assert_clean(at)
    assert catalogue("en")["kit.no_cuda"] in [i.value for i in at.sidebar.info]
    assert "Computed on CPU." in page_text(at) and "**商家承担。**" in page_text(at)


def heatmaps(at) -> dict[str, list[list[str]]]:
    """The kit's heatmaps by their key, each as the numbers written in its cells."""
    found = {}
    for node in _walk(at.main):
        if node.type == "plotly_chart" and (node.key or "").endswith("~chart"):
            spec = json.loads(node.proto.spec)
            if spec["data"] and spec["data"][0].get("type") == "heatmap":
                found[node.key] = spec["data"][0]["text"]
    return found


def test_attention_before_and_after_training(default_page, trained):
    before = probe(iv.untrained_like(trained), RUNNING_EXAMPLE)
    after = probe(trained, RUNNING_EXAMPLE)
    maps = heatmaps(default_page)
    for name, insp in (("before", before), ("after", after)):
        rows = insp.attention[:, :, -1].reshape(-1, len(insp.tokens))  # [L * H, N]
        assert maps[f"_inside.rows_{name}~chart"] == [[num(float(v), 2) for v in row]
                                                       for row in rows]
    shares = next(f for f in tables(default_page) if len(f.columns) == 2)
    assert shares.values.tolist() == [
        *([num(b.shares.reason), num(a.shares.reason)] for b, a in
          zip(before.heads, after.heads, strict=True)), [num(after.uniform.reason)] * 2]


def test_ablation_and_patching_ask_first_then_show_the_experiments(trained, answered):
    at = open_page(PAGE, "zh", state=answered)
    ablated = iv.ablations(trained, [RUNNING_EXAMPLE, TWIN])
    grid = iv.patching(trained, RUNNING_EXAMPLE, TWIN_SAME_PLACE)
    assert len(tables(at)) == 7 and "_inside.patch_map~chart" not in heatmaps(at)
    zh = catalogue("zh")
    assert zh["inside.not_why"] not in page_text(at)  # it stands beside the table
    moved = [abs(r.probs[1].merchant - ablated[0].probs[1].merchant) for r in ablated[1:]]
    reveal(at, "inside.ablate", max(range(len(moved)), key=moved.__getitem__))
    reveal(at, "inside.patch", 0)  # only 「？」 leaving the last block flips it
    assert len(at.success) == 2
    assert_clean(at)
    table_ = tables(at)[7]
    assert table_.values.tolist() == [[num(p) for probs in r.probs for p in probs]
                                      for r in ablated]
    assert zh["inside.not_why"] in page_text(at)
    change = [[num(v - grid.clean.merchant, 2) for v in row] for row in grid.merchant]
    assert heatmaps(at)["_inside.patch_map~chart"] == change
    assert "0.001；进入第 1 块：0.022；离开第 1 块：0.982" in page_text(at)  # the whole reason
    at.radio("inside.patch_into").set_value("source").run()  # the twin, rows from question 1
    assert_clean(at)
    other = iv.patching(trained, TWIN_SAME_PLACE, RUNNING_EXAMPLE)
    assert heatmaps(at)["_inside.patch_map~chart"][1][2] == num(
        other.merchant[1][2] - other.clean.merchant, 2)  # 有 for 无: one row flips it
    at.radio("inside.patch_into").set_value("q1").run()
    at.text_input("inside.patch_from").input(TWIN).run()  # two characters shorter
    assert_clean(at)
    assert [w.value for w in at.warning] == [zh["inside.pa_missing"].format(
        src=TWIN, k=12, q=RUNNING_EXAMPLE, n=14, positions="12, 13")]
    assert heatmaps(at)["_inside.patch_map~chart"][0][-2:] == ["", ""]
    at.text_input("inside.patch_from").input("请问abc，运费谁承担？").run()
    assert_clean(at)
    assert [e.value for e in at.error] == [zh["errors.trained_question_unknown"].format(
        chars="abc")]


def test_where_the_rule_stops_asks_first_then_shows_each_case(trained, answered):
    from tinyformer.lessons import rule_limits as rl

    at = open_page(PAGE, state=answered)
    misses, found = rl.heldout_misses(trained), dict(rl.cases(trained))
    assert f"**{found['longer'].answer}**" not in page_text(at)
    reveal(at, "inside.negated", 0)  # 商家: it follows 质量问题
    assert len(at.success) == 1
    shown = page_text(at)
    assert "**Held-out questions it gets wrong: 3 of 490.**" in shown
    for miss in misses:
        assert f"「{miss.question}」: the corpus answers {miss.expected}, the model writes " \
               f"**{miss.answer}** (P(商家) = {num(miss.probs.merchant)}" in shown
    for case in found.values():
        assert f"**{case.answer}** (P(商家) = {num(case.probs.merchant)}, P(买家) = " \
               f"{num(case.probs.buyer)})" in shown
    assert "has 22 characters; the longest question in the corpus has 19" in shown
    at.text_input("inside.free").input("衣服太大了，运费谁承担？").run()
    assert_clean(at)
    mine = rl.free_answer(trained, "衣服太大了，运费谁承担？")
    assert f"It writes **{mine.answer}** (P(商家) = {num(mine.probs.merchant)}" in page_text(at)
    assert "Read as [UNK], not in its vocabulary: 太, 大." in page_text(at)
    at.text_input("inside.free").input("问" * 29).run()
    assert_clean(at)
    assert [e.value for e in at.error] == [catalogue("en")["errors.trained_question_too_long"]
                                           .format(length=29, limit=28)]


def test_question_1_opens_on_the_teachers_sentence_when_it_is_a_corpus_question(trained):
    at = open_page(PAGE, "zh", params={"sentence": OTHER})
    assert_clean(at)
    assert at.text_input("inside.q1").value == OTHER
    assert f"**{probe(trained, OTHER).greedy_answer}**" in page_text(at)
    at = open_page(PAGE, "zh", params={"sentence": "我的快递丢了，怎么办？"})
    assert_clean(at)
    assert at.text_input("inside.q1").value == RUNNING_EXAMPLE
    assert catalogue("zh")["inside.own_not_corpus"].format(s="我的快递丢了，怎么办？") in \
        page_text(at)
