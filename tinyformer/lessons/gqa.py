"""Grouped-query attention run on one example, to show what sharing K/V heads means.

Query heads that share a K/V head read exactly the same keys and values, but each keeps
its own queries, so their weight tables still differ. ``grouped_query_attention`` runs
GQA from full-width projections and measures, for every group, how far apart the
weight tables of its query heads are.

Where the narrower K/V projection comes from: K/V head g uses columns g*hd .. g*hd+hd-1
of a full-width W_k and W_v (the first n_kv_heads head slices). With n_kv_heads equal to
n_heads this is exactly plain multi-head attention on the same weights; a trained GQA
model simply has a narrower W_k and W_v of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tinyformer.attention import MultiHeadTrace, head_width, multi_head_attention


@dataclass(frozen=True)
class SharedGroup:
    """Query heads that read one K/V head."""

    kv_head: int
    query_heads: tuple[int, ...]
    weight_gap: float  # largest |a_h[i, j] - a_h'[i, j]| between two of its query heads


@dataclass(frozen=True)
class GQARun:
    trace: MultiHeadTrace  # the run itself: weights [B, H, N, N], k [B, Hkv, N, hd] ...
    w_k: torch.Tensor  # [d, Hkv*hd]: the K/V heads' columns of the full W_k
    w_v: torch.Tensor  # [d, Hkv*hd]
    groups: tuple[SharedGroup, ...]  # one per K/V head


def kv_columns(w: torch.Tensor, n_heads: int, n_kv_heads: int) -> torch.Tensor:
    """The first n_kv_heads head slices of a full-width projection w [d, H*hd]."""
    head_dim = head_width(w.shape[-1], n_heads, n_kv_heads)
    return w[:, : n_kv_heads * head_dim]  # [d, Hkv*hd]


def grouped_query_attention(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    n_kv_heads: int,
    mask: torch.Tensor | None = None,
) -> GQARun:
    """GQA on x [B, N, d] with full-width w_q, w_k, w_v [d, H*hd] and w_o [H*hd, d]."""
    w_k_kv = kv_columns(w_k, n_heads, n_kv_heads)  # [d, Hkv*hd]
    w_v_kv = kv_columns(w_v, n_heads, n_kv_heads)  # [d, Hkv*hd]
    trace = multi_head_attention(x, w_q, w_k_kv, w_v_kv, w_o, n_heads, n_kv_heads, mask)
    groups = tuple(
        _group(trace.weights, g, [h for h in range(n_heads) if trace.kv_group_of_head[h] == g])
        for g in range(n_kv_heads)
    )
    return GQARun(trace, w_k_kv, w_v_kv, groups)


def _group(weights: torch.Tensor, kv_head: int, heads: list[int]) -> SharedGroup:
    tables = weights[:, heads]  # [B, G, N, N]: the group's weight tables
    gaps = (tables[:, :, None] - tables[:, None, :]).abs()  # [B, G, G, N, N] every pair
    return SharedGroup(kv_head, tuple(heads), float(gaps.amax()))
