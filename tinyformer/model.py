"""TinyDecoder: the source article's decoder-only Transformer, small enough to read every number.

Defaults are the article's program exactly: ONE Pre-Norm block,
h = x + Attention(LayerNorm(x)); y = h + FFN(LayerNorm(h)), with vocabulary 50, width 8,
2 heads, maximum length 16, learned token and position tables, one fused Q/K/V
projection without bias split three ways, a causal mask, an output projection without
bias, a GELU FFN of width 4 * width (with biases), a final LayerNorm and an LM head
without bias, all with PyTorch's default initialisation. After torch.manual_seed(7)
(or ``TinyDecoder.seeded(7)``, which leaves the global random state alone) the ids
[3, 8, 12, 5, 17, 42, 23, 6] give the article's printed run: 1,784 parameters and the
top-3 next tokens (40, 0.0538), (20, 0.0472), (35, 0.0444).

Inside, every step calls this package's own traced functions (norm.layer_norm,
attention.multi_head_attention, ffn.feed_forward), so a page that shows one stage and
the model agree exactly, and the traces nest: a model trace holds block traces, a block
trace holds its LayerNorm, multi-head attention and feed-forward traces.

Shape letters: B batch, N new positions, P cached positions, H heads, hd head width,
w width, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, NamedTuple

import torch
from torch import nn

from tinyformer.attention import MultiHeadTrace, cached_causal_mask, multi_head_attention
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.ffn import FeedForwardTrace, feed_forward
from tinyformer.norm import LayerNormTrace, layer_norm

INITS = ("pytorch", "scaled")
SIZES = ("vocab", "width", "heads", "max_length", "layers")  # whole numbers >= 1


# --- configuration -------------------------------------------------------------------


@dataclass(frozen=True)
class DecoderConfig:
    """Every setting of a TinyDecoder; the defaults are the article's program.

    ``init``: "pytorch" (the modules' own default initialisation, as in the article) or
    "scaled" (embeddings N(0, 1), linear weights N(0, 1/fan_in), biases 0: attention
    scores of variance near 1). ``attn_bias`` adds biases to the Q/K/V and output
    projections (the article has none). Invalid settings raise on construction; how
    large is too large depends on where the model runs (``check_limits``).
    """

    vocab: int = 50
    width: int = 8
    heads: int = 2
    max_length: int = 16
    layers: int = 1
    causal: bool = True
    init: str = "pytorch"
    attn_bias: bool = False

    def __post_init__(self) -> None:
        _check_config(self)

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    @property
    def parameter_count(self) -> int:
        """Exact number of parameters of a model with this config (before building it)."""
        w, bias = self.width, int(self.attn_bias)
        attention = 3 * w * w + 3 * w * bias + w * w + w * bias
        ffn = (w * 4 * w + 4 * w) + (4 * w * w + w)
        block = 2 * (2 * w) + attention + ffn  # two LayerNorms, attention, FFN
        tables = (self.vocab + self.max_length) * w
        return tables + self.layers * block + 2 * w + w * self.vocab  # + final norm, head

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (for a config file beside saved weights)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> DecoderConfig:
        """The inverse of to_dict; an unknown field is an error, not silently dropped."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ParameterError(
                "config_unknown_field",
                f"unknown DecoderConfig field(s) {unknown}; known: {sorted(known)}",
                names=unknown,
            )
        return cls(**values)


