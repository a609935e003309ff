"""How long the default training takes here, and how well the result answers.

Trains tinyformer.train's DEFAULT_SETTINGS several times (as the training page does:
held-out loss every 10 steps, one torch thread), and prints for each run the training
time, the held-out accuracy (greedy answer names the right payer), the machine's load
average (a slow run on a busy machine can be told apart) and the CPU time the run used
(with one thread, about what the wall time would be on an idle machine). Then the
shipped model's file size and its own held-out accuracy. With --page it also presses
Train on the training page (pages/13_training.py, in AppTest: the live curve redrawn at
every report) and prints what the page reports. The target is >= 95 % held-out accuracy
within 30 s on a 2-core machine; this script prints figures, it never asserts.

    .venv/bin/python benchmarks/train_time.py [--repeats 3] [--threads 1] [--device cpu] [--page]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tinyformer.lessons.corpus import split_corpus  # noqa: E402
from tinyformer.lessons.train import (  # noqa: E402
    CONFIG_FILE,
    DEFAULT_SETTINGS,
    MODEL_DIR,
    WEIGHTS_FILE,
    evaluate,
    load_model,
    train,
)

TARGET_SECONDS = 30.0
TARGET_ACCURACY = 0.95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads while training")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--page", action="store_true", help="also train once through the page")
    args = parser.parse_args()
    settings = replace(DEFAULT_SETTINGS, device=args.device)
    print(f"settings: {settings}")
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, threads while training: "
        f"{args.threads}, corpus: {len(split_corpus().train)} train / "
        f"{len(split_corpus().heldout)} held-out questions"
    )
    times, cpu_times, accuracies = [], [], []
    for run in range(1, args.repeats + 1):
        load = os.getloadavg()[0]
        start, cpu_start = time.perf_counter(), time.process_time()
        result = train(settings, threads=args.threads)
        total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        ev, last = result.heldout, result.history[-1]
        times.append(result.seconds)
        cpu_times.append(cpu)
        accuracies.append(ev.accuracy)
        print(
            f"run {run}: training {result.seconds:5.1f} s (with evaluation {total:5.1f} s, "
            f"CPU time {cpu:5.1f} s), "
            f"held-out {ev.correct}/{ev.n} = {ev.accuracy:.2%} right payer, "
            f"{ev.exact}/{ev.n} exact; final held-out loss {last.heldout_loss:.4f} "
            f"(answers {last.heldout_answer_loss:.4f}); load average before {load:.2f}"
        )
    print(
        f"training time: min {min(times):.1f} s, median {statistics.median(times):.1f} s, "
        f"max {max(times):.1f} s (target: within {TARGET_SECONDS:.0f} s)"
    )
    print(
        f"CPU time of training and evaluation: median {statistics.median(cpu_times):.1f} s "
        "(with one thread, about the wall time on an otherwise idle machine)"
    )
    print(f"held-out accuracy: min {min(accuracies):.2%} (target: at least {TARGET_ACCURACY:.0%})")
    _shipped()
    if args.page:
        _through_the_page()


def _shipped() -> None:
    weights = MODEL_DIR / WEIGHTS_FILE
    if not weights.is_file():
        print(f"no shipped model at {MODEL_DIR}")
        return
    shipped = load_model()
    ev = evaluate(shipped.model, shipped.vocab, split_corpus().heldout)
    size = weights.stat().st_size + (MODEL_DIR / CONFIG_FILE).stat().st_size
    print(
        f"shipped model: {weights.stat().st_size:,} bytes of weights, {size:,} bytes with its "
        f"config; held-out {ev.correct}/{ev.n} = {ev.accuracy:.2%} right payer, "
        f"{ev.exact}/{ev.n} exact"
    )


def _through_the_page() -> None:
    """The default settings trained by pressing Train on the page, as a learner does."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.query_params["lang"] = "en"
    at.run()
    at.switch_page("pages/13_training.py")
    at.run()
    start = time.perf_counter()
    at.button("_training.train").click().run()
    total = time.perf_counter() - start
    said = [m.value for m in [*at.success, *at.info] if m.value.startswith(("Trained", "These"))]
    accuracy = [m.value.split("**")[1] for m in at.markdown if "Held-out accuracy" in m.value]
    print(f"through the page: {said[0] if said else 'no result'} {accuracy[0] if accuracy else ''}"
          f" (the whole rerun, with the live curve and the answers: {total:.1f} s)")


if __name__ == "__main__":
    main()
