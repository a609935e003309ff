"""Train TinyDecoder on the customer-service corpus (``python -m tinyformer.train``).

The model reads characters (tinyformer.tokenizer.CharVocab), not BPE tokens: every
token is one character, so 「运费」 stays two readable tokens, the reason's and the
item's characters map one to one onto positions (the attention summary needs that),
and the vocabulary stays near 115 entries. Byte-level BPE would fuse 「运费谁承担」 into
one token and split characters into partial bytes: right for a large corpus, opaque here.

Training is plain next-token prediction on whole sequences (question then answer) with
AdamW and a cosine-decaying learning rate, in batches drawn by a seeded generator, so
the same settings give the same loss curve and the same weights (bitwise, on the same
machine and torch build, on the CPU). The held-out loss is reported twice: over every
token, whose floor stays well above 0 because the item in a question cannot be
predicted, and over the answer's tokens alone, which falls towards 0 once the model
has learned the rule.

The parts live in small modules, re-exported here: the settings and their bounds
(train_settings), the training pairs and losses (train_data), greedy answers and
held-out accuracy (answering), saving and loading (checkpoint). ``python -m
tinyformer.train`` trains the default settings and writes the shipped model
(assets/model/: safetensors weights and a JSON config; loading never unpickles).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import torch

from tinyformer.answering import ANSWER_LENGTH, Evaluation, evaluate, greedy_answers, payer_named
from tinyformer.checkpoint import (
    CONFIG_FILE,
    FORMAT,
    MODEL_DIR,
    WEIGHTS_FILE,
    TrainedModel,
    load_model,
    save_model,
)
from tinyformer.corpus import Corpus, generate, vocabulary
from tinyformer.errors import ParameterError
from tinyformer.model import TinyDecoder
from tinyformer.tokenizer import CharVocab
from tinyformer.train_data import (
    IGNORE,
    Batches,
    encode_examples,
    heldout_losses,
    token_losses,
)
from tinyformer.train_settings import (
    DEFAULT_SETTINGS,
    DEVICES,
    MAX_LENGTH,
    SETTING_BOUNDS,
    TrainSettings,
    check_settings,
)

__all__ = [
    "ANSWER_LENGTH", "CONFIG_FILE", "DEFAULT_SETTINGS", "DEVICES", "FORMAT", "IGNORE",
    "MAX_LENGTH", "MODEL_DIR", "SETTING_BOUNDS", "WEIGHTS_FILE", "Batches", "Callback",
    "Evaluation", "Progress", "StartingLoss", "TrainResult", "TrainSettings", "TrainedModel",
    "as_trained", "build_model", "check_settings", "encode_examples", "evaluate",
    "greedy_answers", "heldout_losses", "load_model", "main", "payer_named", "save_model",
    "starting_loss", "train",
]  # fmt: skip

WEIGHT_DECAY = 0.01


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
    with _torch_threads(threads):
        return _train(settings, callback, report_every, corpus)


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    if threads is None:
        yield
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 64:
        raise ParameterError(
            "train_threads",
            f"threads must be a whole number from 1 to 64, got {threads!r}",
            value=str(threads),
        )
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _train(
    settings: TrainSettings, callback: Callback | None, report_every: int, corpus: Corpus | None
) -> TrainResult:
    if isinstance(report_every, bool) or not isinstance(report_every, int) or report_every < 1:
        raise ParameterError(
            "train_report_every",
            f"report_every must be >= 1, got {report_every!r}",
            value=str(report_every),
        )
    corpus = corpus or generate()
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
    # Cosine decay from the chosen rate towards 0 at the last step: big steps early, then
    # smaller ones that let the weights settle.
    lr = settings.learning_rate * 0.5 * (1 + math.cos(math.pi * (step - 1) / settings.steps))
    for group in optimizer.param_groups:
        group["lr"] = lr


def _report(
    model: TinyDecoder, heldout: Batches, step: int, steps: int, loss: torch.Tensor, start: float
) -> Progress:
    model.eval()
    heldout_loss, answer_loss = heldout_losses(model, heldout)
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
    data = encode_examples((corpus or generate()).heldout, vocab)
    model = build_model(settings, len(vocab)).eval()
    return StartingLoss(len(vocab), math.log(len(vocab)), heldout_losses(model, data)[0])


def as_trained(result: TrainResult) -> TrainedModel:
    """A training result in the shape load_model returns (for the probe and answers)."""
    config = {"settings": asdict(result.settings), "steps_done": result.steps_done}
    return TrainedModel(result.model, result.vocab, result.settings, config)


# --- Command line -------------------------------------------------------------------


def _same_weights(a: TinyDecoder, b: TinyDecoder) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tinyformer.train",
        description="Train the default settings and write the shipped model.",
    )
    parser.add_argument("--out", type=Path, default=MODEL_DIR, help="folder to write")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="write nothing; retrain and compare with the model in --out, bit for bit",
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
        same = _same_weights(result.model, load_model(args.out).model)
        print("identical to the shipped weights" if same else "DIFFERENT from the shipped weights")
        return 0 if same else 1
    weights, config = save_model(result, args.out)
    print(f"wrote {weights} ({weights.stat().st_size} bytes) and {config}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