def check_limits(
    config: DecoderConfig, sizes: Mapping[str, int], max_parameters: int | None = None
) -> DecoderConfig:
    """Return ``config`` if it fits the caller's limits, else raise a keyed error.

    DecoderConfig itself only checks that a config is well formed; what is too large
    depends on where the model runs. ``sizes`` maps size names (vocab, width, heads,
    max_length, layers) to their largest allowed values; ``max_parameters`` bounds
    ``config.parameter_count`` (None: no bound). Raises size_too_large, model_too_large
    (and config_unknown_field for a name in ``sizes`` that is not a size)."""
    unknown = sorted(set(sizes) - set(SIZES))
    if unknown:
        raise ParameterError(
            "config_unknown_field",
            f"unknown DecoderConfig size(s) {unknown}; known: {sorted(SIZES)}",
            names=unknown,
        )
    for name, limit in sizes.items():
        value = getattr(config, name)
        if value > limit:
            raise ParameterError(
                "size_too_large",
                f"{name} must be <= {limit}, got {value}",
                name=name,
                value=value,
                limit=limit,
            )
    if max_parameters is not None and config.parameter_count > max_parameters:
        raise ParameterError(
            "model_too_large",
            f"{config.parameter_count:,} parameters is more than the limit of "
            f"{max_parameters:,}",
            count=config.parameter_count,
            limit=max_parameters,
        )
    return config


def _check_config(config: DecoderConfig) -> None:
    for name in SIZES:
        _check_size(name, getattr(config, name))
    for name in ("causal", "attn_bias"):
        value = getattr(config, name)
        if not isinstance(value, bool):
            raise ParameterError(
                "flag_not_bool", f"{name} must be True or False, got {value!r}", name=name
            )
    if config.init not in INITS:
        raise ParameterError(
            "unknown_init",
            f"unknown init {config.init!r}; choose one of {list(INITS)}",
            name=str(config.init),
            choices=list(INITS),
        )
    if config.width % config.heads != 0:
        raise ShapeError(
            "width_not_divisible",
            f"width {config.width} is not divisible by {config.heads} heads: each head needs "
            f"an equal integer slice of the width",
            width=config.width,
            heads=config.heads,
        )


