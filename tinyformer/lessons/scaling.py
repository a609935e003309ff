"""Why scores are divided by sqrt(d_k), by hand and by experiment.

If the entries of q and k are independent with mean 0 and variance 1, then q·k is a
sum of d_k such products, each with variance 1, so Var(q·k) = d_k: the typical score
grows like sqrt(d_k). Dividing by sqrt(d_k) brings the variance back to 1. It controls
the size; it does not squash scores into a fixed range. Without it, large score gaps
push softmax towards one-hot rows ("saturated": here, largest weight > 0.99), and a
saturated softmax barely moves when its input scores move.

Every derivative here is taken with respect to the scores softmax itself receives
(q·k unscaled, q·k / sqrt(d_k) scaled): comparing derivatives with respect to
different inputs would compare unlike quantities.

Shape letters: M keys, Q queries in the experiment, K keys per query, D = d_k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError, ShapeError

MAX_ELEMENTS = 20_000_000  # pairs x d_k drawn by one experiment (about 80 MB of float32)
SATURATED = 0.99  # a softmax row is saturated when its largest weight exceeds this
MAX_SWEEP = 16  # d_k values in one sweep


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
    q_norm: float  # |q|
    key_norms: torch.Tensor  # [M] |k_j|
    cosines: torch.Tensor  # [M] q·k_j / (|q| |k_j|); NaN where q or k_j is zero


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
    q_norm = torch.linalg.vector_norm(q)
    key_norms = torch.linalg.vector_norm(keys, dim=-1)  # [M]
    lengths = q_norm * key_norms  # [M]
    # A zero vector has no direction: its cosine is undefined, not 0.
    cosines = torch.where(lengths > 0, scores / lengths.clamp_min(1e-300),
                          torch.full_like(scores, math.nan))  # [M]
    return HandScores(
        q=q, keys=keys, d_k=d_k, sqrt_d_k=math.sqrt(d_k), scale=scale, scores=scores, scaled=scaled,
        weights_raw=torch.softmax(scores, dim=-1), weights_scaled=torch.softmax(scaled, dim=-1),
        q_norm=float(q_norm), key_norms=key_norms, cosines=cosines,
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
    """Random q, k with independent N(0, 1) entries: scores with and without scaling.

    Each query is compared with keys_per_query keys: one row of the score table. A row
    is saturated when the largest weight of softmax over it exceeds SATURATED; the
    softmax is taken of the scores it receives (q·k without scaling, q·k / sqrt(d_k)
    with scaling).
    """

    d_k: int
    n_queries: int
    keys_per_query: int
    raw: torch.Tensor  # [Q * K] q·k, float64
    scaled: torch.Tensor  # [Q * K] q·k / sqrt(d_k)
    raw_spread: Spread
    scaled_spread: Spread
    top_raw: torch.Tensor  # [Q] largest softmax weight of each row of K raw scores
    top_scaled: torch.Tensor  # [Q] the same with scaled scores
    mean_top_raw: float  # mean of top_raw: tends to 1 (one-hot) as d_k grows
    mean_top_scaled: float  # mean of top_scaled: about the same for every d_k
    n_saturated_raw: int  # rows with top_raw > SATURATED
    n_saturated_scaled: int  # rows with top_scaled > SATURATED
    scaled_outside_unit: int  # scaled scores with |s| > 1: no fixed range

    @property
    def n_pairs(self) -> int:
        return self.n_queries * self.keys_per_query

    @property
    def saturated_raw(self) -> float:
        """Share of rows whose unscaled softmax is saturated."""
        return self.n_saturated_raw / self.n_queries

    @property
    def saturated_scaled(self) -> float:
        return self.n_saturated_scaled / self.n_queries


def spread(values: torch.Tensor) -> Spread:
    values = values.to(torch.float64)
    variance = float(values.var()) if values.numel() > 1 else 0.0
    return Spread(
        mean=float(values.mean()), variance=variance, std=math.sqrt(variance),
        min=float(values.min()), max=float(values.max()),
    )


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """||d softmax / d s||_F for each row of weights [..., K] = softmax(s); J = diag(a) - a a^T.

    The derivative is with respect to s, the scores softmax receives. It is largest for
    equal weights and 0 for one-hot weights: a saturated softmax barely moves when its
    scores move.
    """
    jac = torch.diag_embed(weights) - weights[..., :, None] * weights[..., None, :]  # [..., K, K]
    return torch.linalg.matrix_norm(jac)  # [...]


@dataclass(frozen=True)
class SoftmaxSensitivity:
    """One row of scores, its softmax, and how strongly the weights follow the scores."""

    scores: torch.Tensor  # [K] what softmax receives
    weights: torch.Tensor  # [K] softmax(scores), float64
    jacobian: torch.Tensor  # [K, K] d weights_i / d scores_j
    jacobian_norm: float  # Frobenius norm of jacobian (2 a_0 a_1 for two scores)


def softmax_sensitivity(scores: torch.Tensor) -> SoftmaxSensitivity:
    """Softmax of one row [K] of finite scores and its Jacobian with respect to them."""
    if scores.dim() != 1 or scores.numel() < 2 or not bool(torch.isfinite(scores).all()):
        raise ShapeError("scaling_row", "need one row of at least 2 finite scores",
                         shape=list(scores.shape))
    s = scores.to(torch.float64)
    weights = torch.softmax(s, dim=-1)  # [K]
    jacobian = torch.diag(weights) - weights[:, None] * weights[None, :]  # [K, K]
    return SoftmaxSensitivity(s, weights, jacobian, float(torch.linalg.matrix_norm(jacobian)))


def _check_experiment(d_k: int, n_pairs: int, keys_per_query: int) -> int:
    """The number of queries; every size is bounded."""
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
    return n_queries


def scaling_experiment(
    d_k: int, n_pairs: int, generator: torch.Generator, keys_per_query: int = 8
) -> ScalingExperiment:
    """Draw n_pairs // keys_per_query queries, each with keys_per_query keys, all N(0, 1).

    Every (query, key) pair gives one score; each query's row of keys also gives the
    largest softmax weight, and whether the row is saturated, with and without dividing
    by sqrt(d_k).
    """
    n_queries = _check_experiment(d_k, n_pairs, keys_per_query)
    q = torch.randn(n_queries, d_k, generator=generator)  # [Q, D]
    k = torch.randn(n_queries, keys_per_query, d_k, generator=generator)  # [Q, K, D]
    rows_raw = (k @ q[:, :, None]).squeeze(-1).double()  # [Q, K]; float32 sums, then float64
    rows_scaled = rows_raw / math.sqrt(d_k)  # [Q, K]
    raw, scaled = rows_raw.reshape(-1), rows_scaled.reshape(-1)  # [Q * K]
    top_raw = torch.softmax(rows_raw, dim=-1).amax(dim=-1)  # [Q]
    top_scaled = torch.softmax(rows_scaled, dim=-1).amax(dim=-1)  # [Q]
    return ScalingExperiment(
        d_k=d_k, n_queries=n_queries, keys_per_query=keys_per_query, raw=raw, scaled=scaled,
        raw_spread=spread(raw), scaled_spread=spread(scaled), top_raw=top_raw,
        top_scaled=top_scaled, mean_top_raw=float(top_raw.mean()),
        mean_top_scaled=float(top_scaled.mean()),
        n_saturated_raw=int((top_raw > SATURATED).sum()),
        n_saturated_scaled=int((top_scaled > SATURATED).sum()),
        scaled_outside_unit=int((scaled.abs() > 1).sum()),
    )


@dataclass(frozen=True)
class SaturationSweep:
    """The share of saturated rows for several d_k, each from its own experiment."""

    d_ks: list[int]
    runs: list[ScalingExperiment]  # one per d_k, in order
    saturated_raw: list[float]  # share of rows with largest weight > SATURATED, unscaled
    saturated_scaled: list[float]  # the same, scaled by 1/sqrt(d_k)

    def at(self, d_k: int) -> ScalingExperiment:
        return self.runs[self.d_ks.index(d_k)]


def saturation_sweep(d_ks: list[int], n_pairs: int, seed: int,
                     keys_per_query: int = 8) -> SaturationSweep:
    """scaling_experiment for each d_k, each drawn from a generator seeded with `seed`:
    the point at one d_k is exactly the single experiment at that d_k and seed."""
    if not 1 <= len(d_ks) <= MAX_SWEEP:
        raise ParameterError("scaling_sweep", f"need 1 to {MAX_SWEEP} values of d_k",
                             count=len(d_ks), limit=MAX_SWEEP)
    runs = [scaling_experiment(d_k, n_pairs, torch.Generator().manual_seed(seed),
                               keys_per_query) for d_k in d_ks]
    return SaturationSweep(
        d_ks=list(d_ks), runs=runs, saturated_raw=[r.saturated_raw for r in runs],
        saturated_scaled=[r.saturated_scaled for r in runs],
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
