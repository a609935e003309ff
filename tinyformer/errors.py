"""Errors raised by tinyformer.

Every error is a ``ValueError`` (so plain ``except ValueError`` works) and carries a
stable machine-readable ``key`` plus the ``values`` that went into the English
message. The UI translates by ``key`` and formats the translation with ``values``;
the English message stays readable in a notebook.
"""

from __future__ import annotations

from typing import Any


class TinyformerError(ValueError):
    """Base class: a bad argument, with a stable ``key`` and its ``values``."""

    def __init__(self, key: str, message: str, **values: Any) -> None:
        super().__init__(message)
        self.key = key
        self.values: dict[str, Any] = dict(values)


class ShapeError(TinyformerError):
    """Tensor shapes or widths that do not fit together (e.g. width % heads != 0)."""


class ParameterError(TinyformerError):
    """A setting outside its allowed range (e.g. negative temperature, top_p > 1)."""
