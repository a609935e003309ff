"""Mixture of experts: the router's top-k choice per token, the chosen experts'
outputs combined with the router's renormalised weights, the load per expert, and
parameter counts (total against active per token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.ffn import feed_forward

MAX_EXPERTS = 64  # bounds of the random teaching example
MAX_TOKENS = 16
MAX_WIDTH = 16
MAX_HIDDEN = 64
MAX_MILLIONS = 1_000_000.0  # a million million parameters per expert is far past any model


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


@dataclass(frozen=True)
class Experts:
    """E feed-forward experts (as in tinyformer.ffn), their weights stacked."""

    w1: torch.Tensor  # [E, d, H]
    b1: torch.Tensor  # [E, H]
    w2: torch.Tensor  # [E, H, d]
    b2: torch.Tensor  # [E, d]
    activation: str = "relu"

    @property
    def count(self) -> int:
        return self.w1.shape[0]

    def run(self, expert: int, x: torch.Tensor) -> torch.Tensor:
        """Expert number `expert` applied to x [..., d]."""
        e = expert
        return feed_forward(x, self.w1[e], self.b1[e], self.w2[e], self.b2[e],
                            self.activation).output


@dataclass(frozen=True)
class MoETrace:
    route: RouteTrace
    expert_outputs: torch.Tensor  # [T, k, d] each chosen expert's output for its token
    weighted: torch.Tensor  # [T, k, d] those outputs times the renormalised weights
    output: torch.Tensor  # [T, d] the weighted outputs added up
    gates: torch.Tensor  # [T, E] renormalised weight per expert, 0 where not chosen
    load: torch.Tensor  # [E] how many tokens each expert received (int64)
    even_load: float  # T * k / E: every expert's load if routing were perfectly even


class MoESetup(NamedTuple):
    x: torch.Tensor  # [T, d] the tokens' vectors
    w_router: torch.Tensor  # [d, E]
    experts: Experts


class ExpertBudget(NamedTuple):
    n_experts: int
    k: int
    per_expert: int  # parameters of one expert
    total: int  # n_experts * per_expert: held by the experts, all of them
    active: int  # k * per_expert: used for one token
    active_share: float  # k / n_experts


def route(x: torch.Tensor, w_router: torch.Tensor, k: int) -> RouteTrace:
    """Route each token x [T, d] (any leading dims) to its top-k experts.

    w_router is [d, E]. Ties between experts go to the lower index (torch.topk on
    a stable descending sort), so routing is deterministic.
    """
    d = x.shape[-1] if x.ndim else "?"
    if w_router.ndim != 2 or w_router.shape[0] != d:
        raise ShapeError("ffn_shape", f"W_router must be [{d} × E]", name="W_router",
                         expected=f"{d} × E", got=" × ".join(map(str, w_router.shape)))
    n_experts = w_router.shape[-1]
    _check_k(k, n_experts)
    logits = x @ w_router  # [T, E]
    probs = torch.softmax(logits, dim=-1)
    order = torch.sort(probs, dim=-1, descending=True, stable=True).indices
    indices = order[..., :k]  # [T, k]
    top_probs = probs.gather(-1, indices)  # [T, k]
    return RouteTrace(logits, probs, indices, top_probs, renormalise(top_probs))


def renormalise(top_probs: torch.Tensor) -> torch.Tensor:
    """The chosen experts' probabilities [..., k] scaled to add up to 1 per token:
    0.3 and 0.2 become 0.6 and 0.4."""
    return top_probs / top_probs.sum(dim=-1, keepdim=True)


def mixture_of_experts(
    x: torch.Tensor, w_router: torch.Tensor, experts: Experts, k: int
) -> MoETrace:
    """x [T, d]: route every token to its top-k experts, run only those, and add
    their outputs with the router's renormalised weights."""
    if x.ndim != 2:
        raise ShapeError("ffn_shape", f"x must be [T, d], got {list(x.shape)}",
                         name="x", expected="T × d", got=" × ".join(map(str, x.shape)))
    if experts.count != w_router.shape[-1]:
        raise ShapeError("ffn_shape", "the router scores one column per expert",
                         name="W_router", expected=f"{x.shape[1]} × {experts.count}",
                         got=" × ".join(map(str, w_router.shape)))
    trace = route(x, w_router, k)
    outputs = torch.stack([
        torch.stack([experts.run(int(e), x[t]) for e in trace.indices[t]])  # [k, d]
        for t in range(x.shape[0])
    ]) if x.shape[0] else x.new_zeros(0, k, x.shape[1])  # [T, k, d]
    weighted = trace.weights[..., None] * outputs  # [T, k, d]
    gates = torch.zeros_like(trace.probs).scatter(-1, trace.indices, trace.weights)  # [T, E]
    load = torch.bincount(trace.indices.flatten(), minlength=experts.count)  # [E]
    even = x.shape[0] * k / experts.count
    return MoETrace(trace, outputs, weighted, weighted.sum(dim=1), gates, load, even)


