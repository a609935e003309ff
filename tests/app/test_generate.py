"""Stage 13.3 (generation with a K/V cache) in AppTest: the answer token by token, the
new query against a cache that grows by one row a step, the cache switched off, the
measured work each way, shared links, bad input everywhere, both exercises and the cell
explanations. Expected numbers come from tinyformer.generate (itself checked against a
plain forward pass and written-out multiply-adds in tests/unit/test_generate.py) and
from train.greedy_answers."""

from __future__ import annotations

import pytest

from tests.app.helpers import (
    ONE_LANG,
    answer,
    assert_clean,
    explanations,
    open_page,
    page_text,
    reveal,
    text_above,
)
from tinyformer.lessons.answering import greedy_answers
from tinyformer.lessons.cache_work import compare_cache, question_prompt
from tinyformer.lessons.checkpoint import load_model
from tinyformer.lessons.example import RUNNING_EXAMPLE, TWIN
from ui.i18n import catalogue

PAGE = "pages/13_generate.py"
# The three exercises answered: what answers them (the K and V rows each step computes,
# the table of work) is drawn only then.
ROWS = {"_generate.ex.rows.answered": 0}
ANSWERED = {**ROWS, "_generate.ex.total.answered": 80.0, "_generate.ex.grows.answered": 0}


def opened(params=None, lang: str = "en", state=None):
    return open_page(PAGE, lang, params=params, state={**ANSWERED, **(state or {})})


@pytest.fixture(scope="module")
def trained():
    return load_model()


def work_numbers(trained, question: str, n_new: int) -> list[str]:
    cmp = compare_cache(trained.model, question_prompt(trained, question), n_new)
    a, b = cmp.cached.cumulative[-1].multiply_adds, cmp.recomputed.cumulative[-1].multiply_adds
    per_step = [f"{s.work.multiply_adds:,}" for g in (cmp.cached, cmp.recomputed)
                for s in g.steps]
    return [*per_step, f"{a:,}", f"{b:,}", f"{b / a:.2f}"]


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return opened(lang=request.param)


def test_defaults_answer_token_by_token_and_count_the_work(default_page, trained):
    at = default_page
    assert_clean(at)
    assert at.title[0].value.startswith("13.3 · ")
    text = page_text(at)
    assert "generate." not in text and "errors." not in text  # every key is translated
    assert f"→ **{greedy_answers(trained.model, trained.vocab, [RUNNING_EXAMPLE])[0]}**" in text
    for number in work_numbers(trained, RUNNING_EXAMPLE, 5):
        assert number in text
    assert "[1 × 16]" in text and "[15 × 16]" in text  # step 2: one new query, 15 K rows
    lang = at.query_params["lang"]
    assert catalogue(lang)["generate.not_advice"] in text


def test_the_step_slider_walks_the_growing_cache():
    at = opened()
    at.select_slider("generate.step").set_value(1).run()
    assert "[14 × 16]" in page_text(at)  # the prefill: 14 queries, 14 K rows
    at.select_slider("generate.step").set_value(5).run()
    assert_clean(at)
    text = page_text(at)
    assert "[1 × 16]" in text and "[18 × 16]" in text and "17 · 担 ★" in text
    assert "16 · 承 ★" not in text  # an earlier row now comes from the cache
    assert at.query_params["generate.step"] == "5"


def test_without_the_cache_every_row_is_computed_again(trained):
    at = opened()
    at.toggle("generate.cache").set_value(False).run()
    assert_clean(at)
    text = page_text(at)
    assert "[15 × 16]" in text and "[1 × 16]" not in text  # 15 queries at step 2
    assert text.count("★") >= 15  # every K row and V row computed in this step
    cmp = compare_cache(trained.model, question_prompt(trained, RUNNING_EXAMPLE), 5)
    assert f"{cmp.logit_gaps[1]:.1e}" in at.success[0].value  # the same logits either way


def test_more_tokens_another_question_and_the_shared_link_agree(trained):
    at = opened()
    at.text_input("generate.q").input(TWIN).run()
    at.slider("generate.n").set_value(8).run()
    assert_clean(at)
    text = page_text(at)
    linked = page_text(opened({"generate.q": TWIN, "generate.n": "8"}))
    continuation = greedy_answers(trained.model, trained.vocab, [TWIN], 8)[0]
    for page in (text, linked):
        assert f"→ **{continuation}**" in page
        for number in work_numbers(trained, TWIN, 8):
            assert number in page
    assert catalogue("en")["generate.beyond"].format(m=5) in text  # past the trained answer


@pytest.mark.parametrize(("typed", "key"), [
    ("", "trained_question_empty"),
    # 负 and 责 were never seen: left out with a note, and the rest is no corpus question
    ("商品有质量问题，运费谁负责？", "trained_question_pattern"),
    (RUNNING_EXAMPLE * 2 + "商品", "trained_question_too_long"),
    ("运费谁承担？", "trained_question_pattern"),
])
def test_bad_questions_get_one_translated_message(typed, key):
    for lang in ("zh", "en"):
        at = open_page(PAGE, lang)
        at.text_input("generate.q").input(typed).run()
        assert_clean(at)
        assert len(at.error) == 1
        assert at.error[0].value.startswith(catalogue(lang)[f"errors.{key}"].split("{")[0][:8])
        assert "→ **" not in page_text(at)  # no answer is shown


def test_bad_link_values_fall_back_with_a_note(trained):
    at = opened({"generate.n": "99", "generate.step": "77", "generate.cache": "maybe",
                 "generate.block": "5", "generate.head": "x"})
    assert_clean(at)
    assert len(at.error) == 5
    assert work_numbers(trained, RUNNING_EXAMPLE, 5)[-1] in page_text(at)  # the defaults


