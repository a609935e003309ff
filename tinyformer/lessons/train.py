"""Train TinyDecoder on the customer-service corpus: the run behind the shipped model
(``python -m tinyformer.lessons.train``) and behind the training page.

The model reads characters (tinyformer.tokenizer.CharVocab), not BPE tokens: every
token is one character, so 「运费」 stays two readable tokens, the reason's and the
item's characters map one to one onto positions (the attention summary needs that),
and the vocabulary stays near 115 entries. Byte-level BPE would fuse 「运费谁承担」 into
one token and split characters into partial bytes: right for a large corpus, opaque here.

Training is plain next-token prediction on whole sequences (question then answer) with
AdamW and a cosine-decaying learning rate (the generic pieces: tinyformer.training), in
batches drawn by a seeded generator, so the same settings give the same loss curve and
the same weights (bitwise, on the same machine and torch build, on the CPU; another
machine's float rounding may differ in the last digits). The held-out loss is reported
twice: over every token, whose floor stays well above 0 because the item in a question
cannot be predicted, and over the answer's tokens alone, which falls towards 0 once the
model has learned the rule.

The parts live in small modules, re-exported here: the settings and their bounds
(train_settings), the training pairs (train_data), greedy answers and held-out accuracy
(answering), saving and loading (checkpoint). ``python -m tinyformer.lessons.train``
trains the default settings and writes the shipped model (the package data in
tinyformer/lessons/data/model/: safetensors weights and a JSON config; loading never
unpickles); ``--verify`` retrains and compares with it (``compare_runs``: the weights
within a tolerance, the held-out counts exactly).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch

from tinyformer.errors import ParameterError
from tinyformer.lessons.answering import (
    ANSWER_LENGTH,
    Evaluation,
    evaluate,
    greedy_answers,
    payer_named,
)
from tinyformer.lessons.checkpoint import (
    CONFIG_FILE,
    FORMAT,
    MODEL_DIR,
    WEIGHTS_FILE,
    TrainedModel,
    load_model,
    save_model,
)
from tinyformer.lessons.corpus import Corpus, split_corpus, vocabulary
from tinyformer.lessons.train_data import encode_examples
from tinyformer.lessons.train_settings import (
    DEFAULT_SETTINGS,
    DEVICES,
    MAX_LENGTH,
    SETTING_BOUNDS,
    TrainSettings,
    check_settings,
)
from tinyformer.model import TinyDecoder
from tinyformer.tokenizer import CharVocab
from tinyformer.training import (
    IGNORE,
    Batches,
    cosine_lr,
    mean_losses,
    token_losses,
    torch_threads,
)

__all__ = [
    "ANSWER_LENGTH", "CONFIG_FILE", "DEFAULT_SETTINGS", "DEVICES", "FORMAT", "IGNORE",
    "MAX_LENGTH", "MODEL_DIR", "SETTING_BOUNDS", "VERIFY_ATOL", "VERIFY_RTOL",
    "WEIGHTS_FILE", "Batches", "Callback", "Evaluation", "Progress", "RunComparison",
    "StartingLoss", "TrainResult", "TrainSettings", "TrainedModel", "as_trained",
    "build_model", "check_settings", "compare_runs", "encode_examples", "evaluate",
    "greedy_answers", "load_model", "main", "mean_losses", "payer_named", "run_metrics",
    "save_model", "starting_loss", "train",
]  # fmt: skip

WEIGHT_DECAY = 0.01
# --verify: a retrained weight may differ from the shipped one by float rounding (another
# CPU or torch build sums in another order: 5.9e-6 was seen), never by more than this.
VERIFY_ATOL = 1e-4
VERIFY_RTOL = 1e-4


@dataclass(frozen=True)
class Progress:
    """One report: the step just done and the losses after it."""

    step: int  # steps done, 1..steps
    steps: int  # steps asked for
    train_loss: float  # cross-entropy of this step's batch (what the step minimised)
    heldout_loss: float  # mean cross-entropy over every held-out target token
    heldout_answer_loss: float  # the same over the answers' tokens only
    seconds: float  # since training started


@dataclass(frozen=True)
class TrainResult:
    model: TinyDecoder  # on the CPU, in eval mode
    vocab: CharVocab
    settings: TrainSettings
    history: tuple[Progress, ...]
    stopped: bool  # the callback asked to stop before the last step
    steps_done: int
    seconds: float  # training loop only (evaluation excluded)
    heldout: Evaluation  # greedy answers to corpus.heldout after the last step done
    corpus: Corpus  # the split trained on


Callback = Callable[[Progress], bool | None]  # return True to stop training


# --- Training -----------------------------------------------------------------------


def build_model(settings: TrainSettings, vocab_size: int) -> TinyDecoder:
    """The untrained model for these settings, initialised from settings.seed."""
    return TinyDecoder.seeded(
        settings.seed,
        vocab=vocab_size,
        width=settings.width,
        heads=settings.heads,
        max_length=MAX_LENGTH,
        layers=settings.layers,
    )


def train(
    settings: TrainSettings = DEFAULT_SETTINGS,
    callback: Callback | None = None,
    report_every: int = 10,
    corpus: Corpus | None = None,
    threads: int | None = 1,
) -> TrainResult:
    """Train from scratch; call ``callback`` every ``report_every`` steps and at the end.

    The callback receives a Progress (step, train and held-out losses) and may return
    True to stop; the result then holds the model as it was at that step.

    ``threads``: CPU threads torch uses meanwhile (torch's setting is process-wide; it is
    restored afterwards; None leaves it alone). One by default: on a shared 2-core
    machine with other processes busy, two threads took 5 to 25 times longer than one
    (measured: 520 s against 19 s for the defaults; the threads spin waiting for each
    other), and one thread leaves the other core to the rest of the classroom. The
    thread count changes the order of float sums, so results are bitwise reproducible
    for the same ``threads``.
    """
    check_settings(settings)
    with torch_threads(threads):
        return _train(settings, callback, report_every, corpus)


def _train(
    settings: TrainSettings, callback: Callback | None, report_every: int, corpus: Corpus | None
) -> TrainResult:
    if isinstance(report_every, bool) or not isinstance(report_every, int) or report_every < 1:
        raise ParameterError(
            "train_report_every",
            f"report_every must be >= 1, got {report_every!r}",
            value=str(report_every),
        )
    corpus = corpus or split_corpus()
    vocab = vocabulary()
    device = torch.device(settings.device)
    train_data = encode_examples(corpus.train, vocab).to(device)
    heldout_data = encode_examples(corpus.heldout, vocab).to(device)
    model = build_model(settings, len(vocab)).to(device).train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.learning_rate, weight_decay=WEIGHT_DECAY
    )
    sampler = torch.Generator().manual_seed(settings.seed)  # batches: CPU draws, any device
    history: list[Progress] = []
    stopped, start, step = False, time.perf_counter(), 0
    for step in range(1, settings.steps + 1):
        _set_lr(optimizer, settings, step)
        rows = torch.randint(len(corpus.train), (settings.batch_size,), generator=sampler)
        rows = rows.to(device)
        losses = token_losses(model, train_data.inputs[rows], train_data.targets[rows])
        loss = losses.sum() / (train_data.targets[rows] != IGNORE).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % report_every == 0 or step == settings.steps:
            point = _report(model, heldout_data, step, settings.steps, loss, start)
            history.append(point)
            if callback is not None and callback(point) and step < settings.steps:
                stopped = True
                break
    seconds = time.perf_counter() - start
    model = model.cpu().eval()
    for param in model.parameters():
        param.requires_grad_(False)
    heldout = evaluate(model, vocab, corpus.heldout)
    return TrainResult(
        model, vocab, settings, tuple(history), stopped, step, seconds, heldout, corpus
    )


def _set_lr(optimizer: torch.optim.Optimizer, settings: TrainSettings, step: int) -> None:
    lr = cosine_lr(settings.learning_rate, step, settings.steps)
    for group in optimizer.param_groups:
        group["lr"] = lr


def _report(
    model: TinyDecoder, heldout: Batches, step: int, steps: int, loss: torch.Tensor, start: float
) -> Progress:
    model.eval()
    heldout_loss, answer_loss = mean_losses(model, heldout)
    model.train()
    return Progress(
        step, steps, float(loss.detach()), heldout_loss, answer_loss, time.perf_counter() - start
    )


class StartingLoss(NamedTuple):
    """Where training starts: the untrained model's held-out loss beside an even guess."""

    vocab: int  # V: tokens the model chooses among at every position
    even: float  # ln V: the cross-entropy of an even spread over V tokens
    heldout: float  # the untrained model's mean held-out loss over every target token


