"""The model's last step and the loop around it: from the last hidden state to logits
through the LM head (tied to the input embedding or not), then generation one token at
a time.

Tied weights: the LM head multiplies the last hidden state h [d] by the TRANSPOSE of
the input embedding table E [V, d], so logit_i = h · E[i], the same row that looked
token i up on the way in; an untied head is a separate [d, V] matrix of V * d numbers.

Generation: run the model on the ids so far, take the LAST position's logits, turn them
into a distribution (temperature, top-k, top-p: tinyformer.sampling), choose (greedy:
argmax; otherwise a seeded draw), append the chosen id, repeat. Each step reads every
earlier token, the chosen ones included, through TinyDecoder's K/V cache.

The same greedy loop run both ways (`cached_or_recomputed`, stage 10.3's opening):
without a cache every step runs the whole sequence and computes every position's K and
V again; with it, step 1 computes the prompt's rows and keeps them, and each later step
feeds only the newest id and computes its one row. The rows are read from the traces.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.model import DecoderConfig, TinyDecoder
from tinyformer.sampling import SamplingTrace, next_token_probs, sample, seeded_generator

MAX_NEW_TOKENS = 32  # a classroom loop, shown step by step


# --- from the last hidden state to logits -----------------------------------------------


@functools.lru_cache(maxsize=256)
def cut_of(logits: tuple[float, ...], temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None) -> SamplingTrace:
    """next_token_probs of the float64 vector `logits`, kept per value and settings: a
    page draws the same few cuts of the same logits on every run (stage 10.1: nine).
    The trace is shared between runs and sessions, so it is read, never written."""
    return next_token_probs(torch.tensor(logits, dtype=torch.float64), temperature, top_k,
                            top_p)


@dataclass(frozen=True)
class LMHead:
    """Logits from one hidden state through a tied head: z = h E^T."""

    hidden: torch.Tensor  # [d] the last position's hidden state h
    table: torch.Tensor  # [V, d] the input embedding E; the head reads it transposed
    logits: torch.Tensor  # [V] z_i = h · E[i]


def tied_logits(hidden: torch.Tensor, table: torch.Tensor) -> LMHead:
    """z = h E^T: one logit per vocabulary entry, from the embedding table itself."""
    if hidden.dim() != 1 or table.dim() != 2 or table.shape[1] != hidden.shape[0]:
        raise ShapeError(
            "lm_head_shapes",
            f"h must be [d] and E [V, d]; got {list(hidden.shape)} and {list(table.shape)}",
            d=hidden.shape[-1] if hidden.dim() else 0,
        )
    return LMHead(hidden, table, table @ hidden)  # [V, d] @ [d] -> [V]


@dataclass(frozen=True)
class TiedSizes:
    """What tying saves: the LM head's V * d numbers."""

    head: int  # V * d: the numbers an untied head adds
    untied: int  # parameters of the model with its own head
    tied: int  # parameters when the head reuses the embedding table


def tied_sizes(config: DecoderConfig) -> TiedSizes:
    """Parameter counts of a TinyDecoder with an untied head (as built) and tied."""
    head = config.vocab * config.width
    total = config.parameter_count
    return TiedSizes(head, total, total - head)


# --- the generation loop --------------------------------------------------------------


@dataclass(frozen=True)
class GenerationStep:
    """One turn of the loop: what the model read, what it offered, what was chosen."""

    context: tuple[int, ...]  # every id the model read (prompt and earlier choices)
    logits: torch.Tensor  # [V] the last position's logits
    probs: torch.Tensor  # [V] softmax(logits): the model's own distribution (T = 1)
    sampling: SamplingTrace  # the distribution after temperature, top-k, top-p
    top: tuple[tuple[int, float], ...]  # the most probable ids under probs, ties to lower id
    chosen: int  # the id appended

    @property
    def position(self) -> int:
        """Where the chosen id goes: right after the context."""
        return len(self.context)


@dataclass(frozen=True)
class Generation:
    prompt: tuple[int, ...]
    steps: tuple[GenerationStep, ...]

    @property
    def new(self) -> tuple[int, ...]:
        """The generated ids, in order."""
        return tuple(step.chosen for step in self.steps)

    @property
    def ids(self) -> tuple[int, ...]:
        """Prompt followed by every generated id."""
        return self.prompt + self.new


