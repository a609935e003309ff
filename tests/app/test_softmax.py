"""Stage 3 (softmax) in AppTest: the worked numbers of docs/curriculum.md (CURRICULUM 5),
live; the matrix form without a mask, its weights drawn once the exercise is answered."""

import pytest
import torch

from tests.app.helpers import (
    BAD_CELL,
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
from tinyformer.lessons.chain import run_chain
from ui.fmt import num

PAGE = "pages/03_softmax.py"
# The matrix form: the running example's hand model (stage 2's Q, K, V), with no mask
UNMASKED = torch.softmax(run_chain().scaled, dim=-1)  # [4, 4]
A10 = float(UNMASKED[1, 0])  # 0.135 = 2.028 / 14.976: 谁 reads 运费
DEFAULT_NUMBERS = ["[1.000, 0.000]", "[0.707, 0.000]", "[0.670, 0.330]", "[1.340, 1.321]",
                   "e^{0.707} = 2.028", r"\frac{2.028}{3.028} = 0.670", "0.6698", "0.3302",
                   "0.330 × 4 = 1.320"]  # the rounding note: a hand product of rounded weights
KB_20_NUMBERS = ["[1.000, 2.000]", "[0.707, 1.414]", "[0.330, 0.670]", "[0.660, 2.679]",
                 "0.670 × 4 = 2.680"]


def test_defaults_show_the_worked_numbers(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    text = page_text(at)
    for number in DEFAULT_NUMBERS:
        assert number in text


def test_typing_k_b_updates_every_step():
    at = open_page(PAGE)
    at.text_input("hand.kB").input("2, 0").run()
    assert_clean(at)
    text = page_text(at)
    for number in KB_20_NUMBERS:
        assert number in text
    assert "[1.340, 1.321]" not in text
    assert at.query_params["hand.kB"] == "2, 0"  # the edit is in the URL


def test_preset_button_and_shared_link_agree():
    at = open_page(PAGE)
    next(b for b in at.button if "[2, 0]" in b.label).click().run()  # "Try k_B = [2, 0]"
    from_button = page_text(at)
    from_link = page_text(open_page(PAGE, params={"hand.kB": "2, 0"}))
    for number in KB_20_NUMBERS:
        assert number in from_button and number in from_link


def test_dragging_a_slider_changes_only_its_own_component():
    at = open_page(PAGE, params={"hand.kB": "9, 1"})  # 9 lies outside the default -5..5
    assert at.slider("_hand.kB~0").max >= 9  # the range grew: the slider shows 9, not 5
    at.slider("_hand.kB~1").set_value(0.0).run()
    assert at.text_input("hand.kB").value == "9, 0"  # 9 untouched by moving component 2


def test_matrix_form_has_no_mask_and_shows_the_weights_once_answered():
    at = open_page(PAGE)
    text = page_text(at)
    assert "Stage 4 shows why" in text  # the ÷√d_k step points forward to scaling
    assert r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V" in text  # no + M
    assert len(tables(at)) == 1  # the scaled scores only: the weights hold the answer
    answer(at, "softmax.a10", A10)  # no mask: 谁 reads all four
    weights = tables(at)[1].values.tolist()
    assert weights == [[num(w) for w in row] for row in UNMASKED.tolist()]
    assert weights[0] == ["0.180", "0.365", "0.365", "0.089"]  # row 0 reads later words too
    assert weights[3] == ["0.221", "0.221", "0.109", "0.449"]  # ？: the chain's own row


@pytest.mark.parametrize("key", ["hand.q", "hand.kA", "hand.kB", "hand.vA", "hand.vB"])
@pytest.mark.parametrize("bad", [BAD_CELL, "1, 2, 3; 4"])
def test_bad_input_shows_a_message_and_keeps_the_last_value(key, bad):
    at = type_bad(PAGE, key, bad)
    assert "[1.340, 1.321]" in page_text(at)  # the last valid values are still used


def test_bad_link_values_fall_back_with_a_note(lang):
    at = open_page(PAGE, lang, params={"chain.Wk": "1, x", "hand.q": "abc"})
    assert_clean(at)
    assert len(at.error) == 2  # the hand model's W_k is drawn on stage 2: a note here
    assert "[1.340, 1.321]" in page_text(at)
    assert "chain.Wk" not in at.query_params  # the default in its place, a link that works


def test_choice_exercise_reveals_the_answer(lang):
    at = open_page(PAGE, lang)
    reveal(at, "softmax.kb", 1)
    assert len(at.success) == 1
    assert "[0.660, 2.679]" in at.success[0].value


@pytest.mark.parametrize(("typed", "right"), [(A10, True), (0.33, False)])
def test_number_exercise_checks_and_shows_the_steps(lang, typed, right):
    at = open_page(PAGE, lang)
    assert num(A10) not in "".join(m.value for m in at.success)
    answer(at, "softmax.a10", typed)
    assert len(at.success if right else at.warning) == 1
    assert r"\frac{2.028}{2.028 + 4.113 + 8.342 + 0.493}" in explanations(at)  # the steps


def test_clicked_cell_is_explained_outlined_and_kept_after_an_edit():
    answered = {"_softmax.ex.a10.answered": A10}  # the weights are drawn once answered
    at = open_page(PAGE, state={**click(("softmax.weights_map", 3, 1)), **answered})
    assert r"a_{3,1}" in explanations(at)
    at.text_input("hand.q").input("2, 0").run()
    assert r"a_{3,1}" in explanations(at)  # still explained after an edit
    assert at.query_params["softmax.weights_map"] == "3,1"  # and named in the URL


def test_why_exercise_beside_the_arithmetic(lang):
    at = open_page(PAGE, lang)
    reveal(at, "softmax.row", 0)
    assert len(at.success) == 1 and "e^(s̃₁,₃)" in at.success[0].value


def test_step_by_step_reveal_and_a_link_to_a_step():
    at = open_page(PAGE)
    assert "[1.340, 1.321]" in page_text(at)  # every step shown by default
    next(b for b in at.button if (b.key or "").endswith("~start")).click().run()
    text = page_text(at)
    assert "[1.000, 0.000]" in text and "[0.707, 0.000]" not in text  # step 1 only
    assert at.query_params["softmax.hand.step"] == "1"
    next(b for b in at.button if (b.key or "").endswith("~next")).click().run()
    assert "[0.707, 0.000]" in page_text(at) and "[1.340, 1.321]" not in page_text(at)
    linked = page_text(open_page(PAGE, params={"softmax.hand.step": "3"}))
    assert "[0.670, 0.330]" in linked and "[1.340, 1.321]" not in linked