def starting_loss(settings: TrainSettings, corpus: Corpus | None = None) -> StartingLoss:
    """The loss before the first step: the model train() starts from, on the held-out set."""
    check_settings(settings)
    vocab = vocabulary()
    data = encode_examples((corpus or split_corpus()).heldout, vocab)
    model = build_model(settings, len(vocab)).eval()
    return StartingLoss(len(vocab), math.log(len(vocab)), mean_losses(model, data)[0])


def as_trained(result: TrainResult) -> TrainedModel:
    """A training result in the shape load_model returns (for the probe and answers)."""
    config = {"settings": asdict(result.settings), "steps_done": result.steps_done}
    return TrainedModel(result.model, result.vocab, result.settings, config)


# --- Command line -------------------------------------------------------------------


@dataclass(frozen=True)
class RunComparison:
    """A retrained run beside a saved one: the weights within a tolerance (float rounding
    differs between CPUs and torch builds), the reported held-out counts exactly."""

    atol: float
    rtol: float
    missing: tuple[str, ...]  # weight names found in only one of the two
    mismatched: tuple[str, ...]  # names whose shapes or dtypes differ
    far: tuple[str, ...]  # names with an entry beyond atol + rtol * |saved entry|
    max_abs_diff: float  # largest |retrained - saved| over the weights compared
    metrics: tuple[tuple[str, Any, Any], ...]  # (name, retrained, saved) for each that differs

    @property
    def weights_close(self) -> bool:
        return not (self.missing or self.mismatched or self.far)

    @property
    def ok(self) -> bool:
        return self.weights_close and not self.metrics

    def summary(self) -> str:
        """One line a person can act on."""
        if self.ok:
            return (f"matches the shipped model: weights within atol {self.atol:g} + rtol "
                    f"{self.rtol:g} (largest difference {self.max_abs_diff:.3g}), "
                    f"same held-out counts")
        parts = []
        if self.missing:
            parts.append(f"weights in only one model: {', '.join(self.missing)}")
        if self.mismatched:
            parts.append(f"other shapes or dtypes: {', '.join(self.mismatched)}")
        if self.far:
            parts.append(f"weights beyond the tolerance: {', '.join(self.far)} (largest "
                         f"difference {self.max_abs_diff:.3g})")
        parts += [f"{name} {new!r} against {old!r}" for name, new, old in self.metrics]
        return "DIFFERENT from the shipped model: " + "; ".join(parts)


