"""Stage 9.2 in AppTest: Pre-Norm and Post-Norm as two diagrams of the same block, and
the size of the residual stream over several blocks (docs/curriculum.md, stage 9). The
block outputs are checked against PyTorch's nn.TransformerEncoderLayer (norm_first)."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from tests.app.helpers import (
    ONE_LANG,
    _walk,
    answer,
    assert_clean,
    open_page,
    page_text,
    reveal,
    tables,
)
from tests.unit.test_residual import torch_layer
from tinyformer.residual import compare_placements
from ui.fmt import num, vec

PAGE = "pages/09_pre_post_norm.py"
DEFAULTS = {"blocks": 8, "seed": 0, "scale": 1.0, "norm": "layer", "row": 3}


def expected(blocks=8, seed=0, scale=1.0, norm="layer", row=3) -> dict:
    """The first block's output row from PyTorch's own encoder layer (same weights),
    and the measured sizes of both streams."""
    cmp = compare_placements(32, seed, scale, norm)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    out = {}
    for placement, norm_first in (("pre", True), ("post", False)):
        layer = torch_layer(cmp.blocks[0], norm_first, norm, 1e-5)
        y = layer(cmp.x[None], src_mask=mask, is_causal=True)[0, row]
        out[placement] = vec(y.detach())
        out[f"{placement}_rms"] = [num(v) for v in getattr(cmp, placement).stream_rms[
            : blocks + 1]]
    out["x"] = vec(cmp.x[row])
    return out


def diagrams(at) -> list[list[str]]:
    """The boxes of each block diagram, top to bottom, as their text."""
    found = []
    for node in _walk(at.main):
        if node.type == "plotly_chart":
            spec = json.loads(node.proto.spec)
            notes = spec["layout"].get("annotations", [])
            if not spec["data"] and notes:
                found.append([n["text"] for n in notes if not n.get("showarrow")])
    return found


def sizes_table(at) -> list[list[str]]:
    return tables(at)[0].values.tolist()


def check(at, **settings) -> None:
    """Diagrams and curve agree with PyTorch for these settings."""
    assert_clean(at)
    e = expected(**(DEFAULTS | settings))
    pre, post = diagrams(at)
    assert len(pre) == len(post) == 7
    assert e["x"] in pre[0] and e["x"] in post[0]
    assert e["pre"] in pre[-1] and e["post"] in post[-1]
    assert sizes_table(at) == [e["pre_rms"], e["post_rms"]]


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return open_page(PAGE, request.param)


def test_defaults_show_both_blocks_and_the_sizes(default_page) -> None:
    check(default_page)
    e = expected()
    assert set(e["post_rms"][1:]) == {"1.000"}  # Post-Norm ends every block with a norm
    text = page_text(default_page)
    assert f"Pre-Norm {e['pre_rms'][-1]}" in text and f"Post-Norm {e['post_rms'][-1]}" in text
    assert "pre_post_norm." not in text


def test_diagram_labels_are_translated() -> None:
    zh, en = open_page(PAGE, "zh"), open_page(PAGE, "en")
    assert "归一化" in diagrams(zh)[0][1] and "Norm" in diagrams(en)[0][1]
    assert "运费 *shipping fee*" in page_text(en)


@pytest.mark.parametrize(("edit", "settings"), [
    (lambda at: at.slider("pre_post_norm.blocks").set_value(20), {"blocks": 20}),
    (lambda at: at.button_group("pre_post_norm.norm").set_value("rms"), {"norm": "rms"}),
    (lambda at: at.number_input("_pre_post_norm.scale~n").set_value(5.0), {"scale": 5.0}),
    (lambda at: at.number_input("pre_post_norm.seed").set_value(7), {"seed": 7}),
    (lambda at: at.button_group("pre_post_norm.pos").set_value(0), {"row": 0}),
])
def test_edits_change_the_numbers(edit, settings) -> None:
    at = open_page(PAGE)
    edit(at).run()
    check(at, **settings)


def test_shared_link_reproduces_the_page() -> None:
    params = {"pre_post_norm.blocks": "20", "pre_post_norm.seed": "7", "pre_post_norm.norm": "rms",
              "pre_post_norm.scale": "2.5", "pre_post_norm.pos": "1"}
    check(open_page(PAGE, params=params), blocks=20, seed=7, norm="rms", scale=2.5, row=1)


@pytest.mark.parametrize("bad", [
    {"blocks": "0", "scale": "0", "seed": "-1", "norm": "batch", "pos": "9", "block.step": "5"},
    {"blocks": "33", "scale": "-1", "seed": "abc", "norm": "", "pos": "x", "block.step": "-1"},
    {"blocks": "abc", "scale": "inf", "seed": "1e300", "pos": "1.5"},
    {"blocks": "1e300", "scale": "1e300"},
    {"blocks": "nan", "scale": "nan"},
    {"blocks": "2.5", "scale": "abc"},
])
def test_bad_link_values_fall_back_with_one_note_each(bad) -> None:
    at = open_page(PAGE, "zh", params={f"pre_post_norm.{key}": value for key, value in bad.items()})
    assert len(at.error) == len(bad)
    check(at)


def test_step_by_step_shows_the_attention_half_first() -> None:
    pre, post = diagrams(open_page(PAGE, params={"pre_post_norm.block.step": "1"}))
    assert len(pre) == len(post) == 4  # x, then norm / attention / add in each order
    assert "Norm" in pre[1] and "Attention" in post[1] and "Norm" in post[3]


def test_choice_exercise(lang) -> None:
    at = open_page(PAGE, lang)
    e = expected()
    assert not at.success
    reveal(at, "pre_post_norm.grow", 0)  # Pre-Norm's stream is larger at the defaults
    assert len(at.success) == 1
    assert e["pre_rms"][-1] in at.success[0].value and "1.000" in at.success[0].value


@pytest.mark.parametrize(("typed", "right"), [(1.0, True), (2.5, False)])
def test_number_exercise(typed, right) -> None:
    at = open_page(PAGE)
    answer(at, "pre_post_norm.post_rms", typed)
    assert len(at.success if right else at.warning) == 1
    assert any("σ²/(σ² + ε)" in m.value for m in at.markdown)
