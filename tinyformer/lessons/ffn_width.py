"""Why a SwiGLU FFN is about 8/3 · d wide (stage 8.2).

A plain FFN of width 4d has two matrices, W_1 [d, 4d] and W_2 [4d, d]: 8d² weights.
SwiGLU has three, W_gate and W_up [d, h] and W_down [h, d]: 3dh weights. With
h = 8d/3 the three hold exactly as many as the two, 3 · d · 8d/3 = 8d², which is why
Llama's FFNs are about 8/3 · d wide. Llama's code then rounds h up to a multiple of 256
(`multiple_of`): for d = 4096, int(2 · 4d / 3) = 10922 becomes 11008. Biases are not
counted (Llama's FFN has none).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from tinyformer.errors import ParameterError

LLAMA_MULTIPLE = 256  # Llama's `multiple_of`: the hidden width is rounded up to it


@dataclass(frozen=True)
class WidthCount:
    """Weights of a plain FFN of width 4d against SwiGLU's three matrices."""

    d: int
    dense_hidden: int  # 4d
    dense_params: int  # 2 · d · 4d = 8d²
    exact_hidden: Fraction  # 8d/3, often not a whole number
    exact_params: int  # 3 · d · 8d/3 = 8d², the same as dense_params
    llama_hidden: int  # int(2 · 4d / 3) rounded up to a multiple of LLAMA_MULTIPLE
    llama_params: int  # 3 · d · llama_hidden


def swiglu_width(d: int, multiple_of: int = LLAMA_MULTIPLE) -> WidthCount:
    """The parameter counts of a width-4d FFN and of SwiGLU at h = 8d/3 (exact, and as
    Llama rounds it)."""
    for name, value in (("d", d), ("multiple_of", multiple_of)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParameterError("kv_not_integer", f"{name} must be a whole number, got {value!r}",
                                 name=name, value=value)
        if value < 1:
            raise ParameterError("kv_not_positive", f"{name} must be at least 1, got {value}",
                                 name=name, value=value)
    dense_hidden = 4 * d
    exact_hidden = Fraction(2 * dense_hidden, 3)  # 8d/3
    exact_params = 3 * d * exact_hidden  # [d, h] twice and [h, d] once
    rounded = -(-int(2 * dense_hidden / 3) // multiple_of) * multiple_of  # Llama's rounding
    return WidthCount(d, dense_hidden, 2 * d * dense_hidden, exact_hidden,
                      int(exact_params), rounded, 3 * d * rounded)
