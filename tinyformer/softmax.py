"""Softmax written out step by step, for explaining one row by hand.

softmax(s)_j = e^{s_j} / sum_k e^{s_k}. Blocked entries (-inf) contribute e^{-inf} = 0
to the sum. The exponentials are the unshifted ones a learner would compute
(e^{0.707} = 2.028); only when they would overflow is the row's maximum subtracted
first (the result is the same; the trace records the shift).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# e^709 is the largest exponential a float64 holds; beyond it, shift by the maximum.
_EXP_LIMIT = 700.0


@dataclass(frozen=True)
class SoftmaxSteps:
    scores: torch.Tensor  # [..., N] the inputs (blocked entries may be -inf)
    shift: torch.Tensor  # [..., 1] subtracted before exp: 0 unless e^s would overflow
    exps: torch.Tensor  # [..., N] e^{s_j - shift}; 0 where blocked
    total: torch.Tensor  # [..., 1] sum of exps
    weights: torch.Tensor  # [..., N] exps / total; a fully blocked row is all 0


def softmax_steps(scores: torch.Tensor) -> SoftmaxSteps:
    """Every step of softmax over the last dimension, in float64."""
    s = scores.to(torch.float64)
    finite = torch.isfinite(s)
    peak = torch.where(finite, s, torch.full_like(s, -math.inf)).amax(-1, keepdim=True)
    shift = torch.where(peak > _EXP_LIMIT, peak, torch.zeros_like(peak))  # [..., 1]
    exps = torch.where(finite, torch.exp(s - shift), torch.zeros_like(s))  # [..., N]
    total = exps.sum(-1, keepdim=True)
    weights = torch.where(total > 0, exps / total.clamp_min(1e-300), torch.zeros_like(s))
    return SoftmaxSteps(s, shift, exps, total, weights)
