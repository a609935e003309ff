"""The full forward pass as an ordered walk: every intermediate of a TinyDecoder trace, in
the order it is computed, with the operands of any one of its cells.

TinyDecoder.trace holds the tensors; a learner following the pass needs them in order
(token rows, position rows, their sum, then per block: LayerNorm, Q, K, V, per-head
scores and weights, per-head outputs, merged heads, output projection, residual, second
LayerNorm, FFN hidden layer and output, second residual; then the final LayerNorm, the
logits and the next token's probabilities) and, for one cell, what it was computed from
(a table row, two summands, a row's mean and spread, a row times a column, a scaled dot
product, a softmax row). ``forward_steps`` lists them on the CPU, whatever device the
model runs on. ``parse_ids`` reads a typed ID list ("3, 8, 12") with translatable errors.
``forward_run`` bundles one run for a page; ``trained_run`` runs the shipped trained model
over one of the corpus's questions, its IDs named by their characters.

Every step's tensor is [G, R, C]: G groups (the heads, for per-head steps; else 1), R
rows (positions; 1 for the probabilities), C columns.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tinyformer.attention import merge_heads
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.limits import check_classroom
from tinyformer.lessons.probe import check_question
from tinyformer.lessons.train import TrainedModel, load_model
from tinyformer.model import BlockTrace, DecoderConfig, DecoderTrace, TinyDecoder
from tinyformer.norm import LayerNormTrace

ARTICLE_IDS = (3, 8, 12, 5, 17, 42, 23, 6)  # the source article's input
_ID_SPLIT = re.compile(r"[,，、;；\s]+")
_WHOLE = re.compile(r"^[+-]?\d{1,12}$")

# Step names in the order of one pass (block steps repeat for every block).
HEAD_STEPS = ("tok", "pos", "x0")
BLOCK_STEPS = ("norm1", "q", "k", "v", "scores", "weights", "heads", "merged", "proj",
               "resid1", "norm2", "ffn_hidden", "ffn_out", "resid2")
TAIL_STEPS = ("final", "logits", "probs")


def parse_ids(text: str, vocab: int, max_length: int) -> list[int]:
    """'3, 8, 12' -> [3, 8, 12]: whole numbers split by commas, semicolons or spaces
    (Chinese punctuation too), 1..max_length of them, each in 0..vocab-1.

    Raises ids_empty, ids_not_whole, ids_too_many or ids_outside_vocab (checked in that
    order, so the first problem a learner can fix is the one named)."""
    tokens = [tok for tok in _ID_SPLIT.split(text.strip()) if tok]
    if not tokens:
        raise ParameterError("ids_empty", "type at least one token id")
    for tok in tokens:
        if not _WHOLE.match(tok.replace("−", "-")):
            raise ParameterError("ids_not_whole", f"{tok!r} is not a whole number",
                                 token=tok[:20])
    if len(tokens) > max_length:
        raise ShapeError("ids_too_many", f"{len(tokens)} ids, but at most {max_length} fit",
                         count=len(tokens), limit=max_length)
    ids = [int(tok.replace("−", "-")) for tok in tokens]
    for value in ids:
        if not 0 <= value < vocab:
            raise ParameterError("ids_outside_vocab",
                                 f"token id {value} is outside the vocabulary 0..{vocab - 1}",
                                 id=value, last=vocab - 1)
    return ids


@dataclass(frozen=True)
class Cell:
    """What one number of a step was computed from. Fields not used by ``op`` are None.

    lookup: value = table[row, c]. add: value = parts[0] + parts[1]. norm: value =
    (parts[0] - parts[1]) / parts[2] * parts[3] + parts[4] (x, mean, std, gamma, beta).
    linear: dot = left · right; pre = dot (+ bias); value = activation(pre) or pre. score: value =
    left · right / sqrt(scale_dim), or -inf when blocked. softmax: value = softmax(
    scores)[c]. concat: value = head ``head``'s column ``column``.
    """

    op: str
    value: float
    row: int | None = None
    parts: tuple[float, ...] = ()
    left: torch.Tensor | None = None  # [K]
    right: torch.Tensor | None = None  # [K]
    bias: float | None = None
    dot: float | None = None
    pre: float | None = None
    activation: str | None = None
    scale_dim: int | None = None
    scores: torch.Tensor | None = None  # [C] the softmax row (-inf where blocked)
    head: int | None = None
    column: int | None = None
    blocked: bool = False


@dataclass(frozen=True)
class Step:
    """One intermediate: ``output`` [G, R, C] and what ``op`` needs to explain a cell.

    lookup: rows [R] (the table row each output row copies). add: terms (a, b), each
    [1, R, C]. norm: x [1, R, C], mean and std [R], gamma and beta [C]. linear: left
    [G, R, K] times right [G, K, C], bias [C] or None, activation, pre [G, R, C].
    score: left = queries [G, R, K], right = keys transposed [G, K, C], scale_dim.
    softmax: scores [G, R, C] (-inf where blocked). concat: head_dim.
    """

    id: str  # stable and language-neutral: "tok", "b0.q", "logits"
    name: str  # the step without its block: "q" (one of the *_STEPS names)
    block: int | None  # 0-based block index, None outside the blocks
    op: str
    output: torch.Tensor  # [G, R, C]
    rows: torch.Tensor | None = None
    terms: tuple[torch.Tensor, torch.Tensor] | None = None
    x: torch.Tensor | None = None
    mean: torch.Tensor | None = None
    std: torch.Tensor | None = None
    gamma: torch.Tensor | None = None
    beta: torch.Tensor | None = None
    left: torch.Tensor | None = None
    right: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    activation: str | None = None
    pre: torch.Tensor | None = None
    scale_dim: int | None = None
    scores: torch.Tensor | None = None
    head_dim: int | None = None

    def cell(self, g: int, i: int, c: int) -> Cell:
        """The operands of output[g, i, c]."""
        value = float(self.output[g, i, c])
        if self.op == "lookup":
            return Cell("lookup", value, row=int(self.rows[i]))
        if self.op == "add":
            a, b = self.terms
            return Cell("add", value, parts=(float(a[0, i, c]), float(b[0, i, c])))
        if self.op == "norm":
            parts = (self.x[0, i, c], self.mean[i], self.std[i], self.gamma[c], self.beta[c])
            return Cell("norm", value, parts=tuple(float(p) for p in parts))
        if self.op == "linear":
            left, right = self.left[g, i], self.right[g, :, c]
            bias = None if self.bias is None else float(self.bias[c])
            return Cell("linear", value, left=left, right=right, bias=bias,
                        dot=float(left.double() @ right.double()), pre=float(self.pre[g, i, c]),
                        activation=self.activation)
        if self.op == "score":
            return Cell("score", value, left=self.left[g, i], right=self.right[g, :, c],
                        scale_dim=self.scale_dim, blocked=value == float("-inf"))
        if self.op == "softmax":
            row = self.scores[g, i]
            return Cell("softmax", value, scores=row, blocked=bool(row[c] == float("-inf")))
        head, column = divmod(c, self.head_dim)  # concat
        return Cell("concat", value, head=head, column=column)


def forward_steps(model: TinyDecoder, trace: DecoderTrace, batch: int = 0) -> tuple[Step, ...]:
    """Every intermediate of ``trace`` (made by ``model``) in the order it is computed,
    for one sequence of the batch, as CPU tensors."""
    def cpu(x: torch.Tensor) -> torch.Tensor:
        return x.detach().cpu()

    def one(x: torch.Tensor) -> torch.Tensor:  # [B, N, C] -> [1, N, C] of this sequence
        return cpu(x[batch : batch + 1])

    steps = [
        Step("tok", "tok", None, "lookup", one(trace.token_rows), rows=cpu(trace.ids[batch])),
        Step("pos", "pos", None, "lookup", cpu(trace.position_rows)[None],
             rows=cpu(trace.position_ids)),
        Step("x0", "x0", None, "add", one(trace.x0),
             terms=(one(trace.token_rows), cpu(trace.position_rows)[None])),
    ]
    for index, (module, block) in enumerate(zip(model.blocks, trace.blocks, strict=True)):
        steps += _block_steps(index, module, block, one, cpu, batch)
    last = trace.blocks[-1].resid2
    head = cpu(model.lm_head.weight).T[None]  # [1, w, V]
    final = _norm_step("final", "final", None, model.final_norm, trace.final_norm, one(last), one)
    return (*steps, final,
            Step("logits", "logits", None, "linear", one(trace.logits),
                 left=final.output, right=head, pre=one(trace.logits)),
            Step("probs", "probs", None, "softmax", cpu(trace.probs[batch])[None, None],
                 scores=one(trace.logits)[:, -1:]))


def _norm_step(step_id: str, name: str, block: int | None, module: nn.LayerNorm,
               norm: LayerNormTrace, x: torch.Tensor, one) -> Step:
    def row(t: torch.Tensor) -> torch.Tensor:
        return one(t)[0, :, 0]  # [B, N, 1] -> [N]

    return Step(step_id, name, block, "norm", one(norm.output), x=x, mean=row(norm.mean),
                std=row(norm.std), gamma=module.weight.detach().cpu(),
                beta=module.bias.detach().cpu())


def _block_steps(index: int, module, block: BlockTrace, one, cpu, batch: int) -> list[Step]:
    p = f"b{index}."
    att, ffn = block.attention, block.ffn
    w = module.projections()
    normed = one(block.norm1.output)  # [1, N, w]

    def heads(x: torch.Tensor) -> torch.Tensor:  # [B, H, N, hd] -> [H, N, hd]
        return cpu(x[batch])

    def linear(name: str, out, left, right, bias=None, activation=None, pre=None) -> Step:
        right = cpu(right)
        return Step(p + name, name, index, "linear", out, left=left,
                    right=right if right.dim() == 3 else right[None],
                    bias=None if bias is None else cpu(bias), activation=activation,
                    pre=out if pre is None else pre)

    concat = one(att.concat)
    return [
        _norm_step(p + "norm1", "norm1", index, module.norm1, block.norm1, one(block.input), one),
        linear("q", one(merge_heads(att.q)), normed, w.w_q, w.b_q),
        linear("k", one(merge_heads(att.k)), normed, w.w_k, w.b_k),
        linear("v", one(merge_heads(att.v)), normed, w.w_v, w.b_v),
        Step(p + "scores", "scores", index, "score", heads(att.masked), left=heads(att.q),
             right=heads(att.k_expanded).transpose(-1, -2), scale_dim=att.head_dim),
        Step(p + "weights", "weights", index, "softmax", heads(att.weights),
             scores=heads(att.masked)),
        linear("heads", heads(att.heads_output), heads(att.weights), heads(att.v_expanded)),
        Step(p + "merged", "merged", index, "concat", concat, head_dim=att.head_dim),
        linear("proj", one(att.output), concat, w.w_o, w.b_o),
        Step(p + "resid1", "resid1", index, "add", one(block.resid1),
             terms=(one(block.input), one(att.output))),
        _norm_step(p + "norm2", "norm2", index, module.norm2, block.norm2, one(block.resid1), one),
        linear("ffn_hidden", one(ffn.hidden), one(block.norm2.output), module.ffn_in.weight.T,
               module.ffn_in.bias, "gelu", one(ffn.hidden_pre)),
        linear("ffn_out", one(ffn.output), one(ffn.hidden), module.ffn_out.weight.T,
               module.ffn_out.bias),
        Step(p + "resid2", "resid2", index, "add", one(block.resid2),
             terms=(one(block.resid1), one(ffn.output))),
    ]


def later_weight(weights: torch.Tensor) -> torch.Tensor:
    """[..., N, N] attention weights -> [..., N]: how much of each row's weight falls on
    LATER positions (0 under a causal mask; what a row would read of the future)."""
    n = weights.shape[-1]
    later = torch.ones(n, n, dtype=torch.bool, device=weights.device).triu(1)  # [N, N]
    return (weights * later).sum(-1)


# --- One run, laid out for a page -----------------------------------------------------


@dataclass(frozen=True)
class ForwardRun:
    """One forward pass of one sequence: the model, its trace, its steps in order, and the
    facts a page states about it (CPU tensors)."""

    model: TinyDecoder
    trace: DecoderTrace
    steps: tuple[Step, ...]
    ids: tuple[int, ...]  # [N] the input IDs
    names: tuple[str, ...]  # [V] a readable name for every ID: "40", or 「商」 for a character
    attention: torch.Tensor  # [H, N, N] the last block's weights
    top: tuple[tuple[int, float], ...]  # the 10 most probable next tokens (ID, probability)

    @property
    def grid(self) -> int:
        """Columns for drawing the V probabilities as a grid: the largest divisor of V up
        to 10 (50 -> 10 columns of IDs, 115 -> 5), so every row holds a full set of IDs."""
        vocab = self.model.config.vocab
        return max(c for c in range(1, 11) if vocab % c == 0)


def forward_run(model: TinyDecoder, ids: Sequence[int],
                names: Sequence[str] | None = None) -> ForwardRun:
    """Run ``model`` on ``ids`` (one sequence) and lay the run out in order; ``names``
    [V] names the vocabulary's IDs (default: the IDs themselves)."""
    trace = model.trace(list(ids))
    vocab = model.config.vocab
    names = tuple(str(i) for i in range(vocab)) if names is None else tuple(names)
    if len(names) != vocab:
        raise ShapeError("forward_names", f"{len(names)} names for a vocabulary of {vocab}",
                         count=len(names), vocab=vocab)
    return ForwardRun(model, trace, forward_steps(model, trace), tuple(int(i) for i in ids),
                      names, trace.attention_weights[0].detach().cpu(), tuple(trace.top(10)))


def seeded_run(seed: int, ids: Sequence[int], device: str = "cpu", **settings: Any) -> ForwardRun:
    """TinyDecoder.seeded(seed, **settings) (weights drawn on the CPU, then moved to
    ``device``) over ``ids``; settings beyond the classroom's limits (lessons.limits)
    are refused before any weight is drawn."""
    config = check_classroom(DecoderConfig.from_dict(settings))
    return forward_run(TinyDecoder.seeded(seed, config, device=device), ids)


def trained_run(question: str, device: str = "cpu",
                trained: TrainedModel | None = None) -> ForwardRun:
    """The trained model's forward pass over one of the corpus's questions, its IDs named
    by their characters (default: the shipped model, lessons/data/model). The model is copied
    to ``device``, so the one passed in stays where it is."""
    trained = trained or load_model()
    check_question(trained, question)  # empty, too long, unknown characters: keyed errors
    model = copy.deepcopy(trained.model).to(device)
    return forward_run(model, trained.vocab.encode(question).ids, trained.vocab.tokens)
