"""Scaled dot-product attention and multi-head attention (with GQA / MQA), traced.

Shape letters: B batch, H query heads, Hkv key/value heads, N sequence length,
Nq / Nk query / key lengths, D or hd a head's width, d the model width.
Weights are [d_in, d_out] and applied as ``x @ W`` (the textbook form).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tinyformer.errors import ShapeError


@dataclass(frozen=True)
class AttentionTrace:
    """Every step of softmax(QK^T * scale + mask) V."""

    scores: torch.Tensor  # [..., Nq, Nk] raw q·k
    scaled: torch.Tensor  # [..., Nq, Nk] scores * scale
    masked: torch.Tensor  # [..., Nq, Nk] scaled, blocked entries = -inf
    weights: torch.Tensor  # [..., Nq, Nk] softmax rows (fully blocked rows: all 0)
    output: torch.Tensor  # [..., Nq, Dv] weights @ v


@dataclass(frozen=True)
class MultiHeadTrace:
    """Every step of multi-head attention; GQA/MQA when n_kv_heads < n_heads."""

    q: torch.Tensor  # [B, H, N, hd]
    k: torch.Tensor  # [B, Hkv, N, hd]
    v: torch.Tensor  # [B, Hkv, N, hd]
    k_expanded: torch.Tensor  # [B, H, N, hd] K head shared by each query head
    v_expanded: torch.Tensor  # [B, H, N, hd]
    scores: torch.Tensor  # [B, H, N, N]
    scaled: torch.Tensor  # [B, H, N, N]
    masked: torch.Tensor  # [B, H, N, N]
    weights: torch.Tensor  # [B, H, N, N]
    heads_output: torch.Tensor  # [B, H, N, hd]
    concat: torch.Tensor  # [B, N, H*hd]
    output: torch.Tensor  # [B, N, d_out] concat @ w_o
    head_dim: int
    n_heads: int
    n_kv_heads: int
    kv_group_of_head: list[int]  # query head h reads K/V head kv_group_of_head[h]
    # With a K/V cache (past_k/past_v): k, v, k_expanded, v_expanded hold P cached rows
    # followed by the N new ones, and scores..weights are [B, H, N, P + N].
    past_length: int = 0  # P: how many leading rows of k and v came from the cache


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> AttentionTrace:
    """softmax(q k^T * scale, masked) v, returning every intermediate.

    q [..., Nq, D], k [..., Nk, D], v [..., Nk, Dv]; any leading batch dims that
    broadcast. ``mask`` is bool, True = may attend, broadcastable to [..., Nq, Nk].
    ``scale`` defaults to 1/sqrt(D), as in PyTorch.

    Fully blocked rows (a query with no key it may attend, e.g. a left-padding
    position under a causal + padding mask): softmax over all -inf is 0/0 = NaN,
    which would silently poison everything downstream. We define such a row's
    weights as all 0 and its output as the zero vector. ``masked`` still shows -inf
    there, so the trace is honest about what happened.
    """
    _check_qkv(q, k, v)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1)  # [..., Nq, Nk]
    scaled = scores * scale
    if mask is None:
        masked = scaled.clone()  # nothing blocked; clone so trace fields never alias
        weights = torch.softmax(masked, dim=-1)
    else:
        masked, weights = _masked_softmax(scaled, mask)
    output = weights @ v  # [..., Nq, Dv]
    return AttentionTrace(scores, scaled, masked, weights, output)


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Clear messages for the mismatches a learner can produce by editing matrices."""
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise ShapeError("qkv_not_2d", "q, k and v need at least 2 dims [..., N, D]")
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(
            "qk_width_mismatch",
            f"q and k must have the same width, got {q.shape[-1]} and {k.shape[-1]}",
            q_width=q.shape[-1],
            k_width=k.shape[-1],
        )
    if k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            "kv_length_mismatch",
            f"k and v must have the same number of positions, got {k.shape[-2]} and {v.shape[-2]}",
            k_length=k.shape[-2],
            v_length=v.shape[-2],
        )


