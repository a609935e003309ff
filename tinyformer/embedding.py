"""Before Transformers: one-hot vectors, dense embeddings, cosine similarity, whitening.

Everything is float64, so the worked numbers are exact to the digits a page shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError, ShapeError

MAX_CLOUD_POINTS = 10_000  # bounds the pairwise cosine work (N^2 / 2 pairs)
MAX_ONE_HOT_CELLS = 10_000_000  # N x V float64 numbers: 80 MB at most


# --- One-hot and cosine ----------------------------------------------------------------
def one_hot(ids: Sequence[int], vocab_size: int) -> torch.Tensor:
    """Row i is all zeros except a 1 at column ids[i]. Returns float64 [N, V]."""
    if vocab_size < 1:
        raise ParameterError(
            "embedding_vocab_invalid",
            f"vocab_size must be >= 1, got {vocab_size}",
            vocab_size=vocab_size,
        )
    index = torch.as_tensor(list(ids), dtype=torch.long)  # [N]
    if index.numel() * vocab_size > MAX_ONE_HOT_CELLS:
        raise ParameterError(
            "embedding_one_hot_too_large",
            f"{index.numel()} x {vocab_size} one-hot numbers exceed {MAX_ONE_HOT_CELLS}",
            limit=MAX_ONE_HOT_CELLS,
        )
    if index.numel() and (index.min() < 0 or index.max() >= vocab_size):
        raise ParameterError(
            "embedding_id_out_of_range",
            f"ids must lie in [0, {vocab_size})",
            vocab_size=vocab_size,
        )
    out = torch.zeros(index.numel(), vocab_size, dtype=torch.float64)  # [N, V]
    out[torch.arange(index.numel()), index] = 1.0
    return out


@dataclass(frozen=True)
class CosineTable:
    """Every pair of rows of x: cos(a, b) = a·b / (|a| |b|)."""

    vectors: torch.Tensor  # [N, D]
    dots: torch.Tensor  # [N, N] a_i · a_j
    norms: torch.Tensor  # [N] |a_i|
    denominators: torch.Tensor  # [N, N] |a_i| |a_j|
    cosine: torch.Tensor  # [N, N]; NaN where either vector is zero (no direction)
    degrees: torch.Tensor  # [N, N] arccos(cosine): 0° same way, 90° across, 180° opposite


def cosine_table(x: torch.Tensor) -> CosineTable:
    """Dot products, norms and cosines of every pair of rows of x [N, D]."""
    if x.dim() != 2:
        raise ShapeError("embedding_not_2d", "x must be a matrix [N, D]", shape=tuple(x.shape))
    x = x.to(torch.float64)
    dots = x @ x.T  # [N, N]
    norms = torch.linalg.vector_norm(x, dim=-1)  # [N]
    denom = norms[:, None] * norms[None, :]  # [N, N]
    cosine = torch.where(denom > 0, dots / torch.where(denom > 0, denom, 1.0), math.nan)
    # Rounding can push |cos| a hair past 1 (parallel vectors): clamp before arccos.
    degrees = torch.rad2deg(torch.arccos(cosine.clamp(-1.0, 1.0)))  # NaN stays NaN
    return CosineTable(vectors=x, dots=dots, norms=norms, denominators=denom, cosine=cosine,
                       degrees=degrees)


def mean_pairwise_cosine(x: torch.Tensor) -> float:
    """The mean cosine over all pairs i < j of rows of x [N, D] (zero rows are skipped)."""
    x = x.to(torch.float64)
    x = x[torch.linalg.vector_norm(x, dim=-1) > 0]  # [M, D]
    if x.shape[0] < 2:
        raise ParameterError(
            "embedding_too_few_points", "need at least 2 non-zero points", minimum=2
        )
    unit = x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)  # [M, D]
    total = unit.sum(0)  # [D]; sum over all ordered pairs = |Σu|² − M (the diagonal)
    m = x.shape[0]
    return float((total @ total - m) / (m * (m - 1)))


# --- Anisotropy and whitening ------------------------------------------------------------
def anisotropic_cloud(
    n: int,
    generator: torch.Generator,
    mean: Sequence[float] = (3.0, 2.0),
    scales: Sequence[float] = (1.0, 0.2),
    angle: float = 0.35,
) -> torch.Tensor:
    """n points in 2-D crowded into a narrow cone: N(0, I) stretched by `scales`,
    rotated by `angle` (radians), shifted by `mean`. Returns float64 [n, 2]."""
    if not 2 <= n <= MAX_CLOUD_POINTS:
        raise ParameterError(
            "embedding_points_invalid",
            f"n must be in [2, {MAX_CLOUD_POINTS}], got {n}",
            n=n,
            maximum=MAX_CLOUD_POINTS,
        )
    z = torch.randn(n, 2, generator=generator, dtype=torch.float64)  # [n, 2]
    c, s = math.cos(angle), math.sin(angle)
    rotation = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)  # rows: rotated axes
    stretched = z * torch.tensor(scales, dtype=torch.float64)  # [n, 2]
    return stretched @ rotation + torch.tensor(mean, dtype=torch.float64)


@dataclass(frozen=True)
class Whitening:
    """x̃ = (x − μ) Σ^(-1/2): centred, then decorrelated to unit variance."""

    points: torch.Tensor  # [N, D] the input
    mean: torch.Tensor  # [D] μ
    centred: torch.Tensor  # [N, D] x − μ
    covariance: torch.Tensor  # [D, D] Σ = (x − μ)ᵀ(x − μ) / N (population)
    eigenvalues: torch.Tensor  # [D] of Σ, ascending
    eigenvectors: torch.Tensor  # [D, D] columns
    inv_sqrt: torch.Tensor  # [D, D] Σ^(-1/2) = U diag(λ^(-1/2)) Uᵀ (symmetric)
    whitened: torch.Tensor  # [N, D]
    whitened_covariance: torch.Tensor  # [D, D] of the output: the identity, up to rounding


def whiten(x: torch.Tensor, rel_tol: float = 1e-10) -> Whitening:
    """Subtract the mean and multiply by the inverse square root of the covariance.

    A post-processing step: it is applied to vectors a model has already learned and
    changes no model parameter (the embedding table itself stays as trained).

    A covariance that is (nearly) singular (points on a line) cannot be whitened:
    ParameterError "embedding_singular_covariance".
    """
    if x.dim() != 2:
        raise ShapeError("embedding_not_2d", "x must be a matrix [N, D]", shape=tuple(x.shape))
    if x.shape[0] < 2:
        raise ParameterError("embedding_too_few_points", "need at least 2 points", minimum=2)
    x = x.to(torch.float64)
    mean = x.mean(0)  # [D]
    centred = x - mean  # [N, D]
    covariance = centred.T @ centred / x.shape[0]  # [D, D]
    eigenvalues, eigenvectors = torch.linalg.eigh(covariance)  # [D], [D, D]
    if eigenvalues[0] <= rel_tol * max(float(eigenvalues[-1]), 1e-300):
        raise ParameterError(
            "embedding_singular_covariance", "the covariance is singular: the points lie on a line"
        )
    inv_sqrt = eigenvectors @ torch.diag(eigenvalues.rsqrt()) @ eigenvectors.T  # [D, D]
    whitened = centred @ inv_sqrt  # [N, D]
    return Whitening(
        points=x,
        mean=mean,
        centred=centred,
        covariance=covariance,
        eigenvalues=eigenvalues,
        eigenvectors=eigenvectors,
        inv_sqrt=inv_sqrt,
        whitened=whitened,
        whitened_covariance=whitened.T @ whitened / x.shape[0],
    )
