"""Residual connections, and where the norm sits in a block: Post-Norm against Pre-Norm.

    Post-Norm (the original Transformer):  h = Norm(x + Attention(x));  y = Norm(h + FFN(h))
    Pre-Norm (common today):               h = x + Attention(Norm(x));  y = h + FFN(Norm(h))

Both placements run here with the same seeded random weights, so the only difference
between them is where the norm sits. Every intermediate of a block is kept as a
`FlowStep` (what it computed, from which earlier steps, and whether its value is the
residual stream), so a page can draw the block with the numbers flowing through it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from tinyformer.attention import multi_head_attention
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.ffn import feed_forward
from tinyformer.masks import causal_mask
from tinyformer.norm import check_eps, layer_norm, rms_norm

PLACEMENTS = ("pre", "post")
NORMS = ("layer", "rms")
MAX_BLOCKS = 48
MAX_SEED = 2**31 - 1
MAX_SCALE = 1000.0
MAX_TOKENS, MAX_WIDTH = 16, 64


class ResidualTrace(NamedTuple):
    x: torch.Tensor  # [..., d] the input, carried past the sub-layer unchanged
    sublayer: torch.Tensor  # [..., d] f(x)
    output: torch.Tensor  # [..., d] x + f(x)


def residual_add(x: torch.Tensor, sublayer: torch.Tensor) -> ResidualTrace:
    """y = x + f(x): only defined when f returns the width it was given."""
    if x.shape != sublayer.shape:
        raise ShapeError("residual_shape", f"x {list(x.shape)} and f(x) "
                         f"{list(sublayer.shape)} must have the same shape",
                         x=list(x.shape), fx=list(sublayer.shape))
    return ResidualTrace(x, sublayer, x + sublayer)


@dataclass(frozen=True)
class BlockWeights:
    """One block's sub-layers, applied as x @ W; no biases, norms start at γ = 1, β = 0."""

    w_q: torch.Tensor  # [d, d]
    w_k: torch.Tensor  # [d, d]
    w_v: torch.Tensor  # [d, d]
    w_o: torch.Tensor  # [d, d]
    w_1: torch.Tensor  # [d, 4d]
    w_2: torch.Tensor  # [4d, d]
    heads: int


def random_blocks(n_blocks: int, width: int, heads: int, generator: torch.Generator
                  ) -> tuple[BlockWeights, ...]:
    """Weights drawn from N(0, 1/fan_in), so a sub-layer keeps its input's size roughly."""
    def draw(rows: int, cols: int) -> torch.Tensor:
        return torch.randn(rows, cols, generator=generator, dtype=torch.float64) / math.sqrt(rows)

    d = width
    return tuple(BlockWeights(draw(d, d), draw(d, d), draw(d, d), draw(d, d),
                              draw(d, 4 * d), draw(4 * d, d), heads) for _ in range(n_blocks))


class FlowStep(NamedTuple):
    name: str  # "x", "norm1", "attention", "add1", "norm2", "ffn", "add2"
    op: str  # "input", "norm", "attention", "ffn" or "add"
    value: torch.Tensor  # [N, d]
    inputs: tuple[int, ...]  # indices of the steps it was computed from
    stream: bool  # True when this value is the residual stream itself


@dataclass(frozen=True)
class BlockFlow:
    placement: str  # "pre" or "post"
    steps: tuple[FlowStep, ...]  # in the order they are computed

    @property
    def output(self) -> torch.Tensor:  # [N, d]
        return self.steps[-1].value


def run_block(x: torch.Tensor, weights: BlockWeights, placement: str, norm: str = "layer",
              eps: float = 1e-5) -> BlockFlow:
    """One decoder block (causal attention, then a GELU FFN) with the norm pre or post."""
    _check_choice("placement", placement, PLACEMENTS)
    _check_choice("norm", norm, NORMS)
    check_eps(eps)
    steps: list[FlowStep] = [FlowStep("x", "input", x, (), True)]

    def add(name: str, op: str, value: torch.Tensor, inputs: tuple[int, ...],
            stream: bool = False) -> int:
        steps.append(FlowStep(name, op, value, inputs, stream))
        return len(steps) - 1

    def normed(index: int, name: str, stream: bool) -> int:
        return add(name, "norm", _norm(steps[index].value, norm, eps), (index,), stream)

    def sublayer(index: int, op: str) -> torch.Tensor:
        value = steps[index].value
        if op == "attention":
            return _attention(value, weights)
        return feed_forward(value, weights.w_1, None, weights.w_2, None, "gelu").output

    stream = 0
    for half, op in ((1, "attention"), (2, "ffn")):
        if placement == "pre":  # the branch reads a normalized copy; the stream is never normed
            normed_copy = normed(stream, f"norm{half}", False)
            branch = add(op, op, sublayer(normed_copy, op), (normed_copy,))
            stream = add(f"add{half}", "add", steps[stream].value + steps[branch].value,
                         (stream, branch), True)
        else:  # the sub-layer reads the stream; the sum is normed and becomes the stream
            branch = add(op, op, sublayer(stream, op), (stream,))
            total = add(f"add{half}", "add", steps[stream].value + steps[branch].value,
                        (stream, branch), True)
            stream = normed(total, f"norm{half}", True)
    return BlockFlow(placement, tuple(steps))


