"""Pre-Norm against Post-Norm before any training: how strongly a loss pulls on each
block's weights (stage 9.2).

The two stacks are tinyformer.residual's own blocks with the same seeded weights
(`seeded_stack`), so the only difference is where the norm sits. A Pre-Norm stack ends
with one more norm, as Pre-Norm models do before their output layer; a Post-Norm stack
already ends with a norm. The loss is a fixed random read-out of that output,

    loss = sum over positions i and columns j of R[i, j] * y[i, j],   R ~ N(0, 1), [N, d]

drawn from the same generator after the input rows and the weights: a stand-in for the
output layer and the targets, which this stack does not have. Autograd gives the
gradient of the loss with respect to each block's six matrices (W_q, W_k, W_v, W_o, W_1,
W_2); a block's gradient norm is the square root of the sum of the squares of all their
entries. Random weights, never trained: sizes at initialisation only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from tinyformer.residual import BlockWeights, norm_rows, run_block, seeded_stack

MATRICES = ("w_q", "w_k", "w_v", "w_o", "w_1", "w_2")  # every weight of a block
WIDTHS = (4, 16, 64)  # the widths the page offers; 4 is its diagrams' width


@dataclass(frozen=True)
class GradientProfile:
    placement: str  # "pre" or "post"
    output: torch.Tensor  # [N, d] y, after the stack's last norm
    loss: float  # sum(R * y)
    block_grad: tuple[float, ...]  # the gradient norm of block l's weights, l = 0 .. L - 1


@dataclass(frozen=True)
class GradientComparison:
    x: torch.Tensor  # [N, d] the seeded input rows
    blocks: tuple[BlockWeights, ...]
    readout: torch.Tensor  # [N, d] R, the fixed random read-out
    pre: GradientProfile
    post: GradientProfile


def stack_output(x: torch.Tensor, blocks: tuple[BlockWeights, ...], placement: str,
                 norm: str = "layer", eps: float = 1e-5) -> torch.Tensor:
    """y [N, d]: the blocks in a row, then Pre-Norm's final norm (Post-Norm's last block
    already ends with one)."""
    y = x  # [N, d]
    for weights in blocks:
        y = run_block(y, weights, placement, norm, eps).output
    return norm_rows(y, norm, eps) if placement == "pre" else y


def readout_loss(y: torch.Tensor, readout: torch.Tensor) -> torch.Tensor:
    """sum(R * y): a scalar that depends on every number of the output."""
    return (readout * y).sum()


def weight_gradients(x: torch.Tensor, blocks: tuple[BlockWeights, ...], readout: torch.Tensor,
                     placement: str, norm: str = "layer", eps: float = 1e-5
                     ) -> tuple[torch.Tensor, torch.Tensor, tuple[tuple[torch.Tensor, ...], ...]]:
    """The output y [N, d], the loss and, per block, d loss / d W for W in MATRICES (each
    the shape of its W), by autograd on copies of the weights."""
    leaves = [dataclasses.replace(w, **{m: getattr(w, m).detach().clone().requires_grad_(True)
                                        for m in MATRICES}) for w in blocks]
    with torch.enable_grad():
        y = stack_output(x.detach(), tuple(leaves), placement, norm, eps)
        loss = readout_loss(y, readout)
        flat = torch.autograd.grad(loss, [getattr(w, m) for w in leaves for m in MATRICES])
    per_block = tuple(tuple(flat[i:i + len(MATRICES)])
                      for i in range(0, len(flat), len(MATRICES)))
    return y.detach(), loss.detach(), per_block


def block_norms(grads: tuple[tuple[torch.Tensor, ...], ...]) -> tuple[float, ...]:
    """One number per block: sqrt of the sum of squares of all its weights' gradients."""
    return tuple(float(torch.cat([g.flatten() for g in block]).norm()) for block in grads)


def gradient_by_block(n_blocks: int, seed: int, scale: float = 1.0, norm: str = "layer",
                      tokens: int = 4, width: int = 4, heads: int = 2,
                      eps: float = 1e-5) -> GradientComparison:
    """Both placements' gradient norms per block, on the blocks and input rows that
    tinyformer.residual.compare_placements draws for the same settings (the same checks,
    the same keyed errors)."""
    x, blocks, generator = seeded_stack(n_blocks, seed, scale, norm, tokens, width, heads, eps)
    readout = torch.randn(tokens, width, generator=generator, dtype=torch.float64)  # [N, d]
    profiles = {}
    for placement in ("pre", "post"):
        y, loss, grads = weight_gradients(x, blocks, readout, placement, norm, eps)
        profiles[placement] = GradientProfile(placement, y, float(loss), block_norms(grads))
    return GradientComparison(x, blocks, readout, profiles["pre"], profiles["post"])