def random_moe(n_tokens: int, d: int, hidden: int, n_experts: int, seed: int,
               decimals: int = 2) -> MoESetup:
    """Seeded random tokens, router and experts: teaching data, never trained.

    Weights are drawn with std 1/sqrt(fan_in) and rounded to `decimals`, so a learner
    can redo a product by hand; the generator is local (the global state is untouched).
    """
    for name, value, limit in (("tokens", n_tokens, MAX_TOKENS), ("d", d, MAX_WIDTH),
                               ("hidden", hidden, MAX_HIDDEN),
                               ("experts", n_experts, MAX_EXPERTS)):
        _check_size(name, value, limit)
    gen = torch.Generator().manual_seed(int(seed))

    def draw(*shape: int, fan_in: int) -> torch.Tensor:
        w = torch.randn(*shape, generator=gen, dtype=torch.float64) / fan_in ** 0.5
        return torch.round(w, decimals=decimals)

    x = draw(n_tokens, d, fan_in=1)  # [T, d]
    w_router = draw(d, n_experts, fan_in=d)  # [d, E]
    experts = Experts(draw(n_experts, d, hidden, fan_in=d), draw(n_experts, hidden, fan_in=d),
                      draw(n_experts, hidden, d, fan_in=hidden),
                      draw(n_experts, d, fan_in=hidden))
    return MoESetup(x, w_router, experts)


def param_counts(n_experts: int, params_per_expert: int, k: int) -> ParamCounts:
    """Total expert parameters and those active per token with top-k routing."""
    _check_k(k, n_experts)
    return ParamCounts(total=n_experts * params_per_expert, active=k * params_per_expert)


def expert_budget(n_experts: int, millions_per_expert: float, k: int) -> ExpertBudget:
    """param_counts from a size in millions (10 -> 10,000,000 parameters per expert).

    Only the experts are counted: the router, attention and embeddings are not.
    """
    _check_size("experts", n_experts, 10_000)
    if not 0 < millions_per_expert <= MAX_MILLIONS:  # also refuses NaN
        raise ParameterError("moe_size", f"millions_per_expert must be in (0, {MAX_MILLIONS}]",
                             name="millions", value=millions_per_expert, limit=MAX_MILLIONS)
    per_expert = round(millions_per_expert * 1_000_000)
    counts = param_counts(n_experts, per_expert, k)
    return ExpertBudget(n_experts, k, per_expert, counts.total, counts.active, k / n_experts)


def _check_size(name: str, value: int, limit: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ParameterError("moe_size", f"{name} must be a whole number from 1 to {limit}",
                             name=name, value=value, limit=limit)


def _check_k(k: int, n_experts: int) -> None:
    if not 1 <= k <= n_experts:
        raise ParameterError(
            "top_k_out_of_range",
            f"k must be between 1 and the number of experts ({n_experts}), got {k}",
            k=k,
            n_experts=n_experts,
        )
