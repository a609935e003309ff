"""Stage 4 (scaling) in AppTest: the worked numbers of docs/curriculum.md (CURRICULUM 3),
the d_k experiment and the share of saturated rows, measured live once the two exercises
that they answer are answered."""

import pytest
import torch

from tests.app.helpers import (
    BAD_CELL,
    _walk,
    answer,
    assert_clean,
    open_page,
    page_text,
    reveal,
    tables,
    type_bad,
)
from tinyformer.lessons.scaling import scaling_experiment
from ui.example import TAIL4
from ui.fmt import num
from ui.i18n import catalogue

PAGE = "pages/04_scaling.py"
# Both exercises answered (what the reveal leaves in the session): the experiment is drawn.
ANSWERED = {"_scaling.ex.var.answered": 256.0, "_scaling.ex.sat.answered": 1}
DEFAULT_NUMBERS = ["[1.000, 0.000]", "[0.707, 0.000]", r"{\sqrt{2}}", "{1.414}",
                   r"\begin{bmatrix}0.707 & 0.000\end{bmatrix}",
                   r"s_A = 1\cdot1 + 0\cdot0 = 1.000", r"s_B = 1\cdot0 + 0\cdot1 = 0.000",
                   r"s_A = 1.000 \cdot 1.000 \cdot 1.000 = 1.000",  # |q| |k| cos θ
                   "[0.670, 0.330]", "[0.731, 0.269]",
                   "0.99995", "0.0000454", "0.0000908", "0.500"]  # scores 30 vs 20


def measured(at) -> list:
    """The experiment's tables: every table but the running example's two score tables."""
    return [frame for frame in tables(at) if list(frame.index) != list(TAIL4)]


def experiment(d_k: int, seed: int = 0):
    """Independent of the page: the same 2,000 rows of 8 keys."""
    return scaling_experiment(d_k, 16_000, torch.Generator().manual_seed(seed), 8)


def assert_experiment_shown(at, d_k: int, seed: int) -> None:
    exp, text = experiment(d_k, seed), page_text(at)
    assert rf"{num(exp.raw_spread.variance)} \approx {d_k}" in text
    assert rf"{num(exp.scaled_spread.variance)} \approx 1" in text
    readout = measured(at)[0]  # mean, variance, ... saturated share
    assert readout.iloc[1].tolist() == [num(exp.raw_spread.variance),
                                        num(exp.scaled_spread.variance)]
    assert readout.iloc[-1].tolist() == [num(exp.saturated_raw), num(exp.saturated_scaled)]
    assert (f"At d_k = {d_k}: {exp.n_saturated_raw:,} of 2,000 rows saturate without scaling "
            f"({num(exp.saturated_raw)}), {exp.n_saturated_scaled:,} of 2,000 with scaling") in text
    assert f"{exp.scaled_outside_unit:,} of 16,000 lie outside" in text


