"""Experiments on the trained model (stage 13.2): what its answer depends on, tested by
changing the computation rather than read off attention weights.

- ``untrained_like``: the same settings and seed before the first training step (the
  model train.train starts from), so a page can show attention before and after.
- ``ablations``: every head's output zeroed (its slice of the concatenated heads, before
  W_o), one at a time, and every block's FFN output zeroed, one at a time; for each,
  P(商家) and P(买家) after two questions, beside the unchanged model's.
- ``patching``: activation patching. The residual stream entering block b (or leaving
  the last block) at position j is replaced by the same stream of a second question
  (the twin), and the rest of the run goes on from there; the grid holds P(商家) of the
  patched run for every (stream, position).

Word probabilities are as on stage 13.2: P(商家) = P(商 | question) × P(家 | question, 商)
(tinyformer.lessons.probe). An intervention at position j applies to both runs behind
that product (question + 商 and question + 买): positions before the appended character
never read it (causal mask), so the twin's stream at j is the same in both.

``run`` is the model's own forward pass (DecoderBlock.forward) written out with the two
places to intervene; with no intervention it gives the model's logits (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tinyformer.attention import multi_head_attention
from tinyformer.errors import ParameterError
from tinyformer.ffn import feed_forward
from tinyformer.lessons.corpus import PAYER_WORDS
from tinyformer.lessons.probe import PayerProbs, check_question
from tinyformer.lessons.train import TrainedModel, build_model
from tinyformer.masks import causal_mask
from tinyformer.model import TinyDecoder
from tinyformer.norm import layer_norm
from tinyformer.training import torch_threads


def untrained_like(trained: TrainedModel) -> TrainedModel:
    """The model before training: the same settings' seed, drawn as train.train draws it."""
    model = build_model(trained.settings, len(trained.vocab)).eval()
    for param in model.parameters():
        param.requires_grad_(False)
    return TrainedModel(model.to(trained.model.device), trained.vocab, trained.settings,
                        {"settings": trained.config.get("settings"), "untrained": True})


# --- the forward pass with places to intervene ------------------------------------------


@dataclass(frozen=True)
class Ablation:
    """Zero one head's output (head = 0..H-1) or, with head None, the block's FFN output."""

    block: int
    head: int | None = None


@dataclass(frozen=True)
class Patch:
    """Replace the residual stream ``stream`` (0..L-1: entering that block; L: leaving the
    last block): in batch row r, at ``positions[r]``, by ``values[r]`` (-1: row r is left
    alone). One patch per row, so a whole row of the grid is one batched run."""

    stream: int
    positions: torch.Tensor  # [B] long, or [B, K]: K positions per row
    values: torch.Tensor  # [B, w], or [B, K, w]

    @classmethod
    def one(cls, stream: int, position: int, value: torch.Tensor, rows: int) -> Patch:
        """The same position and value [w] in every one of ``rows`` rows."""
        return cls(stream, torch.full((rows,), position, dtype=torch.long),
                   value.expand(rows, -1))


@torch.no_grad()
def run(model: TinyDecoder, ids: torch.Tensor, ablation: Ablation | None = None,
        patch: Patch | None = None) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    """ids [B, N] -> (logits [B, N, V], the L + 1 residual streams, each [B, N, w])."""
    n = ids.shape[1]
    x = model.token(ids) + model.position(torch.arange(n, device=ids.device))  # [B, N, w]
    mask = causal_mask(n, device=ids.device)  # [N, N]
    streams = []
    for b, block in enumerate(model.blocks):
        x = _patched(x, patch, b)
        streams.append(x)
        norm1 = layer_norm(x, block.norm1.weight, block.norm1.bias, block.norm1.eps).output
        p = block.projections()
        attention = multi_head_attention(norm1, p.w_q, p.w_k, p.w_v, p.w_o, block.heads,
                                         mask=mask, b_q=p.b_q, b_k=p.b_k, b_v=p.b_v, b_o=p.b_o)
        concat = attention.concat  # [B, N, H * hd]
        if ablation is not None and ablation.block == b and ablation.head is not None:
            hd = concat.shape[-1] // block.heads
            concat = concat.clone()
            concat[..., ablation.head * hd:(ablation.head + 1) * hd] = 0  # the head's output
        out = concat @ p.w_o + (p.b_o if p.b_o is not None else 0)  # [B, N, w]
        resid1 = x + out
        norm2 = layer_norm(resid1, block.norm2.weight, block.norm2.bias, block.norm2.eps).output
        ffn = feed_forward(norm2, block.ffn_in.weight.T, block.ffn_in.bias,
                           block.ffn_out.weight.T, block.ffn_out.bias, activation="gelu").output
        if ablation is not None and ablation.block == b and ablation.head is None:
            ffn = torch.zeros_like(ffn)
        x = resid1 + ffn  # [B, N, w]
    x = _patched(x, patch, len(model.blocks))
    streams.append(x)
    final = layer_norm(x, model.final_norm.weight, model.final_norm.bias, model.final_norm.eps)
    return model.lm_head(final.output), tuple(streams)


