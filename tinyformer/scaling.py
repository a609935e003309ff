"""Why scores are divided by sqrt(d_k), by hand and by experiment.

If the entries of q and k are independent with mean 0 and variance 1, then q·k is a
sum of d_k such products, each with variance 1, so Var(q·k) = d_k: the typical score
grows like sqrt(d_k). Dividing by sqrt(d_k) brings the variance back to 1. It controls
the size; it does not squash scores into a fixed range. Without it, large score gaps
push softmax towards one-hot weights, whose gradients are tiny.

Shape letters: M keys, Q queries in the experiment, K keys per query, D = d_k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError, ShapeError

MAX_ELEMENTS = 20_000_000  # pairs x d_k drawn by one experiment (about 80 MB of float32)


@dataclass(frozen=True)
class HandScores:
    """One query against a few keys: raw and scaled scores and both softmaxes."""

    q: torch.Tensor  # [D]
    keys: torch.Tensor  # [M, D]
    d_k: int
    sqrt_d_k: float
    scale: float  # 1 / sqrt(d_k)
    scores: torch.Tensor  # [M] q · k_j
    scaled: torch.Tensor  # [M] scores * scale
    weights_raw: torch.Tensor  # [M] softmax(scores): what happens without scaling
    weights_scaled: torch.Tensor  # [M] softmax(scaled)


def hand_scores(q: torch.Tensor, keys: torch.Tensor) -> HandScores:
    """Scores q·k_j of one query q [D] against keys [M, D], then divided by sqrt(D)."""
    if q.dim() != 1 or keys.dim() != 2 or keys.shape[-1] != q.shape[0] or q.numel() == 0:
        raise ShapeError(
            "scaling_hand_shape",
            f"q must be [D] and keys [M, D], got {list(q.shape)} and {list(keys.shape)}",
            q_shape=list(q.shape),
            keys_shape=list(keys.shape),
        )
    d_k = q.shape[0]
    scale = 1.0 / math.sqrt(d_k)
    scores = keys @ q  # [M]
    scaled = scores * scale  # [M]
    return HandScores(
        q=q, keys=keys, d_k=d_k, sqrt_d_k=math.sqrt(d_k), scale=scale, scores=scores, scaled=scaled,
        weights_raw=torch.softmax(scores, dim=-1), weights_scaled=torch.softmax(scaled, dim=-1),
    )


@dataclass(frozen=True)
class Spread:
    """Summary of one set of scores (population statistics would differ by n/(n-1))."""

    mean: float
    variance: float  # unbiased sample variance
    std: float
    min: float
    max: float


@dataclass(frozen=True)
class ScalingExperiment:
    """Random q, k with independent N(0, 1) entries: scores with and without scaling."""

    d_k: int
    n_queries: int
    keys_per_query: int
    raw: torch.Tensor  # [Q * K] q·k, float64
    scaled: torch.Tensor  # [Q * K] q·k / sqrt(d_k)
    raw_spread: Spread
    scaled_spread: Spread
    top_raw: torch.Tensor  # [Q] largest softmax weight of each row of K raw scores
    top_scaled: torch.Tensor  # [Q] the same with scaled scores
    grad_raw: torch.Tensor  # [Q] Frobenius norm of the softmax Jacobian, raw scores
    grad_scaled: torch.Tensor  # [Q] the same, scaled scores
    mean_top_raw: float  # mean of top_raw: tends to 1 (one-hot) as d_k grows
    mean_top_scaled: float  # mean of top_scaled: about the same for every d_k
    mean_grad_raw: float
    mean_grad_scaled: float
    scaled_outside_unit: int  # scaled scores with |s| > 1: no fixed range

    @property
    def n_pairs(self) -> int:
        return self.n_queries * self.keys_per_query


def spread(values: torch.Tensor) -> Spread:
    values = values.to(torch.float64)
    variance = float(values.var()) if values.numel() > 1 else 0.0
    return Spread(
        mean=float(values.mean()), variance=variance, std=math.sqrt(variance),
        min=float(values.min()), max=float(values.max()),
    )


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """||d softmax / d scores||_F for each row of weights [..., K]; J = diag(a) - a a^T.

    It is largest for uniform weights and 0 for one-hot weights: a saturated softmax
    passes almost no gradient back to its scores.
    """
    jac = torch.diag_embed(weights) - weights[..., :, None] * weights[..., None, :]  # [..., K, K]
    return torch.linalg.matrix_norm(jac)  # [...]


def scaling_experiment(
    d_k: int, n_pairs: int, generator: torch.Generator, keys_per_query: int = 8
) -> ScalingExperiment:
    """Draw n_pairs // keys_per_query queries, each with keys_per_query keys, all N(0, 1).

    Every (query, key) pair gives one score; each query's row of keys also gives the
    largest softmax weight with and without dividing by sqrt(d_k).
    """
    if d_k < 1:
        raise ParameterError("scaling_dk", f"d_k must be >= 1, got {d_k}", d_k=d_k)
    if keys_per_query < 2:
        raise ParameterError(
            "scaling_keys", f"keys_per_query must be >= 2, got {keys_per_query}",
            keys=keys_per_query,
        )
    n_queries = n_pairs // keys_per_query
    if n_queries < 1:
        raise ParameterError(
            "scaling_pairs",
            f"n_pairs must be at least keys_per_query ({keys_per_query}), got {n_pairs}",
            pairs=n_pairs, keys=keys_per_query,
        )
    if n_queries * keys_per_query * d_k > MAX_ELEMENTS:
        raise ParameterError(
            "scaling_too_large",
            f"n_pairs x d_k = {n_pairs * d_k} exceeds {MAX_ELEMENTS}",
            size=n_pairs * d_k, limit=MAX_ELEMENTS,
        )
    q = torch.randn(n_queries, d_k, generator=generator)  # [Q, D]
    k = torch.randn(n_queries, keys_per_query, d_k, generator=generator)  # [Q, K, D]
    rows_raw = (k @ q[:, :, None]).squeeze(-1).double()  # [Q, K]; float32 sums, then float64
    rows_scaled = rows_raw / math.sqrt(d_k)  # [Q, K]
    weights_raw = torch.softmax(rows_raw, dim=-1)  # [Q, K]
    weights_scaled = torch.softmax(rows_scaled, dim=-1)  # [Q, K]
    raw, scaled = rows_raw.reshape(-1), rows_scaled.reshape(-1)  # [Q * K]
    top_raw, top_scaled = weights_raw.amax(dim=-1), weights_scaled.amax(dim=-1)  # [Q]
    grad_raw = softmax_jacobian_norm(weights_raw)  # [Q]
    grad_scaled = softmax_jacobian_norm(weights_scaled)  # [Q]
    return ScalingExperiment(
        d_k=d_k, n_queries=n_queries, keys_per_query=keys_per_query, raw=raw, scaled=scaled,
        raw_spread=spread(raw), scaled_spread=spread(scaled),
        top_raw=top_raw, top_scaled=top_scaled, grad_raw=grad_raw, grad_scaled=grad_scaled,
        mean_top_raw=float(top_raw.mean()), mean_top_scaled=float(top_scaled.mean()),
        mean_grad_raw=float(grad_raw.mean()), mean_grad_scaled=float(grad_scaled.mean()),
        scaled_outside_unit=int((scaled.abs() > 1).sum()),
    )


@dataclass(frozen=True)
class Histogram:
    """Counts of several series over the same bins, so they can be drawn together."""

    edges: torch.Tensor  # [bins + 1]
    centres: torch.Tensor  # [bins]
    counts: list[torch.Tensor]  # each [bins], long


def histogram(series: list[torch.Tensor], bins: int = 60) -> Histogram:
    """Shared equal-width bins from the smallest to the largest value of all series."""
    if bins < 1 or not series or any(s.numel() == 0 for s in series):
        raise ParameterError("scaling_histogram", "need bins >= 1 and non-empty series",
                             bins=bins)
    lo = min(float(s.min()) for s in series)
    hi = max(float(s.max()) for s in series)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = torch.linspace(lo, hi, bins + 1, dtype=torch.float64)  # [bins + 1]
    counts = []
    for s in series:
        index = torch.bucketize(s.to(torch.float64), edges, right=True) - 1  # [n]
        index = index.clamp(0, bins - 1)  # the maximum falls in the last bin
        counts.append(torch.bincount(index, minlength=bins))  # [bins]
    return Histogram(edges=edges, centres=(edges[:-1] + edges[1:]) / 2, counts=counts)