def _check_size(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterError(
            "size_not_integer",
            f"{name} must be a whole number, got {value!r}",
            name=name,
            value=str(value),
        )
    if value < 1:
        raise ParameterError(
            "size_not_positive", f"{name} must be >= 1, got {value}", name=name, value=value
        )


# --- traces and the K/V cache --------------------------------------------------------


@dataclass(frozen=True)
class BlockTrace:
    """One decoder block's intermediates, nested rather than copied.

    With a K/V cache, N counts only the new positions; ``attention.k`` and ``.v`` then
    hold the P cached rows followed by the N new ones and ``attention.weights`` is
    [B, H, N, P + N] (``attention.past_length`` = P).
    """

    input: torch.Tensor  # [B, N, w] x entering the block
    norm1: LayerNormTrace  # .output [B, N, w]: LayerNorm(input), what attention reads
    attention: MultiHeadTrace  # q [B, H, N, hd], weights [B, H, N, P+N], output [B, N, w]
    resid1: torch.Tensor  # [B, N, w] input + attention.output
    norm2: LayerNormTrace  # .output [B, N, w]: LayerNorm(resid1), what the FFN reads
    ffn: FeedForwardTrace  # hidden_pre, hidden [B, N, 4w]; output [B, N, w]
    resid2: torch.Tensor  # [B, N, w] resid1 + ffn.output: the block's output

    @property
    def output(self) -> torch.Tensor:
        """[B, N, w] the block's output (resid2), the next block's input."""
        return self.resid2


@dataclass(frozen=True)
class DecoderTrace:
    """Every intermediate of one TinyDecoder pass, in the order they are computed."""

    ids: torch.Tensor  # [B, N] token ids (with a cache: only the new ones)
    position_ids: torch.Tensor  # [N] positions P..P+N-1 (P = cached length, 0 without)
    token_rows: torch.Tensor  # [B, N, w] rows of the token table
    position_rows: torch.Tensor  # [N, w] rows of the position table
    x0: torch.Tensor  # [B, N, w] token_rows + position_rows
    blocks: tuple[BlockTrace, ...]  # one per layer, first to last
    final_norm: LayerNormTrace  # .output [B, N, w]: LayerNorm of the last block's output
    logits: torch.Tensor  # [B, N, V] final_norm.output @ lm_head
    probs: torch.Tensor  # [B, V] softmax of the LAST position's logits: the next token

    @property
    def attention_weights(self) -> torch.Tensor:
        """[B, H, N, P+N] attention weights of the last block (what forward returns)."""
        return self.blocks[-1].attention.weights

    def top(self, k: int = 3, batch: int = 0) -> list[tuple[int, float]]:
        """The k most probable next tokens of one sequence: [(id, probability), ...]."""
        k = max(1, min(int(k), self.probs.shape[-1]))
        values, indices = self.probs[batch].topk(k)
        return [(int(i), float(p)) for i, p in zip(indices.tolist(), values.tolist(), strict=True)]


@dataclass(frozen=True)
class LayerCache:
    """One block's keys and values of every earlier position, per head."""

    k: torch.Tensor  # [B, H, P, hd]
    v: torch.Tensor  # [B, H, P, hd]


@dataclass(frozen=True)
class KVCache:
    """The K/V cache of a whole model: one LayerCache per block, all of length P."""

    layers: tuple[LayerCache, ...]

    @property
    def length(self) -> int:
        """P: how many positions are cached (the next new token sits at position P)."""
        return self.layers[0].k.shape[-2]

    @property
    def numel(self) -> int:
        """How many numbers the cache holds: layers x 2 x B x H x P x hd."""
        return sum(layer.k.numel() + layer.v.numel() for layer in self.layers)


@dataclass(frozen=True)
class DecodeStep:
    """What ``TinyDecoder.decode`` returns for the new positions."""

    logits: torch.Tensor  # [B, N, V] logits of the new positions only
    cache: KVCache  # grown: P + N positions per layer, pass it to the next call
    trace: DecoderTrace  # the new positions' intermediates (attention reads P + N keys)


class AttentionProjections(NamedTuple):
    """A block's attention weights in the textbook x @ W form ([in, out]); biases or None."""

    w_q: torch.Tensor  # [w, w] columns 0..w-1 of the fused projection
    w_k: torch.Tensor  # [w, w] columns w..2w-1
    w_v: torch.Tensor  # [w, w] columns 2w..3w-1
    w_o: torch.Tensor  # [w, w] output projection
    b_q: torch.Tensor | None  # [w]
    b_k: torch.Tensor | None  # [w]
    b_v: torch.Tensor | None  # [w]
    b_o: torch.Tensor | None  # [w]


# --- modules -------------------------------------------------------------------------


class DecoderBlock(nn.Module):
    """One Pre-Norm block: multi-head self-attention, then a GELU FFN, each with a residual.

    Construction order (norm1, qkv, proj, norm2, ffn_in, ffn_out) is the order PyTorch's
    default initialisation draws random numbers in; the article's run depends on it.
    """

    def __init__(self, width: int, heads: int, attn_bias: bool = False) -> None:
        super().__init__()
        self.width = width
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=attn_bias)  # fused, split three ways
        self.proj = nn.Linear(width, width, bias=attn_bias)
        self.norm2 = nn.LayerNorm(width)
        self.ffn_in = nn.Linear(width, 4 * width)
        self.ffn_out = nn.Linear(4 * width, width)

    def projections(self) -> AttentionProjections:
        """W_q, W_k, W_v as column slices of the fused weight, and W_o, as x @ W.

        nn.Linear stores [out, in] and computes x @ weight.T, so the fused weight's
        rows 0..w-1 are W_q transposed (views: gradients reach the fused parameter).
        """
        w = self.width
        fused, bias = self.qkv.weight.T, self.qkv.bias  # [w, 3w], [3w] or None
        b_q, b_k, b_v = (None,) * 3 if bias is None else bias.split(w)
        return AttentionProjections(
            fused[:, :w],
            fused[:, w : 2 * w],
            fused[:, 2 * w :],
            self.proj.weight.T,
            b_q,
            b_k,
            b_v,
            self.proj.bias,
        )

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, past: LayerCache | None = None
    ) -> BlockTrace:
        """x [B, N, w]; mask bool [N, P+N] (True = may read); past: cached K/V or None."""
        norm1 = _norm(self.norm1, x)
        p = self.projections()
        attention = multi_head_attention(
            norm1.output,
            p.w_q,
            p.w_k,
            p.w_v,
            p.w_o,
            self.heads,
            mask=mask,
            b_q=p.b_q,
            b_k=p.b_k,
            b_v=p.b_v,
            b_o=p.b_o,
            past_k=None if past is None else past.k,
            past_v=None if past is None else past.v,
        )
        resid1 = x + attention.output  # [B, N, w]
        norm2 = _norm(self.norm2, resid1)
        ffn = feed_forward(
            norm2.output,
            self.ffn_in.weight.T,
            self.ffn_in.bias,
            self.ffn_out.weight.T,
            self.ffn_out.bias,
            activation="gelu",
        )
        return BlockTrace(x, norm1, attention, resid1, norm2, ffn, resid1 + ffn.output)


