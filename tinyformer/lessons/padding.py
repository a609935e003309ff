"""Position ids in a padded batch (stage 5.1): positions count real tokens only.

Left padding shifts a request's real tokens to the right; a model that adds a position
row to each token must still give the first real token position 0, or the same text
would get different position rows depending on how much padding its batch needed.
The ids come from the same valid flags as the padding mask (tinyformer.masks).
"""

from __future__ import annotations

import torch

from tinyformer.errors import ShapeError


def position_ids(valid: torch.Tensor) -> torch.Tensor:
    """Position ids [B, N] (int64) from ``valid`` (bool [B, N], True = real token).

    A real token's id is the number of real tokens before it, so every sequence starts
    at 0 wherever its padding is. A padded slot gets 0: any id would do, since the
    padding mask blocks it and its output is discarded.
    """
    if valid.dtype != torch.bool:
        raise ShapeError("mask_not_bool", f"valid must be a bool tensor, got {valid.dtype}",
                         dtype=str(valid.dtype))
    if valid.dim() != 2:
        raise ShapeError("valid_not_2d", f"valid must have shape [B, N], got {list(valid.shape)}",
                         shape=list(valid.shape))
    columns = torch.arange(valid.shape[1], device=valid.device)  # [N] 0 .. N-1
    pads_so_far = (~valid).long().cumsum(-1)  # [B, N] padded slots up to each column
    return (columns - pads_so_far).masked_fill(~valid, 0)  # [B, N]
