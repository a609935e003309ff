"""scaled_dot_product_attention and multi_head_attention against PyTorch's own."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.attention import (
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    split_heads,
)
from tinyformer.errors import ShapeError
from tinyformer.masks import causal_mask, combine, padding_mask

PROPERTY = settings(max_examples=50, deadline=None)


def randn(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


# --- single-head attention vs F.scaled_dot_product_attention ---------------------------


def test_matches_torch_without_mask(gen: torch.Generator) -> None:
    q, k, v = randn(gen, 2, 5, 4), randn(gen, 2, 7, 4), randn(gen, 2, 7, 3)
    trace = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(q, k, v))


def test_matches_torch_with_bool_mask(gen: torch.Generator) -> None:
    q, k, v = randn(gen, 3, 6, 4), randn(gen, 3, 6, 4), randn(gen, 3, 6, 5)
    mask = torch.rand(3, 6, 6, generator=gen) < 0.5
    mask |= torch.eye(6, dtype=torch.bool)  # every row keeps a key: torch's NaN case avoided
    trace = scaled_dot_product_attention(q, k, v, mask=mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(trace.output, expected)


def test_matches_torch_is_causal(gen: torch.Generator) -> None:
    q, k, v = randn(gen, 2, 3, 5, 4), randn(gen, 2, 3, 5, 4), randn(gen, 2, 3, 5, 4)
    trace = scaled_dot_product_attention(q, k, v, mask=causal_mask(5))
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(trace.output, expected)


def test_matches_torch_with_custom_scale_and_many_batch_dims(gen: torch.Generator) -> None:
    q, k, v = randn(gen, 2, 3, 2, 4, 6), randn(gen, 2, 3, 2, 5, 6), randn(gen, 2, 3, 2, 5, 2)
    trace = scaled_dot_product_attention(q, k, v, scale=0.3)
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(q, k, v, scale=0.3))
    assert trace.weights.shape == (2, 3, 2, 4, 5)


def test_trace_fields_are_the_textbook_steps(gen: torch.Generator) -> None:
    q, k, v = randn(gen, 4, 8), randn(gen, 4, 8), randn(gen, 4, 3)
    mask = causal_mask(4)
    trace = scaled_dot_product_attention(q, k, v, mask=mask)
    torch.testing.assert_close(trace.scores, q @ k.T)
    torch.testing.assert_close(trace.scaled, q @ k.T / math.sqrt(8))
    assert torch.isneginf(trace.masked[~mask]).all()
    torch.testing.assert_close(trace.masked[mask], trace.scaled[mask])
    torch.testing.assert_close(trace.weights, torch.softmax(trace.masked, dim=-1))
    torch.testing.assert_close(trace.output, trace.weights @ v)


def test_unmasked_trace_fields_do_not_alias() -> None:
    q = torch.tensor([[1.0, 0.0]])
    trace = scaled_dot_product_attention(q, q, q)
    assert trace.masked.data_ptr() != trace.scaled.data_ptr()


# --- fully blocked rows ---------------------------------------------------------------


def test_fully_blocked_row_gives_zero_weights_and_output(gen: torch.Generator) -> None:
    # Left padding of 2 under a causal mask: queries 0 and 1 can read nothing.
    valid = torch.tensor([[False, False, True, True, True]])
    mask = combine(causal_mask(5), padding_mask(valid))  # [1, 5, 5]
    q, k, v = randn(gen, 1, 5, 4), randn(gen, 1, 5, 4), randn(gen, 1, 5, 3)
    trace = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not torch.isnan(trace.weights).any()
    assert not torch.isnan(trace.output).any()
    assert torch.equal(trace.weights[0, :2], torch.zeros(2, 5, dtype=torch.float64))
    assert torch.equal(trace.output[0, :2], torch.zeros(2, 3, dtype=torch.float64))
    assert torch.isneginf(trace.masked[0, :2]).all()  # the trace still shows the blocking
    # The rows that can read something agree with PyTorch.
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(trace.output[0, 2:], expected[0, 2:])


# --- errors ---------------------------------------------------------------------------


def test_non_bool_mask_is_rejected() -> None:
    x = torch.ones(2, 2)
    with pytest.raises(ShapeError) as err:
        scaled_dot_product_attention(x, x, x, mask=torch.ones(2, 2))
    assert err.value.key == "mask_not_bool"


def test_mask_that_does_not_broadcast_is_rejected() -> None:
    x = torch.ones(3, 2)
    with pytest.raises(ShapeError) as err:
        scaled_dot_product_attention(x, x, x, mask=torch.ones(2, 2, dtype=torch.bool))
    assert err.value.key == "mask_shape"


@pytest.mark.parametrize(
    ("k_shape", "v_shape", "key"),
    [((3, 5), (3, 2), "qk_width_mismatch"), ((3, 4), (2, 2), "kv_length_mismatch")],
)
def test_mismatched_qkv_shapes_are_rejected(
    k_shape: tuple[int, int], v_shape: tuple[int, int], key: str
) -> None:
    with pytest.raises(ShapeError) as err:
        scaled_dot_product_attention(torch.ones(2, 4), torch.ones(k_shape), torch.ones(v_shape))
    assert err.value.key == key
    assert isinstance(err.value, ValueError)


# --- properties -----------------------------------------------------------------------


@st.composite
def attention_case(draw: st.DrawFn) -> tuple[torch.Tensor, ...]:
    nq, nk, d = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    spread = draw(st.sampled_from([0.01, 1.0, 10.0, 100.0]))  # includes near one-hot rows
    flat = draw(st.lists(st.booleans(), min_size=nq * nk, max_size=nq * nk))
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(nq, d, generator=g, dtype=torch.float64) * spread
    k = torch.randn(nk, d, generator=g, dtype=torch.float64)
    v = torch.randn(nk, 3, generator=g, dtype=torch.float64)
    mask = torch.tensor(flat, dtype=torch.bool).reshape(nq, nk)
    return q, k, v, mask


@PROPERTY
@given(attention_case())
def test_weight_rows_sum_to_one_and_blocked_weights_are_exactly_zero(
    case: tuple[torch.Tensor, ...],
) -> None:
    q, k, v, mask = case
    trace = scaled_dot_product_attention(q, k, v, mask=mask)
    open_rows = mask.any(dim=-1)
    assert not torch.isnan(trace.weights).any() and not torch.isnan(trace.output).any()
    assert (trace.weights[~mask] == 0).all()
    assert (trace.weights >= 0).all()
    sums = trace.weights.sum(dim=-1)
    torch.testing.assert_close(sums[open_rows], torch.ones_like(sums[open_rows]))
    assert (sums[~open_rows] == 0).all()
    assert (trace.output[~open_rows] == 0).all()


# --- multi-head attention -------------------------------------------------------------


def _mha_weights(
    gen: torch.Generator, d: int, n_heads: int, n_kv_heads: int
) -> tuple[torch.Tensor, ...]:
    hd = d // n_heads
    return (
        randn(gen, d, n_heads * hd),
        randn(gen, d, n_kv_heads * hd),
        randn(gen, d, n_kv_heads * hd),
        randn(gen, n_heads * hd, d),
    )


def _reference_mha(
    x: torch.Tensor,
    w: tuple[torch.Tensor, ...],
    n_heads: int,
    n_kv_heads: int,
    is_causal: bool,
) -> torch.Tensor:
    """Independent path: reshape by hand, let PyTorch share the K/V heads (enable_gqa)."""
    w_q, w_k, w_v, w_o = w
    b, n, _ = x.shape
    hd = w_q.shape[1] // n_heads
    q = (x @ w_q).view(b, n, n_heads, hd).permute(0, 2, 1, 3)
    k = (x @ w_k).view(b, n, n_kv_heads, hd).permute(0, 2, 1, 3)
    v = (x @ w_v).view(b, n, n_kv_heads, hd).permute(0, 2, 1, 3)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=True)
    return out.permute(0, 2, 1, 3).reshape(b, n, n_heads * hd) @ w_o


@pytest.mark.parametrize(("n_heads", "n_kv_heads"), [(2, 2), (4, 2), (4, 1), (8, 4), (8, 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_matches_torch(
    gen: torch.Generator, n_heads: int, n_kv_heads: int, causal: bool
) -> None:
    x = randn(gen, 2, 5, 16)
    w = _mha_weights(gen, 16, n_heads, n_kv_heads)
    mask = causal_mask(5) if causal else None
    trace = multi_head_attention(x, *w, n_heads=n_heads, n_kv_heads=n_kv_heads, mask=mask)
    expected = _reference_mha(x, w, n_heads, n_kv_heads, causal)
    torch.testing.assert_close(trace.output, expected)
    # The internals too: the un-expanded K/V heads fed to torch's GQA give our heads.
    gqa = F.scaled_dot_product_attention(
        trace.q, trace.k, trace.v, is_causal=causal, enable_gqa=True
    )
    torch.testing.assert_close(trace.heads_output, gqa)


def test_multi_head_shapes_and_groups(gen: torch.Generator) -> None:
    x = randn(gen, 3, 6, 8)
    trace = multi_head_attention(x, *_mha_weights(gen, 8, 4, 2), n_heads=4, n_kv_heads=2)
    assert trace.head_dim == 2
    assert trace.q.shape == (3, 4, 6, 2)
    assert trace.k.shape == trace.v.shape == (3, 2, 6, 2)
    assert trace.k_expanded.shape == trace.v_expanded.shape == (3, 4, 6, 2)
    assert trace.scores.shape == trace.weights.shape == (3, 4, 6, 6)
    assert trace.heads_output.shape == (3, 4, 6, 2)
    assert trace.concat.shape == trace.output.shape == (3, 6, 8)
    assert trace.kv_group_of_head == [0, 0, 1, 1]
    for h, g in enumerate(trace.kv_group_of_head):
        assert torch.equal(trace.k_expanded[:, h], trace.k[:, g])
        assert torch.equal(trace.v_expanded[:, h], trace.v[:, g])


def test_multi_head_defaults_to_one_kv_head_per_query_head(gen: torch.Generator) -> None:
    x = randn(gen, 1, 4, 8)
    trace = multi_head_attention(x, *_mha_weights(gen, 8, 2, 2), n_heads=2)
    assert trace.n_kv_heads == 2
    assert trace.kv_group_of_head == [0, 1]
    assert torch.equal(trace.k_expanded, trace.k)


def test_multi_head_with_3d_padding_mask_applies_to_every_head(gen: torch.Generator) -> None:
    x = randn(gen, 2, 4, 8)
    w = _mha_weights(gen, 8, 2, 2)
    valid = torch.tensor([[True, True, True, True], [False, True, True, True]])
    trace = multi_head_attention(x, *w, n_heads=2, mask=padding_mask(valid))
    assert (trace.weights[1, :, :, 0] == 0).all()  # padded key 0 of batch 1, every head
    assert (trace.weights[0, :, :, 0] > 0).all()
    expected = F.scaled_dot_product_attention(
        trace.q, trace.k, trace.v, attn_mask=padding_mask(valid)[:, None]
    )
    torch.testing.assert_close(trace.heads_output, expected)


def test_split_and_merge_heads_are_inverse(gen: torch.Generator) -> None:
    x = randn(gen, 2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    torch.testing.assert_close(heads[:, 1], x[..., 4:8])  # head 1 = columns 4..7
    assert torch.equal(merge_heads(heads), x)


@pytest.mark.parametrize(
    ("d", "n_heads", "n_kv_heads", "key", "values"),
    [
        (8, 3, None, "width_not_divisible", {"width": 8, "heads": 3}),
        (8, 4, 3, "heads_not_divisible", {"heads": 4, "kv_heads": 3}),
        (8, 0, None, "heads_not_positive", {"heads": 0, "kv_heads": 0}),
    ],
)
def test_multi_head_rejects_bad_head_counts(
    d: int, n_heads: int, n_kv_heads: int | None, key: str, values: dict[str, int]
) -> None:
    x = torch.ones(1, 2, d)
    w = torch.ones(d, d)
    with pytest.raises(ShapeError) as err:
        multi_head_attention(x, w, w, w, w, n_heads=n_heads, n_kv_heads=n_kv_heads)
    assert err.value.key == key
    assert err.value.values == values
    assert str(n_heads) in str(err.value)


def test_multi_head_rejects_wrong_kv_weight_width() -> None:
    x = torch.ones(1, 2, 8)
    w = torch.ones(8, 8)
    with pytest.raises(ShapeError) as err:
        multi_head_attention(x, w, torch.ones(8, 8), torch.ones(8, 4), w, n_heads=4, n_kv_heads=2)
    assert err.value.key == "weight_shape"
    assert err.value.values["name"] == "w_k"
    assert err.value.values["expected"] == [8, 4]


def test_multi_head_rejects_2d_input() -> None:
    w = torch.ones(8, 8)
    with pytest.raises(ShapeError) as err:
        multi_head_attention(torch.ones(2, 8), w, w, w, w, n_heads=2)
    assert err.value.key == "x_not_3d"
