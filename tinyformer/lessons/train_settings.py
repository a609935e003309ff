"""What a learner may change about a training run, and the bounds that keep it safe on a
shared classroom server."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from tinyformer.errors import ParameterError

MAX_LENGTH = 32  # positions of the model; the longest corpus text has 24 characters

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
