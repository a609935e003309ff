"""Stage 5.1 in AppTest: the worked numbers of docs/curriculum.md, stage 5, live."""

import pytest

from tests.app.helpers import (
    BAD_CELL,
    answer,
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    type_bad,
)

PAGE = "pages/03_softmax.py"
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


def test_causal_matrix_form():
    at = open_page(PAGE)
    text = page_text(at)
    # Row 0 of the causal weights reads only itself; the output table states it exactly.
    assert r"\begin{bmatrix}1.000 & 0.000 & 0.000 & 0.000 \\" in text
    at.toggle("softmax.causal").set_value(False).run()
    assert r"\begin{bmatrix}1.000 & 0.000 & 0.000 & 0.000 \\" not in page_text(at)


@pytest.mark.parametrize("key", ["hand.q", "hand.kA", "hand.kB", "hand.vA", "hand.vB",
                                 "softmax.Q", "softmax.K", "softmax.V"])
@pytest.mark.parametrize("bad", [BAD_CELL, "1, 2, 3; 4"])
def test_bad_input_shows_a_message_and_keeps_the_last_value(key, bad):
    at = type_bad(PAGE, key, bad)
    assert "[1.340, 1.321]" in page_text(at)  # the last valid values are still used


def test_bad_link_values_fall_back_with_a_note(lang):
    at = open_page(PAGE, lang, params={"softmax.causal": "maybe", "hand.q": "abc"})
    assert_clean(at)
    assert len(at.error) == 2
    assert "[1.340, 1.321]" in page_text(at)


def test_choice_exercise_reveals_the_answer(lang):
    at = open_page(PAGE, lang)
    reveal(at, "softmax.kb", 1)
    assert len(at.success) == 1
    assert "[0.660, 2.679]" in at.success[0].value


@pytest.mark.parametrize(("typed", "right"), [(0.330, True), (0.67, False)])
def test_number_exercise_checks_and_shows_the_steps(lang, typed, right):
    at = open_page(PAGE, lang)
    assert "0.330" not in "".join(m.value for m in at.success)
    answer(at, "softmax.a10", typed)
    assert len(at.success if right else at.warning) == 1
    assert r"\frac{1.000}{1.000 + 2.028}" in explanations(at)  # the worked steps


def test_clicked_cell_is_explained_outlined_and_kept_after_an_edit():
    at = open_page(PAGE, state=click(("softmax.weights_map", 3, 1)))
    assert r"a_{3,1}" in explanations(at)
    at.text_input("softmax.V").input("1, 0; 0, 1; 1, 1; 3, -1").run()
    assert r"a_{3,1}" in explanations(at)  # still explained after the edit
    assert at.query_params["softmax.weights_map"] == "3,1"  # and named in the URL


def test_a_blocked_cell_explains_itself():
    at = open_page(PAGE, params={"softmax.weights_map": "0,3"})
    assert r"a_{0,3} = e^{-\infty}" in explanations(at)


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
