"""Stage 3 in AppTest: the worked numbers of CURRICULUM.md section 3 and the d_k experiment."""

import pytest
import torch

from tests.app.conftest import BAD_CELLS, assert_clean, open_page, page_text, reveal, type_bad
from tinyformer.scaling import scaling_experiment
from ui.fmt import num

PAGE = "pages/03_scaling.py"
DEFAULT_NUMBERS = ["[1.000, 0.000]", "[0.707, 0.000]", r"{\sqrt{2}}", "{1.414}",
                   r"\begin{bmatrix}0.707 & 0.000\end{bmatrix}",
                   r"s_A = 1\cdot1 + 0\cdot0 = 1.000", r"s_B = 1\cdot0 + 0\cdot1 = 0.000",
                   "[0.670, 0.330]", "[0.731, 0.269]"]


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def experiment(d_k: int, n: int, seed: int):
    return scaling_experiment(d_k, n, torch.Generator().manual_seed(seed), 8)


def assert_experiment_shown(at, d_k: int, n: int, seed: int) -> None:
    exp, shown, text = experiment(d_k, n, seed), metrics(at), page_text(at)
    assert shown["d_k"] == str(d_k)
    values = list(shown.values())
    for value in (exp.raw_spread.variance, exp.scaled_spread.variance, exp.mean_top_raw,
                  exp.mean_top_scaled):
        assert num(value) in values
    assert rf"{num(exp.raw_spread.variance)} \approx {d_k}" in text
    assert f"{exp.scaled_outside_unit} of {exp.n_pairs} lie outside" in text
    for value in (exp.scaled_spread.min, exp.scaled_spread.max, exp.mean_grad_raw):
        assert num(value) in text


def test_defaults_show_the_worked_numbers(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    text = page_text(at)
    for number in DEFAULT_NUMBERS:
        assert number in text, number
    assert metrics(at)["d_k"] == "64"


def test_default_experiment_readouts():
    assert_experiment_shown(open_page(PAGE), 64, 5000, 0)


def test_typing_k_b_updates_scores_and_scaling():
    at = open_page(PAGE)
    at.text_input("kB").input("2, 0").run()
    assert_clean(at)
    text = page_text(at)
    assert "[1.000, 2.000]" in text and "[0.707, 1.414]" in text
    assert "[0.707, 0.000]" not in text


def test_dragging_the_q_slider_rewrites_text_and_numbers():
    at = open_page(PAGE)
    at.slider("_q__s0").set_value(3.0).run()
    assert at.text_input("q").value == "3, 0"
    text = page_text(at)
    assert "[3.000, 0.000]" in text and "[2.121, 0.000]" in text


def test_experiment_from_a_shared_link():
    at = open_page(PAGE, state={"dk": 256, "pairs": 2000, "sseed": 3})
    assert_clean(at)
    assert_experiment_shown(at, 256, 2000, 3)


def test_experiment_widgets():
    at = open_page(PAGE)
    at.select_slider("dk").set_value(512).run()
    at.select_slider("pairs").set_value(1000).run()
    at.number_input("sseed").set_value(5).run()
    assert_clean(at)
    assert_experiment_shown(at, 512, 1000, 5)
    at.select_slider("dk").set_value(1).run()
    assert_clean(at)
    assert_experiment_shown(at, 1, 1000, 5)


def test_largest_d_k_and_sample_count():
    at = open_page(PAGE, state={"dk": 512, "pairs": 20000})
    assert_clean(at)
    exp = experiment(512, 20000, 0)
    assert exp.mean_top_raw > 0.9  # nearly one-hot without scaling
    assert_experiment_shown(at, 512, 20000, 0)


@pytest.mark.parametrize("key", ["q", "kA", "kB"])
@pytest.mark.parametrize("bad", [*BAD_CELLS, "1, 2, 3"])
def test_bad_input_shows_a_message_and_keeps_the_last_value(key, bad):
    at = type_bad(PAGE, key, bad)
    assert "[0.707, 0.000]" in page_text(at)


def test_exercise_reveals_the_answer(lang):
    at = open_page(PAGE, lang)
    reveal(at, "scaling", 2)
    assert len(at.success) == 1