def test_a_step_past_the_new_length_falls_back_quietly():
    at = opened({"generate.step": "5"})
    at.slider("generate.n").set_value(3).run()
    assert_clean(at)
    assert len(at.error) == 0 and at.select_slider("generate.step").value == 2


def test_choice_exercise_then_the_rows_each_step_computes():
    at = open_page(PAGE)
    assert "★" not in page_text(at) and "[15 × 16]" not in page_text(at)  # they answer it
    reveal(at, "generate.rows", 0)
    assert len(at.success) == 2  # the exercise and the equal-logits note
    assert "[15 × 16]" in page_text(at) and "14 · 商 ★" in page_text(at)  # one new row


def test_number_exercise_counts_rows_then_why_then_the_work(trained):
    at = open_page(PAGE, state=ROWS)
    steps = "14 + 15 + 16 + 17 + 18"
    assert steps not in text_above(at, "_generate.ex.total.value")
    work = work_numbers(trained, RUNNING_EXAMPLE, 5)
    column = catalogue("en")["generate.col_kv_f"]
    assert column not in page_text(at) and work[-2] not in page_text(at)  # they count them
    answer(at, "generate.total", 18)
    assert len(at.warning) == 1
    answer(at, "generate.total", 80)
    assert len(at.success) == 2  # the exercise and the equal-logits note
    assert f"{steps} = **80**" in explanations(at) and "14 + 1 + 1 + 1 + 1 = 18" in explanations(at)
    assert column not in page_text(at)  # the why is still open
    reveal(at, "generate.grows", 0)
    assert catalogue("en")["generate.ex3_explain"].format(n=14) in at.success[-1].value
    assert all(number in page_text(at) for number in work)


def test_cells_explain_where_their_row_came_from():
    at = opened({"generate.k_map": "3,0"})
    assert catalogue("en")["generate.cell_cached"].format(j=3, tok="质", made=1, k=2) \
        in explanations(at)
    at = opened({"generate.v_map": "14,2"})
    assert catalogue("en")["generate.cell_new"].format(j=14, tok="商", k=2) in explanations(at)
    at = opened({"generate.k_map": "3,0", "generate.cache": "false"})
    assert "is computed again in step 2" in explanations(at)
    at = opened({"generate.weights_map": "0,5"})
    assert "a_{14,5}" in explanations(at) and r"\frac{e^{" in explanations(at)
    at = opened({"generate.weights_map": "0,5", "generate.step": "1"})
    assert r"a_{0,5} = e^{-\infty}" in explanations(at)  # the prefill's causal mask


def test_a_link_asking_for_a_gpu_runs_on_the_cpu_with_a_note():
    at = open_page(PAGE, params={"device": "cuda"})
    assert_clean(at)
    assert catalogue("en")["kit.no_cuda"] in [i.value for i in at.sidebar.info]
    assert "computed on CPU" in page_text(at)


# --- The teacher's own sentence (ui/sentence.py), from the sidebar to the last page ------
OWN = "鞋子破损，运费谁承担？猫"  # a corpus question, and 猫, a character it never saw
KEPT = "鞋子破损，运费谁承担？"


def test_the_teachers_sentence_runs_through_every_page_that_shows_one(trained):
    """Typed once in the overview's box, in one session: the box of 1.1 and 1.2, the
    trained views of 5.2 and 11, and generation here; every page that needs the model's
    vocabulary names 「猫」 and goes on with the rest. Then the same through a link."""
    at = open_page(None, "zh")
    at.text_input("_sentence~boxhome").input(OWN).run()  # the overview's own box
    assert at.query_params["sentence"] == OWN
    dropped = catalogue("zh")["kit.sentence.dropped"].format(chars="「猫」", kept=KEPT)
    at.switch_page("pages/01_tokens.py").run()
    assert at.text_input("_sentence~boxsidebar").value == OWN  # a stage's sidebar shows it
    assert at.text_input("tokens.text").value == OWN
    at.switch_page("pages/01_bpe.py").run()
    assert at.text_input("bpe.text").value == OWN
    at.switch_page("pages/05_context.py").run()
    at.button_group("context.model").set_value("trained").run()
    assert_clean(at)
    assert dropped in [w.value for w in at.warning]
    assert at.radio("context.twin").label == catalogue("zh")["context.twin"].format(
        question=KEPT)
    at.switch_page("pages/11_forward.py").run()
    at.button_group("forward.model").set_value("trained").run()
    assert_clean(at)
    assert dropped in [w.value for w in at.warning]
    assert at.radio("forward.question").options[0] == OWN
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert at.text_input("generate.q").value == OWN
    assert dropped in [w.value for w in at.warning]
    answer = greedy_answers(trained.model, trained.vocab, [KEPT], 5)[0]
    assert f"**{KEPT}** → **{answer}**" in page_text(at)
    at.button("_sentence~boxsidebar_reset").click().run()  # one click: the running example
    assert "sentence" not in at.query_params
    assert at.text_input("generate.q").value == RUNNING_EXAMPLE  # the box follows it back
    linked = opened({"sentence": OWN}, lang="zh")  # a shared link carries the sentence
    assert f"**{KEPT}** → **{answer}**" in page_text(linked)
    assert dropped in [w.value for w in linked.warning]


def test_a_sentence_of_unknown_characters_falls_back_to_the_running_example(trained):
    at = opened({"sentence": "猫狗"})
    note = catalogue("en")["kit.sentence.none_known"].format(chars="「猫」「狗」",
                                                               example=RUNNING_EXAMPLE)
    assert note in [w.value for w in at.warning]
    answer = greedy_answers(trained.model, trained.vocab, [RUNNING_EXAMPLE], 5)[0]
    assert f"**{RUNNING_EXAMPLE}** → **{answer}**" in page_text(at)
