"""Position information: sinusoidal tables and rotary embeddings (RoPE).

RoPE here rotates adjacent pairs (components 2i and 2i+1) of the last dimension,
as in the RoFormer paper; pair i turns by position * base^(-2i/d).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from tinyformer.errors import ShapeError


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
    if d < 2 or d % 2 != 0:
        raise ShapeError(
            "rope_odd_width", f"RoPE rotates pairs, so d must be even and >= 2, got {d}", d=d
        )
    pos = _as_positions(positions, device)
    dtype = dtype or (pos.dtype if pos.is_floating_point() else torch.float32)
    # Compute in float64: position * frequency loses digits in float32 at long lengths.
    freqs = base ** (-torch.arange(0, d, 2, device=pos.device, dtype=torch.float64) / d)
    return (pos.to(torch.float64)[..., None] * freqs).to(dtype)  # [..., d/2]


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