def _masked_softmax(scaled: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply a bool mask (True = keep) and softmax; fully blocked rows give zeros."""
    if mask.dtype != torch.bool:
        raise ShapeError(
            "mask_not_bool", f"mask must be a bool tensor, got {mask.dtype}", dtype=str(mask.dtype)
        )
    try:
        shape = torch.broadcast_shapes(scaled.shape, mask.shape)
    except RuntimeError as err:
        raise ShapeError(
            "mask_shape",
            f"mask of shape {list(mask.shape)} does not broadcast to scores {list(scaled.shape)}",
            mask_shape=list(mask.shape),
            scores_shape=list(scaled.shape),
        ) from err
    allowed = mask.to(scaled.device).expand(shape)  # [..., Nq, Nk]
    masked = scaled.expand(shape).masked_fill(~allowed, float("-inf"))
    any_allowed = allowed.any(dim=-1, keepdim=True)  # [..., Nq, 1]
    # Softmax of an all -inf row is NaN: feed it zeros instead, then zero the row.
    safe = masked.masked_fill(~any_allowed, 0.0)
    weights = torch.softmax(safe, dim=-1).masked_fill(~any_allowed, 0.0)
    return masked, weights


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, N, H*hd] -> [B, H, N, hd]: heads split the width, not the sentence."""
    b, n, width = x.shape
    if width % n_heads != 0:
        raise _width_error(width, n_heads)
    return x.reshape(b, n, n_heads, width // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, N, hd] -> [B, N, H*hd]: concatenate the heads back side by side."""
    b, h, n, hd = x.shape
    return x.transpose(1, 2).reshape(b, n, h * hd)


def _width_error(width: int, n_heads: int) -> ShapeError:
    return ShapeError(
        "width_not_divisible",
        f"width {width} is not divisible by {n_heads} heads: each head needs an equal "
        f"integer slice of the width",
        width=width,
        heads=n_heads,
    )


def multi_head_attention(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    n_kv_heads: int | None = None,
    mask: torch.Tensor | None = None,
    *,
    b_q: torch.Tensor | None = None,
    b_k: torch.Tensor | None = None,
    b_v: torch.Tensor | None = None,
    b_o: torch.Tensor | None = None,
    past_k: torch.Tensor | None = None,
    past_v: torch.Tensor | None = None,
) -> MultiHeadTrace:
    """Multi-head self-attention on x [B, N, d] with weights applied as x @ W.

    w_q [d, H*hd]; w_k, w_v [d, Hkv*hd]; w_o [H*hd, d_out]. ``n_kv_heads`` defaults
    to ``n_heads``; fewer is GQA (query head h reads K/V head h // (H // Hkv)), 1 is MQA.
    ``mask`` (bool, True = may attend): [N, N] or [B, N, N] applies to every head
    (a 3-D mask gets a head axis inserted), a 4-D mask [B or 1, H or 1, N, N] is used
    as given. Fully blocked rows give zero weights (see scaled_dot_product_attention).

    Optional biases (None = no bias): b_q [H*hd], b_k and b_v [Hkv*hd], b_o [d_out].

    K/V cache: ``past_k`` and ``past_v`` [B, Hkv, P, hd] are the keys and values of P
    earlier positions (e.g. a previous call's ``k`` and ``v``). The N rows of x are then
    the newest positions: their queries read the P cached keys followed by their own N,
    so the weights are [B, H, N, P + N] and a causal mask must be [N, P + N]
    (``cached_causal_mask(N, P)``). The trace's k and v hold all P + N rows: pass them
    back as the next call's cache.
    """
    n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
    head_dim = _check_mha_shapes(x, w_q, w_k, w_v, w_o, n_heads, n_kv_heads)
    _check_biases(x, w_o, n_heads, n_kv_heads, head_dim, b_q, b_k, b_v, b_o)
    _check_past(x, n_kv_heads, head_dim, past_k, past_v)
    group = n_heads // n_kv_heads
    q = split_heads(_project(x, w_q, b_q), n_heads)  # [B, H, N, hd]
    k = split_heads(_project(x, w_k, b_k), n_kv_heads)  # [B, Hkv, N, hd]
    v = split_heads(_project(x, w_v, b_v), n_kv_heads)  # [B, Hkv, N, hd]
    past_length = 0
    if past_k is not None and past_v is not None:
        past_length = past_k.shape[-2]
        k = torch.cat([past_k, k], dim=-2)  # [B, Hkv, P + N, hd]: the cache grows by N rows
        v = torch.cat([past_v, v], dim=-2)  # [B, Hkv, P + N, hd]
    # Consecutive query heads share one K/V head, the same layout as PyTorch's enable_gqa.
    k_expanded = k.repeat_interleave(group, dim=1)  # [B, H, N, hd]
    v_expanded = v.repeat_interleave(group, dim=1)  # [B, H, N, hd]
    if mask is not None and mask.dim() == 3:
        mask = mask[:, None]  # [B, 1, N, N]: same mask for every head
    att = scaled_dot_product_attention(q, k_expanded, v_expanded, mask=mask)
    concat = merge_heads(att.output)  # [B, N, H*hd]
    return MultiHeadTrace(
        q=q,
        k=k,
        v=v,
        k_expanded=k_expanded,
        v_expanded=v_expanded,
        scores=att.scores,
        scaled=att.scaled,
        masked=att.masked,
        weights=att.weights,
        heads_output=att.output,
        concat=concat,
        output=_project(concat, w_o, b_o),  # [B, N, d_out]
        head_dim=head_dim,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        kv_group_of_head=[h // group for h in range(n_heads)],
        past_length=past_length,
    )


def _project(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """x @ W (+ b): no bias means no addition at all, so bias-free results stay bit-exact."""
    return x @ w if b is None else x @ w + b


def cached_causal_mask(
    n_new: int, n_past: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Causal mask [n_new, n_past + n_new] for n_new queries after n_past cached keys.

    New query i sits at position n_past + i, so it may read keys j <= n_past + i: every
    cached key and the new ones up to itself. n_past = 0 is the square causal mask.
    """
    if n_new < 0 or n_past < 0:
        bad = min(n_new, n_past)
        raise ShapeError("negative_length", f"lengths must be >= 0, got {bad}", n=bad)
    allowed = torch.ones(n_new, n_past + n_new, dtype=torch.bool, device=device)
    return allowed.tril(diagonal=n_past)  # [n_new, n_past + n_new]


def head_width(width: int, n_heads: int, n_kv_heads: int) -> int:
    """The width of one head, after checking the head counts: at least one of each, the
    width split evenly by the query heads, the query heads shared evenly by the K/V heads."""
    if n_heads < 1 or n_kv_heads < 1:
        raise ShapeError(
            "heads_not_positive",
            f"head counts must be >= 1, got {n_heads} query and {n_kv_heads} K/V heads",
            heads=n_heads,
            kv_heads=n_kv_heads,
        )
    if width % n_heads != 0:
        raise _width_error(width, n_heads)
    kv_group_size(n_heads, n_kv_heads)
    return width // n_heads


def kv_group_size(n_heads: int, n_kv_heads: int) -> int:
    """How many query heads share one K/V head (GQA); raises when they cannot share
    evenly. 1 is plain multi-head attention; n_heads is MQA."""
    if n_heads % n_kv_heads != 0:
        raise ShapeError(
            "heads_not_divisible",
            f"{n_heads} query heads cannot be shared evenly by {n_kv_heads} K/V heads: "
            f"n_heads must be a multiple of n_kv_heads",
            heads=n_heads,
            kv_heads=n_kv_heads,
        )
    return n_heads // n_kv_heads


def _check_mha_shapes(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    n_kv_heads: int,
) -> int:
    """Validate head counts and weight shapes; return the head width."""
    if x.dim() != 3:
        raise ShapeError(
            "x_not_3d", f"x must have shape [B, N, d], got {list(x.shape)}", shape=list(x.shape)
        )
    head_dim = head_width(w_q.shape[-1], n_heads, n_kv_heads)
    d = x.shape[-1]
    expected = {
        "w_q": (d, n_heads * head_dim),
        "w_k": (d, n_kv_heads * head_dim),
        "w_v": (d, n_kv_heads * head_dim),
        "w_o": (n_heads * head_dim, w_o.shape[-1]),
    }
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        if tuple(w.shape) != expected[name]:
            raise ShapeError(
                "weight_shape",
                f"{name} must have shape {list(expected[name])}, got {list(w.shape)}",
                name=name,
                expected=list(expected[name]),
                got=list(w.shape),
            )
    return head_dim


def _check_biases(
    x: torch.Tensor,
    w_o: torch.Tensor,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    *biases: torch.Tensor | None,
) -> None:
    """Each bias, when given, is one number per output column of its projection."""
    widths = (n_heads * head_dim, n_kv_heads * head_dim, n_kv_heads * head_dim, w_o.shape[-1])
    for name, bias, width in zip(("b_q", "b_k", "b_v", "b_o"), biases, widths, strict=True):
        if bias is not None and tuple(bias.shape) != (width,):
            raise ShapeError(
                "bias_shape",
                f"{name} must have shape [{width}], got {list(bias.shape)}",
                name=name,
                expected=[width],
                got=list(bias.shape),
            )


def _check_past(
    x: torch.Tensor,
    n_kv_heads: int,
    head_dim: int,
    past_k: torch.Tensor | None,
    past_v: torch.Tensor | None,
) -> None:
    """A cache is K and V together, [B, Hkv, P, hd] each, for the same B and P."""
    if past_k is None and past_v is None:
        return
    length = past_k.shape[-2] if past_k is not None and past_k.dim() == 4 else 0
    expected = (x.shape[0], n_kv_heads, length, head_dim)
    for name, past in (("past_k", past_k), ("past_v", past_v)):
        if past is None or tuple(past.shape) != expected:
            got = None if past is None else list(past.shape)
            raise ShapeError(
                "past_kv_shape",
                f"{name} must have shape [B, Hkv, P, hd] = [{x.shape[0]}, {n_kv_heads}, P, "
                f"{head_dim}] with the same P for K and V, got {got}",
                name=name,
                batch=x.shape[0],
                kv_heads=n_kv_heads,
                head_dim=head_dim,
                got=got,
            )
