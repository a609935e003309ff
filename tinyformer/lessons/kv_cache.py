"""The K/V cache: how many bytes a decoder keeps per sequence, and what GQA/MQA save.

During generation every layer keeps the keys and values of all earlier positions so
they are not recomputed. Its size, for one sequence, is

    layers x K/V heads x head width x sequence length x 2 (K and V) x bytes per number.

Query heads do not appear: only K/V heads are cached. GQA lets several query heads
share one K/V head, so the cache shrinks by n_kv_heads / n_heads; MQA is the case of a
single K/V head. Sizes are exact Python ints (no float rounding); ratios are Fractions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from tinyformer.attention import kv_group_size
from tinyformer.errors import ParameterError

KIB = 1024
MIB = 1024**2
GIB = 1024**3
TIB = 1024**4


@dataclass(frozen=True)
class KVCacheSize:
    """One configuration's cache, with the factors that multiply into it."""

    layers: int
    kv_heads: int
    head_dim: int
    seq_len: int
    bytes_per_number: int
    numbers: int  # layers * kv_heads * head_dim * seq_len * 2
    total_bytes: int  # numbers * bytes_per_number
    bytes_per_token: int  # total_bytes / seq_len: what each new position adds


@dataclass(frozen=True)
class KVSaving:
    """GQA/MQA against MHA with the same query heads (MHA caches one K/V head per query head)."""

    n_heads: int
    n_kv_heads: int
    group_size: int  # query heads per K/V head: n_heads // n_kv_heads
    kind: str  # "mha" | "gqa" | "mqa"
    cache: KVCacheSize  # with n_kv_heads
    mha_cache: KVCacheSize  # with n_heads K/V heads
    ratio: Fraction  # cache / mha_cache = n_kv_heads / n_heads
    saved: Fraction  # 1 - ratio
    saved_bytes: int  # mha_cache.total_bytes - cache.total_bytes


@dataclass(frozen=True)
class ModelPreset:
    """Attention sizes from a model's published config (config.json on its model card)."""

    name: str
    layers: int  # num_hidden_layers
    n_heads: int  # num_attention_heads (query heads)
    n_kv_heads: int  # num_key_value_heads (1 = multi-query)
    head_dim: int  # hidden_size / num_attention_heads
    source: str
    window: int | None = None  # sliding_window: attends to, and caches, at most this many

    def cached_positions(self, seq_len: int) -> int:
        """Positions its cache holds for a sequence of seq_len: all of them, or at most the
        sliding window (the rolling buffer of the Mistral 7B paper)."""
        return seq_len if self.window is None else min(seq_len, self.window)


# Only configurations we can state exactly. Context lengths are left out on purpose:
# the calculator's sequence length is the learner's choice.
PRESETS: dict[str, ModelPreset] = {
    p.name: p
    for p in (
        ModelPreset("Llama-2-7B", 32, 32, 32, 128, "meta-llama/Llama-2-7b-hf config.json"),
        ModelPreset("Llama-2-70B", 80, 64, 8, 128, "meta-llama/Llama-2-70b-hf config.json"),
        ModelPreset("Llama-3-8B", 32, 32, 8, 128, "meta-llama/Meta-Llama-3-8B config.json"),
        ModelPreset("Mistral-7B-v0.1", 32, 32, 8, 128, "mistralai/Mistral-7B-v0.1 config.json",
                    window=4096),
        ModelPreset("Falcon-7B", 32, 71, 1, 64, "tiiuae/falcon-7b config.json (multi_query)"),
    )
}


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterError(
            "kv_not_integer",
            f"{name} must be a whole number, got {value!r}",
            name=name,
            value=str(value),
        )
    if value < 1:
        raise ParameterError(
            "kv_not_positive", f"{name} must be >= 1, got {value}", name=name, value=value
        )
    return value


