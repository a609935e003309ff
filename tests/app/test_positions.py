"""Stage 7.1 in AppTest: 我吃苹果 and 苹果吃我 give the same rows, moved, until positions
are added; the sinusoidal table (docs/curriculum.md, stage 7). What answers an exercise
shows only once it is answered: most tests open the page with every exercise answered."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from tests.app.helpers import (
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
)
from tinyformer.lessons.projection import random_setup
from ui.fmt import num, vec

PAGE = "pages/07_positions.py"
WORDS = ("我", "吃", "苹果")
CHECK_ROW = "[0.841, 0.540, 0.010, 1.000]"  # CURRICULUM 7: d = 4, pos = 1
# Every exercise answered (as session state, no extra run): the gated tables show.
ANSWERED = {"_positions.ex.pe.answered": 1, "_positions.ex.pe52.answered": 0.05,
            "_positions.ex.freqs.answered": 0}


def page(lang: str = "en", **kwargs):
    """The page with its exercises answered."""
    return open_page(PAGE, lang, state=ANSWERED | kwargs.pop("state", {}), **kwargs)


def pe(n: int, d: int) -> torch.Tensor:
    """The sinusoidal table from the formula, with math.sin / math.cos."""
    return torch.tensor([[(math.sin if c % 2 == 0 else math.cos)(p / 10000 ** ((c - c % 2) / d))
                          for c in range(d)] for p in range(n)], dtype=torch.float64)


def outputs(order=(2, 1, 0), width=4, seed=0, positions=False) -> list[torch.Tensor]:
    """Independent of tinyformer.word_order: the seeded table and weights, then PyTorch's
    own attention; each sentence's output rows [3, d]."""
    setup = random_setup(3, width, width, torch.Generator().manual_seed(seed))
    found = []
    for words in (range(3), order):
        x = setup.x[list(words)] + (pe(3, width) if positions else 0)  # [3, d]
        found.append(F.scaled_dot_product_attention(x @ setup.w_q, x @ setup.w_k, x @ setup.w_v))
    return found


def shown(matrix: torch.Tensor) -> list[list[str]]:
    return [[num(v) for v in row] for row in matrix.tolist()]


def expected(order=(2, 1, 0), width=4, seed=0, positions=False) -> dict[str, list[list[str]]]:
    """The page's tables as it should print them: both orders, and each word's row in the
    first minus its row in the second."""
    first, second = outputs(order, width, seed, positions)
    gap = shown(first - second[[order.index(i) for i in range(3)]])
    if positions:
        return {"pos_gap": gap}
    return {"out_a": shown(first), "out_b": shown(second), "out_gap": gap}


def heatmaps(at) -> dict[str, list[list[str]]]:
    """Each heatmap by its key ("out_a", "table", ...), as the numbers in its cells."""
    found = {}
    for node in _walk(at.main):
        if node.type == "plotly_chart" and json.loads(node.proto.spec)["data"][0]["type"] \
                == "heatmap":
            key = node.proto.id.split("_positions.", 1)[-1].split("~", 1)[0]
            found[key] = heatmap_frame(node).values.tolist()
    return found


def text_before(at, key: str) -> str:
    """Everything written on the page above the widget `key`."""
    parts = []
    for node in _walk(at.main):
        if getattr(node, "key", None) == key:
            return "\n".join(parts)
        if node.type == "plotly_chart" and "heatmap" in node.proto.spec:
            parts.append(heatmap_frame(node).to_string())
        elif isinstance(getattr(node, "value", None), str):
            parts.append(node.value)
    raise AssertionError(f"{key} is not on the page")


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return page(request.param)


def test_defaults_show_the_worked_numbers(default_page) -> None:
    assert_clean(default_page)
    assert CHECK_ROW in page_text(default_page)
    maps = heatmaps(default_page)
    assert {k: maps[k] for k in ("out_a", "out_b", "out_gap", "pos_gap")} == \
        expected() | expected(positions=True)
    assert [maps["out_b"][2], maps["out_b"][1], maps["out_b"][0]] == maps["out_a"]  # moved
    assert all(v == "0.000" for row in maps["out_gap"] for v in row)
    assert any(v != "0.000" for v in maps["pos_gap"][0])  # 我's row changed with positions
    assert "0.841 & 0.540 & 0.010 & 1.000" in page_text(default_page)  # PE[1] added
    assert len(default_page.success) == 1 and len(default_page.warning) == 2


def test_english_view_glosses_the_words() -> None:
    text = page_text(open_page(PAGE, "en"))
    assert "我 *I* · 吃 *eat* · 苹果 *apple*" in text
    assert "three word tokens, 我 · 吃 · 苹果" in text and "(NoPE)" in text


def test_sinusoidal_table_follows_the_formula(default_page) -> None:
    table = heatmaps(default_page)["table"]
    assert table == [[num(v) for v in row] for row in pe(16, 4).tolist()]


