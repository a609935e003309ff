"""Boolean attention masks. Convention (PyTorch's): True = this query may attend this key."""

from __future__ import annotations

from functools import reduce

import torch

from tinyformer.errors import ShapeError


def causal_mask(n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Lower-triangular mask [n, n] including the diagonal: position i reads j <= i."""
    if n < 0:
        raise ShapeError("negative_length", f"sequence length must be >= 0, got {n}", n=n)
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()  # [n, n]


def padding_mask(valid: torch.Tensor) -> torch.Tensor:
    """Key-padding mask from ``valid`` (bool [B, N], True = real token).

    Returns bool [B, N, N] where entry [b, i, j] = valid[b, j]: query i may attend key j
    iff key j is a real token. Padding *queries* are not blocked here (their rows stay
    as wide as any other row); combined with a causal mask under left padding their rows
    become fully blocked, which ``scaled_dot_product_attention`` turns into zeros.
    For multi-head scores [B, H, N, N] insert the head axis: ``mask[:, None]``.
    """
    _check_valid(valid)
    n = valid.shape[1]
    # expand is a view; clone so callers may edit the result without aliasing `valid`.
    return valid[:, None, :].expand(-1, n, -1).clone()  # [B, N, N]


def _check_valid(valid: torch.Tensor) -> None:
    if valid.dtype != torch.bool:
        raise ShapeError(
            "mask_not_bool",
            f"valid must be a bool tensor, got {valid.dtype}",
            dtype=str(valid.dtype),
        )
    if valid.dim() != 2:
        raise ShapeError(
            "valid_not_2d",
            f"valid must have shape [B, N], got {list(valid.shape)}",
            shape=list(valid.shape),
        )


def position_ids(valid: torch.Tensor) -> torch.Tensor:
    """Position ids [B, N] (int64) from ``valid`` (bool [B, N], True = real token).

    With left padding column j is not position j: a sentence padded with two slots starts
    in column 2. A model that adds a position row must give each real token the position
    it has in its sentence alone, or the same text would get other position rows
    depending on its batch: a real token's id is the number of real tokens before it
    (cumsum(valid) - 1). A padded slot gets 0: any id would do, since the padding mask
    keeps it from being read and its output is discarded.
    """
    _check_valid(valid)
    counted = valid.long().cumsum(dim=-1) - 1  # [B, N]
    return counted.masked_fill(~valid, 0)  # [B, N]


def combine(*masks: torch.Tensor) -> torch.Tensor:
    """Logical AND of boolean masks with broadcasting (e.g. causal [N, N] & padding [B, N, N])."""
    if not masks:
        raise ShapeError("no_masks", "combine needs at least one mask")
    for m in masks:
        if m.dtype != torch.bool:
            raise ShapeError(
                "mask_not_bool", f"masks must be bool tensors, got {m.dtype}", dtype=str(m.dtype)
            )
    return reduce(torch.logical_and, masks)


def additive(allowed: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The same mask as the matrix M added to the scores: 0 where allowed, -inf where
    blocked (the form in softmax(QK^T / sqrt(d_k) + M))."""
    if allowed.dtype != torch.bool:
        raise ShapeError(
            "mask_not_bool", f"mask must be a bool tensor, got {allowed.dtype}",
            dtype=str(allowed.dtype),
        )
    zeros = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return zeros.masked_fill(~allowed, float("-inf"))


def attention_mask(
    n: int,
    causal: bool = True,
    valid: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The mask a page switches on and off: causal and/or padding, or nothing blocked.

    Returns bool [n, n] (or [B, n, n] with ``valid`` [B, n]); with neither mask every
    entry is True, so the caller always has a mask to show and to pass on.
    """
    parts = [causal_mask(n, device=device)] if causal else []
    if valid is not None:
        parts.append(padding_mask(valid.to(device) if device is not None else valid))
    if not parts:
        return torch.ones(n, n, dtype=torch.bool, device=device)  # [n, n]: all allowed
    return combine(*parts)
