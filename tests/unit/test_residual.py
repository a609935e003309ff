"""Residual add, Pre-Norm / Post-Norm blocks against PyTorch's own
nn.TransformerEncoderLayer (norm_first=True is Pre-Norm, False is Post-Norm), and the
gradients of stage 9.2 against finite differences."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch import nn

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.norm_placement import (
    MATRICES,
    block_norms,
    gradient_by_block,
    readout_loss,
    stack_output,
    weight_gradients,
)
from tinyformer.residual import (
    BlockWeights,
    compare_placements,
    norm_rows,
    random_blocks,
    residual_add,
    rms,
    run_block,
    run_stack,
)

D, HEADS, N = 4, 2, 5


def test_residual_add_curriculum_example() -> None:
    trace = residual_add(torch.tensor([2.0, 1.0]), torch.tensor([0.1, -0.2]))
    torch.testing.assert_close(trace.output, torch.tensor([2.1, 0.8]))
    assert torch.equal(trace.x, torch.tensor([2.0, 1.0]))


def test_residual_add_refuses_another_width() -> None:
    with pytest.raises(ShapeError) as info:
        residual_add(torch.zeros(4), torch.zeros(3))
    assert info.value.key == "residual_shape"
    assert info.value.values == {"x": [4], "fx": [3]}


def torch_layer(w: BlockWeights, norm_first: bool, norm: str, eps: float) -> nn.Module:
    """PyTorch's encoder layer holding the same weights (nn.Linear stores W transposed)."""
    layer = nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, activation="gelu",
                                       layer_norm_eps=eps, batch_first=True,
                                       norm_first=norm_first, bias=False).double()
    if norm == "rms":
        layer.norm1, layer.norm2 = (nn.RMSNorm(D, eps=eps).double() for _ in range(2))
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([w.w_q.T, w.w_k.T, w.w_v.T]))
        layer.self_attn.out_proj.weight.copy_(w.w_o.T)
        layer.linear1.weight.copy_(w.w_1.T)
        layer.linear2.weight.copy_(w.w_2.T)
    return layer.eval()


@pytest.mark.parametrize("norm", ["layer", "rms"])
@pytest.mark.parametrize(("placement", "norm_first"), [("pre", True), ("post", False)])
def test_block_matches_torch_encoder_layer(gen, placement, norm_first, norm) -> None:
    x = torch.randn(N, D, generator=gen, dtype=torch.float64) * 2
    (w,) = random_blocks(1, D, HEADS, gen)
    flow = run_block(x, w, placement, norm, eps=1e-5)
    mask = nn.Transformer.generate_square_subsequent_mask(N, dtype=torch.float64)
    expected = torch_layer(w, norm_first, norm, 1e-5)(x[None], src_mask=mask, is_causal=True)
    torch.testing.assert_close(flow.output, expected[0])


def test_flow_steps_say_where_the_norm_sits(gen) -> None:
    x = torch.randn(N, D, generator=gen, dtype=torch.float64)
    (w,) = random_blocks(1, D, HEADS, gen)
    pre, post = run_block(x, w, "pre"), run_block(x, w, "post")
    assert [s.name for s in pre.steps] == ["x", "norm1", "attention", "add1", "norm2", "ffn",
                                           "add2"]
    assert [s.name for s in post.steps] == ["x", "attention", "add1", "norm1", "ffn", "add2",
                                            "norm2"]
    # Pre-Norm: no norm ever becomes the stream; Post-Norm: every norm does.
    assert not any(s.stream for s in pre.steps if s.op == "norm")
    assert all(s.stream for s in post.steps if s.op == "norm")
    for flow in (pre, post):  # each add is its two inputs summed
        for step in flow.steps:
            if step.op == "add":
                a, b = (flow.steps[i].value for i in step.inputs)
                torch.testing.assert_close(step.value, a + b)


def test_stack_sizes_are_measured_on_the_streams(gen) -> None:
    x = torch.randn(N, D, generator=gen, dtype=torch.float64)
    blocks = random_blocks(3, D, HEADS, gen)
    run = run_stack(x, blocks, "pre")
    assert len(run.streams) == 4 and len(run.update_rms) == 3
    manual = x
    for w in blocks:
        manual = run_block(manual, w, "pre").output
    torch.testing.assert_close(run.streams[-1], manual)
    assert run.stream_rms[2] == pytest.approx(float(run.streams[2].pow(2).mean().sqrt()))
    assert run.update_rms[0] == pytest.approx(rms(run.streams[1] - x))


def test_post_norm_stream_has_unit_size_after_every_block() -> None:
    """LayerNorm with γ = 1, β = 0 leaves each row with mean 0 and variance var/(var+eps)."""
    cmp = compare_placements(12, seed=3, scale=5.0)
    assert cmp.post.stream_rms[0] == pytest.approx(rms(cmp.x))
    assert cmp.post.stream_rms[1:] == pytest.approx([1.0] * 12, abs=1e-4)
    assert cmp.pre.stream_rms[0] == cmp.post.stream_rms[0]  # same input


def test_same_seed_same_numbers_and_both_stacks_share_weights() -> None:
    a, b = compare_placements(4, seed=7), compare_placements(4, seed=7)
    torch.testing.assert_close(a.pre.streams[-1], b.pre.streams[-1])
    assert a.pre.first_block.steps[0].value is a.post.first_block.steps[0].value
    c = compare_placements(4, seed=8)
    assert not torch.allclose(a.x, c.x)


