"""Stage 9.1 in AppTest: the residual y = x + f(x), and LayerNorm / RMSNorm side by side
(docs/curriculum.md, stage 9), checked against PyTorch's own F.layer_norm and F.rms_norm."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.app.helpers import (
    BAD_CELL,
    ONE_LANG,
    answer,
    assert_clean,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from ui.fmt import latex_matrix, num, vec

PAGE = "pages/09_residual_norm.py"
# The exercises before the norm's steps answered before the first run: the steps are drawn.
ANSWERED = {"_residual_norm.ex.why_rms.answered": 0, "_residual_norm.ex.rms1.answered": 0.447}


def col(values) -> str:
    return latex_matrix([[float(v)] for v in values])


def norms(x, gamma=None, beta=None, eps=1e-5) -> tuple[str, str]:
    """LayerNorm and RMSNorm outputs as the page writes them, from PyTorch."""
    x = torch.tensor(x, dtype=torch.float64)
    d = (x.numel(),)
    g = None if gamma is None else torch.tensor(gamma, dtype=torch.float64)
    b = None if beta is None else torch.tensor(beta, dtype=torch.float64)
    return col(F.layer_norm(x, d, g, b, eps)), col(F.rms_norm(x, d, g, eps))


def hat_tables(at) -> list:
    """The tables of x̂ (the ε table); the running example's tables below have none."""
    return [f for f in tables(at) if "x̂[0]" in f.columns]


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return open_page(PAGE, request.param, state=ANSWERED)


def test_defaults_show_the_worked_numbers(default_page) -> None:
    assert_clean(default_page)
    text = page_text(default_page)
    layer, rms = norms([1, 3])
    for number in [col([2.1, 0.8]), layer, rms, col([-1, 1]), "= 2.000", "= 2.236",
                   "= 5.000", "= 1.000", "0.00000500", "0.00000134"]:
        assert number in text, number
    assert layer == col([-1, 1]) and rms == col([0.447, 1.342])  # the curriculum's values
    table = tables(default_page)[0]
    assert table.values.tolist() == [["-1.000", "1.000"]] * 2 + [["0.447", "1.342"]] * 2


def test_english_view_has_no_untranslated_keys(default_page) -> None:
    assert "residual_norm." not in page_text(default_page)


@pytest.mark.parametrize(("edit", "x", "gamma", "beta", "eps"), [
    (lambda at: at.slider("_residual_norm.x2~1").set_value(4.0), [1, 4], None, None, 1e-5),
    (lambda at: at.text_input("residual_norm.g2").input("2, 0.5"), [1, 3], [2, 0.5], None, 1e-5),
    (lambda at: at.text_input("residual_norm.b2").input("0.5, -1"), [1, 3], None, [0.5, -1], 1e-5),
    (lambda at: at.select_slider("residual_norm.eps").set_value(1.0), [1, 3], None, None, 1.0),
    (lambda at: at.slider("residual_norm.d").set_value(4), [1, 3, 0, 4], None, None, 1e-5),
])
def test_edits_change_both_norms(edit, x, gamma, beta, eps) -> None:
    at = open_page(PAGE, state=ANSWERED)
    edit(at).run()
    assert_clean(at)
    text = page_text(at)
    for expected in norms(x, gamma, beta, eps):
        assert expected in text


def test_residual_follows_its_inputs() -> None:
    at = open_page(PAGE, state=ANSWERED)
    at.text_input("residual_norm.x").input("-1, 0.5").run()
    at.slider("_residual_norm.fx~0").set_value(1.5).run()
    assert col([0.5, 0.3]) in page_text(at)


def test_shared_link_reproduces_the_page() -> None:
    params = {"residual_norm.d": "4", "residual_norm.x4": "1, 2, 3, 5",
              "residual_norm.g4": "1, 2, 1, 1", "residual_norm.eps": "0.001"}
    text = page_text(open_page(PAGE, params=params, state=ANSWERED))
    for expected in norms([1, 2, 3, 5], [1, 2, 1, 1], None, 1e-3):
        assert expected in text


