"""LayerNorm and RMSNorm over the last dimension, traced."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError, ShapeError


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


# --- LayerNorm and RMSNorm of one vector, side by side (stage 9.1) ----------------------
MAX_EPS = 1.0  # epsilon guards a tiny denominator; beyond this it swamps the variance


@dataclass(frozen=True)
class NormComparison:
    """LayerNorm and RMSNorm of the same vector, with and without epsilon."""

    x: torch.Tensor  # [d]
    gamma: torch.Tensor  # [d] learned scale (both norms)
    beta: torch.Tensor  # [d] learned shift (LayerNorm only)
    eps: float
    centered: torch.Tensor  # [d] x - mean (LayerNorm's first step)
    mean_square: torch.Tensor  # [1] mean(x^2) (RMSNorm's first step)
    layer: LayerNormTrace
    rms: RMSNormTrace
    layer_no_eps: LayerNormTrace  # eps = 0: 0/0 = NaN when every x_i is equal
    rms_no_eps: RMSNormTrace  # eps = 0: 0/0 = NaN when x is all zeros
    layer_eps_effect: float  # max |x̂ - x̂ without eps| (NaN when that is 0/0)
    rms_eps_effect: float


def check_eps(eps: float) -> None:
    """Epsilon must be a positive, finite number no larger than MAX_EPS."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (0 < eps <= MAX_EPS):
        raise ParameterError("norm_eps_invalid", f"eps must lie in (0, {MAX_EPS}], got {eps}",
                             value=str(eps), limit=MAX_EPS)


def compare_norms(
    x: torch.Tensor,
    gamma: torch.Tensor | None = None,
    beta: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> NormComparison:
    """Both norms of one vector x [d], every intermediate kept; gamma and beta [d]
    default to ones and zeros (the values a freshly built model starts with)."""
    check_eps(eps)
    if x.dim() != 1 or x.numel() == 0:
        raise ShapeError("norm_not_vector", f"x must be one vector, got {list(x.shape)}",
                         got=list(x.shape))
    if not bool(torch.isfinite(x).all()):
        raise ParameterError("norm_not_finite", "every component of x must be finite")
    gamma = torch.ones_like(x) if gamma is None else _param("γ", gamma, x)
    beta = torch.zeros_like(x) if beta is None else _param("β", beta, x)
    layer, rms = layer_norm(x, gamma, beta, eps), rms_norm(x, gamma, eps)
    layer_0, rms_0 = layer_norm(x, gamma, beta, 0.0), rms_norm(x, gamma, 0.0)
    return NormComparison(
        x, gamma, beta, float(eps),
        centered=x - layer.mean,
        mean_square=x.pow(2).mean(dim=-1, keepdim=True),
        layer=layer, rms=rms, layer_no_eps=layer_0, rms_no_eps=rms_0,
        layer_eps_effect=_largest_change(layer.normalized, layer_0.normalized),
        rms_eps_effect=_largest_change(rms.normalized, rms_0.normalized),
    )


def _param(name: str, value: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    if value.shape != x.shape:
        raise ShapeError("norm_param_shape", f"{name} must have shape {list(x.shape)}, "
                         f"got {list(value.shape)}", name=name, expected=x.shape[-1],
                         got=list(value.shape))
    if not bool(torch.isfinite(value).all()):
        raise ParameterError("norm_param_not_finite", f"{name} must be finite", name=name)
    return value.to(x.dtype)


def _largest_change(with_eps: torch.Tensor, without: torch.Tensor) -> float:
    """How far epsilon moves the normalized vector; NaN when 0/0 leaves nothing to compare."""
    if not bool(torch.isfinite(without).all()):
        return float("nan")
    return float((with_eps - without).abs().max())