def _attention(x: torch.Tensor, w: BlockWeights) -> torch.Tensor:
    n = x.shape[0]
    trace = multi_head_attention(x[None], w.w_q, w.w_k, w.w_v, w.w_o, w.heads,
                                 mask=causal_mask(n))  # [1, N, d]
    return trace.output[0]  # [N, d]


def _norm(x: torch.Tensor, norm: str, eps: float) -> torch.Tensor:
    return layer_norm(x, eps=eps).output if norm == "layer" else rms_norm(x, eps=eps).output


def rms(x: torch.Tensor) -> float:
    """Root mean square over every number of x: the size of the residual stream."""
    return float(x.pow(2).mean().sqrt())


@dataclass(frozen=True)
class StackRun:
    placement: str
    streams: tuple[torch.Tensor, ...]  # [N, d] each: the input, then after each block
    stream_rms: tuple[float, ...]  # rms(stream) for 0, 1, ..., L blocks
    update_rms: tuple[float, ...]  # rms(stream after block l - stream before it), l = 1..L
    first_block: BlockFlow


def run_stack(x: torch.Tensor, blocks: tuple[BlockWeights, ...], placement: str,
              norm: str = "layer", eps: float = 1e-5) -> StackRun:
    """L blocks in a row, all with the same placement of the norm."""
    flows = []
    streams = [x]
    for weights in blocks:
        flows.append(run_block(streams[-1], weights, placement, norm, eps))
        streams.append(flows[-1].output)
    updates = tuple(rms(b - a) for a, b in itertools.pairwise(streams))
    return StackRun(placement, tuple(streams), tuple(rms(s) for s in streams), updates,
                    flows[0])


@dataclass(frozen=True)
class PlacementComparison:
    x: torch.Tensor  # [N, d] the seeded input rows
    blocks: tuple[BlockWeights, ...]
    pre: StackRun
    post: StackRun


def compare_placements(n_blocks: int, seed: int, scale: float = 1.0, norm: str = "layer",
                       tokens: int = 4, width: int = 4, heads: int = 2,
                       eps: float = 1e-5) -> PlacementComparison:
    """Pre-Norm and Post-Norm stacks of n_blocks on the same input and the same weights.

    The input rows are drawn from N(0, scale^2), then the blocks' weights, all from one
    seeded generator: random teaching data, never a trained model.
    """
    x, blocks, _ = seeded_stack(n_blocks, seed, scale, norm, tokens, width, heads, eps)
    return PlacementComparison(x, blocks, run_stack(x, blocks, "pre", norm, eps),
                               run_stack(x, blocks, "post", norm, eps))


def seeded_stack(n_blocks: int, seed: int, scale: float = 1.0, norm: str = "layer",
                 tokens: int = 4, width: int = 4, heads: int = 2, eps: float = 1e-5
                 ) -> tuple[torch.Tensor, tuple[BlockWeights, ...], torch.Generator]:
    """The checked settings' input rows x [N, d] and blocks, drawn in that order from one
    generator seeded with `seed`; the generator is returned so that a caller can draw
    more teaching data after them."""
    _check_int("stream_blocks", "blocks", n_blocks, 1, MAX_BLOCKS)
    _check_int("stream_seed", "seed", seed, 0, MAX_SEED)
    _check_int("stream_size", "N", tokens, 1, MAX_TOKENS)
    _check_int("stream_size", "d", width, 1, MAX_WIDTH)
    _check_int("stream_size", "H", heads, 1, width)
    if width % heads:
        raise ShapeError("width_not_divisible", f"width {width} is not divisible by {heads}",
                         width=width, heads=heads)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or \
            not 0 < scale <= MAX_SCALE:
        raise ParameterError("stream_scale", f"scale must lie in (0, {MAX_SCALE}], got {scale}",
                             value=str(scale), limit=MAX_SCALE)
    _check_choice("norm", norm, NORMS)
    check_eps(eps)
    generator = torch.Generator().manual_seed(seed)
    x = scale * torch.randn(tokens, width, generator=generator, dtype=torch.float64)  # [N, d]
    return x, random_blocks(n_blocks, width, heads, generator), generator


def norm_rows(x: torch.Tensor, norm: str = "layer", eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm or RMSNorm of every row (γ = 1, β = 0): a Pre-Norm stack's final norm."""
    _check_choice("norm", norm, NORMS)
    check_eps(eps)
    return _norm(x, norm, eps)


def _check_int(key: str, name: str, value: int, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        message = f"{name} must be a whole number in [{lo}, {hi}], got {value}"
        # One literal key per raise, so the translation check can read every key.
        if key == "stream_blocks":
            raise ParameterError("stream_blocks", message, lo=lo, hi=hi, value=str(value))
        if key == "stream_seed":
            raise ParameterError("stream_seed", message, lo=lo, hi=hi, value=str(value))
        raise ParameterError("stream_size", message, name=name, lo=lo, hi=hi, value=str(value))


def _check_choice(name: str, value: str, options: tuple[str, ...]) -> None:
    if value not in options:
        raise ParameterError("stream_choice", f"{name} must be one of {options}, got {value!r}",
                             name=name, value=str(value), options=", ".join(options))
