"""The shipped model's training run as stage 13.1 shows it before anyone presses Train:
its loss curve, its final losses and its held-out accuracy.

The checkpoint's config.json keeps the final losses and the held-out counts, not the
curve; the curve is kept beside it, in data/model/curve.json, written by
``python -m tinyformer.lessons.shipped_run``. That command trains the default settings
with the same code that trained the shipped model (tinyformer.lessons.train.train, the
same report interval of 10 steps), checks that the run reproduces the shipped weights
and held-out counts (train.compare_runs) and only then writes the curve, tagged with the
weights' SHA-256 so that a curve can never be shown beside other weights. ``load_run``
reads it back, checked."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinyformer.errors import ParameterError
from tinyformer.lessons import train as tr
from tinyformer.lessons.checkpoint import CONFIG_FILE, MODEL_DIR
from tinyformer.model import DecoderConfig

CURVE_FILE = "curve.json"
CURVE_FORMAT = "tinyformer-curve-v1"
REPORT_EVERY = 10  # train.main's interval: the shipped run reported every 10 steps
MAX_CURVE_BYTES = 256 * 1024


@dataclass(frozen=True)
class ShippedRun:
    """What the shipped run recorded: its curve and where it ended."""

    settings: tr.TrainSettings
    steps: tuple[int, ...]  # [P] the steps reported
    train_loss: tuple[float, ...]  # [P] each reported step's batch loss
    heldout_loss: tuple[float, ...]  # [P] mean over every held-out target token
    answer_loss: tuple[float, ...]  # [P] the same over the answers' tokens only
    train_questions: int
    heldout: int  # held-out questions
    correct: int  # held-out questions whose greedy answer names the right payer
    parameters: int  # the model's weights


def curve_of(history: Sequence[tr.Progress]) -> dict[str, list[float]]:
    """The curve as curve.json stores it."""
    return {
        "step": [p.step for p in history],
        "train": [p.train_loss for p in history],
        "heldout": [p.heldout_loss for p in history],
        "heldout_answer": [p.heldout_answer_loss for p in history],
    }


def write_curve(history: Sequence[tr.Progress], weights_sha256: str,
                directory: Path = MODEL_DIR) -> Path:
    path = directory / CURVE_FILE
    data = {"format": CURVE_FORMAT, "weights_sha256": weights_sha256, **curve_of(history)}
    path.write_text(json.dumps(data) + "\n", "utf-8")
    return path


def load_run(directory: Path = MODEL_DIR) -> ShippedRun:
    """The shipped run: curve.json checked against config.json (same weights, same last
    step and losses); a missing or mismatched file raises trained_model_invalid."""
    config_path, curve_path = directory / CONFIG_FILE, directory / CURVE_FILE
    try:
        if curve_path.stat().st_size > MAX_CURVE_BYTES:
            raise ValueError("curve.json is too large")
        config = json.loads(config_path.read_text("utf-8"))
        curve = json.loads(curve_path.read_text("utf-8"))
        columns = [curve[k] for k in ("step", "train", "heldout", "heldout_answer")]
        last = config["final_losses"]
        ok = (curve["format"] == CURVE_FORMAT
              and curve["weights_sha256"] == config["weights_sha256"]
              and len({len(c) for c in columns}) == 1 and columns[0]
              and all(math.isfinite(v) for c in columns[1:] for v in c)
              and columns[0][-1] == last["step"]
              and [c[-1] for c in columns[1:]] == [last["train"], last["heldout"],
                                                   last["heldout_answer"]])
        settings = tr.TrainSettings(**config["settings"])
        parameters = DecoderConfig.from_dict(config["model"]).parameter_count
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ParameterError("trained_model_invalid", f"{curve_path}: {err}") from err
    if not ok:
        raise ParameterError("trained_model_invalid",
                             f"{curve_path} does not belong to the shipped model")
    return ShippedRun(settings, tuple(int(s) for s in columns[0]),
                      *(tuple(map(float, c)) for c in columns[1:]),
                      config["corpus"]["train"], config["heldout"]["n"],
                      config["heldout"]["correct"], parameters)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tinyformer.lessons.shipped_run",
        description="Retrain the default settings; if the run reproduces the shipped "
                    "model, write its curve beside it.")
    parser.add_argument("--out", type=Path, default=MODEL_DIR)
    args = parser.parse_args(argv)
    result = tr.train(tr.TrainSettings(), report_every=REPORT_EVERY)
    shipped = tr.load_model(args.out)
    comparison = tr.compare_runs(result.model.state_dict(), shipped.model.state_dict(),
                                 tr.run_metrics(result.heldout), shipped.config["heldout"])
    print(f"trained in {result.seconds:.1f} s; {comparison.summary()}")
    if not comparison.ok:
        return 1
    config: dict[str, Any] = shipped.config
    path = write_curve(result.history, config["weights_sha256"], args.out)
    last = result.history[-1]
    saved = config["final_losses"]
    print(f"wrote {path}: {len(result.history)} points; last step {last.step}: train "
          f"{last.train_loss!r} (config {saved['train']!r}), held-out {last.heldout_loss!r} "
          f"(config {saved['heldout']!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
