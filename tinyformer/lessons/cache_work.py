"""Writing an answer token by token, with and without a K/V cache, and the work each way.

``greedy_run`` is a greedy continuation that keeps every step's trace and counted work,
for the generation page (the generation loop with temperature, top-k and top-p is
tinyformer.lessons.decoding.generate). Each step runs the model, reads the last
position's logits and appends the most probable token. A step can run in two ways:
- with the cache: step 1 reads the whole prompt in one pass (the prefill) and keeps
  every block's K and V; each later step feeds only the newest token, whose query
  reads the cached rows plus its own new row, so K and V grow by one row a step;
- without it: every step runs the whole sequence again and recomputes every
  position's Q, K and V.
Both give the same logits up to float rounding: under the causal mask an earlier
position never reads a later one, so its K and V do not change when tokens are added.

The work is counted, not timed: PyTorch's FlopCounterMode records the multiply-adds of
every matrix product a step runs (Q/K/V and output projections, scores, weighted
sums, the FFN, the LM head). LayerNorm, GELU and softmax are not matrix products and
are not in the count. The K/V rows computed are read from each step's trace.

Shape letters: N positions fed in a step, P cached positions, H heads, hd head width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch.utils.flop_counter import FlopCounterMode

from tinyformer.errors import ParameterError
from tinyformer.lessons.probe import check_question
from tinyformer.lessons.train import TrainedModel
from tinyformer.model import DecoderTrace, KVCache, TinyDecoder

MAX_GREEDY_TOKENS = 12  # bounds a classroom request; every corpus question fits 12 more


class Work(NamedTuple):
    """What one step (or a whole generation) computed."""

    positions: int  # positions run through the model
    kv_rows: int  # rows of K computed, all blocks together (V has as many)
    multiply_adds: int  # in matrix products, counted by torch's FlopCounterMode


@dataclass(frozen=True)
class GreedyStep:
    index: int  # 1-based: step k predicts the k-th new token
    fed: tuple[int, ...]  # ids run through the model in this step
    past: int  # P: positions whose K and V were read from the cache (0 without one)
    trace: DecoderTrace  # blocks[l].attention: q [1, H, N, hd], k and v [1, H, P + N, hd]
    logits: torch.Tensor  # [V] the last position's logits, on the CPU
    chosen: int  # argmax of logits: the token appended
    probability: float  # softmax(logits)[chosen]
    work: Work


@dataclass(frozen=True)
class GreedyRun:
    prompt: tuple[int, ...]
    cached: bool
    steps: tuple[GreedyStep, ...]

    @property
    def new_ids(self) -> tuple[int, ...]:
        return tuple(step.chosen for step in self.steps)

    @property
    def cumulative(self) -> tuple[Work, ...]:
        """Work done so far after each step."""
        totals, out = Work(0, 0, 0), []
        for step in self.steps:
            totals = Work(*(a + b for a, b in zip(totals, step.work, strict=True)))
            out.append(totals)
        return tuple(out)


@dataclass(frozen=True)
class CacheComparison:
    cached: GreedyRun
    recomputed: GreedyRun
    logit_gaps: tuple[float, ...]  # per step: largest |logit with cache - without|
    kv_gaps: tuple[float, ...]  # per step: largest |cached K or V row - recomputed row|

    @property
    def same_tokens(self) -> bool:
        return self.cached.new_ids == self.recomputed.new_ids


def greedy_run(
    model: TinyDecoder, prompt: Sequence[int], n_new: int, *, use_cache: bool = True
) -> GreedyRun:
    """Greedy continuation of `prompt` by n_new tokens, every step's trace and work kept."""
    sequence = _check(model, prompt, n_new)
    prompt_ids = tuple(sequence)
    steps: list[GreedyStep] = []
    cache: KVCache | None = None
    for index in range(1, n_new + 1):
        fed = sequence[-1:] if use_cache and cache is not None else list(sequence)
        past = cache.length if use_cache and cache is not None else 0
        with FlopCounterMode(display=False) as counter:
            step = model.decode(torch.tensor([fed], device=model.device), cache)
        cache = step.cache if use_cache else None
        logits = step.logits[0, -1].float().cpu()  # [V]
        chosen = int(logits.argmax())
        kv_rows = sum(b.attention.k.shape[-2] - b.attention.past_length for b in step.trace.blocks)
        work = Work(len(fed), kv_rows, counter.get_total_flops() // 2)  # a multiply-add is 2
        probability = float(torch.softmax(logits, dim=-1)[chosen])
        steps.append(GreedyStep(index, tuple(fed), past, step.trace, logits, chosen,
                                    probability, work))
        sequence.append(chosen)
    return GreedyRun(prompt_ids, use_cache, tuple(steps))


def compare_cache(model: TinyDecoder, prompt: Sequence[int], n_new: int) -> CacheComparison:
    """The same greedy generation with and without the cache, step beside step."""
    cached = greedy_run(model, prompt, n_new, use_cache=True)
    recomputed = greedy_run(model, prompt, n_new, use_cache=False)
    logit_gaps, kv_gaps = [], []
    for a, b in zip(cached.steps, recomputed.steps, strict=True):
        logit_gaps.append(float((a.logits - b.logits).abs().max()))
        gaps = [float((x.attention.k - y.attention.k).abs().max().cpu()) for x, y in
                zip(a.trace.blocks, b.trace.blocks, strict=True)]  # [1, H, P + N, hd] both
        gaps += [float((x.attention.v - y.attention.v).abs().max().cpu()) for x, y in
                 zip(a.trace.blocks, b.trace.blocks, strict=True)]
        kv_gaps.append(max(gaps))
    return CacheComparison(cached, recomputed, tuple(logit_gaps), tuple(kv_gaps))


def question_prompt(trained: TrainedModel, question: str) -> tuple[int, ...]:
    """A question's ids, after tinyformer.lessons.probe's checks (empty, too long, a character
    never seen, not one of the corpus's questions): a keyed error rather than a guess."""
    if not isinstance(question, str):
        raise ParameterError("trained_question_type", "the question must be text")
    question = question.strip()
    check_question(trained, question)
    return trained.vocab.encode(question).ids


def _check(model: TinyDecoder, prompt: Sequence[int], n_new: int) -> list[int]:
    if isinstance(n_new, bool) or not isinstance(n_new, int) or \
            not 1 <= n_new <= MAX_GREEDY_TOKENS:
        raise ParameterError(
            "generate_new_tokens",
            f"the number of new tokens must be a whole number from 1 to {MAX_GREEDY_TOKENS}, "
            f"got {n_new!r}",
            value=str(n_new),
            limit=MAX_GREEDY_TOKENS,
        )
    sequence = [int(i) for i in prompt]
    if not sequence:
        raise ParameterError("generate_prompt_empty", "the prompt has no tokens")
    # The last token chosen is never fed back, so the model reads len + n_new - 1 positions.
    if len(sequence) + n_new - 1 > model.max_length:
        raise ParameterError(
            "generate_too_long",
            f"a {len(sequence)}-token prompt and {n_new} new tokens need "
            f"{len(sequence) + n_new - 1} positions; the model has {model.max_length}",
            length=len(sequence),
            n_new=n_new,
            limit=model.max_length,
            most=model.max_length - len(sequence) + 1,
        )
    return sequence
