"""Mixture of experts: the router's top-k choice per token, and parameter counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from tinyformer.errors import ParameterError


@dataclass(frozen=True)
class RouteTrace:
    logits: torch.Tensor  # [T, E] x W_router
    probs: torch.Tensor  # [T, E] softmax over all experts
    indices: torch.Tensor  # [T, k] chosen experts, most probable first
    top_probs: torch.Tensor  # [T, k] their probabilities before renormalising
    weights: torch.Tensor  # [T, k] top_probs renormalised to sum to 1 per token


class ParamCounts(NamedTuple):
    total: int  # parameters held by all experts (all may need to sit in memory)
    active: int  # parameters used per token (top-k experts)


def route(x: torch.Tensor, w_router: torch.Tensor, k: int) -> RouteTrace:
    """Route each token x [T, d] (any leading dims) to its top-k experts.

    w_router is [d, E]. Ties between experts go to the lower index (torch.topk on
    a stable descending sort), so routing is deterministic.
    """
    n_experts = w_router.shape[-1]
    _check_k(k, n_experts)
    logits = x @ w_router  # [T, E]
    probs = torch.softmax(logits, dim=-1)
    order = torch.sort(probs, dim=-1, descending=True, stable=True).indices
    indices = order[..., :k]  # [T, k]
    top_probs = probs.gather(-1, indices)  # [T, k]
    weights = top_probs / top_probs.sum(dim=-1, keepdim=True)
    return RouteTrace(logits, probs, indices, top_probs, weights)


def param_counts(n_experts: int, params_per_expert: int, k: int) -> ParamCounts:
    """Total expert parameters and those active per token with top-k routing."""
    _check_k(k, n_experts)
    return ParamCounts(total=n_experts * params_per_expert, active=k * params_per_expert)


def _check_k(k: int, n_experts: int) -> None:
    if not 1 <= k <= n_experts:
        raise ParameterError(
            "top_k_out_of_range",
            f"k must be between 1 and the number of experts ({n_experts}), got {k}",
            k=k,
            n_experts=n_experts,
        )
