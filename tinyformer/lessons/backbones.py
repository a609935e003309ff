"""Three backbones: encoder-only, decoder-only and encoder-decoder, and cross-attention.

- Encoder-only: every position reads every position (no causal mask); the output is a
  representation of the whole input.
- Decoder-only: causal reading (position i reads j <= i); generates token by token.
- Encoder-decoder: the encoder reads the source in both directions and gives H_enc
  [N_source, d]; each decoder layer has masked self-attention over the target written so
  far, then cross-attention whose Q comes from the decoder rows and whose K and V come
  from H_enc, then an FFN. The cross-attention weights are rectangular: [N_target,
  N_source]. The layers here are Post-Norm, as in the original Transformer: each
  sub-layer is followed by Add & Norm, LayerNorm(x + sublayer(x)).
- The decoder's input (teacher forcing): a start token, then the target shifted right by
  one, so that the row at position i has read the start token and target[:i] and is
  trained to predict target[i]; the causal mask keeps it from the words after those.

The translation example uses seeded random embeddings and weights: teaching data that
shows shapes and the flow of numbers, never a translation. Single-head attention keeps
one weight table per step. Shape letters: Ns source length, Nt target length, d width.
Weights are [d_in, d_out] and applied as ``x @ W``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from tinyformer.attention import (
    AttentionTrace,
    MultiHeadTrace,
    multi_head_attention,
    scaled_dot_product_attention,
)
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.ffn import FeedForwardTrace, feed_forward
from tinyformer.masks import attention_mask
from tinyformer.norm import layer_norm
from tinyformer.positional import sinusoidal

MAX_TOKENS = 8  # per side: a table a learner can read
MIN_WIDTH, MAX_WIDTH = 2, 16
MAX_SEED = 2**31 - 1
START = "[BOS]"  # the decoder's start token (beginning of sequence)
FFN_FACTOR = 4  # hidden width of the FFN, as in the original Transformer


# --- The mask of each backbone --------------------------------------------------------
@dataclass(frozen=True)
class BackboneMasks:
    """Who may read whom (bool, True = may read, PyTorch's convention)."""

    encoder_self: torch.Tensor  # [Ns, Ns] all True: the encoder (and encoder-only) pattern
    decoder_self: torch.Tensor  # [Nt, Nt] causal: the decoder (and decoder-only) pattern
    cross: torch.Tensor  # [Nt, Ns] all True: every target position reads every source one


def backbone_masks(n_source: int, n_target: int) -> BackboneMasks:
    """The three reading patterns for a source of n_source and a target of n_target tokens."""
    for name, n in (("n_source", n_source), ("n_target", n_target)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ShapeError("backbones_mask_size", f"{name} must be a whole number >= 1, "
                             f"got {n!r}", name=name, n=n)
    return BackboneMasks(
        encoder_self=attention_mask(n_source, causal=False),
        decoder_self=attention_mask(n_target, causal=True),
        cross=torch.ones(n_target, n_source, dtype=torch.bool),  # nothing blocked
    )


# --- Cross-attention ------------------------------------------------------------------
@dataclass(frozen=True)
class CrossAttentionTrace:
    """Q from the decoder rows, K and V from the encoder output, and every step."""

    h_dec: torch.Tensor  # [..., Nt, d] the decoder rows that ask
    h_enc: torch.Tensor  # [..., Ns, d] the encoder output that is read
    q: torch.Tensor  # [..., Nt, d_k] h_dec @ w_q
    k: torch.Tensor  # [..., Ns, d_k] h_enc @ w_k
    v: torch.Tensor  # [..., Ns, d_v] h_enc @ w_v
    attention: AttentionTrace  # scores .. weights [..., Nt, Ns], output [..., Nt, d_v]
    output: torch.Tensor  # [..., Nt, d_out] attention.output @ w_o (or itself without w_o)


def cross_attention(h_dec: torch.Tensor, h_enc: torch.Tensor, w_q: torch.Tensor,
                    w_k: torch.Tensor, w_v: torch.Tensor, w_o: torch.Tensor | None = None,
                    mask: torch.Tensor | None = None) -> CrossAttentionTrace:
    """softmax(Q K^T / sqrt(d_k)) V with Q = h_dec W_q and K, V = h_enc W_k, h_enc W_v.

    h_dec [..., Nt, d] and h_enc [..., Ns, d] may differ in length, never in width; the
    weights come out [..., Nt, Ns]: one row per target position, one column per source
    position. ``mask`` (bool, True = may read) is usually None: cross-attention lets
    every target position read the whole source.
    """
    _check_cross(h_dec, h_enc, w_q, w_k, w_v, w_o)
    q = h_dec @ w_q  # [..., Nt, d_k]
    k = h_enc @ w_k  # [..., Ns, d_k]
    v = h_enc @ w_v  # [..., Ns, d_v]
    attention = scaled_dot_product_attention(q, k, v, mask=mask)  # weights [..., Nt, Ns]
    output = attention.output if w_o is None else attention.output @ w_o  # [..., Nt, d_out]
    return CrossAttentionTrace(h_dec, h_enc, q, k, v, attention, output)


def _check_cross(h_dec, h_enc, w_q, w_k, w_v, w_o) -> None:
    if h_dec.dim() < 2 or h_enc.dim() < 2:
        raise ShapeError("cross_not_2d", "h_dec and h_enc need shape [..., N, d]",
                         dec=list(h_dec.shape), enc=list(h_enc.shape))
    if h_dec.shape[-1] != h_enc.shape[-1]:
        raise ShapeError("cross_width", f"decoder rows have width {h_dec.shape[-1]}, encoder "
                         f"rows {h_enc.shape[-1]}: they must be equal",
                         dec=h_dec.shape[-1], enc=h_enc.shape[-1])
    d = h_dec.shape[-1]
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if w.dim() != 2 or w.shape[0] != d:
            raise ShapeError("cross_weight_shape", f"{name} must have {d} rows, got shape "
                             f"{list(w.shape)}", name=name, d=d, shape=list(w.shape))
    if w_q.shape[1] != w_k.shape[1]:
        raise ShapeError("cross_qk_width", f"w_q and w_k must give one width, got "
                         f"{w_q.shape[1]} and {w_k.shape[1]}", q=w_q.shape[1], k=w_k.shape[1])
    if w_o is not None and (w_o.dim() != 2 or w_o.shape[0] != w_v.shape[1]):
        raise ShapeError("cross_weight_shape", f"w_o must have {w_v.shape[1]} rows, got "
                         f"shape {list(w_o.shape)}", name="w_o", d=w_v.shape[1],
                         shape=list(w_o.shape))


# --- Post-Norm encoder and decoder layers ---------------------------------------------
class AttentionWeights(NamedTuple):
    w_q: torch.Tensor  # [d, d]
    w_k: torch.Tensor  # [d, d]
    w_v: torch.Tensor  # [d, d]
    w_o: torch.Tensor  # [d, d]


class FFNWeights(NamedTuple):
    w1: torch.Tensor  # [d, 4d]
    b1: torch.Tensor  # [4d]
    w2: torch.Tensor  # [4d, d]
    b2: torch.Tensor  # [d]


@dataclass(frozen=True)
class EncoderLayerTrace:
    """MHSA, Add & Norm, FFN, Add & Norm (Post-Norm)."""

    x: torch.Tensor  # [Ns, d] input rows
    self_attention: MultiHeadTrace  # weights [1, 1, Ns, Ns], nothing blocked
    add_norm1: torch.Tensor  # [Ns, d] LayerNorm(x + attention)
    ffn: FeedForwardTrace  # output [Ns, d]
    output: torch.Tensor  # [Ns, d] LayerNorm(add_norm1 + ffn): H_enc for a one-layer encoder


@dataclass(frozen=True)
class DecoderLayerTrace:
    """Masked MHSA, Add & Norm, cross-attention, Add & Norm, FFN, Add & Norm (Post-Norm)."""

    y: torch.Tensor  # [Nt, d] input rows: the target written so far
    self_attention: MultiHeadTrace  # causal weights [1, 1, Nt, Nt]
    add_norm1: torch.Tensor  # [Nt, d] the rows whose queries read the encoder
    cross: CrossAttentionTrace  # weights [Nt, Ns]
    add_norm2: torch.Tensor  # [Nt, d]
    ffn: FeedForwardTrace  # output [Nt, d]
    output: torch.Tensor  # [Nt, d]


def encoder_layer(x: torch.Tensor, attn: AttentionWeights, ffn: FFNWeights,
                  eps: float = 1e-5) -> EncoderLayerTrace:
    """One Post-Norm encoder layer on x [Ns, d]: every position reads every position."""
    mask = attention_mask(x.shape[0], causal=False)  # [Ns, Ns] all True
    sa = multi_head_attention(x[None], *attn, n_heads=1, mask=mask)  # output [1, Ns, d]
    h = layer_norm(x + sa.output[0], eps=eps).output  # [Ns, d]
    f = feed_forward(h, *ffn)
    return EncoderLayerTrace(x, sa, h, f, layer_norm(h + f.output, eps=eps).output)


def decoder_layer(y: torch.Tensor, h_enc: torch.Tensor, self_attn: AttentionWeights,
                  cross_attn: AttentionWeights, ffn: FFNWeights,
                  eps: float = 1e-5) -> DecoderLayerTrace:
    """One Post-Norm decoder layer on y [Nt, d], reading the encoder output h_enc [Ns, d]."""
    mask = attention_mask(y.shape[0], causal=True)  # [Nt, Nt]: no reading later target words
    sa = multi_head_attention(y[None], *self_attn, n_heads=1, mask=mask)  # output [1, Nt, d]
    h1 = layer_norm(y + sa.output[0], eps=eps).output  # [Nt, d]
    cross = cross_attention(h1, h_enc, *cross_attn)  # weights [Nt, Ns]
    h2 = layer_norm(h1 + cross.output, eps=eps).output  # [Nt, d]
    f = feed_forward(h2, *ffn)
    return DecoderLayerTrace(y, sa, h1, cross, h2, f, layer_norm(h2 + f.output, eps=eps).output)


# --- The translation example ----------------------------------------------------------
@dataclass(frozen=True)
class TranslationExample:
    """An English source read by a one-layer encoder; its Chinese translation (the
    target) fed to a one-layer decoder as in training: shifted right by one behind a start
    token (decoder_input). Seeded random teaching data."""

    source: tuple[str, ...]  # [Ns]
    target: tuple[str, ...]  # [Nt] the words the decoder's rows are trained to predict
    decoder_input: tuple[str, ...]  # [Nt] START, then target[:-1]: what the decoder reads
    width: int
    masks: BackboneMasks
    x_source: torch.Tensor  # [Ns, d] embedding row + sinusoidal position row
    x_target: torch.Tensor  # [Nt, d] the decoder input's rows
    encoder: EncoderLayerTrace
    decoder: DecoderLayerTrace

    @property
    def h_enc(self) -> torch.Tensor:
        return self.encoder.output  # [Ns, d]

    @property
    def cross(self) -> CrossAttentionTrace:
        return self.decoder.cross  # weights [Nt, Ns]


def shift_right(target: Sequence[str]) -> tuple[str, ...]:
    """The decoder's input in training (teacher forcing): the start token, then every
    target word but the last. 运费 谁 承担 -> [BOS] 运费 谁: the row at position i has read
    [BOS] and the first i words and is trained to predict word i."""
    return (START, *tuple(target)[:-1])


def split_words(text: str) -> tuple[str, ...]:
    """Words separated by white space: 'who pays the shipping ?' -> 5 tokens."""
    return tuple(text.split())


def translation_example(source: Sequence[str], target: Sequence[str], width: int,
                        seed: int) -> TranslationExample:
    """Run the source through a Post-Norm encoder layer and the target, shifted right
    behind the start token (shift_right), through a Post-Norm decoder layer, with seeded
    random weights (float64).

    A word's embedding row depends only on the seed, its side and the word itself, so it
    is the same in any sentence; the weights depend only on the seed and the width.
    """
    source, target = tuple(source), tuple(target)
    if not 1 <= len(source) <= MAX_TOKENS:
        raise ParameterError("backbones_source_length", f"the source needs 1 to {MAX_TOKENS} "
                             f"tokens, got {len(source)}", n=len(source), limit=MAX_TOKENS)
    if not 1 <= len(target) <= MAX_TOKENS:
        raise ParameterError("backbones_target_length", f"the target needs 1 to {MAX_TOKENS} "
                             f"tokens, got {len(target)}", n=len(target), limit=MAX_TOKENS)
    if isinstance(width, bool) or not isinstance(width, int) or \
            not MIN_WIDTH <= width <= MAX_WIDTH:
        raise ParameterError("backbones_width", f"width must be a whole number from "
                             f"{MIN_WIDTH} to {MAX_WIDTH}, got {width!r}",
                             value=width, lo=MIN_WIDTH, hi=MAX_WIDTH)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ParameterError("backbones_seed", f"seed must be a whole number from 0 to "
                             f"{MAX_SEED}, got {seed!r}", value=seed, lo=0, hi=MAX_SEED)
    gen = torch.Generator().manual_seed(seed)
    enc_attn, dec_attn, cross_attn = (_attention_weights(width, gen) for _ in range(3))
    enc_ffn, dec_ffn = _ffn_weights(width, gen), _ffn_weights(width, gen)
    x_source = _embed(source, "source", width, seed)  # [Ns, d]
    decoder_input = shift_right(target)  # [Nt]
    x_target = _embed(decoder_input, "target", width, seed)  # [Nt, d]
    encoder = encoder_layer(x_source, enc_attn, enc_ffn)
    decoder = decoder_layer(x_target, encoder.output, dec_attn, cross_attn, dec_ffn)
    return TranslationExample(source, target, decoder_input, width,
                              backbone_masks(len(source), len(target)), x_source, x_target,
                              encoder, decoder)


def _normal(gen: torch.Generator, *shape: int, std: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64) * std


def _attention_weights(d: int, gen: torch.Generator) -> AttentionWeights:
    """W ~ N(0, 1/d): keeps q, k, v near unit size."""
    return AttentionWeights(*(_normal(gen, d, d, std=d**-0.5) for _ in range(4)))


def _ffn_weights(d: int, gen: torch.Generator) -> FFNWeights:
    hidden = FFN_FACTOR * d
    return FFNWeights(_normal(gen, d, hidden, std=d**-0.5), _normal(gen, hidden, std=0.1),
                      _normal(gen, hidden, d, std=hidden**-0.5), _normal(gen, d, std=0.1))


def _embed(words: tuple[str, ...], side: str, d: int, seed: int) -> torch.Tensor:
    """Each word's row from its own generator (stable across sentences), plus the
    original Transformer's sinusoidal position rows."""
    rows = []
    for word in words:
        key = zlib.crc32(f"{side}\0{word}".encode())  # stable, unlike Python's hash()
        rows.append(_normal(torch.Generator().manual_seed(seed * 2**32 + key), d))
    return torch.stack(rows) + sinusoidal(len(words), d, dtype=torch.float64)  # [N, d]
