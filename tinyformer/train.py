"""Train TinyDecoder on the customer-service corpus; save and load the trained model.

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

``python -m tinyformer.train`` trains the default settings and writes the shipped
model (assets/model/: safetensors weights and a JSON config; loading never unpickles).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from tinyformer.corpus import (
    ANSWER,
    PAYER_WORDS,
    Corpus,
    Example,
    Payer,
    generate,
    vocabulary,
)
from tinyformer.errors import ParameterError
from tinyformer.model import DecoderConfig, TinyDecoder
from tinyformer.tokenizer import PAD_ID, CharVocab

MODEL_DIR = Path(__file__).resolve().parent.parent / "assets" / "model"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
FORMAT = "tinyformer-trained-v1"
MAX_LENGTH = 32  # positions of the model; the longest corpus text has 24 characters
ANSWER_LENGTH = len(ANSWER.format(payer=PAYER_WORDS["merchant"]))  # 5: 商家承担。
WEIGHT_DECAY = 0.01
IGNORE = -100  # target value cross_entropy skips (padding)
MAX_WEIGHTS_BYTES = 8 * 1024**2
MAX_CONFIG_BYTES = 1024**2
MAX_VOCAB = 4096

# name: (low, high); ints unless the default is a float
SETTING_BOUNDS: dict[str, tuple[float, float]] = {
    "layers": (1, 4),
    "width": (8, 128),
    "heads": (1, 8),
    "steps": (1, 3000),
    "learning_rate": (1e-4, 0.05),
    "seed": (0, 2**31 - 1),
    "batch_size": (8, 256),
}
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class TrainSettings:
    """What a learner can change. Hashable, so equal settings can reuse a result."""

    layers: int = 2  # decoder blocks
    width: int = 32
    heads: int = 2
    steps: int = 300
    learning_rate: float = 5e-3
    seed: int = 0
    batch_size: int = 32
    device: str = "cpu"


DEFAULT_SETTINGS = TrainSettings()


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
class Evaluation:
    """Greedy answers to questions: right when the answer names the right payer."""

    n: int
    correct: int  # the greedy continuation starts with the right payer (商家 / 买家)
    exact: int  # the greedy continuation is the whole expected answer (商家承担。)
    wrong: tuple[tuple[str, str, str], ...]  # (question, expected answer, greedy answer)

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0


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


@dataclass(frozen=True)
class TrainedModel:
    """A model loaded from disk, with its vocabulary and config."""

    model: TinyDecoder
    vocab: CharVocab
    settings: TrainSettings
    config: dict[str, Any]


Callback = Callable[[Progress], bool | None]  # return True to stop training


def check_settings(settings: TrainSettings) -> TrainSettings:
    """Raise a keyed ParameterError for the first setting out of bounds; else return it."""
    for field in fields(TrainSettings):
        if field.name == "device":
            continue
        value = getattr(settings, field.name)
        low, high = SETTING_BOUNDS[field.name]
        is_float = isinstance(field.default, float)
        kind_ok = isinstance(value, int | float) if is_float else isinstance(value, int)
        if isinstance(value, bool) or not kind_ok or not math.isfinite(value):
            raise ParameterError(
                "train_setting_type",
                f"{field.name} must be a {'number' if is_float else 'whole number'}, got {value!r}",
                name=field.name,
                value=str(value),
            )
        if not low <= value <= high:
            raise ParameterError(
                "train_setting_range",
                f"{field.name} must be between {low} and {high}, got {value}",
                name=field.name,
                value=value,
                low=low,
                high=high,
            )
    if settings.width % settings.heads:
        raise ParameterError(
            "train_width_heads",
            f"width {settings.width} cannot be split into {settings.heads} equal heads",
            width=settings.width,
            heads=settings.heads,
        )
    _check_device(settings.device)
    return settings


def _check_device(device: str) -> None:
    if device not in DEVICES:
        raise ParameterError(
            "train_device_unknown",
            f"device must be one of {DEVICES}, got {device!r}",
            device=str(device),
        )
    if device == "cuda" and not torch.cuda.is_available():
        raise ParameterError(
            "train_device_unavailable",
            "CUDA was asked for, but no GPU is available",
            device=device,
        )


# --- Data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Batches:
    """Examples as right-padded next-token pairs."""

    inputs: torch.Tensor  # [B, L-1] ids, PAD_ID after each text's end
    targets: torch.Tensor  # [B, L-1] the next id, IGNORE where nothing is to be predicted
    answer: torch.Tensor  # [B, L-1] bool, True where the target is an answer token


def encode_examples(examples: Sequence[Example], vocab: CharVocab) -> Batches:
    """Right padding: a causal model's earlier positions never see the padding after them."""
    length = max(len(ex.text) for ex in examples)
    ids = torch.full((len(examples), length), PAD_ID, dtype=torch.int64)  # [B, L]
    targets = torch.full((len(examples), length - 1), IGNORE, dtype=torch.int64)  # [B, L-1]
    answer = torch.zeros(len(examples), length - 1, dtype=torch.bool)
    for row, ex in enumerate(examples):
        text_ids = torch.tensor(vocab.encode(ex.text).ids)
        n = len(text_ids)
        ids[row, :n] = text_ids
        targets[row, : n - 1] = text_ids[1:]  # target at position i is token i + 1
        answer[row, len(ex.question) - 1 : n - 1] = True  # from the question's last token on
    return Batches(ids[:, :-1], targets, answer)


