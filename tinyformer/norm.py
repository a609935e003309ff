"""LayerNorm and RMSNorm over the last dimension, traced."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LayerNormTrace:
    mean: torch.Tensor  # [..., 1]
    var: torch.Tensor  # [..., 1] population variance (divide by d, not d-1)
    std: torch.Tensor  # [..., 1] sqrt(var + eps)
    normalized: torch.Tensor  # [..., d] (x - mean) / std
    output: torch.Tensor  # [..., d] normalized * weight + bias


@dataclass(frozen=True)
class RMSNormTrace:
    rms: torch.Tensor  # [..., 1] sqrt(mean(x^2) + eps)
    normalized: torch.Tensor  # [..., d] x / rms
    output: torch.Tensor  # [..., d] normalized * weight


def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> LayerNormTrace:
    """Subtract the mean, divide by the population std, then scale and shift."""
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)  # population: matches F.layer_norm
    std = torch.sqrt(var + eps)  # eps guards constant rows (var = 0)
    normalized = (x - mean) / std
    output = normalized
    if weight is not None:
        output = output * weight
    if bias is not None:
        output = output + bias
    return LayerNormTrace(mean, var, std, normalized, output)


def rms_norm(
    x: torch.Tensor, weight: torch.Tensor | None = None, eps: float = 1e-6
) -> RMSNormTrace:
    """Divide by the root mean square (no mean subtraction), then scale."""
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # [..., 1]
    normalized = x / rms
    output = normalized if weight is None else normalized * weight
    return RMSNormTrace(rms, normalized, output)