def _patched(x: torch.Tensor, patch: Patch | None, stream: int) -> torch.Tensor:
    if patch is None or patch.stream != stream:
        return x
    x = x.clone()
    positions, values = patch.positions, patch.values
    if positions.dim() == 1:  # one position per row
        positions, values = positions[:, None], values[:, None]  # [B, 1], [B, 1, w]
    for k in range(positions.shape[1]):  # [B, K] positions, [B, K, w] values
        rows = (positions[:, k] >= 0).nonzero().flatten()  # [R] the rows patched
        x[rows, positions[rows, k]] = values[rows, k].to(x.dtype)  # [R, w]
    return x


# --- P(商家) and P(买家) under an intervention ---------------------------------------------


def _word_batch(trained: TrainedModel, question: str) -> tuple[torch.Tensor, list[list[int]]]:
    """[2, N + 1]: the question followed by 商 and by 买; the two words' ids."""
    vocab = trained.vocab
    words = [vocab.encode(PAYER_WORDS[p]).ids for p in ("merchant", "buyer")]  # [2][2]
    ids = vocab.encode(question).ids
    batch = torch.tensor([[*ids, w[0]] for w in words], device=trained.model.device)
    return batch, words


def word_probs(trained: TrainedModel, question: str, ablation: Ablation | None = None,
               patch: Patch | None = None) -> PayerProbs:
    """P(商家) and P(买家) after ``question``, with the intervention applied (a patch's
    position and value the same in both runs)."""
    return _word_probs(trained, question, ablation, patch, 1)[0]


def _word_probs(trained: TrainedModel, question: str, ablation: Ablation | None,
                patch: Patch | None, copies: int) -> list[PayerProbs]:
    """``copies`` runs of the question at once: batch row 2c is copy c followed by 商,
    row 2c + 1 by 买; a patch gives each row its own position and value."""
    batch, words = _word_batch(trained, question)
    batch = batch.repeat(copies, 1)  # [2 * copies, N + 1]
    if patch is not None and patch.positions.shape[0] == copies < batch.shape[0]:
        patch = Patch(patch.stream, patch.positions.repeat_interleave(2),
                      patch.values.repeat_interleave(2, dim=0))
    with torch_threads(1):  # on a busy shared CPU two threads took 50 times longer
        logits, _ = run(trained.model, batch, ablation, patch)  # [2 * copies, N + 1, V]
    probs = logits.double().softmax(-1)
    n = batch.shape[1] - 1
    return [PayerProbs(*(float(probs[2 * c + r, n - 1, w[0]] * probs[2 * c + r, n, w[1]])
                         for r, w in enumerate(words))) for c in range(copies)]


def streams_of(trained: TrainedModel, question: str) -> tuple[torch.Tensor, ...]:
    """The question's L + 1 residual streams, each [N, w]."""
    ids = torch.tensor([trained.vocab.encode(question).ids], device=trained.model.device)
    with torch_threads(1):
        return tuple(s[0] for s in run(trained.model, ids)[1])


