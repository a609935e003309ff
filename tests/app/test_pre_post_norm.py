"""Stage 9.2 in AppTest: Pre-Norm and Post-Norm as two diagrams of the same block, the
size of the residual stream over several blocks, and each block's gradient at
initialisation (docs/curriculum.md, stage 9). The block outputs are checked against
PyTorch's nn.TransformerEncoderLayer (norm_first); the gradients against
tinyformer.lessons.norm_placement, itself checked in tests/unit/test_residual.py."""

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
from tinyformer.lessons.norm_placement import gradient_by_block
from tinyformer.residual import compare_placements
from ui.fmt import num, vec
from ui.i18n import catalogue

PAGE = "pages/09_pre_post_norm.py"
DEFAULTS = {"blocks": 8, "seed": 0, "scale": 1.0, "norm": "layer", "row": 3, "width": 4}
# The three exercises answered before the first run: the charts they gate are drawn.
ANSWERED = {"_pre_post_norm.ex.grow.answered": 0, "_pre_post_norm.ex.post_rms.answered": 1.0,
            "_pre_post_norm.ex.starved.answered": 1}


def expected(blocks=8, seed=0, scale=1.0, norm="layer", row=3, width=4) -> dict:
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
    if blocks > 1:
        grads = gradient_by_block(blocks, seed, scale, norm, width=width)
        out["grads"] = [[num(v) for v in p.block_grad] for p in (grads.pre, grads.post)]
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
    """Diagrams and both curves agree with PyTorch and norm_placement for these settings
    (the exercises answered: see ANSWERED)."""
    assert_clean(at)
    e = expected(**(DEFAULTS | settings))
    pre, post = diagrams(at)
    assert len(pre) == len(post) == 7
    assert e["x"] in pre[0] and e["x"] in post[0]
    assert e["pre"] in pre[-1] and e["post"] in post[-1]
    found = [frame.values.tolist() for frame in tables(at)]
    assert found[0] == [e["pre_rms"], e["post_rms"]]
    assert found[1:] == ([e["grads"]] if "grads" in e else [])


def open_answered(lang: str = "en", **kwargs):
    return open_page(PAGE, lang, state=ANSWERED, **kwargs)


@pytest.fixture(scope="module", params=ONE_LANG)
def default_page(request):
    return open_answered(request.param)


def test_defaults_show_both_blocks_the_sizes_and_the_gradients(default_page) -> None:
    check(default_page)
    e = expected()
    assert set(e["post_rms"][1:]) == {"1.000"}  # Post-Norm ends every block with a norm
    text = page_text(default_page)
    assert f"Pre-Norm {e['pre_rms'][-1]}" in text and f"Post-Norm {e['post_rms'][-1]}" in text
    assert "pre_post_norm." not in text
    # The defaults show Post-Norm's small gradients near the input, said with its ratio.
    grads = gradient_by_block(8, 0).post.block_grad
    assert grads[0] < grads[-1] / 5
    pre = gradient_by_block(8, 0).pre.block_grad
    said = catalogue("zh")["pre_post_norm.grad_ratios"].format(
        last=7, pre=num(pre[0] / pre[-1]), post=num(grads[0] / grads[-1]))
    assert said in text


def test_diagram_labels_are_translated() -> None:
    zh, en = open_page(PAGE, "zh"), open_page(PAGE, "en")
    assert "归一化" in diagrams(zh)[0][1] and "Norm" in diagrams(en)[0][1]
    assert "运费 *shipping fee*" in page_text(en)


@pytest.mark.parametrize(("edit", "settings"), [
    (lambda at: at.slider("pre_post_norm.blocks").set_value(1), {"blocks": 1}),
    (lambda at: at.button_group("pre_post_norm.norm").set_value("rms"), {"norm": "rms"}),
    (lambda at: at.number_input("_pre_post_norm.scale~n").set_value(5.0), {"scale": 5.0}),
    (lambda at: at.number_input("pre_post_norm.seed").set_value(7), {"seed": 7}),
    (lambda at: at.button_group("pre_post_norm.pos").set_value(0), {"row": 0}),
])
def test_edits_change_the_numbers(edit, settings) -> None:
    at = open_answered()
    edit(at).run()
    check(at, **settings)
    if settings.get("blocks") == 1:  # no later block to compare block 0 with
        assert catalogue("en")["pre_post_norm.grad_needs_two"] in page_text(at)


def test_shared_link_reproduces_the_page() -> None:
    params = {"pre_post_norm.blocks": "20", "pre_post_norm.seed": "7", "pre_post_norm.norm": "rms",
              "pre_post_norm.scale": "2.5", "pre_post_norm.pos": "1", "pre_post_norm.grad_d": "16"}
    check(open_answered(params=params), blocks=20, seed=7, norm="rms", scale=2.5, row=1,
          width=16)


@pytest.mark.parametrize("bad", [
    {"blocks": "0", "scale": "0", "seed": "-1", "norm": "batch", "pos": "9", "block.step": "5"},
    {"blocks": "33", "scale": "-1", "seed": "abc", "norm": "", "pos": "x", "block.step": "-1"},
    {"blocks": "abc", "scale": "inf", "seed": "1e300", "pos": "1.5"},
    {"blocks": "1e300", "scale": "1e300"},
    {"blocks": "nan", "scale": "nan"},
    {"blocks": "2.5", "scale": "abc", "grad_d": "8"},
])
def test_bad_link_values_fall_back_with_one_note_each(bad) -> None:
    params = {f"pre_post_norm.{key}": value for key, value in bad.items()}
    at = open_answered("zh", params=params)
    assert len(at.error) == len(bad)
    check(at)


def test_step_by_step_shows_the_attention_half_first() -> None:
    pre, post = diagrams(open_page(PAGE, params={"pre_post_norm.block.step": "1"}))
    assert len(pre) == len(post) == 4  # x, then norm / attention / add in each order
    assert "Norm" in pre[1] and "Attention" in post[1] and "Norm" in post[3]


def test_exercises_come_first_and_unlock_the_charts(lang) -> None:
    at = open_page(PAGE, lang)
    e = expected()
    assert not at.success and not tables(at)  # no curve gives an answer away
    reveal(at, "pre_post_norm.grow", 0)  # Pre-Norm's stream is larger at the defaults
    assert len(at.success) == 1
    assert e["pre_rms"][-1] in at.success[0].value and "1.000" in at.success[0].value
    answer(at, "pre_post_norm.post_rms", 1.0)
    assert any("σ²/(σ² + ε)" in m.value for m in at.markdown)
    assert len(tables(at)) == 1  # the sizes; the gradients wait for their own exercise
    reveal(at, "pre_post_norm.starved", 1)  # Post-Norm only, at the defaults
    assert len(at.success) == 3 and e["grads"][1][0] in at.success[2].value
    assert len(tables(at)) == 2


def test_a_wrong_number_is_corrected() -> None:
    at = open_page(PAGE)
    answer(at, "pre_post_norm.post_rms", 2.5)
    assert len(at.warning) == 1
