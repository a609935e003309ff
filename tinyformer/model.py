"""TinyDecoder: a complete decoder-only Transformer small enough to read every number.

Pre-Norm blocks: h = x + Attention(LayerNorm(x)); y = h + FFN(LayerNorm(h)).
Learned token and position tables, one fused Q/K/V projection split three ways,
a causal mask (switchable), an output projection, a GELU FFN of width 4 * width,
a final LayerNorm and an LM head without bias. The maths inside calls this package's
own traced functions, so the page that shows a stage and the model agree exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from tinyformer.attention import merge_heads, scaled_dot_product_attention, split_heads
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.ffn import feed_forward
from tinyformer.masks import causal_mask
from tinyformer.norm import layer_norm


@dataclass(frozen=True)
class BlockTrace:
    """One decoder block's intermediates; B batch, H heads, N length, w width."""

    norm1: torch.Tensor  # [B, N, w] LayerNorm(x) before attention
    q: torch.Tensor  # [B, H, N, hd]
    k: torch.Tensor  # [B, H, N, hd]
    v: torch.Tensor  # [B, H, N, hd]
    scores: torch.Tensor  # [B, H, N, N] q·k
    scaled: torch.Tensor  # [B, H, N, N] / sqrt(hd)
    masked: torch.Tensor  # [B, H, N, N] future = -inf when causal
    weights: torch.Tensor  # [B, H, N, N] softmax rows
    heads_output: torch.Tensor  # [B, H, N, hd] weights @ v
    concat: torch.Tensor  # [B, N, w] heads side by side
    attn_out: torch.Tensor  # [B, N, w] after the output projection
    resid1: torch.Tensor  # [B, N, w] x + attn_out
    norm2: torch.Tensor  # [B, N, w] LayerNorm(resid1)
    ffn_pre: torch.Tensor  # [B, N, 4w] before GELU
    ffn_hidden: torch.Tensor  # [B, N, 4w] after GELU
    ffn_out: torch.Tensor  # [B, N, w]
    resid2: torch.Tensor  # [B, N, w] resid1 + ffn_out: the block's output


@dataclass(frozen=True)
class DecoderTrace:
    """Every intermediate of TinyDecoder's forward pass."""

    ids: torch.Tensor  # [B, N] token ids
    embeddings: torch.Tensor  # [B, N, w] token table rows
    positions: torch.Tensor  # [N, w] position table rows 0..N-1
    x0: torch.Tensor  # [B, N, w] embeddings + positions
    blocks: list[BlockTrace]  # one per layer, first to last
    final_norm: torch.Tensor  # [B, N, w]
    logits: torch.Tensor  # [B, N, vocab]

    @property
    def attention(self) -> torch.Tensor:
        """[B, H, N, N] weights of the last block (what forward returns)."""
        return self.blocks[-1].weights