def kv_cache_size(
    layers: int, kv_heads: int, head_dim: int, seq_len: int, bytes_per_number: int
) -> KVCacheSize:
    """Bytes of K and V for one sequence of seq_len positions, exactly."""
    sizes = {
        "layers": layers,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "seq_len": seq_len,
        "bytes_per_number": bytes_per_number,
    }
    for name, value in sizes.items():
        _check_positive_int(name, value)
    numbers = layers * kv_heads * head_dim * seq_len * 2  # K and V
    total = numbers * bytes_per_number
    return KVCacheSize(
        layers,
        kv_heads,
        head_dim,
        seq_len,
        bytes_per_number,
        numbers=numbers,
        total_bytes=total,
        bytes_per_token=total // seq_len,
    )


def kv_group_of_heads(n_heads: int, n_kv_heads: int) -> list[int]:
    """Which K/V head each query head reads: h // (n_heads // n_kv_heads).

    Same layout as tinyformer.attention.multi_head_attention and PyTorch's enable_gqa:
    consecutive query heads share a K/V head. Raises the attention module's
    ``heads_not_divisible`` error when the heads cannot be shared evenly.
    """
    _check_positive_int("n_heads", n_heads)
    _check_positive_int("n_kv_heads", n_kv_heads)
    group = kv_group_size(n_heads, n_kv_heads)
    return [h // group for h in range(n_heads)]


def attention_kind(n_heads: int, n_kv_heads: int) -> str:
    """'mha' (one K/V head per query head), 'mqa' (one K/V head) or 'gqa' (between)."""
    kv_group_of_heads(n_heads, n_kv_heads)  # validates
    if n_kv_heads == n_heads:
        return "mha"
    return "mqa" if n_kv_heads == 1 else "gqa"


def cache_ratio(n_heads: int, n_kv_heads: int) -> Fraction:
    """The cache with n_kv_heads as a fraction of MHA's (n_heads K/V heads)."""
    kv_group_of_heads(n_heads, n_kv_heads)  # validates
    return Fraction(n_kv_heads, n_heads)


def gqa_saving(
    layers: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    seq_len: int,
    bytes_per_number: int,
) -> KVSaving:
    """The cache with n_kv_heads against MHA's n_heads K/V heads, and the fraction saved."""
    kind = attention_kind(n_heads, n_kv_heads)
    cache = kv_cache_size(layers, n_kv_heads, head_dim, seq_len, bytes_per_number)
    mha = kv_cache_size(layers, n_heads, head_dim, seq_len, bytes_per_number)
    ratio = Fraction(cache.total_bytes, mha.total_bytes)  # = n_kv_heads / n_heads
    return KVSaving(
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        group_size=n_heads // n_kv_heads,
        kind=kind,
        cache=cache,
        mha_cache=mha,
        ratio=ratio,
        saved=1 - ratio,
        saved_bytes=mha.total_bytes - cache.total_bytes,
    )


def binary_size(n_bytes: int) -> tuple[float, str]:
    """The largest binary unit (B, KiB, MiB, GiB, TiB) that keeps the value >= 1."""
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n_bytes >= size:
            return n_bytes / size, unit
    return float(n_bytes), "B"


def preset_caches(seq_len: int, bytes_per_number: int) -> dict[str, KVCacheSize]:
    """Each preset model's cache for one sequence of seq_len positions; a model with a
    sliding window keeps at most its window (KVCacheSize.seq_len says how many)."""
    return {
        name: kv_cache_size(p.layers, p.n_kv_heads, p.head_dim, p.cached_positions(seq_len),
                            bytes_per_number)
        for name, p in PRESETS.items()
    }


def in_unit(n_bytes: int, unit: str) -> float:
    """n_bytes in one named binary unit ("B", "KiB", "MiB", "GiB", "TiB")."""
    sizes = {"B": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": TIB}
    if unit not in sizes:
        raise ParameterError("kv_unit", f"unknown unit {unit!r}", unit=unit)
    return n_bytes / sizes[unit]
