"""K/V cache sizes, GQA grouping and presets, checked against real tensors and PyTorch."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.attention import multi_head_attention
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.kv_cache import (
    GIB,
    PRESETS,
    attention_kind,
    binary_size,
    cache_ratio,
    gqa_saving,
    in_unit,
    kv_cache_size,
    kv_group_of_heads,
    preset_caches,
)

DTYPE_BYTES = {1: torch.int8, 2: torch.float16, 4: torch.float32}


@pytest.mark.parametrize("bytes_per_number", [1, 2, 4])
def test_size_equals_the_bytes_of_real_cache_tensors(bytes_per_number: int) -> None:
    layers, kv_heads, head_dim, seq_len = 3, 2, 4, 5
    # One K and one V tensor per layer, as a decoder keeps them: [B=1, Hkv, N, hd].
    cache = [
        torch.empty(1, kv_heads, seq_len, head_dim, dtype=DTYPE_BYTES[bytes_per_number])
        for _ in range(layers * 2)
    ]
    size = kv_cache_size(layers, kv_heads, head_dim, seq_len, bytes_per_number)
    assert size.total_bytes == sum(t.nbytes for t in cache)
    assert size.numbers == sum(t.numel() for t in cache)
    assert size.bytes_per_token * seq_len == size.total_bytes


def test_llama3_8b_at_8192_tokens_is_exactly_one_gib_and_a_quarter_of_mha() -> None:
    saving = gqa_saving(32, 32, 8, 128, 8192, 2)
    assert saving.cache.total_bytes == 1_073_741_824 == GIB
    assert saving.mha_cache.total_bytes == 4 * GIB
    assert saving.ratio == Fraction(1, 4)
    assert saving.saved == Fraction(3, 4)
    assert saving.saved_bytes == 3 * GIB
    assert saving.group_size == 4
    assert saving.kind == "gqa"


def test_exact_ints_for_huge_sizes() -> None:
    size = kv_cache_size(1000, 1024, 1024, 10_000_000, 4)
    assert size.total_bytes == 1000 * 1024 * 1024 * 10_000_000 * 2 * 4
    assert isinstance(size.total_bytes, int)


@settings(max_examples=60, deadline=None)
@given(
    kv=st.integers(1, 16),
    group=st.integers(1, 8),
    layers=st.integers(1, 100),
    head_dim=st.integers(1, 256),
    seq=st.integers(1, 100_000),
    nbytes=st.sampled_from([1, 2, 4]),
)
def test_ratio_is_kv_heads_over_query_heads(kv, group, layers, head_dim, seq, nbytes) -> None:
    heads = kv * group
    saving = gqa_saving(layers, heads, kv, head_dim, seq, nbytes)
    assert saving.ratio == Fraction(kv, heads)
    assert saving.cache.total_bytes * heads == saving.mha_cache.total_bytes * kv


@pytest.mark.parametrize(("heads", "kv"), [(8, 8), (8, 4), (8, 2), (8, 1), (4, 2), (6, 3)])
def test_groups_match_tinyformer_mha(heads: int, kv: int) -> None:
    gen = torch.Generator().manual_seed(3)
    hd, d = 2, 4
    x = torch.randn(1, 5, d, generator=gen, dtype=torch.float64)
    w_q = torch.randn(d, heads * hd, generator=gen, dtype=torch.float64)
    w_kv = [torch.randn(d, kv * hd, generator=gen, dtype=torch.float64) for _ in range(2)]
    w_o = torch.randn(heads * hd, d, generator=gen, dtype=torch.float64)
    trace = multi_head_attention(x, w_q, *w_kv, w_o, n_heads=heads, n_kv_heads=kv)
    assert kv_group_of_heads(heads, kv) == trace.kv_group_of_head


@pytest.mark.parametrize(("heads", "kv"), [(8, 2), (4, 1), (6, 3)])
def test_groups_match_torch_enable_gqa(heads: int, kv: int) -> None:
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(1, heads, 4, 3, generator=gen, dtype=torch.float64)
    k = torch.randn(1, kv, 4, 3, generator=gen, dtype=torch.float64)
    v = torch.randn(1, kv, 4, 3, generator=gen, dtype=torch.float64)
    groups = kv_group_of_heads(heads, kv)
    by_hand = F.scaled_dot_product_attention(q, k[:, groups], v[:, groups])
    torch.testing.assert_close(by_hand, F.scaled_dot_product_attention(q, k, v, enable_gqa=True))


def test_32_query_heads_8_kv_heads_groups_of_four() -> None:
    groups = kv_group_of_heads(32, 8)
    assert groups[:8] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [groups.count(g) for g in range(8)] == [4] * 8


def test_cache_ratio_matches_the_full_computation() -> None:
    assert cache_ratio(32, 8) == Fraction(1, 4)
    assert cache_ratio(32, 1) == Fraction(1, 32)
    assert cache_ratio(8, 8) == 1
    assert cache_ratio(64, 8) == gqa_saving(80, 64, 8, 128, 4096, 2).ratio
    with pytest.raises(ShapeError):
        cache_ratio(8, 3)


def test_kinds() -> None:
    assert attention_kind(32, 32) == "mha"
    assert attention_kind(32, 8) == "gqa"
    assert attention_kind(32, 1) == "mqa"
    assert attention_kind(1, 1) == "mha"


@pytest.mark.parametrize(("heads", "kv"), [(32, 3), (4, 8), (6, 4)])
def test_uneven_sharing_is_the_attention_modules_error(heads: int, kv: int) -> None:
    with pytest.raises(ShapeError) as info:
        kv_group_of_heads(heads, kv)
    assert info.value.key == "heads_not_divisible"
    assert info.value.values == {"heads": heads, "kv_heads": kv}


@pytest.mark.parametrize("bad", [0, -1])
def test_non_positive_sizes_are_rejected(bad: int) -> None:
    with pytest.raises(ParameterError) as info:
        kv_cache_size(32, 8, 128, bad, 2)
    assert info.value.key == "kv_not_positive"
    assert info.value.values["name"] == "seq_len"


@pytest.mark.parametrize("bad", [1.5, 2.0, True, "8"])
def test_non_integers_are_rejected(bad: object) -> None:
    with pytest.raises(ParameterError) as info:
        kv_cache_size(32, bad, 128, 10, 2)  # type: ignore[arg-type]
    assert info.value.key == "kv_not_integer"


def test_presets_are_consistent() -> None:
    assert PRESETS["Llama-3-8B"].n_kv_heads == 8
    assert PRESETS["Llama-2-7B"].n_kv_heads == PRESETS["Llama-2-7B"].n_heads == 32
    assert PRESETS["Falcon-7B"].n_kv_heads == 1  # multi-query
    for preset in PRESETS.values():
        assert preset.n_heads % preset.n_kv_heads == 0
        assert "config" in preset.source


def test_published_hidden_sizes_follow_from_heads_times_head_dim() -> None:
    hidden = {
        "Llama-2-7B": 4096,
        "Llama-2-70B": 8192,
        "Llama-3-8B": 4096,
        "Mistral-7B-v0.1": 4096,
        "Falcon-7B": 4544,
    }
    for name, width in hidden.items():
        assert PRESETS[name].n_heads * PRESETS[name].head_dim == width


@pytest.mark.parametrize(
    ("n_bytes", "expected"),
    [
        (0, (0.0, "B")),
        (1023, (1023.0, "B")),
        (1024, (1.0, "KiB")),
        (3 * 1024**2, (3.0, "MiB")),
        (GIB, (1.0, "GiB")),
        (1536 * 1024**3, (1.5, "TiB")),
    ],
)
def test_binary_size(n_bytes: int, expected: tuple[float, str]) -> None:
    assert binary_size(n_bytes) == expected


def test_preset_caches_follow_the_formula() -> None:
    caches = preset_caches(8192, 2)
    assert list(caches) == list(PRESETS)
    for name, size in caches.items():
        p = PRESETS[name]
        n = 4096 if name == "Mistral-7B-v0.1" else 8192  # its sliding window caps the cache
        assert size.seq_len == n
        assert size.total_bytes == p.layers * p.n_kv_heads * p.head_dim * n * 2 * 2
    assert caches["Llama-3-8B"].total_bytes == GIB
    assert caches["Mistral-7B-v0.1"].total_bytes == GIB // 2  # Llama-3-8B's sizes, 4,096 kept
    assert preset_caches(1000, 2)["Mistral-7B-v0.1"].seq_len == 1000  # within the window
    assert caches["Llama-2-7B"].total_bytes == 4 * GIB  # same sizes, 32 K/V heads
    assert caches["Falcon-7B"].total_bytes == 64 * 1024**2  # one K/V head of width 64


@pytest.mark.parametrize(
    ("n_bytes", "unit", "expected"),
    [(GIB, "GiB", 1.0), (GIB, "MiB", 1024.0), (131_072, "KiB", 128.0), (3, "B", 3.0),
     (1536 * 1024**3, "TiB", 1.5)],
)
def test_in_unit(n_bytes: int, unit: str, expected: float) -> None:
    assert in_unit(n_bytes, unit) == expected


def test_in_unit_rejects_an_unknown_unit() -> None:
    with pytest.raises(ParameterError) as info:
        in_unit(1024, "KB")
    assert info.value.key == "kv_unit"
