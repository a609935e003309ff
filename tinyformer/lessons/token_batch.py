"""Position IDs for a padded batch (the token page's batch, stage 1.1).

In a left-padded batch column j is not position j: a sentence padded with two [PAD]s
starts in column 2. A model that adds position rows gives each real token the position
it would have in its sentence alone, counted from the valid flags: the number of valid
tokens up to and including it, minus 1. With right padding that is simply the column.
"""

from __future__ import annotations

import torch

from tinyformer.errors import ShapeError


def position_ids(valid: torch.Tensor) -> torch.Tensor:
    """valid [B, N] bool (True = a real token) -> position IDs [B, N] long.

    A real token's ID is cumsum(valid) - 1 along its row; a padding position gets 0
    (any row would do: the padding mask keeps it from being read).
    """
    if valid.dim() != 2 or valid.dtype != torch.bool:
        raise ShapeError(
            "batch_valid_shape",
            f"valid needs shape [B, N] and dtype bool, got {list(valid.shape)} {valid.dtype}",
            shape=list(valid.shape),
        )
    counted = valid.long().cumsum(dim=-1) - 1  # [B, N]
    return counted.masked_fill(~valid, 0)  # [B, N]
