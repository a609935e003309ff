"""TinyDecoder.decode: incremental decoding with a K/V cache equals recomputing everything."""

from __future__ import annotations

import pytest
import torch

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.model import KVCache, LayerCache, TinyDecoder

IDS = [3, 8, 12, 5, 17, 42, 23, 6]


def token_by_token(model: TinyDecoder, ids: torch.Tensor) -> tuple[torch.Tensor, KVCache]:
    """Feed one position at a time, each step reading the cache of all earlier ones."""
    step = model.decode(ids[:, :1])
    logits = [step.logits]
    for i in range(1, ids.shape[1]):
        step = model.decode(ids[:, i : i + 1], step.cache)
        logits.append(step.logits)
    return torch.cat(logits, dim=1), step.cache


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("attn_bias", [False, True])
def test_cached_equals_uncached(layers: int, attn_bias: bool) -> None:
    model = TinyDecoder.seeded(7, layers=layers, attn_bias=attn_bias)
    ids = torch.tensor([IDS, list(reversed(IDS))])
    full = model.trace(ids)
    logits, cache = token_by_token(model, ids)
    torch.testing.assert_close(logits, full.logits)
    assert cache.length == 8 and len(cache.layers) == layers
    for layer, block in zip(cache.layers, full.blocks, strict=True):
        torch.testing.assert_close(layer.k, block.attention.k)
        torch.testing.assert_close(layer.v, block.attention.v)


def test_chunks_of_any_size_give_the_same_logits() -> None:
    model = TinyDecoder.seeded(7, layers=2)
    full = model.trace(IDS).logits  # [1, 8, 50]
    first = model.decode(IDS[:3])
    second = model.decode(IDS[3:], first.cache)
    torch.testing.assert_close(torch.cat([first.logits, second.logits], dim=1), full)
    cached, full_top = second.trace.top(3), model.trace(IDS).top(3)
    assert [i for i, _ in cached] == [i for i, _ in full_top]
    assert [p for _, p in cached] == pytest.approx([p for _, p in full_top])


def test_decode_without_cache_is_the_normal_pass() -> None:
    model = TinyDecoder.seeded(7)
    step = model.decode(IDS)
    assert torch.equal(step.logits, model.trace(IDS).logits)
    assert step.cache.length == 8 and step.trace.blocks[0].attention.past_length == 0


def test_a_new_token_reads_the_cache_grown_by_one_row() -> None:
    model = TinyDecoder.seeded(7)
    before = model.decode(IDS[:5])
    step = model.decode(IDS[5:6], before.cache)
    attention = step.trace.blocks[0].attention
    assert attention.past_length == 5
    assert attention.q.shape == (1, 2, 1, 4)  # the new token's query, per head
    assert attention.k.shape == attention.v.shape == (1, 2, 6, 4)  # cached 5 + the new row
    assert torch.equal(attention.k[:, :, :5], before.cache.layers[0].k)  # cache reused as is
    assert attention.weights.shape == (1, 2, 1, 6)
    full = model.trace(IDS[:6]).blocks[0].attention
    torch.testing.assert_close(attention.weights[:, :, 0], full.weights[:, :, 5])
    torch.testing.assert_close(attention.k[:, :, 5], full.k[:, :, 5])
    assert torch.equal(step.trace.position_ids, torch.tensor([5]))
    assert torch.equal(step.trace.position_rows, model.position.weight[5:6].detach())


def test_cache_counts_its_numbers() -> None:
    cache = TinyDecoder.seeded(7, layers=2).decode([[1, 2, 3], [4, 5, 6]]).cache
    assert cache.numel == 2 * 2 * 2 * 2 * 3 * 4  # layers x (K, V) x B x H x P x hd


def test_the_cache_cannot_grow_past_the_position_table() -> None:
    model = TinyDecoder.seeded(7)
    step = model.decode(list(range(15)))
    assert model.decode([1], step.cache).cache.length == 16
    with pytest.raises(ShapeError) as err:
        model.decode([1, 2], step.cache)
    assert err.value.key == "sequence_too_long" and err.value.values["length"] == 17


def test_decoding_needs_the_causal_mask() -> None:
    with pytest.raises(ParameterError) as err:
        TinyDecoder.seeded(7, causal=False).decode(IDS)
    assert err.value.key == "cache_needs_causal"


def test_a_cache_that_does_not_fit_is_rejected() -> None:
    one_block = TinyDecoder.seeded(7).decode(IDS[:3]).cache
    two_blocks = TinyDecoder.seeded(7, layers=2)
    bad_caches = [
        one_block,  # one layer for a two-block model
        KVCache(
            (
                one_block.layers[0],
                LayerCache(one_block.layers[0].k, one_block.layers[0].v[:, :, :2]),
            )
        ),
    ]
    for cache in bad_caches:
        with pytest.raises(ShapeError) as err:
            two_blocks.decode([1], cache)
        assert err.value.key == "cache_mismatch"
    with pytest.raises(ShapeError) as err:
        TinyDecoder.seeded(7).decode([[1], [2]], one_block)  # batch of 2, cache of 1
    assert err.value.key == "cache_mismatch"
    with pytest.raises(ShapeError) as err:
        TinyDecoder.seeded(7, heads=4).decode([1], one_block)  # 2 heads cached, 4 expected
    assert err.value.key == "cache_mismatch"
