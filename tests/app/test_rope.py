"""Stage 7.2 in AppTest: RoPE by hand (60° apart gives 0.5), moving both words, the
per-pair frequencies, scores with and without RoPE, rotate half (docs/curriculum.md, stage 7).
What answers an exercise shows only once it is answered: most tests open the page with
every exercise answered."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tests.app.helpers import (
    BAD_CELL,
    ONE_LANG,
    _walk,
    answer,
    assert_clean,
    click,
    explanations,
    heatmap_frame,
    open_page,
    page_text,
    reveal,
    tables,
)
from ui.fmt import num

PAGE = "pages/07_rope.py"
# Every exercise answered (as session state, no extra run): the gated parts show.
ANSWERED = {"_rope.ex.shift.answered": 1, "_rope.ex.angle.answered": 0.7,
            "_rope.ex.linear.answered": 0}


def page(lang: str = "en", **kwargs):
    """The page with its exercises answered."""
    return open_page(PAGE, lang, state=ANSWERED | kwargs.pop("state", {}), **kwargs)


def heatmaps(at) -> dict[str, list[list[str]]]:
    found = {}
    for node in _walk(at.main):
        if node.type == "plotly_chart" and json.loads(node.proto.spec)["data"][0]["type"] \
                == "heatmap":
            found[node.key.split("_rope.", 1)[-1].split("~", 1)[0]] = \
                heatmap_frame(node).values.tolist()
    return found


def random_qk(n: int = 8, d: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The page's seeded q, k [n, d], drawn here the same documented way."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.round(torch.randn(n, d, generator=gen, dtype=torch.float64), decimals=2)
    k = torch.round(torch.randn(n, d, generator=gen, dtype=torch.float64), decimals=2)
    return q, k


def turn(x: torch.Tensor, positions: torch.Tensor, pairing: str = "adjacent") -> torch.Tensor:
    """RoPE written out as complex numbers: adjacent (2i, 2i+1) or rotate half (i, i + d/2)."""
    d = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    spin = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64),
                       positions[:, None].double() * theta)
    if pairing == "adjacent":
        z = torch.complex(x[:, 0::2], x[:, 1::2]) * spin
        return torch.stack((z.real, z.imag), -1).flatten(-2)
    z = torch.complex(x[:, : d // 2], x[:, d // 2:]) * spin
    return torch.cat((z.real, z.imag), -1)


def rotated(v: list[float], degrees: float) -> torch.Tensor:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return torch.tensor([v[0] * c - v[1] * s, v[0] * s + v[1] * c], dtype=torch.float64)


def shown(matrix: torch.Tensor) -> list[list[str]]:
    return [[num(v) for v in row] for row in matrix.tolist()]


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return page(request.param)


def test_defaults_show_the_worked_numbers(default_page) -> None:
    assert_clean(default_page)
    text = page_text(default_page)
    assert r"(R_\alpha q)\cdot(R_\beta k) = 0.500" in text  # 60° apart: cos 60° = 0.5
    assert r"\begin{bmatrix}0.500 \\ 0.866\end{bmatrix}" in text  # R_60° [1, 0]
    assert "q·k = 1.000" in text  # nothing turned
    assert "[1.0000, 0.1000, 0.0100, 0.0010]" in text  # θ_i = 10000^(-2i/8)
    assert len(default_page.success) == 1  # moving both by 0° changes nothing
    assert r"x_pW_q & \xrightarrow{\;R_p\;} & q_p" in text  # RoPE acts on q and k ...
    assert r"x_pW_v & \xrightarrow{\phantom{\;R_p\;}} & v_p" in text  # ... never on v
    assert "10.3" in text  # cached keys are stored turned: the K/V cache is stage 10.3


def test_scores_with_and_without_rope(default_page) -> None:
    q, k = random_qk()
    pos = torch.arange(8)
    maps = heatmaps(default_page)
    assert maps["plain"] == shown(q @ k.T)
    assert maps["rope"] == shown(turn(q, pos) @ turn(k, pos).T)
    angles = torch.rad2deg(pos[:, None].double() * 10000.0 ** (-torch.arange(0, 8, 2) / 8))
    assert maps["angles"] == [[num(v, 1) for v in row] for row in (angles % 360).tolist()]


def test_rotate_half_stated_numbers_are_computed(default_page) -> None:
    q, k = random_qk()
    pos = torch.arange(8)
    ours = turn(q, pos) @ turn(k, pos).T
    half = turn(q, pos, "half") @ turn(k, pos, "half").T
    order = [0, 2, 4, 6, 1, 3, 5, 7]
    reordered = turn(q[:, order], pos, "half") @ turn(k[:, order], pos, "half").T
    text = page_text(default_page)
    assert "0, 2, 4, 6, 1, 3, 5, 7" in text
    assert num((ours - half).abs().max()) in text and float((ours - half).abs().max()) > 0.1
    assert num((ours - reordered).abs().max()) == "0.000"
    said = {"en": "then differs by 0.000", "zh": "这时分数表相差 0.000"}
    assert said[default_page.query_params["lang"]] in text


@pytest.mark.parametrize(("aq", "ak", "dot"), [(0, 0, "1.000"), (30, 90, "0.500"),
                                               (-45, 45, "0.000"), (10, 190, "-1.000")])
def test_only_the_angle_difference_matters(aq, ak, dot) -> None:
    at = open_page(PAGE)
    at.slider("_rope.aq~s").set_value(aq).run()
    at.number_input("_rope.ak~n").set_value(ak).run()
    assert_clean(at)
    assert rf"(R_\alpha q)\cdot(R_\beta k) = {dot}" in page_text(at)
    linked = open_page(PAGE, params={"rope.aq": str(aq), "rope.ak": str(ak)})
    assert rf"(R_\alpha q)\cdot(R_\beta k) = {dot}" in page_text(linked)


def test_moving_both_keeps_the_dot_product_and_the_lengths() -> None:
    at = page(params={"rope.q": "3, 4", "rope.k": "1, 2", "rope.aq": "20"})
    at.slider("rope.shift").set_value(90).run()
    assert_clean(at)
    expected = float(rotated([3, 4], 20) @ rotated([1, 2], 60))  # (R_20° q)·(R_60° k)
    rows = tables(at)[0].values.tolist()  # before and after, as printed
    assert rows[0][1:] == ["20°", "60°", "40°", num(expected), "5.000", num(math.sqrt(5))]
    assert rows[1][1:] == ["110°", "150°", "40°", num(expected), "5.000", num(math.sqrt(5))]
    assert len(at.success) == 1 and num(expected) in at.success[0].value
    assert at.query_params["rope.shift"] == "90"


def test_bad_link_values_give_one_note_each_and_the_defaults():
    bad = {"rope.aq": "1e300", "rope.ak": "nan", "rope.shift": "-inf", "rope.d": "17",
           "rope.n": "0", "rope.seed": "x", "rope.same": "maybe", "rope.q": "1e300, 0"}
    at = page(params=bad)
    assert_clean(at)
    assert len(at.error) == len(bad)
    assert r"(R_\alpha q)\cdot(R_\beta k) = 0.500" in page_text(at)


@pytest.mark.parametrize("key", ["rope.q", "rope.k"])
@pytest.mark.parametrize("bad", [BAD_CELL, "1, 2, 3"])
def test_bad_vectors_keep_the_last_value(key, bad) -> None:
    at = open_page(PAGE)
    at.text_input(key).input(bad).run()
    assert_clean(at)
    assert len(at.error) == 1
    assert r"(R_\alpha q)\cdot(R_\beta k) = 0.500" in page_text(at)


@pytest.mark.parametrize(("lang", "words", "same"), [
    ("en", "even number", "differs from the RoPE table above by up to 0.000 ("),
    ("zh", "偶数", "最多相差 0.000（")])
def test_odd_width_says_why_and_the_page_goes_on(lang, words, same) -> None:
    at = open_page(PAGE, lang)
    at.slider("rope.d").set_value(5).run()
    assert_clean(at)
    assert len(at.error) == 1 and words in at.error[0].value
    assert "plain" not in heatmaps(at) and len(at.warning) == 1  # the closing note is there
    at.slider("rope.d").set_value(2).run()  # one pair: both pairings are the same
    assert not at.error and same in page_text(at)


def test_same_rows_make_each_diagonal_one_number() -> None:
    at = open_page(PAGE)
    at.toggle("rope.same").set_value(True).run()
    assert_clean(at)
    maps = heatmaps(at)
    assert len({v for row in maps["plain"] for v in row}) == 1
    rope = maps["rope"]
    for gap in range(-7, 8):
        assert len({rope[i][i + gap] for i in range(8) if 0 <= i + gap < 8}) == 1
    assert len({rope[0][j] for j in range(8)}) > 1


def test_choice_exercise(lang) -> None:
    at = open_page(PAGE, lang)
    assert "rope.shift" not in [s.key for s in at.slider]  # turning both answers it
    assert r"q\cdot(R_{\beta-\alpha}\,k)" not in page_text(at)  # it answers the question
    reveal(at, "rope.shift", 1)
    assert len(at.success) == 2 and any("cos 60° = 0.500" in s.value for s in at.success)
    assert "rope.shift" in [s.key for s in at.slider]
    assert r"q\cdot(R_{\beta-\alpha}\,k)" in page_text(at)


@pytest.mark.parametrize(("typed", "right"), [(0.7, True), (40.1, False)])  # rad, not °
def test_number_exercise(typed, right) -> None:
    at = open_page(PAGE)
    assert "[1.0000, 0.1000" not in page_text(at) and "angles" not in heatmaps(at)
    answer(at, "rope.angle", typed)
    assert len([s for s in at.success if "0.700" in s.value]) == (1 if right else 0)
    assert r"7\,\theta_1 = 0.700" in explanations(at)
    assert "[1.0000, 0.1000, 0.0100, 0.0010]" in page_text(at) and "angles" in heatmaps(at)


def test_cells_explain_themselves() -> None:
    at = page(state=click(("rope.rope", 1, 3), ("rope.angles", 5, 1)))
    q, k = random_qk()
    value = float(turn(q[1:2], torch.tensor([1]))[0] @ turn(k[3:4], torch.tensor([3]))[0])
    text = explanations(at)
    assert r"s_{1,3} &= (R_{1}q_{1})\cdot(R_{3}k_{3})" in text
    assert rf"&= {num(value)}\end{{aligned}}" in text
    assert r"5\cdot\theta_{1} = 5\cdot0.1000 = 0.5000" in text
    assert "28.6^\\circ" in text


def test_steps_show_the_hand_example_one_at_a_time() -> None:
    text = page_text(open_page(PAGE, params={"rope.hand.step": "1"}))
    assert r"R_{0^\circ}" in text and r"R_{60^\circ}" not in text
    text = page_text(open_page(PAGE, params={"rope.hand.step": "2"}))
    assert r"R_{60^\circ}" in text and r"1\cdot0.5 + 0\cdot0.866" not in text
