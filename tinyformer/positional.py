"""Position information: sinusoidal tables and rotary embeddings (RoPE).

RoPE here rotates adjacent pairs (components 2i and 2i+1) of the last dimension,
as in the RoFormer paper; pair i turns by position * base^(-2i/d). Hugging Face's
Llama code pairs component i with i + d/2 instead ("rotate half", ``rope_rotate_half``):
fed the components reordered by ``half_order(d)`` it returns our rotated vector in
that order, so every score q·k is the same (``compare_pairings``).

Teaching traces: ``sinusoidal_row`` (one row of the table, step by step),
``rotate_pair`` (one pair of q and k turned by two angles), ``rope_scores`` (a score
table with and without RoPE), ``random_rope_example`` (the same on seeded random q, k).

Shape letters: N positions, d width (even for RoPE), d/2 pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch

from tinyformer.errors import ParameterError, ShapeError

MAX_ANGLE = 1e6  # radians: far beyond any position a page offers, still exact to ~1e-10
MAX_EXAMPLE = 64  # bounds the random example's positions and width
MAX_SEED = 2**31 - 1


def sinusoidal(
    n_positions: int,
    d: int,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Original Transformer table [n_positions, d].

    PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d)).
    An odd d keeps the last sine column without its cosine partner.
    """
    if n_positions < 0 or d < 1:
        raise ShapeError(
            "bad_table_size",
            f"need n_positions >= 0 and d >= 1, got {n_positions} and {d}",
            n_positions=n_positions,
            d=d,
        )
    # Angles in float64 so large positions keep their precision before the cast.
    pos = torch.arange(n_positions, device=device, dtype=torch.float64)[:, None]  # [n, 1]
    two_i = torch.arange(0, d, 2, device=device, dtype=torch.float64)  # [ceil(d/2)]
    angles = pos / base ** (two_i / d)  # [n, ceil(d/2)]
    pe = torch.zeros(n_positions, d, device=device, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d // 2])
    return pe.to(dtype)


def rotate_2d(vec: torch.Tensor, theta: float | torch.Tensor) -> torch.Tensor:
    """Rotate [..., 2] vectors by theta radians: [a, b] -> [a cos - b sin, a sin + b cos]."""
    if vec.shape[-1] != 2:
        raise ShapeError(
            "not_2d_vector",
            f"rotate_2d needs [..., 2], got {list(vec.shape)}",
            shape=list(vec.shape),
        )
    theta = torch.as_tensor(theta, dtype=vec.dtype, device=vec.device)
    a, b = vec[..., 0], vec[..., 1]
    cos, sin = torch.cos(theta), torch.sin(theta)
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)


