"""From logits to the next token: temperature, top-k, top-p, then sampling.

Order of operations (the usual one in generation libraries): divide by the
temperature, softmax, keep the top-k, renormalise, keep the top-p nucleus of what
is left, renormalise. All work on the last dimension, so logits may be [V] or [..., V].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError

# Cumulative sums are rounded: a set whose sum equals p up to this much "reaches" p,
# so p = 0.8 over [0.5, 0.3, 0.2] keeps two tokens, not three.
TOP_P_TOLERANCE = 1e-6


@dataclass(frozen=True)
class SamplingTrace:
    scaled_logits: torch.Tensor  # [..., V] logits / T (temperature 0: logits unchanged)
    probs_before_filter: torch.Tensor  # [..., V] softmax(scaled_logits); one-hot if T = 0
    kept: torch.Tensor  # [..., V] bool: survived greedy / top-k / top-p
    probs: torch.Tensor  # [..., V] renormalised over the kept tokens


def next_token_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> SamplingTrace:
    """Next-token distribution after temperature, top-k and top-p.

    temperature 0 means greedy: a one-hot at the argmax (ties go to the lowest index),
    the limit of softmax(logits / T) as T -> 0 when the maximum is unique.
    top_k larger than the vocabulary keeps everything. top_p keeps the smallest set of
    tokens, taken in descending probability, whose cumulative probability reaches p;
    always at least one token. Ties in probability are ordered by lower index first.
    Raises ParameterError for negative/NaN temperature, top_k < 1, top_p outside (0, 1],
    or logits containing NaN or infinity.
    """
    _check_settings(logits, temperature, top_k, top_p)
    if temperature == 0:
        scaled = logits.clone()
        before = _one_hot_argmax(logits)
    else:
        scaled = logits / temperature
        # Shift by the max before dividing: with a tiny T, logits / T can overflow to inf
        # (and softmax(inf) is NaN) while the differences stay well defined.
        shifted = logits - logits.max(dim=-1, keepdim=True).values
        before = torch.softmax(shifted / temperature, dim=-1)
    # Greedy keeps only the argmax; otherwise every token starts as a candidate.
    kept = before > 0 if temperature == 0 else torch.ones_like(before, dtype=torch.bool)
    probs = before
    if top_k is not None:
        kept = kept & _top_k_mask(probs, top_k)
        probs = _renormalise(before, kept)
    if top_p is not None and top_p < 1:  # p = 1 keeps everything: no filter
        kept = kept & _top_p_mask(probs, top_p)
        probs = _renormalise(before, kept)
    return SamplingTrace(scaled, before, kept, probs)


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """Draw one token id from probs [V] with torch.multinomial and this generator.

    The generator must live on probs' device; a seeded generator makes draws repeatable.
    """
    if probs.dim() != 1:
        raise ParameterError(
            "probs_not_1d",
            f"sample needs one distribution [V], got shape {list(probs.shape)}",
            shape=list(probs.shape),
        )
    return int(torch.multinomial(probs, 1, generator=generator).item())


def _check_settings(
    logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None
) -> None:
    if math.isnan(temperature) or temperature < 0:
        raise ParameterError(
            "temperature_negative",
            f"temperature must be >= 0 (0 = greedy), got {temperature}",
            temperature=temperature,
        )
    if top_k is not None and top_k < 1:
        raise ParameterError("top_k_invalid", f"top_k must be >= 1, got {top_k}", top_k=top_k)
    if top_p is not None and not 0 < top_p <= 1:
        raise ParameterError("top_p_invalid", f"top_p must be in (0, 1], got {top_p}", top_p=top_p)
    if logits.numel() == 0:
        raise ParameterError("logits_empty", "logits must contain at least one value")
    if not bool(torch.isfinite(logits).all()):
        raise ParameterError(
            "logits_not_finite", "logits must be finite numbers (no NaN or infinity)"
        )


def _one_hot_argmax(logits: torch.Tensor) -> torch.Tensor:
    best = logits.argmax(dim=-1, keepdim=True)  # first maximum: ties -> lowest index
    return torch.zeros_like(logits).scatter_(-1, best, 1.0)


def _descending_order(probs: torch.Tensor) -> torch.Tensor:
    # stable: equal probabilities keep index order, so filters are deterministic
    return torch.sort(probs, dim=-1, descending=True, stable=True).indices


def _top_k_mask(probs: torch.Tensor, k: int) -> torch.Tensor:
    order = _descending_order(probs)
    rank_kept = torch.arange(probs.shape[-1], device=probs.device) < k  # [V] by rank
    return _by_rank_to_by_token(rank_kept.expand_as(probs), order)


def _top_p_mask(probs: torch.Tensor, p: float) -> torch.Tensor:
    order = _descending_order(probs)
    sorted_probs = probs.gather(-1, order).to(torch.float64)  # float64: sums stay exact
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    # Keep a token while the ones ranked above it have not yet reached p;
    # the first token always has mass_before = 0 < p.
    rank_kept = mass_before < p - TOP_P_TOLERANCE
    rank_kept[..., 0] = True
    return _by_rank_to_by_token(rank_kept, order)


def _by_rank_to_by_token(rank_kept: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Scatter a mask indexed by rank back to vocabulary order."""
    return torch.zeros_like(rank_kept).scatter(-1, order, rank_kept)


def _renormalise(probs: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    masked = probs.masked_fill(~kept, 0.0)
    return masked / masked.sum(dim=-1, keepdim=True)
