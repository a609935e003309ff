"""Number formatting shared by every page: one precision, one look."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

DECIMALS = 3
# Beyond this a fixed-decimals number is a wall of digits (e^100 has 44, 2 / 1e-300 has
# 301): it is written in powers of ten instead.
HUGE = 1e12


def num(value: float, decimals: int = DECIMALS) -> str:
    """Fixed decimals; -0.000 shows as 0.000; ±inf as ±∞; beyond ±1e12, 2.688e+43."""
    value = float(value)
    if math.isinf(value):
        return "−∞" if value < 0 else "∞"
    if math.isnan(value):
        return "NaN"
    if abs(value) >= HUGE:
        return f"{value:.{decimals}e}"
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def vec(values: Iterable[float], decimals: int = DECIMALS) -> str:
    return "[" + ", ".join(num(v, decimals) for v in values) + "]"


def short(value: float) -> str:
    """Inputs as the learner typed them: 1 rather than 1.000; a value too small for three
    decimals keeps its digits (1e-300, not 0), a huge one its power of ten."""
    value = float(value)
    if not math.isfinite(value):
        return num(value)
    if value != 0 and (abs(value) < 0.0005 or abs(value) >= HUGE):
        return f"{value:.3g}"
    if value.is_integer():
        return str(int(value))
    return num(value).rstrip("0").rstrip(".")


def places(values) -> int:
    """Decimals a typed input needs to be shown as typed (0 for whole numbers, at most
    3): X = [1, 0; 0.5, 2] prints 1 and 0.5, not 1.000 and 0.500."""
    flat = [float(v) for v in (values.flatten().tolist() if hasattr(values, "flatten")
                               else values)]
    return next((p for p in range(3) if all(round(v, p) == v for v in flat)), 3)


def decimals_for(values, digits: int = 3, most: int = 10) -> int:
    """Decimals that show the smallest non-zero |value| with `digits` significant digits
    (at least 3): 0.0000454 needs 7."""
    small = min((abs(float(v)) for v in values if float(v)), default=1.0)
    return min(most, max(3, digits - 1 - math.floor(math.log10(small))))


def as_typed(values) -> str:
    """A typed input in LaTeX, as typed: [1, −1] rather than [1.000, −1.000]."""
    rows = values.tolist() if hasattr(values, "tolist") else values
    if rows and isinstance(rows[0], list):
        return latex_matrix(rows, places(values))
    return latex_vec(rows, places(values))


def latex_vec(values: Iterable[float], decimals: int = DECIMALS) -> str:
    return r"\begin{bmatrix}" + " & ".join(num(v, decimals) for v in values) + r"\end{bmatrix}"


def latex_matrix(rows: Sequence[Sequence[float]], decimals: int = DECIMALS) -> str:
    body = r" \\ ".join(" & ".join(_latex_num(v, decimals) for v in row) for row in rows)
    return r"\begin{bmatrix}" + body + r"\end{bmatrix}"


def _latex_num(value: float, decimals: int) -> str:
    value = float(value)
    if math.isinf(value):
        return r"-\infty" if value < 0 else r"\infty"
    return num(value, decimals)


def term(value: float, decimals: int | None = None) -> str:
    """A number inside a sum, negatives in parentheses: 1·(−2). Inputs show as typed
    (decimals=None); computed values with fixed decimals."""
    text = short(value) if decimals is None else num(value, decimals)
    return f"({text})" if float(value) < 0 and text.strip("0.") else text


def dot_terms(a: Iterable[float], b: Iterable[float]) -> str:
    """LaTeX for a dot product written out term by term: 1\\cdot 1 + 0\\cdot(-2)."""
    return " + ".join(f"{term(x)}\\cdot{term(y)}" for x, y in zip(a, b, strict=True))


def shape(tensor) -> str:
    """[1, 2, 6, 4]"""
    return "[" + ", ".join(str(s) for s in tensor.shape) + "]"


_MARKDOWN_SPECIAL = set("\\`*_{}[]()#+-.!|$<>~")


def plain(text: str) -> str:
    """Typed text shown as itself inside Markdown: no emphasis, links or maths."""
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in text)
