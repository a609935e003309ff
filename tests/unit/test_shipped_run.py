"""The shipped run's curve (data/model/curve.json) belongs to the shipped weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tinyformer.errors import ParameterError
from tinyformer.lessons.checkpoint import MODEL_DIR
from tinyformer.lessons.shipped_run import CURVE_FILE, load_run


def test_the_curve_ends_where_the_config_says() -> None:
    run = load_run()
    config = json.loads((MODEL_DIR / "config.json").read_text("utf-8"))
    assert run.steps == tuple(range(10, 301, 10))
    assert (run.train_loss[-1], run.heldout_loss[-1], run.answer_loss[-1]) == (
        config["final_losses"]["train"], config["final_losses"]["heldout"],
        config["final_losses"]["heldout_answer"])
    assert (run.correct, run.heldout, run.train_questions) == (487, 490, 1960)
    assert run.heldout_loss[0] > run.heldout_loss[-1] and run.answer_loss[-1] < 0.01


def test_a_curve_of_other_weights_is_refused(tmp_path: Path) -> None:
    for name in ("config.json", CURVE_FILE):
        shutil.copy(MODEL_DIR / name, tmp_path / name)
    curve = json.loads((tmp_path / CURVE_FILE).read_text("utf-8"))
    curve["weights_sha256"] = "0" * 64
    (tmp_path / CURVE_FILE).write_text(json.dumps(curve), "utf-8")
    with pytest.raises(ParameterError) as error:
        load_run(tmp_path)
    assert error.value.key == "trained_model_invalid"
    (tmp_path / CURVE_FILE).unlink()
    with pytest.raises(ParameterError):
        load_run(tmp_path)
