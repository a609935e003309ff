"""GQA run from full-width weights: checked against PyTorch's enable_gqa and plain
multi-head attention; query heads sharing a K/V head keep different weight tables."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyformer.attention import multi_head_attention
from tinyformer.errors import ShapeError
from tinyformer.lessons.gqa import grouped_query_attention, kv_columns
from tinyformer.lessons.projection import random_mha_setup
from tinyformer.masks import causal_mask


def example(seed: int = 0, n: int = 6, width: int = 8) -> tuple[torch.Tensor, ...]:
    return random_mha_setup(n, width, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kv", [1, 2, 4])
@pytest.mark.parametrize("causal", [True, False])
def test_heads_match_torch_enable_gqa(kv: int, causal: bool) -> None:
    x, w_q, w_k, w_v, w_o = example(3)
    run = grouped_query_attention(x, w_q, w_k, w_v, w_o, 4, kv,
                                  causal_mask(6) if causal else None)
    hd = 2
    # PyTorch's own GQA on the same projections: K/V head g = columns g*hd.. of W_k, W_v.
    q = (x @ w_q).reshape(1, 6, 4, hd).transpose(1, 2)  # [1, 4, 6, 2]
    k = (x @ w_k[:, : kv * hd]).reshape(1, 6, kv, hd).transpose(1, 2)  # [1, kv, 6, 2]
    v = (x @ w_v[:, : kv * hd]).reshape(1, 6, kv, hd).transpose(1, 2)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    torch.testing.assert_close(run.trace.heads_output, expected)
    torch.testing.assert_close(run.trace.k, k)
    assert run.w_k.shape == run.w_v.shape == (8, kv * hd)


def test_all_kv_heads_is_plain_multi_head_attention() -> None:
    x, w_q, w_k, w_v, w_o = example(5)
    run = grouped_query_attention(x, w_q, w_k, w_v, w_o, 4, 4, causal_mask(6))
    plain = multi_head_attention(x, w_q, w_k, w_v, w_o, 4, mask=causal_mask(6))
    assert torch.equal(run.trace.weights, plain.weights)
    assert torch.equal(run.trace.output, plain.output)
    assert [g.query_heads for g in run.groups] == [(0,), (1,), (2,), (3,)]
    assert [g.weight_gap for g in run.groups] == [0.0] * 4


@pytest.mark.parametrize(("kv", "groups"), [(1, [(0, 1, 2, 3)]), (2, [(0, 1), (2, 3)])])
def test_shared_keys_but_different_weight_tables(kv: int, groups: list[tuple]) -> None:
    x, w_q, w_k, w_v, w_o = example(0)
    run = grouped_query_attention(x, w_q, w_k, w_v, w_o, 4, kv, causal_mask(6))
    assert [g.query_heads for g in run.groups] == groups
    weights = run.trace.weights[0]  # [4, 6, 6]
    for group in run.groups:
        first, *rest = group.query_heads
        for h in rest:  # the same keys and values ...
            assert torch.equal(run.trace.k_expanded[0, h], run.trace.k_expanded[0, first])
            assert torch.equal(run.trace.v_expanded[0, h], run.trace.v_expanded[0, first])
        gap = max(float((weights[a] - weights[b]).abs().max())
                  for a in group.query_heads for b in group.query_heads)
        assert group.weight_gap == pytest.approx(gap, abs=0)
        assert group.weight_gap > 0.01  # ... yet their tables differ: their queries differ


def test_same_queries_give_the_same_table() -> None:
    """The gap comes from the queries: two query heads with equal W_q columns and one
    shared K/V head have identical tables."""
    x, w_q, w_k, w_v, w_o = example(1)
    w_q = w_q.clone()
    w_q[:, 2:4] = w_q[:, 0:2]  # query heads 0 and 1 get the same columns
    run = grouped_query_attention(x, w_q, w_k, w_v, w_o, 4, 2)
    assert run.groups[0].weight_gap == 0.0
    assert run.groups[1].weight_gap > 0.0


def test_kv_columns_are_the_first_head_slices() -> None:
    w = torch.arange(24.0).reshape(3, 8)
    assert torch.equal(kv_columns(w, 4, 2), w[:, :4])
    assert torch.equal(kv_columns(w, 4, 4), w)
    assert torch.equal(kv_columns(w, 8, 1), w[:, :1])


@pytest.mark.parametrize(("heads", "kv", "key"), [(3, 1, "width_not_divisible"),
                                                  (4, 3, "heads_not_divisible"),
                                                  (2, 4, "heads_not_divisible"),
                                                  (0, 1, "heads_not_positive"),
                                                  (4, 0, "heads_not_positive")])
def test_bad_head_counts(heads: int, kv: int, key: str) -> None:
    x, w_q, w_k, w_v, w_o = example()
    with pytest.raises(ShapeError) as info:
        grouped_query_attention(x, w_q, w_k, w_v, w_o, heads, kv)
    assert info.value.key == key