class DecoderBlock(nn.Module):
    """One Pre-Norm block: causal multi-head self-attention, then a GELU FFN."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.width = width
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)  # fused: one matmul, split three ways
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.ffn_in = nn.Linear(width, 4 * width)
        self.ffn_out = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> BlockTrace:
        norm1 = _ln(self.norm1, x)  # [B, N, w]
        q, k, v = self.qkv(norm1).split(self.width, dim=-1)  # 3 x [B, N, w]
        q, k, v = (split_heads(t, self.heads) for t in (q, k, v))  # [B, H, N, hd]
        att = scaled_dot_product_attention(q, k, v, mask=mask)
        concat = merge_heads(att.output)  # [B, N, w]
        attn_out = self.proj(concat)
        resid1 = x + attn_out
        norm2 = _ln(self.norm2, resid1)
        # nn.Linear stores [out, in]; the library's FFN takes x @ W, hence .T
        ffn = feed_forward(
            norm2,
            self.ffn_in.weight.T,
            self.ffn_in.bias,
            self.ffn_out.weight.T,
            self.ffn_out.bias,
            activation="gelu",
        )
        return BlockTrace(
            norm1=norm1,
            q=q,
            k=k,
            v=v,
            scores=att.scores,
            scaled=att.scaled,
            masked=att.masked,
            weights=att.weights,
            heads_output=att.output,
            concat=concat,
            attn_out=attn_out,
            resid1=resid1,
            norm2=norm2,
            ffn_pre=ffn.hidden_pre,
            ffn_hidden=ffn.hidden,
            ffn_out=ffn.output,
            resid2=resid1 + ffn.output,
        )


def _ln(module: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    return layer_norm(x, module.weight, module.bias, module.eps).output


class TinyDecoder(nn.Module):
    """Decoder-only Transformer (CURRICULUM section 11).

    ``forward(ids)`` returns ``(logits [B, N, vocab], attention [B, H, N, N])`` where
    attention is the weights of the LAST block only; ``trace(ids)`` returns every
    intermediate of every block. ids may be [N] or [B, N] (a tensor or a list of
    ints); a 1-D input is treated as a batch of one. Set ``causal = False`` to remove
    the mask: it still computes, but each position can then read the future.
    """

    def __init__(
        self,
        vocab: int = 50,
        width: int = 8,
        heads: int = 2,
        max_length: int = 16,
        layers: int = 2,
        causal: bool = True,
    ) -> None:
        super().__init__()
        _check_sizes(vocab, width, heads, max_length, layers)
        self.vocab = vocab
        self.width = width
        self.heads = heads
        self.head_dim = width // heads
        self.max_length = max_length
        self.layers = layers
        self.causal = causal
        self.token = nn.Embedding(vocab, width)
        self.position = nn.Embedding(max_length, width)  # learned, one row per position
        self.blocks = nn.ModuleList(DecoderBlock(width, heads) for _ in range(layers))
        self.final_norm = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.reset_parameters()

    @classmethod
    def seeded(cls, seed: int = 7, **kwargs: object) -> TinyDecoder:
        """A reproducible model: weights drawn from torch.Generator(seed) on the CPU.

        The global RNG is left untouched (construction runs under fork_rng), so
        building the classroom's seed-7 model never disturbs anyone else's randomness,
        and the same seed gives the same weights on every device.
        """
        with torch.random.fork_rng(devices=[]):
            model = cls(**kwargs)  # type: ignore[arg-type]
        model.reset_parameters(torch.Generator().manual_seed(seed))
        return model

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Embeddings N(0, 1); linear weights N(0, 1/fan_in); biases 0; norms 1 and 0.

        Sized so that q·k/sqrt(hd) has variance near 1: attention is visibly
        non-uniform without being one-hot, which makes the heatmaps worth reading.
        """
        for module in self.modules():
            if isinstance(module, nn.Embedding):
                _fill_normal(module.weight, 1.0, generator)
            elif isinstance(module, nn.Linear):
                _fill_normal(module.weight, module.in_features**-0.5, generator)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()

    @property
    def device(self) -> torch.device:
        return self.token.weight.device

    def forward(self, ids: torch.Tensor | Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits [B, N, vocab], last block's attention weights [B, H, N, N])."""
        trace = self._run(ids)
        return trace.logits, trace.attention

    @torch.no_grad()
    def trace(self, ids: torch.Tensor | Sequence[int]) -> DecoderTrace:
        """Every intermediate, computed without autograd (for display)."""
        return self._run(ids)

    def _run(self, ids: torch.Tensor | Sequence[int]) -> DecoderTrace:
        ids = self._check_ids(ids)  # [B, N] on the model's device
        n = ids.shape[1]
        embeddings = self.token(ids)  # [B, N, w]
        positions = self.position(torch.arange(n, device=ids.device))  # [N, w]
        x0 = embeddings + positions  # same position row added in every batch entry
        mask = causal_mask(n, device=ids.device) if self.causal else None
        x, blocks = x0, []
        for block in self.blocks:
            blocks.append(block(x, mask))
            x = blocks[-1].resid2
        final_norm = _ln(self.final_norm, x)
        logits = self.lm_head(final_norm)  # [B, N, vocab]
        return DecoderTrace(ids, embeddings, positions, x0, blocks, final_norm, logits)

    def _check_ids(self, ids: torch.Tensor | Sequence[int]) -> torch.Tensor:
        ids = torch.as_tensor(ids, device=self.device)
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
        if ids.shape[1] > self.max_length:
            raise ShapeError(
                "sequence_too_long",
                f"sequence length {ids.shape[1]} exceeds max_length {self.max_length}: "
                f"the position table has no row for later positions",
                length=ids.shape[1],
                max_length=self.max_length,
            )
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= self.vocab:
            bad = low if low < 0 else high
            raise ParameterError(
                "ids_out_of_range",
                f"token id {bad} is outside the vocabulary 0..{self.vocab - 1}",
                id=bad,
                vocab=self.vocab,
            )
        return ids.long()


def _fill_normal(param: torch.Tensor, std: float, generator: torch.Generator | None) -> None:
    # Draw on the CPU, then copy: a seed gives the same weights on every device.
    values = torch.randn(param.shape, generator=generator, dtype=torch.float32) * std
    param.copy_(values.to(device=param.device, dtype=param.dtype))


def _check_sizes(vocab: int, width: int, heads: int, max_length: int, layers: int) -> None:
    sizes = (
        ("vocab", vocab),
        ("width", width),
        ("heads", heads),
        ("max_length", max_length),
        ("layers", layers),
    )
    for name, value in sizes:
        if value < 1:
            raise ParameterError(
                "size_not_positive", f"{name} must be >= 1, got {value}", name=name, value=value
            )
    if width % heads != 0:
        raise ShapeError(
            "width_not_divisible",
            f"width {width} is not divisible by {heads} heads: each head needs an equal "
            f"integer slice of the width",
            width=width,
            heads=heads,
        )