@pytest.mark.parametrize(("order", "width", "seed"), [("021", 4, 0), ("120", 6, 3),
                                                      ("201", 1, 9)])
def test_edits_and_shared_links_give_the_same_numbers(order, width, seed) -> None:
    at = page()
    at.selectbox("positions.order").set_value(order).run()
    at.slider("positions.d").set_value(width).run()
    at.number_input("positions.seed").set_value(seed).run()
    assert_clean(at)
    perm = tuple(int(c) for c in order)
    edited = heatmaps(at)
    assert {k: edited[k] for k in ("out_a", "out_b", "out_gap", "pos_gap")} == \
        expected(perm, width, seed) | expected(perm, width, seed, positions=True)
    assert len(at.success) == 1  # the rows only moved, as computed
    linked = page(params={"positions.order": order, "positions.d": str(width),
                                     "positions.seed": str(seed)})
    assert heatmaps(linked) == edited


def test_table_width_position_and_length() -> None:
    at = page()
    at.number_input("_positions.table_d~n").set_value(6).run()
    at.number_input("_positions.pos~n").set_value(5).run()
    at.slider("positions.n").set_value(3).run()
    assert_clean(at)
    assert f"`{vec(pe(6, 6)[5])}`" in page_text(at)
    assert r"PE_{5,2} = \sin\frac{5}{10000^{2/6}}" in page_text(at)  # the first 4 columns...
    assert r"PE_{5,4}" not in page_text(at)
    assert r"\ldots" in page_text(at)  # ...then the rest in the table
    assert heatmaps(at)["table"] == [[num(v) for v in row] for row in pe(3, 6).tolist()]
    linked = page(params={"positions.table_d": "6", "positions.pos": "5",
                                     "positions.n": "3"})
    assert heatmaps(linked) == heatmaps(at)
    assert f"`{vec(pe(6, 6)[5])}`" in page_text(linked)


@pytest.mark.parametrize("order", ["abc", "012"])  # not an order; the original one
def test_bad_link_values_give_one_translated_note_each(order) -> None:
    bad = {"positions.order": order, "positions.d": "1e300", "positions.seed": "-1",
           "positions.table_d": "text", "positions.pos": "inf", "positions.n": "65",
           "positions.shuffle.step": "9"}
    at = page("zh", params=bad)
    assert_clean(at)
    assert len(at.error) == len(bad) and all("默认值" in e.value for e in at.error)
    assert CHECK_ROW in page_text(at)
    assert heatmaps(at)["out_a"] == expected()["out_a"]


def test_choice_exercise(lang) -> None:
    at = open_page(PAGE, lang)
    assert "PE[2]" not in "".join(m.value for m in at.success)
    assert "pos_gap" not in heatmaps(at)  # the rows with positions answer it
    reveal(at, "positions.pe", 1)
    assert len(at.success) == 2  # the computed "rows only moved" and the right answer
    assert "PE[2]" in at.success[-1].value and "「我」" in at.success[-1].value
    assert heatmaps(at)["pos_gap"] == expected(positions=True)["pos_gap"]


@pytest.mark.parametrize(("typed", "right"), [(0.05, True), (-0.959, False)])
def test_number_exercise_is_asked_before_its_answer(typed, right) -> None:
    at = open_page(PAGE)
    above = text_before(at, "_positions.ex.pe52.value")
    assert "0.050" not in above and "PE_{5,2}" not in above
    assert "table" not in heatmaps(at) and CHECK_ROW not in page_text(at)  # it holds PE[5, 2]
    answer(at, "positions.pe52", typed)
    assert len(at.success if right else at.warning) == 2  # and "rows only moved" / long context
    assert r"\sin\frac{5}{100} = \sin(0.0500) = 0.050" in explanations(at)
    assert "table" not in heatmaps(at)  # the "why" exercise beside it is not answered yet
    if not right:
        return
    reveal(at, "positions.freqs", 0)
    assert heatmaps(at)["table"] == [[num(v) for v in row] for row in pe(16, 4).tolist()]


def test_cells_explain_themselves() -> None:
    at = page(state=click(("positions.out_b", 2, 1), ("positions.table", 1, 2)))
    text = explanations(at)
    assert r"o_{2,1} = \sum_j a_{2,j} v_{j,1} =" in text
    assert r"= -0.136" in text  # 我's component 1, the same as in 我吃苹果
    assert r"PE_{1,2} = \sin\frac{1}{10000^{2/4}} = \sin\frac{1}{100}" in text
    linked = explanations(open_page(PAGE, params={"positions.out_gap": "0,2"}))
    assert r"1.032 - (1.032) = 0.000" in linked


def test_steps_reveal_the_argument_in_order() -> None:
    one = page(params={"positions.shuffle.step": "1"})
    assert set(heatmaps(one)) == {"out_a", "out_b", "table"} and not one.success
    two = open_page(PAGE, params={"positions.shuffle.step": "2"})
    assert "out_gap" in heatmaps(two) and "pos_gap" not in heatmaps(two)
    assert len(two.success) == 1
