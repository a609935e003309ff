"""The trained model on disk: safetensors weights plus a JSON config (nothing is ever
unpickled), checked on loading against their sizes, their hash and the model's shape.

The shipped model is package data (tinyformer/lessons/data/model/), found next to this
module wherever the package is installed, not relative to a checkout."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import load_file, save_file

from tinyformer.errors import ParameterError
from tinyformer.lessons.limits import check_classroom
from tinyformer.lessons.train_settings import MAX_LENGTH, TrainSettings, check_settings
from tinyformer.model import DecoderConfig, TinyDecoder
from tinyformer.tokenizer import CharVocab

if TYPE_CHECKING:
    from tinyformer.lessons.train import TrainResult

MODEL_DIR = Path(__file__).resolve().parent / "data" / "model"  # the shipped model
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
FORMAT = "tinyformer-trained-v1"
MAX_WEIGHTS_BYTES = 8 * 1024**2
MAX_CONFIG_BYTES = 1024**2
MAX_VOCAB = 4096


@dataclass(frozen=True)
class TrainedModel:
    """A model loaded from disk (or just trained), with its vocabulary and config."""

    model: TinyDecoder
    vocab: CharVocab
    settings: TrainSettings
    config: dict[str, Any]


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
        sizes = check_classroom(DecoderConfig.from_dict(config["model"]))  # names, types, bounds
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
