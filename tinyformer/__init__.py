"""tinyformer: the maths of a decoder-only Transformer, one traced step at a time.

PyTorch only (no Streamlit, Plotly or UI code), usable from a notebook. Every
function that teaches returns a small frozen dataclass holding its intermediates,
so a page can show each step without recomputing it.

Submodules: attention, masks, positional, ffn, moe, norm, sampling, model, ngram,
errors. Bad arguments raise ``tinyformer.errors.TinyformerError`` (a ValueError)
with a stable ``key`` and ``values`` for translation.
"""

from tinyformer import (
    attention,
    errors,
    ffn,
    masks,
    model,
    moe,
    ngram,
    norm,
    positional,
    sampling,
)
from tinyformer.errors import ParameterError, ShapeError, TinyformerError

__all__ = [
    "ParameterError",
    "ShapeError",
    "TinyformerError",
    "attention",
    "errors",
    "ffn",
    "masks",
    "model",
    "moe",
    "ngram",
    "norm",
    "positional",
    "sampling",
]
