"""How one number was computed: the explanations shown under a heatmap when a cell is
clicked. Every page builds its cell explanations from these, so a dot product, a
matrix-product cell, a softmax weight and a blocked cell read the same everywhere.

Each returns Markdown: the page's translated sentence, then the computation with the
live numbers as a display formula (display maths, so fractions are never clipped).
"""

from __future__ import annotations

import torch

from tinyformer.softmax import softmax_steps
from ui.fmt import dot_terms, num, term


def cell_name(symbol: str, row: int, col: int) -> str:
    """a_{1,0}: row, then column, separated so that row 1, column 0 never reads a_{10}."""
    return f"{symbol}_{{{row},{col}}}"


def _block(lead: str, latex: str) -> str:
    return f"{lead}\n\n$$\n{latex}\n$$"


def latex_part(explanation: str) -> str:
    """The formula of an explanation alone, e.g. for a page's live formula."""
    return explanation.split("$$")[1].strip()


def dot(lead: str, name: str, a: torch.Tensor, b: torch.Tensor, value: float, *,
        lhs: str = "", scale_by: float | None = None, decimals: int = 3,
        per_line: int = 4) -> str:
    """name = lhs = a·b term by term [/ sqrt(d)] = value.

    scale_by: d when the dot product is divided by sqrt(d) (a scaled score). Longer
    than per_line products, the sum runs over several lines, so it fits a column.
    """
    raw = float((a * b).sum())
    if len(a) > per_line:
        return _long_dot(lead, name, a, b, value, raw, lhs, scale_by, decimals, per_line)
    terms = dot_terms(a.tolist(), b.tolist())
    steps = [name] + ([lhs] if lhs else [])
    if scale_by is None:
        steps += [terms, num(value, decimals)]
    else:
        steps += [rf"\frac{{{terms}}}{{\sqrt{{{scale_by}}}}}",
                  rf"\frac{{{num(raw, decimals)}}}{{{num(scale_by ** 0.5, decimals)}}}",
                  num(value, decimals)]
    return _block(lead, " = ".join(steps))


def _long_dot(lead: str, name: str, a: torch.Tensor, b: torch.Tensor, value: float,
              raw: float, lhs: str, scale_by: float | None, decimals: int,
              per_line: int) -> str:
    rows = [dot_terms(a[k:k + per_line].tolist(), b[k:k + per_line].tolist())
            for k in range(0, len(a), per_line)]
    terms = r" \\ &\quad + ".join(rows)
    head = rf"{name} &= " + (rf"{lhs} \\ &= " if lhs else "")
    if scale_by is None:
        body = rf"{terms} \\ &= {num(value, decimals)}"
    else:
        body = (rf"\big({terms}\big) / \sqrt{{{scale_by}}} \\ &= "
                rf"\frac{{{num(raw, decimals)}}}{{\sqrt{{{scale_by}}}}} = {num(value, decimals)}")
    return _block(lead, rf"\begin{{aligned}}{head}{body}\end{{aligned}}")


def softmax(lead: str, name: str, row_scores: torch.Tensor, col: int, *,
            decimals: int = 3) -> str:
    """name = e^{s_j} / (e^{s_0} + ... ) = exp / total = weight; blocked keys add 0."""
    steps = softmax_steps(row_scores)
    allowed = [k for k in range(row_scores.shape[-1]) if torch.isfinite(steps.scores[k])]
    shift = float(steps.shift)
    def power(k: int) -> str:
        s = float(steps.scores[k])
        return f"e^{{{num(s, decimals)}}}" if shift == 0 else \
            f"e^{{{num(s, decimals)} - {num(shift, decimals)}}}"
    total = " + ".join(power(k) for k in allowed)
    exps = " + ".join(num(steps.exps[k], decimals) for k in allowed)
    # Two lines, so a row of eight keys still fits a narrow column.
    latex = (rf"\begin{{aligned}}{name} &= \frac{{{power(col)}}}{{{total}}}"
             rf" = \frac{{{num(steps.exps[col], decimals)}}}{{{exps}}} \\ "
             rf"&= \frac{{{num(steps.exps[col], decimals)}}}{{{num(steps.total, decimals)}}}"
             rf" = {num(steps.weights[col], decimals)}\end{{aligned}}")
    return _block(lead, latex)


def blocked(lead: str, name: str) -> str:
    """A blocked cell: its score is -inf, so its weight is exactly 0."""
    return _block(lead, rf"{name} = e^{{-\infty}} / (\ldots) = 0")


def sum_of(lead: str, name: str, parts: list[float], value: float, decimals: int = 3) -> str:
    """name = p_0 + p_1 + ... = value (a residual, a blended output)."""
    terms = " + ".join(term(p, decimals) for p in parts)
    return _block(lead, f"{name} = {terms} = {num(value, decimals)}")


def formula(lead: str, latex: str) -> str:
    """Any other computation, already written out by the page."""
    return _block(lead, latex)