def _checked(trained: TrainedModel, questions: Sequence[str]) -> list[str]:
    out = []
    for question in questions:
        if not isinstance(question, str):
            raise ParameterError("trained_question_type", "the question must be text")
        out.append(question.strip())
        check_question(trained, out[-1])  # the pattern the model was trained on
    return out


@dataclass(frozen=True)
class AblationRow:
    ablation: Ablation | None  # None: the unchanged model
    probs: tuple[PayerProbs, ...]  # one per question


def ablations(trained: TrainedModel, questions: Sequence[str]) -> tuple[AblationRow, ...]:
    """The unchanged model, then every head of every block, then every block's FFN."""
    questions = _checked(trained, questions)
    model = trained.model
    cases: list[Ablation | None] = [None]
    cases += [Ablation(b, h) for b in range(model.layers) for h in range(model.heads)]
    cases += [Ablation(b) for b in range(model.layers)]
    return tuple(AblationRow(a, tuple(word_probs(trained, q, a) for q in questions))
                 for a in cases)


@dataclass(frozen=True)
class Patching:
    question: str  # the run that is patched
    source: str  # the question the patched streams come from
    clean: PayerProbs  # the question's own P(商家), P(买家)
    source_probs: PayerProbs  # the source question's own
    merchant: tuple[tuple[float | None, ...], ...]  # [L + 1][N] patched P(商家); None:
    # the source has no such position
    missing: tuple[int, ...]  # positions of the question the source does not have

    def change(self, stream: int, position: int) -> float | None:
        value = self.merchant[stream][position]
        return None if value is None else value - self.clean.merchant


def check_position(question: str, source: str, position: int) -> int:
    """A position both questions have, or a keyed error naming the shorter one's length."""
    limit = min(len(question), len(source))
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < limit:
        raise ParameterError("train_setting_range", f"position {position!r} is not in both "
                             f"questions (0 .. {limit - 1})", name="position",
                             value=str(position), low=0, high=limit - 1)
    return position


def patch_one(trained: TrainedModel, question: str, source: str, stream: int,
              position: int) -> PayerProbs:
    """P(商家), P(买家) after ``question`` with one stream at one position from ``source``."""
    question, source = _checked(trained, [question, source])
    check_position(question, source, position)
    if isinstance(stream, bool) or not isinstance(stream, int) or \
            not 0 <= stream <= trained.model.layers:
        raise ParameterError("train_setting_range", f"stream {stream!r} is not 0 .. "
                             f"{trained.model.layers}", name="stream", value=str(stream), low=0,
                             high=trained.model.layers)
    value = streams_of(trained, source)[stream][position]  # [w]
    return word_probs(trained, question, patch=Patch.one(stream, position, value, 2))


def patch_span(trained: TrainedModel, question: str, source: str,
               positions: Sequence[int]) -> tuple[PayerProbs, ...]:
    """For each stream: P(商家), P(买家) with ``positions`` all patched from ``source``."""
    question, source = _checked(trained, [question, source])
    for j in positions:
        check_position(question, source, j)
    at = torch.tensor([list(positions)] * 2)  # [2, K] the same in both runs
    return tuple(word_probs(trained, question, patch=Patch(s, at, stream[list(positions)]
                                                            .expand(2, -1, -1)))
                 for s, stream in enumerate(streams_of(trained, source)))


def patching(trained: TrainedModel, question: str, source: str) -> Patching:
    """Every (stream, position) of ``question`` patched from ``source``; a position the
    source lacks (it is shorter) stays None."""
    question, source = _checked(trained, [question, source])
    streams = streams_of(trained, source)  # [L + 1] of [N_source, w]
    n, shared = len(question), min(len(question), len(source))
    grid = []
    for s, stream in enumerate(streams):  # one batched run per stream: every position
        patch = Patch(s, torch.arange(shared), stream[:shared])  # copy j patches position j
        found = _word_probs(trained, question, None, patch, shared)
        grid.append(tuple(found[j].merchant if j < shared else None for j in range(n)))
    return Patching(question, source, word_probs(trained, question),
                    word_probs(trained, source), tuple(grid),
                    tuple(range(len(source), n)))
