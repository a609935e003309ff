"""Stage 5 in AppTest: the worked numbers of CURRICULUM.md section 5, live."""

import pytest

from tests.app.conftest import BAD_CELLS, assert_clean, open_page, page_text, reveal, type_bad

PAGE = "pages/05_softmax.py"
DEFAULT_NUMBERS = ["[1.000, 0.000]", "[0.707, 0.000]", "[0.670, 0.330]", "[1.340, 1.321]",
                   "e^{0.707} = 2.028"]
KB_20_NUMBERS = ["[1.000, 2.000]", "[0.707, 1.414]", "[0.330, 0.670]", "[0.660, 2.679]"]


def test_defaults_show_the_worked_numbers(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    text = page_text(at)
    for number in DEFAULT_NUMBERS:
        assert number in text


def test_typing_k_b_updates_every_step():
    at = open_page(PAGE)
    at.text_input("kB").input("2, 0").run()
    assert_clean(at)
    text = page_text(at)
    for number in KB_20_NUMBERS:
        assert number in text
    assert "[1.340, 1.321]" not in text


def test_preset_button_and_shared_link_agree():
    at = open_page(PAGE)
    at.button[1].click().run()  # "Try k_B = [2, 0]"
    from_button = page_text(at)
    from_link = page_text(open_page(PAGE, state={"kB": "2, 0"}))
    for number in KB_20_NUMBERS:
        assert number in from_button and number in from_link


def test_dragging_a_slider_rewrites_the_text_and_the_numbers():
    at = open_page(PAGE)
    at.slider("_kB__s0").set_value(2.0).run()
    at.slider("_kB__s1").set_value(0.0).run()
    assert at.text_input("kB").value == "2, 0"
    assert "[0.660, 2.679]" in page_text(at)


def test_causal_matrix_form():
    at = open_page(PAGE)
    text = page_text(at)
    # Row 0 of the causal weights reads only itself; the output table states it exactly.
    assert r"\begin{bmatrix}1.000 & 0.000 & 0.000 & 0.000 \\" in text
    at.toggle("causal").set_value(False).run()
    assert r"\begin{bmatrix}1.000 & 0.000 & 0.000 & 0.000 \\" not in page_text(at)


@pytest.mark.parametrize("key", ["q", "kA", "kB", "vA", "vB", "Q", "K", "V"])
@pytest.mark.parametrize("bad", [*BAD_CELLS, "1, 2, 3; 4"])
def test_bad_input_shows_a_message_and_keeps_the_last_value(key, bad):
    at = type_bad(PAGE, key, bad)
    assert "[1.340, 1.321]" in page_text(at)  # the last valid values are still used


def test_bad_input_message_is_translated():
    at = open_page(PAGE, "zh")
    at.text_input("q").input("abc").run()
    assert "不是数字" in at.error[0].value
    at = open_page(PAGE, "en")
    at.text_input("q").input("abc").run()
    assert "is not a number" in at.error[0].value


def test_exercise_reveals_the_answer(lang):
    at = open_page(PAGE, lang)
    reveal(at, "softmax", 1)
    assert len(at.success) == 1
    assert "[0.660, 2.679]" in at.success[0].value