@pytest.mark.parametrize("params", [
    {"residual_norm.eps": "0", "residual_norm.d": "99", "residual_norm.x2": "1, inf",
     "residual_norm.g2": "1, 2, 3"},
    {"residual_norm.eps": "-1e-5", "residual_norm.d": "2.5", "residual_norm.b2": "abc",
     "residual_norm.x": ""},
    {"residual_norm.eps": "1e300", "residual_norm.d": "abc", "residual_norm.fx": "1e300, 0"},
    {"residual_norm.eps": "nan"},
    {"residual_norm.eps": "abc", "residual_norm.norm.step": "9"},
])
def test_bad_link_values_fall_back_with_one_note_each(params) -> None:
    at = open_page(PAGE, "zh", params=params, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == len(params)
    text = page_text(at)
    assert col([2.1, 0.8]) in text
    for expected in norms([1, 3]):
        assert expected in text


@pytest.mark.parametrize("key", ["residual_norm.x", "residual_norm.fx", "residual_norm.x2",
                                 "residual_norm.g2", "residual_norm.b2"])
def test_bad_cells_show_one_message_and_keep_the_page(key) -> None:
    at = open_page(PAGE, state=ANSWERED)
    for bad in [BAD_CELL, "1, 2, 3"]:
        at.text_input(key).input(bad).run()
        assert not at.exception
        assert len(at.error) == 1, bad
        text = page_text(at)
        assert col([2.1, 0.8]) in text and all(n in text for n in norms([1, 3]))


def test_a_constant_row_shows_why_epsilon_is_there() -> None:
    at = open_page(PAGE, state=ANSWERED)
    next(b for b in at.button if "[2, 2]" in b.label).click().run()
    assert_clean(at)
    assert at.text_input("residual_norm.x2").value == "2, 2"
    assert len(at.warning) == 1 and "0.00316" in at.warning[0].value
    assert tables(at)[0].values.tolist()[:2] == [["0.000", "0.000"], ["NaN", "NaN"]]
    next(b for b in at.button if "[0, 0]" in b.label).click().run()
    assert len(at.warning) == 2  # LayerNorm and RMSNorm both divide 0 by sqrt(eps)


def test_step_by_step_and_a_link_to_a_step() -> None:
    first = page_text(open_page(PAGE, params={"residual_norm.norm.step": "1"}, state=ANSWERED))
    assert "= 2.000" in first and "2.236" not in first
    second = page_text(open_page(PAGE, params={"residual_norm.norm.step": "2"},
                                 state=ANSWERED))
    assert "2.236" in second and col([0.447, 1.342]) not in second


def test_choice_exercise(lang) -> None:
    at = open_page(PAGE, lang)
    rms_shifted = num(torch.tensor([11.0, 13.0]).pow(2).mean().sqrt())  # 12.042
    assert rms_shifted not in page_text(at)
    reveal(at, "residual_norm.shift", 0)
    assert len(at.success) == 1
    shifted = vec(F.rms_norm(torch.tensor([11.0, 13.0]), (2,), eps=1e-5))  # [0.914, 1.080]
    assert rms_shifted in at.success[0].value and shifted in at.success[0].value
    reveal(at, "residual_norm.shift", 2)
    assert len(at.warning) == 1


@pytest.mark.parametrize(("typed", "right"), [(0.447, True), (0.5, False)])
def test_number_exercise_and_its_why_come_before_the_steps(typed, right) -> None:
    at = open_page(PAGE)
    assert "2.236" not in page_text(at) and not hat_tables(at)  # no step shows x̂ yet
    answer(at, "residual_norm.rms1", typed)
    assert len(at.success if right else at.warning) == 1
    assert r"\frac{1}{2.236} = 0.447" in explanations(at)
    assert not hat_tables(at)  # the why exercise is still open
    reveal(at, "residual_norm.why_rms", 0)
    assert len(at.success) == (2 if right else 1)
    assert tables(at)[0].values.tolist()[2] == ["0.447", "1.342"]  # RMSNorm's x̂ with ε
