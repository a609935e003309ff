"""The attention additions the model uses: projection biases and queries reading a K/V cache."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyformer.attention import cached_causal_mask, multi_head_attention
from tinyformer.errors import ShapeError
from tinyformer.masks import causal_mask


def _weights(gen: torch.Generator, d: int = 8, kv: int = 8) -> list[torch.Tensor]:
    return [torch.randn(d, n, generator=gen) for n in (d, kv, kv, d)]


@pytest.mark.parametrize(("n_new", "n_past"), [(1, 0), (1, 4), (3, 2), (5, 0)])
def test_cached_causal_mask_is_the_last_rows_of_the_square_mask(n_new: int, n_past: int) -> None:
    expected = causal_mask(n_past + n_new)[n_past:]  # [n_new, n_past + n_new]
    assert torch.equal(cached_causal_mask(n_new, n_past), expected)


def test_cached_causal_mask_rejects_negative_lengths() -> None:
    with pytest.raises(ShapeError) as err:
        cached_causal_mask(1, -1)
    assert err.value.key == "negative_length"


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_queries_after_a_cache_equal_the_last_rows_of_full_attention(
    gen: torch.Generator, n_kv_heads: int
) -> None:
    x = torch.randn(2, 6, 8, generator=gen)  # [B, N, d]
    w_q, w_k, w_v, w_o = _weights(gen, kv=2 * n_kv_heads)
    full = multi_head_attention(x, w_q, w_k, w_v, w_o, 4, n_kv_heads, mask=causal_mask(6))
    past = multi_head_attention(x[:, :4], w_q, w_k, w_v, w_o, 4, n_kv_heads, mask=causal_mask(4))
    new = multi_head_attention(
        x[:, 4:],
        w_q,
        w_k,
        w_v,
        w_o,
        4,
        n_kv_heads,
        mask=cached_causal_mask(2, 4),
        past_k=past.k,
        past_v=past.v,
    )
    assert new.past_length == 4 and full.past_length == 0
    assert new.weights.shape == (2, 4, 2, 6) and new.k.shape == (2, n_kv_heads, 6, 2)
    torch.testing.assert_close(new.weights, full.weights[:, :, 4:])
    torch.testing.assert_close(new.output, full.output[:, 4:])
    torch.testing.assert_close(new.k, full.k)


def test_biases_match_pytorchs_linear_and_sdpa(gen: torch.Generator) -> None:
    x = torch.randn(1, 5, 8, generator=gen)
    w_q, w_k, w_v, w_o = _weights(gen)
    b_q, b_k, b_v, b_o = (torch.randn(8, generator=gen) for _ in range(4))
    trace = multi_head_attention(
        x, w_q, w_k, w_v, w_o, 2, mask=causal_mask(5), b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o
    )

    def heads(w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.linear(x, w.T, b).reshape(1, 5, 2, 4).transpose(1, 2)  # [B, H, N, hd]

    out = F.scaled_dot_product_attention(
        heads(w_q, b_q), heads(w_k, b_k), heads(w_v, b_v), is_causal=True
    )
    expected = F.linear(out.transpose(1, 2).reshape(1, 5, 8), w_o.T, b_o)
    torch.testing.assert_close(trace.output, expected)


def test_without_biases_or_cache_nothing_changes(gen: torch.Generator) -> None:
    x = torch.randn(2, 5, 8, generator=gen)
    w_q, w_k, w_v, w_o = _weights(gen)
    plain = multi_head_attention(x, w_q, w_k, w_v, w_o, 2)
    zeros = torch.zeros(8)
    biased = multi_head_attention(x, w_q, w_k, w_v, w_o, 2, b_q=zeros, b_o=zeros)
    assert torch.equal(plain.output, (plain.concat @ w_o))  # bias-free path: plain x @ W
    torch.testing.assert_close(biased.output, plain.output)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"b_q": torch.zeros(4)}, "bias_shape"),
        ({"b_o": torch.zeros(8, 1)}, "bias_shape"),
        ({"past_k": torch.zeros(2, 2, 3, 4)}, "past_kv_shape"),  # K without V
        ({"past_k": torch.zeros(2, 2, 3, 4), "past_v": torch.zeros(2, 2, 2, 4)}, "past_kv_shape"),
        ({"past_k": torch.zeros(1, 2, 3, 4), "past_v": torch.zeros(1, 2, 3, 4)}, "past_kv_shape"),
        ({"past_k": torch.zeros(2, 2, 3, 2), "past_v": torch.zeros(2, 2, 3, 2)}, "past_kv_shape"),
    ],
)
def test_bad_biases_and_caches_are_shape_errors(
    gen: torch.Generator, kwargs: dict, key: str
) -> None:
    x = torch.randn(2, 5, 8, generator=gen)
    with pytest.raises(ShapeError) as err:
        multi_head_attention(x, *_weights(gen), 2, **kwargs)
    assert err.value.key == key