def test_defaults_show_the_worked_numbers(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    text = page_text(at)
    for number in DEFAULT_NUMBERS:
        assert number in text, number
    assert at.select_slider("scaling.dk").value == 64
    links = [n.proto.page for n in _walk(at.main) if n.type == "page_link"]
    assert "softmax" in links  # the step with softmax links back to stage 3


@pytest.mark.parametrize(("step", "shown", "hidden"), [
    ("1", r"s_A = 1\cdot1 + 0\cdot0 = 1.000", [r"{\sqrt{2}}", "[0.670, 0.330]"]),
    ("2", r"{\sqrt{2}}", ["[0.670, 0.330]"]),
    ("3", "[0.670, 0.330]", [])])
def test_a_link_to_a_step_shows_the_steps_up_to_it(step, shown, hidden):
    at = open_page(PAGE, params={"scaling.hand.step": step})
    assert_clean(at)
    text = page_text(at)
    assert shown in text and not [h for h in hidden if h in text]
    assert r"s_A = 1.000 \cdot 1.000 \cdot 1.000 = 1.000" in text  # the aside is no step


def test_default_experiment_measures_saturation():
    at = open_page(PAGE, state=ANSWERED)
    assert_experiment_shown(at, 64, 0)
    exp = experiment(64)
    # About a third of the rows saturate unscaled at d_k = 64 (measured: 785 of 2,000);
    # none scaled.
    assert 0.3 < exp.saturated_raw < 0.45 and exp.n_saturated_scaled == 0
    sweep = measured(at)[1]  # the curve as a table: one column per d_k
    assert list(sweep.columns) == ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512"]
    assert sweep["64"].tolist() == [num(exp.saturated_raw), "0.000"]
    assert sweep["512"].tolist() == [num(experiment(512).saturated_raw), "0.000"]


def test_dragging_the_q_slider_changes_the_score_but_not_the_cosine():
    at = open_page(PAGE)
    at.slider("_hand.q~0").set_value(3.0).run()
    assert at.text_input("hand.q").value == "3, 0"
    text = page_text(at)
    assert "[3.000, 0.000]" in text and "[2.121, 0.000]" in text
    assert r"s_A = 3.000 \cdot 1.000 \cdot 1.000 = 3.000" in text


def test_a_zero_query_has_no_angle():
    at = open_page(PAGE, params={"hand.q": "0, 0"})
    assert_clean(at)
    assert r"s_A = 0.000 \cdot 1.000 \cdot \cos\theta_A = 0.000" in page_text(at)


def test_d_k_slider_and_seed_change_every_readout():
    at = open_page(PAGE, state=ANSWERED)
    at.select_slider("scaling.dk").set_value(256).run()
    at.number_input("scaling.seed").set_value(5).run()
    assert_clean(at)
    assert_experiment_shown(at, 256, 5)
    assert at.query_params["scaling.dk"] == "256" and at.query_params["scaling.seed"] == "5"


def test_shared_link_reproduces_the_experiment():
    at = open_page(PAGE, params={"scaling.dk": "512", "scaling.seed": "3"}, state=ANSWERED)
    assert_clean(at)
    assert_experiment_shown(at, 512, 3)


@pytest.mark.parametrize("params", [{"scaling.dk": "63"}, {"scaling.seed": "abc"},
                                    {"scaling.seed": "100000"}, {"scaling.pair": "1, x"}])
def test_a_bad_link_value_gives_one_note_and_the_default(params):
    at = open_page(PAGE, params=params, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == 1
    assert_experiment_shown(at, 64, 0)
    assert "0.0000454" in page_text(at)


def test_two_scores_in_the_gap_example():
    at = open_page(PAGE)
    at.text_input("scaling.pair").input("10, 10").run()
    text = page_text(at)
    assert r"a = \begin{bmatrix}0.500 & 0.500\end{bmatrix}" in text
    assert "= 0.500" in text and "0.0000454" not in text


@pytest.mark.parametrize("key", ["hand.q", "hand.kA", "hand.kB", "scaling.pair"])
@pytest.mark.parametrize("bad", [BAD_CELL, "1, 2, 3"])
def test_bad_input_shows_a_message_and_keeps_the_last_value(key, bad):
    at = type_bad(PAGE, key, bad)
    text = page_text(at)
    assert "[0.707, 0.000]" in text and "0.0000454" in text


@pytest.mark.parametrize(("typed", "right"), [(256.0, True), (16.0, False)])
def test_variance_exercise_is_answered_before_it_is_shown(lang, typed, right):
    at = open_page(PAGE, lang)
    text = page_text(at)
    assert r"256 \cdot 1 = 256" not in text  # the answer is not on the page yet,
    assert catalogue(lang)["scaling.why"] not in text  # nor the derivation below it,
    assert not measured(at)  # nor the measured variances
    answer(at, "scaling.var", typed)
    assert (len(at.success), len(at.warning)) == ((1, 0) if right else (0, 1))
    text = page_text(at)
    assert r"256 \cdot 1 = 256" in text  # the worked steps
    assert "QK-norm" in catalogue(lang)["scaling.why"] and catalogue(lang)["scaling.why"] in text
    assert len(measured(at)[0]) == 5  # the spread; the softmax rows wait for the other exercise
    reveal(at, "scaling.root", 1)  # the "why" beside it: Var(x / c) = Var(x) / c²
    assert "c²" in at.success[-1].value


def test_saturation_exercise_reveals_the_measured_shares(lang):
    at = open_page(PAGE, lang)
    reveal(at, "scaling.sat", 1)
    assert len(at.success) == 1
    assert num(experiment(512).saturated_raw) in at.success[0].value