def test_pre_norm_updates_do_not_grow_with_the_input() -> None:
    """Norm(x) is scale invariant, so a Pre-Norm block adds the same update to a tiny or
    a huge input: only the stream's own size changes (up to epsilon's tiny share)."""
    small, large = compare_placements(2, seed=1, scale=1.0), compare_placements(2, seed=1,
                                                                                 scale=100.0)
    first = [rms(s.value) for s in small.pre.first_block.steps if s.op == "attention"]
    first_large = [rms(s.value) for s in large.pre.first_block.steps if s.op == "attention"]
    assert first == pytest.approx(first_large, rel=1e-3)


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"n_blocks": 0}, "stream_blocks"),
    ({"n_blocks": 49}, "stream_blocks"),
    ({"n_blocks": 2.5}, "stream_blocks"),
    ({"seed": -1}, "stream_seed"),
    ({"tokens": 17}, "stream_size"),
    ({"scale": 0.0}, "stream_scale"),
    ({"scale": float("nan")}, "stream_scale"),
    ({"scale": 1e300}, "stream_scale"),
    ({"norm": "batch"}, "stream_choice"),
    ({"eps": 0.0}, "norm_eps_invalid"),
    ({"width": 6, "heads": 4}, "width_not_divisible"),
])
def test_bad_settings_raise_keyed_errors(kwargs, key) -> None:
    settings = {"n_blocks": 2, "seed": 0} | kwargs
    with pytest.raises((ParameterError, ShapeError)) as info:
        compare_placements(**settings)
    assert info.value.key == key


def test_unknown_placement_is_refused(gen) -> None:
    (w,) = random_blocks(1, D, HEADS, gen)
    with pytest.raises(ParameterError) as info:
        run_block(torch.zeros(2, D, dtype=torch.float64), w, "middle")
    assert info.value.key == "stream_choice"


def test_a_longer_stack_starts_with_the_same_blocks() -> None:
    """The page draws block 1 from a one-block run and the curve from an L-block run."""
    short, long = compare_placements(3, seed=5, scale=2.0), compare_placements(9, seed=5,
                                                                               scale=2.0)
    assert short.pre.stream_rms == long.pre.stream_rms[:4]
    assert short.post.stream_rms == long.post.stream_rms[:4]
    for a, b in zip(short.pre.first_block.steps, long.pre.first_block.steps, strict=True):
        assert torch.equal(a.value, b.value)


# --- stage 9.2's gradients at initialisation (tinyformer.lessons.norm_placement) -------


def test_gradient_stacks_are_the_same_blocks_as_the_sizes() -> None:
    """The gradients are taken on the very stacks compare_placements runs: same input,
    same weights, tinyformer's own blocks, Pre-Norm with its final norm."""
    grads, cmp = gradient_by_block(3, seed=5, scale=2.0), compare_placements(3, 5, 2.0)
    assert torch.equal(grads.x, cmp.x)
    assert all(torch.equal(a.w_2, b.w_2) for a, b in zip(grads.blocks, cmp.blocks, strict=True))
    torch.testing.assert_close(grads.post.output, cmp.post.streams[-1])
    torch.testing.assert_close(grads.pre.output, norm_rows(cmp.pre.streams[-1]))
    assert grads.pre.loss == pytest.approx(float((grads.readout * grads.pre.output).sum()))
    assert len(grads.pre.block_grad) == len(grads.post.block_grad) == 3


@pytest.mark.parametrize("norm", ["layer", "rms"])
@pytest.mark.parametrize("placement", ["pre", "post"])
def test_autograd_matches_a_finite_difference(gen, placement, norm) -> None:
    """d loss / d W along a random direction V of every weight: <grad, V> against
    (loss(W + hV) - loss(W - hV)) / 2h, in float64."""
    x = torch.randn(N, D, generator=gen, dtype=torch.float64)
    blocks = random_blocks(2, D, HEADS, gen)
    readout = torch.randn(N, D, generator=gen, dtype=torch.float64)
    _, _, grads = weight_gradients(x, blocks, readout, placement, norm)
    moves = [{m: torch.randn(getattr(w, m).shape, generator=gen, dtype=torch.float64)
              for m in MATRICES} for w in blocks]

    def loss_at(h: float) -> float:
        moved = tuple(dataclasses.replace(w, **{m: getattr(w, m) + h * v[m] for m in MATRICES})
                      for w, v in zip(blocks, moves, strict=True))
        return float(readout_loss(stack_output(x, moved, placement, norm), readout))

    h = 1e-6
    numeric = (loss_at(h) - loss_at(-h)) / (2 * h)
    analytic = sum(float((g * v[m]).sum()) for block, v in zip(grads, moves, strict=True)
                   for g, m in zip(block, MATRICES, strict=True))
    assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)
    norms = block_norms(grads)
    assert norms[0] == pytest.approx(math.sqrt(sum(float(g.pow(2).sum()) for g in grads[0])))


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"n_blocks": 0}, "stream_blocks"), ({"width": 65}, "stream_size"),
    ({"width": 6, "heads": 4}, "width_not_divisible"), ({"norm": "batch"}, "stream_choice"),
])
def test_gradient_settings_are_bounded(kwargs, key) -> None:
    with pytest.raises((ParameterError, ShapeError)) as info:
        gradient_by_block(**({"n_blocks": 2, "seed": 0} | kwargs))
    assert info.value.key == key


def test_with_few_blocks_the_gradients_depend_on_the_seed() -> None:
    """What the page's caption warns of: at its defaults (8 blocks, d = 4, LayerNorm)
    seed 0 gives Post-Norm's block 0 a smaller gradient than block 7, seed 1 a larger one."""
    seed0, seed1 = (gradient_by_block(8, seed).post.block_grad for seed in (0, 1))
    assert seed0[0] < seed0[-1] and seed1[0] > seed1[-1]