def generate(
    model: TinyDecoder,
    prompt: Sequence[int],
    steps: int,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int = 0,
    top: int = 3,
) -> Generation:
    """Append `steps` ids to `prompt`, one model call per id (with a K/V cache).

    temperature 0 is greedy (argmax, ties to the lowest id; the seed is not used);
    otherwise every step draws with tinyformer.sampling.sample from one generator seeded
    once with `seed`, so a seed repeats a whole run. Raises prompt_empty,
    generation_steps_invalid (steps outside 1..MAX_NEW_TOKENS), generation_too_long
    (prompt plus steps beyond the model's max_length), the sampling settings' errors
    and the model's id errors (ids_out_of_range ...).
    """
    prompt = tuple(int(i) for i in prompt)
    _check_loop(model, prompt, steps)
    generator = None if temperature == 0 else seeded_generator(seed, model.device)
    done: list[GenerationStep] = []
    ids, cache, new = list(prompt), None, list(prompt)
    for _ in range(steps):
        result = model.decode(new, cache)
        logits = result.logits[0, -1]  # [V] only the last position predicts the next id
        trace = next_token_probs(logits, temperature, top_k, top_p)
        chosen = int(trace.probs.argmax()) if generator is None else sample(trace.probs,
                                                                            generator)
        probs = torch.softmax(logits, dim=-1)  # [V]
        done.append(GenerationStep(tuple(ids), logits, probs, trace, _top(probs, top), chosen))
        ids.append(chosen)
        cache, new = result.cache, [chosen]
    return Generation(prompt, tuple(done))


@dataclass(frozen=True)
class LoopStepWork:
    """One step of the greedy loop, run without and with a K/V cache."""

    read: int  # positions 0 .. read - 1 that the new position attends to
    rows_recomputed: int  # K rows computed in every block without a cache (V: as many)
    rows_cached: int  # ... with the cache: the prompt's at step 1, then only the new one
    logit_gap: float  # largest |logit with the cache - logit without|: float rounding only
    chosen: int  # the argmax with the cache, appended to both runs


@dataclass(frozen=True)
class CacheLoop:
    prompt: tuple[int, ...]
    blocks: int
    steps: tuple[LoopStepWork, ...]

    @property
    def new(self) -> tuple[int, ...]:
        return tuple(step.chosen for step in self.steps)


def cached_or_recomputed(model: TinyDecoder, prompt: Sequence[int], steps: int) -> CacheLoop:
    """The greedy loop of `generate` (temperature 0) run twice: every step on the whole
    sequence without a cache, and with the cache on the newest id only. Raises what
    `generate` raises for the prompt and the number of steps."""
    prompt = tuple(int(i) for i in prompt)
    _check_loop(model, prompt, steps)
    ids, cache, done = list(prompt), None, []
    for _ in range(steps):
        full = model.decode(ids)  # no cache: all len(ids) positions again
        step = model.decode(ids[-1:] if cache is not None else ids, cache)
        full_logits = full.logits[0, -1]  # [V]
        logits = step.logits[0, -1]  # [V]
        chosen = int(logits.argmax())  # the cached run's choice feeds both runs
        done.append(LoopStepWork(
            len(ids), _new_rows(full), _new_rows(step),
            float((logits - full_logits).abs().max()), chosen))
        ids.append(chosen)
        cache = step.cache
    return CacheLoop(prompt, len(model.blocks), tuple(done))


def _new_rows(step) -> int:
    """K rows a decode step computed in its first block (every block computes as many)."""
    attention = step.trace.blocks[0].attention
    return attention.k.shape[-2] - attention.past_length  # k: [B, H, P + N, hd]


def shared_start(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids two runs have in common."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _check_loop(model: TinyDecoder, prompt: tuple[int, ...], steps: int) -> None:
    if not prompt:
        raise ParameterError("prompt_empty", "the prompt needs at least one token id")
    if isinstance(steps, bool) or not isinstance(steps, int) or \
            not 1 <= steps <= MAX_NEW_TOKENS:
        raise ParameterError(
            "generation_steps_invalid",
            f"generate between 1 and {MAX_NEW_TOKENS} tokens, got {steps}",
            steps=steps, limit=MAX_NEW_TOKENS,
        )
    if len(prompt) + steps > model.max_length:
        raise ShapeError(
            "generation_too_long",
            f"{len(prompt)} prompt ids + {steps} new ones = {len(prompt) + steps} positions, "
            f"but the position table has {model.max_length} rows",
            prompt=len(prompt), steps=steps, total=len(prompt) + steps,
            max_length=model.max_length,
        )


def _top(probs: torch.Tensor, k: int) -> tuple[tuple[int, float], ...]:
    """The k most probable ids; equal probabilities keep the lower id first."""
    order = torch.sort(probs, descending=True, stable=True).indices[: max(1, k)]
    return tuple((int(i), float(probs[i])) for i in order)