def rope_angles(
    positions: torch.Tensor | Sequence[float] | int,
    d: int,
    base: float = 10000.0,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Angles [..., d/2]: angle[p, i] = positions[p] * base^(-2i/d), pair i = (2i, 2i+1).

    ``positions`` may be a tensor (its device is used), a sequence, or an int n
    meaning positions 0..n-1.
    """
    pos = _as_positions(positions, device)
    dtype = dtype or (pos.dtype if pos.is_floating_point() else torch.float32)
    # Compute in float64: position * frequency loses digits in float32 at long lengths.
    freqs = rope_frequencies(d, base, device=pos.device)  # [d/2]
    return (pos.to(torch.float64)[..., None] * freqs).to(dtype)  # [..., d/2]


def rope_frequencies(
    d: int, base: float = 10000.0, device: torch.device | str | None = None
) -> torch.Tensor:
    """theta_i = base^(-2i/d) for the d/2 pairs, float64 [d/2]: pair i turns by
    position * theta_i, so pair 0 turns one radian per position and the last pair
    turns slowest."""
    _check_rope_width(d)
    return base ** (-torch.arange(0, d, 2, device=device, dtype=torch.float64) / d)


def within_turn(angles: torch.Tensor) -> torch.Tensor:
    """Radians -> degrees with whole turns removed, in [0, 360): where a pair points."""
    return torch.rad2deg(angles) % 360.0


def _check_rope_width(d: int) -> None:
    if d < 2 or d % 2 != 0:
        raise ShapeError(
            "rope_odd_width", f"RoPE rotates pairs, so d must be even and >= 2, got {d}", d=d
        )


def rope(
    x: torch.Tensor,
    positions: torch.Tensor | Sequence[float] | int | None = None,
    base: float = 10000.0,
) -> torch.Tensor:
    """Rotate adjacent pairs (2i, 2i+1) of x's last dim by positions * base^(-2i/d).

    x is [..., N, d]; ``positions`` broadcasts against x.shape[:-1] (typically [N]);
    None means 0..N-1. Lengths are kept: each pair is a plane rotation.
    """
    if positions is None:
        positions = x.shape[-2]
    angles = rope_angles(positions, x.shape[-1], base, dtype=x.dtype, device=x.device)
    cos, sin = torch.cos(angles), torch.sin(angles)  # [..., N, d/2]
    a, b = x[..., 0::2], x[..., 1::2]  # [..., N, d/2] even / odd components
    rotated = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)  # [..., N, d/2, 2]
    return rotated.flatten(-2)  # interleave back to [..., N, d]


def _as_positions(
    positions: torch.Tensor | Sequence[float] | int, device: torch.device | str | None
) -> torch.Tensor:
    if isinstance(positions, int):
        return torch.arange(positions, device=device)
    if isinstance(positions, torch.Tensor):
        return positions.to(device) if device is not None else positions
    return torch.as_tensor(positions, device=device)


# --- Teaching traces ------------------------------------------------------------------


class SinusoidalRow(NamedTuple):
    """One row PE[pos] of the sinusoidal table, with the numbers that make it."""

    pos: int
    divisors: torch.Tensor  # [d] base^(2i/d), shared by columns 2i and 2i+1
    angles: torch.Tensor  # [d] pos / divisor
    values: torch.Tensor  # [d] sin(angle) in even columns, cos(angle) in odd ones


def sinusoidal_row(pos: int, d: int, base: float = 10000.0) -> SinusoidalRow:
    """PE[pos] step by step, float64: the same numbers as ``sinusoidal(pos + 1, d)[pos]``."""
    if pos < 0 or d < 1:
        raise ShapeError(
            "bad_table_size", f"need pos >= 0 and d >= 1, got {pos} and {d}",
            n_positions=pos, d=d,
        )
    two_i = torch.arange(d, dtype=torch.float64) // 2 * 2  # [d] 0, 0, 2, 2, 4, ...
    divisors = base ** (two_i / d)  # [d]
    angles = pos / divisors  # [d]
    even = torch.arange(d) % 2 == 0  # [d]
    values = torch.where(even, torch.sin(angles), torch.cos(angles))  # [d]
    return SinusoidalRow(pos, divisors, angles, values)


class PairRotation(NamedTuple):
    """One pair of q and k, turned by two angles (radians), and their dot products."""

    q: torch.Tensor  # [2]
    k: torch.Tensor  # [2]
    angle_q: float
    angle_k: float
    q_rot: torch.Tensor  # [2] R(angle_q) q
    k_rot: torch.Tensor  # [2] R(angle_k) k
    dot: float  # (R_q q)·(R_k k)
    k_relative: torch.Tensor  # [2] R(angle_k - angle_q) k
    relative: float  # q·(R(angle_k - angle_q) k): equals `dot`
    plain: float  # q·k, nothing turned
    q_length: float  # |q| = |R q|: a rotation keeps lengths
    k_length: float
    q_rot_length: float
    k_rot_length: float


def rotate_pair(
    q: torch.Tensor, k: torch.Tensor, angle_q: float, angle_k: float
) -> PairRotation:
    """Turn q by angle_q and k by angle_k (radians, |angle| <= MAX_ANGLE).

    (R_a q)·(R_b k) = q·(R_{b-a} k): only the difference of the angles matters.
    """
    for name, angle in (("angle_q", angle_q), ("angle_k", angle_k)):
        if not math.isfinite(angle) or abs(angle) > MAX_ANGLE:
            raise ParameterError(
                "rope_angle", f"{name} must be a finite number of radians within "
                f"±{MAX_ANGLE:g}, got {angle!r}", angle=angle, limit=MAX_ANGLE,
            )
    q, k = q.to(torch.float64), k.to(torch.float64)
    q_rot, k_rot = rotate_2d(q, angle_q), rotate_2d(k, angle_k)  # [2] each
    k_relative = rotate_2d(k, angle_k - angle_q)  # [2]
    lengths = (float(v.norm()) for v in (q, k, q_rot, k_rot))
    return PairRotation(q, k, angle_q, angle_k, q_rot, k_rot, float(q_rot @ k_rot),
                        k_relative, float(q @ k_relative), float(q @ k), *lengths)


class ShiftedPair(NamedTuple):
    """The same pair before and after turning both vectors by one more angle."""

    before: PairRotation
    after: PairRotation  # both angles + shift
    change: float  # after.dot - before.dot
    unchanged: bool  # |change| is rounding only (below 1e-9 of |q| |k|)


def shift_pair(q: torch.Tensor, k: torch.Tensor, angle_q: float, angle_k: float,
               shift: float) -> ShiftedPair:
    """Moving both words by the same number of positions turns both by the same angle:
    the dot product stays, because the difference of the angles stays."""
    before = rotate_pair(q, k, angle_q, angle_k)
    after = rotate_pair(q, k, angle_q + shift, angle_k + shift)
    change = after.dot - before.dot
    return ShiftedPair(before, after, change,
                       abs(change) <= 1e-9 * (1.0 + before.q_length * before.k_length))


class RopeScores(NamedTuple):
    """A score table q_i·k_j without and with RoPE."""

    q: torch.Tensor  # [N, d]
    k: torch.Tensor  # [N, d]
    positions: torch.Tensor  # [N]
    angles: torch.Tensor  # [N, d/2] positions[p] * theta_i
    q_rot: torch.Tensor  # [N, d]
    k_rot: torch.Tensor  # [N, d]
    plain: torch.Tensor  # [N, N] q k^T
    rotated: torch.Tensor  # [N, N] (R q)(R k)^T: depends on q_i, k_j and j - i only


def rope_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    positions: torch.Tensor | Sequence[float] | int | None = None,
    base: float = 10000.0,
) -> RopeScores:
    """q, k [N, d] at positions (default 0..N-1): the raw scores before and after RoPE."""
    if q.dim() != 2 or q.shape != k.shape:
        raise ShapeError(
            "rope_qk_shape", f"q and k need the same shape [N, d], got {list(q.shape)} "
            f"and {list(k.shape)}", q_shape=list(q.shape), k_shape=list(k.shape),
        )
    positions = _as_positions(q.shape[0] if positions is None else positions, q.device)
    angles = rope_angles(positions, q.shape[-1], base, dtype=q.dtype)  # [N, d/2]
    q_rot, k_rot = rope(q, positions, base), rope(k, positions, base)  # [N, d] each
    return RopeScores(q, k, positions, angles, q_rot, k_rot, q @ k.T, q_rot @ k_rot.T)


def random_rope_example(
    n: int, d: int, seed: int, *, same_rows: bool = False, decimals: int = 2
) -> RopeScores:
    """Seeded random q, k [n, d] ~ N(0, 1), rounded to `decimals`: teaching data only.

    same_rows: every position gets the first q and k rows, so the plain scores are all
    equal and the RoPE scores depend on the position difference j - i alone.
    """
    _check_rope_width(d)
    _check_whole("n", n, 1, MAX_EXAMPLE)
    _check_whole("d", d, 2, MAX_EXAMPLE)
    _check_whole("seed", seed, 0, MAX_SEED)
    generator = torch.Generator().manual_seed(seed)
    q = torch.round(torch.randn(n, d, generator=generator, dtype=torch.float64), decimals=decimals)
    k = torch.round(torch.randn(n, d, generator=generator, dtype=torch.float64), decimals=decimals)
    if same_rows:
        q, k = q[:1].expand(n, d).clone(), k[:1].expand(n, d).clone()  # [n, d] each
    return rope_scores(q, k)


def _check_whole(name: str, value: int, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ParameterError(
            "rope_example_size", f"{name} must be a whole number from {lo} to {hi}, "
            f"got {value!r}", name=name, value=value, lo=lo, hi=hi,
        )


# --- The other pairing: Hugging Face's Llama "rotate half" ------------------------------


def rope_rotate_half(
    x: torch.Tensor,
    positions: torch.Tensor | Sequence[float] | int | None = None,
    base: float = 10000.0,
) -> torch.Tensor:
    """RoPE as Hugging Face's Llama code writes it: component i pairs with i + d/2.

    x * cos + rotate_half(x) * sin, where rotate_half([x1, x2]) = [-x2, x1] for the two
    halves, and both halves use the frequencies theta_i = base^(-2i/d).
    """
    if positions is None:
        positions = x.shape[-2]
    angles = rope_angles(positions, x.shape[-1], base, dtype=x.dtype, device=x.device)
    angles = torch.cat((angles, angles), dim=-1)  # [..., N, d]: pair i is (i, i + d/2)
    half = x.shape[-1] // 2
    rotated_half = torch.cat((-x[..., half:], x[..., :half]), dim=-1)  # [..., N, d]
    return x * torch.cos(angles) + rotated_half * torch.sin(angles)


def half_order(d: int) -> torch.Tensor:
    """[0, 2, 4, ..., 1, 3, 5, ...]: x[..., half_order(d)] moves our pair (2i, 2i+1)
    to Llama's pair (i, i + d/2), so rope_rotate_half(x[..., o]) == rope(x)[..., o]."""
    _check_rope_width(d)
    return torch.cat((torch.arange(0, d, 2), torch.arange(1, d, 2)))


class PairingComparison(NamedTuple):
    """Adjacent pairs (this app) against rotate-half pairs (Llama) on the same q, k."""

    order: torch.Tensor  # [d] half_order(d)
    adjacent: torch.Tensor  # [N, N] scores with adjacent pairs
    half_same: torch.Tensor  # [N, N] rotate-half applied to q, k as given
    half_reordered: torch.Tensor  # [N, N] rotate-half applied to q, k reordered
    vectors_match: bool  # rope_rotate_half(q[..., order]) equals rope(q)[..., order]
    gap_same: float  # largest |adjacent - half_same|
    gap_reordered: float  # largest |adjacent - half_reordered|: rounding only


def compare_pairings(q: torch.Tensor, k: torch.Tensor, base: float = 10000.0
                     ) -> PairingComparison:
    """q, k [N, d] at positions 0..N-1, both pairings, and how far their scores differ."""
    adjacent = rope_scores(q, k, base=base)
    order = half_order(q.shape[-1])
    q_half, k_half = rope_rotate_half(q, base=base), rope_rotate_half(k, base=base)
    q_re, k_re = rope_rotate_half(q[:, order], base=base), rope_rotate_half(k[:, order], base=base)
    half_same, half_reordered = q_half @ k_half.T, q_re @ k_re.T  # [N, N] each
    tol = 1e-9 * max(1.0, float(adjacent.q_rot.abs().max()))
    match = bool(torch.allclose(q_re, adjacent.q_rot[:, order], rtol=0.0, atol=tol)
                 and torch.allclose(k_re, adjacent.k_rot[:, order], rtol=0.0, atol=tol))
    return PairingComparison(
        order, adjacent.rotated, half_same, half_reordered, match,
        float((adjacent.rotated - half_same).abs().max()),
        float((adjacent.rotated - half_reordered).abs().max()),
    )