def run_metrics(heldout: Evaluation) -> dict[str, int]:
    """The counts a run reports (and its config records) for the held-out questions."""
    return {"n": heldout.n, "correct": heldout.correct, "exact": heldout.exact}


def compare_runs(
    weights: Mapping[str, torch.Tensor],
    saved_weights: Mapping[str, torch.Tensor],
    metrics: Mapping[str, Any],
    saved_metrics: Mapping[str, Any],
    *,
    atol: float = VERIFY_ATOL,
    rtol: float = VERIFY_RTOL,
) -> RunComparison:
    """Compare a retrained state dict and its metrics with a saved one's.

    A weight is close when every entry satisfies |new - saved| <= atol + rtol * |saved|
    (torch.isclose, as torch.testing.assert_close; NaN is never close); every metric in
    ``metrics`` must equal the saved one exactly (counts of questions answered)."""
    missing = tuple(sorted(set(weights) ^ set(saved_weights)))
    mismatched, far, largest = [], [], 0.0
    for name in sorted(set(weights) & set(saved_weights)):
        new, old = weights[name].detach().cpu(), saved_weights[name].detach().cpu()
        if new.shape != old.shape or new.dtype != old.dtype:
            mismatched.append(name)
            continue
        if new.numel() == 0:
            continue
        new64, old64 = new.double(), old.double()
        largest = max(largest, float((new64 - old64).abs().max()))
        if not bool(torch.isclose(new64, old64, rtol=rtol, atol=atol).all()):
            far.append(name)
    differ = tuple((name, value, saved_metrics.get(name)) for name, value in metrics.items()
                   if saved_metrics.get(name) != value)
    return RunComparison(atol, rtol, missing, tuple(mismatched), tuple(far), largest, differ)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tinyformer.lessons.train",
        description="Train the default settings and write the shipped model.",
    )
    parser.add_argument("--out", type=Path, default=MODEL_DIR, help="folder to write")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="write nothing; retrain and compare with the model in --out (the weights "
        f"within atol {VERIFY_ATOL:g} + rtol {VERIFY_RTOL:g}, the held-out counts exactly)",
    )
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    args = parser.parse_args(argv)
    settings = TrainSettings(device=args.device)

    def show(p: Progress) -> None:
        if p.step % 100 == 0 or p.step == p.steps:
            print(
                f"step {p.step:4d}  train {p.train_loss:.4f}  held-out {p.heldout_loss:.4f}"
                f"  held-out answers {p.heldout_answer_loss:.4f}  {p.seconds:.1f} s"
            )

    result = train(settings, show)
    ev = result.heldout
    print(
        f"trained in {result.seconds:.1f} s; held-out: {ev.correct}/{ev.n} right payer "
        f"({ev.accuracy:.2%}), {ev.exact}/{ev.n} exact answers"
    )
    if args.verify:
        shipped = load_model(args.out)
        comparison = compare_runs(result.model.state_dict(), shipped.model.state_dict(),
                                  run_metrics(result.heldout), shipped.config["heldout"])
        print(comparison.summary())
        return 0 if comparison.ok else 1
    weights, config = save_model(result, args.out)
    print(f"wrote {weights} ({weights.stat().st_size} bytes) and {config}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