def _norm(module: nn.LayerNorm, x: torch.Tensor) -> LayerNormTrace:
    return layer_norm(x, module.weight, module.bias, module.eps)


class TinyDecoder(nn.Module):
    """Decoder-only Transformer (CURRICULUM section 11); defaults = the article's program.

    Build with a config, keywords, or both (keywords override the config's fields):
    ``TinyDecoder()``, ``TinyDecoder(DecoderConfig(layers=2))``, ``TinyDecoder(heads=4)``.
    ``forward(ids)`` returns ``(logits [B, N, V], attention [B, H, N, N])``, the
    attention weights of the LAST block, and is differentiable; ``trace(ids)`` returns
    every intermediate (no autograd); ``decode(ids, cache)`` continues a sequence with a
    K/V cache. ids may be [N] or [B, N] (a tensor or a list of ints); a 1-D input is a
    batch of one. ``causal`` can be switched on a built model (it owns no weights).
    """

    def __init__(self, config: DecoderConfig | None = None, **overrides: Any) -> None:
        super().__init__()
        self._config = _make_config(config, overrides)
        c = self._config
        # Same order as the article's program: PyTorch's default init draws in this order.
        self.token = nn.Embedding(c.vocab, c.width)
        self.position = nn.Embedding(c.max_length, c.width)  # learned, one row per position
        self.blocks = nn.ModuleList(
            DecoderBlock(c.width, c.heads, c.attn_bias) for _ in range(c.layers)
        )
        self.final_norm = nn.LayerNorm(c.width)
        self.lm_head = nn.Linear(c.width, c.vocab, bias=False)
        if c.init == "scaled":
            self.reset_parameters()

    @classmethod
    def seeded(
        cls,
        seed: int = 7,
        config: DecoderConfig | None = None,
        *,
        device: torch.device | str | None = None,
        **overrides: Any,
    ) -> TinyDecoder:
        """The model torch.manual_seed(seed) followed by construction gives, without
        touching the global random state (fork_rng restores it afterwards).

        Weights are always drawn on the CPU and then moved to ``device``, so a seed gives
        the same weights on every device. Seeds only the CPU generator: CUDA's is untouched.
        """
        config = _make_config(config, overrides)
        with torch.random.fork_rng(devices=[]):
            torch.random.default_generator.manual_seed(seed)
            model = cls(config)
        return model if device is None else model.to(device)

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Redraw every weight with the config's init, from the global random state.

        "pytorch": each module's own reset, in construction order (so
        torch.manual_seed(s) then reset_parameters() equals seeded(s)). "scaled":
        embeddings N(0, 1), linear weights N(0, 1/fan_in), biases 0, norms 1 and 0.
        "pytorch" draws on the parameters' device (with that device's generator);
        for weights identical on every device use seeded(), which draws on the CPU.
        """
        for module in self.modules():
            if not isinstance(module, nn.Embedding | nn.Linear | nn.LayerNorm):
                continue
            if self._config.init == "pytorch" or isinstance(module, nn.LayerNorm):
                module.reset_parameters()
            elif isinstance(module, nn.Embedding):
                _fill_normal(module.weight, 1.0)
            else:
                _fill_normal(module.weight, module.in_features**-0.5)
                if module.bias is not None:
                    module.bias.zero_()

    # --- settings ---

    @property
    def config(self) -> DecoderConfig:
        return self._config

    @property
    def causal(self) -> bool:
        return self._config.causal

    @causal.setter
    def causal(self, value: bool) -> None:
        self._config = replace(self._config, causal=value)  # validated by the config

    @property
    def vocab(self) -> int:
        return self._config.vocab

    @property
    def width(self) -> int:
        return self._config.width

    @property
    def heads(self) -> int:
        return self._config.heads

    @property
    def head_dim(self) -> int:
        return self._config.head_dim

    @property
    def max_length(self) -> int:
        return self._config.max_length

    @property
    def layers(self) -> int:
        return self._config.layers

    @property
    def device(self) -> torch.device:
        return self.token.weight.device

    # --- running ---

    def forward(self, ids: torch.Tensor | Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits [B, N, V], last block's attention weights [B, H, N, N])."""
        trace, _ = self._run(self._check_ids(ids), None)
        return trace.logits, trace.attention_weights

    @torch.no_grad()
    def trace(self, ids: torch.Tensor | Sequence[int]) -> DecoderTrace:
        """Every intermediate of forward(ids), computed without autograd (for display)."""
        return self._run(self._check_ids(ids), None)[0]

    @torch.no_grad()
    def decode(self, ids: torch.Tensor | Sequence[int], cache: KVCache | None = None) -> DecodeStep:
        """Continue a sequence: run only the new ids, reading the cached K/V of all earlier
        positions instead of recomputing them.

        ``ids`` [N] or [B, N] are the new tokens; they take positions P..P+N-1 where P is
        ``cache.length`` (0 without a cache, when this is a normal forward pass that also
        returns its cache). Returns the new positions' logits, the cache grown by N rows
        per layer, and their trace: in each block, ``attention.q`` [B, H, N, hd] are the
        new queries and ``attention.k`` / ``.v`` [B, H, P+N, hd] the cached keys and values
        followed by the new rows. The logits equal those of a full forward pass over all
        P + N tokens (up to float rounding). Needs the causal mask: without it earlier
        positions would change as later ones arrive, and nothing could be cached.
        """
        if not self.causal:
            raise ParameterError(
                "cache_needs_causal",
                "a K/V cache needs the causal mask: without it earlier positions read later "
                "ones, so their keys and values change whenever a token is added",
            )
        past = 0 if cache is None else self._check_cache(cache)
        ids = self._check_ids(ids, past)
        if cache is not None and cache.layers[0].k.shape[0] != ids.shape[0]:
            raise self._cache_error(cache.layers[0].k.shape[0], ids.shape[0])
        trace, grown = self._run(ids, cache)
        return DecodeStep(trace.logits, grown, trace)

    def _run(self, ids: torch.Tensor, cache: KVCache | None) -> tuple[DecoderTrace, KVCache]:
        n, past = ids.shape[1], 0 if cache is None else cache.length
        position_ids = torch.arange(past, past + n, device=ids.device)  # [N]
        token_rows = self.token(ids)  # [B, N, w]
        position_rows = self.position(position_ids)  # [N, w]
        x0 = token_rows + position_rows  # the same position row added in every batch entry
        mask = cached_causal_mask(n, past, device=ids.device) if self.causal else None
        x, blocks, layers = x0, [], []
        for i, block in enumerate(self.blocks):
            blocks.append(block(x, mask, None if cache is None else cache.layers[i]))
            x = blocks[-1].resid2
            layers.append(LayerCache(blocks[-1].attention.k, blocks[-1].attention.v))
        final_norm = _norm(self.final_norm, x)
        logits = self.lm_head(final_norm.output)  # [B, N, V]
        probs = torch.softmax(logits[:, -1], dim=-1)  # [B, V]
        trace = DecoderTrace(
            ids,
            position_ids,
            token_rows,
            position_rows,
            x0,
            tuple(blocks),
            final_norm,
            logits,
            probs,
        )
        return trace, KVCache(tuple(layers))

    # --- checks ---

    def _check_ids(self, ids: torch.Tensor | Sequence[int], past: int = 0) -> torch.Tensor:
        """[B, N] long ids on the model's device, every id in the vocabulary, P + N fits."""
        ids = torch.as_tensor(ids)
        if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
            raise ParameterError(
                "ids_not_integer",
                f"token ids must be integers, got {ids.dtype}",
                dtype=str(ids.dtype),
            )
        if ids.dim() == 1:
            ids = ids[None]  # a single sequence is a batch of one
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ShapeError(
                "ids_bad_shape",
                f"ids must be [N] or [B, N] with N >= 1, got {list(ids.shape)}",
                shape=list(ids.shape),
            )
        length = past + ids.shape[1]
        if length > self.max_length:
            raise ShapeError(
                "sequence_too_long",
                f"sequence length {length} exceeds max_length {self.max_length}: "
                f"the position table has no row for later positions",
                length=length,
                max_length=self.max_length,
            )
        if ids.device.type != "meta":  # meta tensors have shapes but no values to check
            _check_id_range(ids, self.vocab)
        return ids.to(device=self.device, dtype=torch.long)

    def _check_cache(self, cache: KVCache) -> int:
        """The cache's length P, after checking it fits this model: one K and one V per
        block, all [B, H, P, hd] with the same B and P."""
        if not isinstance(cache, KVCache) or len(cache.layers) != self.layers:
            raise self._cache_error()
        expected = tuple(cache.layers[0].k.shape)
        ok = len(expected) == 4 and expected[1::2] == (self.heads, self.head_dim)
        for layer in cache.layers:
            ok = ok and tuple(layer.k.shape) == tuple(layer.v.shape) == expected
        if not ok:
            raise self._cache_error()
        return cache.length

    def _cache_error(self, cache_batch: int | None = None, batch: int | None = None) -> ShapeError:
        detail = "" if batch is None else f" (it holds {cache_batch} sequences, ids {batch})"
        return ShapeError(
            "cache_mismatch",
            f"this K/V cache does not fit the model{detail}: it needs {self.layers} layer(s) "
            f"of K and V shaped [B, {self.heads}, P, {self.head_dim}] with the same B and P "
            f"as each other and as the new ids",
            layers=self.layers,
            heads=self.heads,
            head_dim=self.head_dim,
        )


def _make_config(config: DecoderConfig | None, overrides: Mapping[str, Any]) -> DecoderConfig:
    if config is not None and not isinstance(config, DecoderConfig):
        raise ParameterError(
            "config_not_decoder_config",
            f"config must be a DecoderConfig, got {type(config).__name__}",
            type=type(config).__name__,
        )
    base = config or DecoderConfig()
    unknown = sorted(set(overrides) - {f.name for f in fields(DecoderConfig)})
    if unknown:
        raise ParameterError(
            "config_unknown_field",
            f"unknown DecoderConfig field(s) {unknown}",
            names=unknown,
        )
    return replace(base, **overrides) if overrides else base


def _check_id_range(ids: torch.Tensor, vocab: int) -> None:
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab:
        bad = low if low < 0 else high
        raise ParameterError(
            "ids_out_of_range",
            f"token id {bad} is outside the vocabulary 0..{vocab - 1}",
            id=bad,
            vocab=vocab,
        )


def _fill_normal(param: torch.Tensor, std: float) -> None:
    # Draw on the CPU, then copy: the same random state gives the same weights on any device.
    values = torch.randn(param.shape, dtype=torch.float32) * std
    param.copy_(values.to(device=param.device, dtype=param.dtype))