def _token_losses(model: TinyDecoder, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits, _ = model(inputs)  # [B, L-1, V]
    return F.cross_entropy(
        logits.transpose(1, 2), targets, ignore_index=IGNORE, reduction="none"
    )  # [B, L-1], 0 where ignored


@torch.no_grad()
def heldout_losses(model: TinyDecoder, data: Batches) -> tuple[float, float]:
    """(mean loss over every target token, mean loss over the answers' tokens)."""
    losses = _token_losses(model, data.inputs, data.targets)  # [B, L-1]
    real = data.targets != IGNORE
    return float(losses[real].mean()), float(losses[data.answer].mean())


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
    train_data = _to(encode_examples(corpus.train, vocab), device)
    heldout_data = _to(encode_examples(corpus.heldout, vocab), device)
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
        losses = _token_losses(model, train_data.inputs[rows], train_data.targets[rows])
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


def _to(data: Batches, device: torch.device) -> Batches:
    return Batches(data.inputs.to(device), data.targets.to(device), data.answer.to(device))


# --- Answering ----------------------------------------------------------------------


def payer_named(answer: str) -> Payer | None:
    """The payer an answer starts with: 商家 -> merchant, 买家 -> buyer, else None."""
    for payer, word in PAYER_WORDS.items():
        if answer.startswith(word):
            return payer  # type: ignore[return-value]
    return None


@torch.no_grad()
def greedy_answers(
    model: TinyDecoder, vocab: CharVocab, questions: Sequence[str], n_new: int = ANSWER_LENGTH
) -> list[str]:
    """Each question continued by n_new argmax tokens (questions of one length batched)."""
    answers: dict[int, str] = {}
    by_length: dict[int, list[int]] = {}
    for i, question in enumerate(questions):
        by_length.setdefault(len(question), []).append(i)
    for length, rows in by_length.items():
        if length == 0:
            raise ParameterError("trained_question_empty", "a question is empty")
        if length + n_new - 1 > model.max_length:
            raise ParameterError(
                "train_answer_too_long",
                f"a {length}-character question plus {n_new} new tokens exceeds the "
                f"model's {model.max_length} positions",
                length=length,
                n_new=n_new,
                limit=model.max_length,
            )
        ids = torch.tensor([vocab.encode(questions[i]).ids for i in rows])  # [b, n]
        for _ in range(n_new):
            logits, _ = model(ids)  # [b, n, V]
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        for i, row in zip(rows, ids[:, length:].tolist(), strict=True):
            answers[i] = vocab.decode(row)
    return [answers[i] for i in range(len(questions))]


def evaluate(model: TinyDecoder, vocab: CharVocab, examples: Sequence[Example]) -> Evaluation:
    """Greedy-answer every example; count answers naming the right payer."""
    answers = greedy_answers(model, vocab, [ex.question for ex in examples])
    correct = exact = 0
    wrong = []
    for ex, answer in zip(examples, answers, strict=True):
        right = payer_named(answer) == ex.payer
        correct += right
        exact += answer == ex.answer
        if not right:
            wrong.append((ex.question, ex.answer, answer))
    return Evaluation(len(examples), correct, exact, tuple(wrong))


# --- Saving and loading -------------------------------------------------------------


def save_model(result: TrainResult, directory: Path = MODEL_DIR) -> tuple[Path, Path]:
    """Write the weights (safetensors) and a JSON config; returns both paths."""
    directory.mkdir(parents=True, exist_ok=True)
    weights_path, config_path = directory / WEIGHTS_FILE, directory / CONFIG_FILE
    state = {k: v.detach().cpu().contiguous() for k, v in result.model.state_dict().items()}
    save_file(state, str(weights_path), metadata={"format": FORMAT})
    last = result.history[-1]
    config = {
        "format": FORMAT,
        "model": result.model.config.to_dict(),
        "vocab_tokens": list(result.vocab.tokens),
        "settings": asdict(result.settings),
        "corpus": {
            "seed": result.corpus.seed,
            "heldout_fraction": result.corpus.heldout_fraction,
            "train": len(result.corpus.train),
            "heldout": len(result.corpus.heldout),
        },
        "heldout": {
            "n": result.heldout.n,
            "correct": result.heldout.correct,
            "exact": result.heldout.exact,
            "accuracy": result.heldout.accuracy,
        },
        "final_losses": {
            "step": last.step,
            "train": last.train_loss,
            "heldout": last.heldout_loss,
            "heldout_answer": last.heldout_answer_loss,
        },
        "torch": torch.__version__,
        "weights_sha256": _sha256(weights_path),
    }
    config_path.write_text(json.dumps(config, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return weights_path, config_path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_model(directory: Path = MODEL_DIR) -> TrainedModel:
    """Load weights and config (safetensors and JSON: nothing is unpickled), checked."""
    weights_path, config_path = directory / WEIGHTS_FILE, directory / CONFIG_FILE
    for path, limit in ((weights_path, MAX_WEIGHTS_BYTES), (config_path, MAX_CONFIG_BYTES)):
        if not path.is_file():
            raise ParameterError("trained_model_missing", f"{path} does not exist", path=str(path))
        if path.stat().st_size > limit:
            raise ParameterError(
                "trained_model_too_large",
                f"{path} has {path.stat().st_size} bytes, more than {limit}",
                path=str(path),
                limit=limit,
            )
    config = _read_config(config_path)
    if _sha256(weights_path) != config["weights_sha256"]:
        raise _bad_model(f"{weights_path} is not the file its config describes")
    model = TinyDecoder(DecoderConfig.from_dict(config["model"]))
    try:
        model.load_state_dict(load_file(str(weights_path)), strict=True)
    except RuntimeError as err:  # names or shapes differ from this TinyDecoder
        raise _bad_model(f"the weights do not fit TinyDecoder: {err}") from err
    model.eval()
    for param in model.parameters():
        param.requires_grad_(False)
    settings = TrainSettings(**config["settings"])
    return TrainedModel(model, CharVocab(tuple(config["vocab_tokens"])), settings, config)


def _read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text("utf-8"))
        sizes = DecoderConfig.from_dict(config["model"])  # checks names, types and bounds
        settings = check_settings(TrainSettings(**config["settings"]))
        tokens = config["vocab_tokens"]
        ok = (
            config["format"] == FORMAT
            and sizes.vocab == len(tokens) <= MAX_VOCAB
            and all(isinstance(t, str) for t in tokens)
            and sizes.max_length <= 4 * MAX_LENGTH
            and sizes.causal
            and (sizes.width, sizes.heads, sizes.layers)
            == (settings.width, settings.heads, settings.layers)
            and isinstance(config["weights_sha256"], str)
        )
    except (ValueError, KeyError, TypeError) as err:
        raise _bad_model(f"{path} is not a valid model config: {err}") from err
    if not ok:
        raise _bad_model(f"{path} is not a valid model config")
    return config


def _bad_model(message: str) -> ParameterError:
    return ParameterError("trained_model_invalid", message)


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
