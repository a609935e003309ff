"""Stage 11's cell explanations: for one cell of any intermediate of the decoder's
forward pass, the formula with that cell's own numbers (ui.explain's formats).

    formula(FORMULA[step.name][1], explain.latex_part(explain_cell(step, g, i, c, rows, tok)))
"""

from __future__ import annotations

from collections.abc import Callable

from tinyformer.lessons import forward_pass as fp
from tinyformer.softmax import softmax_steps
from ui import explain
from ui.fmt import num, term
from ui.i18n import t

NORM = r"\frac{{{0}_c - \mu}}{{\sqrt{{\sigma^2 + \epsilon}}}}\,\gamma_c + \beta_c"  # of row i
FORMULA = {  # step name -> (the symbol of one cell, the step's formula)
    "tok": ("e", r"e_i = E[\mathrm{id}_i]"),
    "pos": ("p", r"p_i = P[i]"),
    "x0": ("x", "x = e + p"),
    "norm1": (r"\hat x", r"\hat x_c = " + NORM.format("x")),
    "q": ("q", r"Q = \hat x W_q"),
    "k": ("k", r"K = \hat x W_k"),
    "v": ("v", r"V = \hat x W_v"),
    "scores": ("s", r"S^{(h)} = \frac{Q^{(h)} K^{(h)\top}}{\sqrt{d_h}} + M"),
    "weights": ("a", r"A^{(h)} = \mathrm{softmax}(S^{(h)})"),
    "heads": ("o", r"O^{(h)} = A^{(h)} V^{(h)}"),
    "merged": ("o", r"O = [O^{(0)} \cdots O^{(H-1)}]"),
    "proj": ("y", "y = O W_o"),
    "resid1": ("h", "h = x + y"),
    "norm2": (r"\hat h", r"\hat h_c = " + NORM.format("h")),
    "ffn_hidden": ("u", r"u = \mathrm{GELU}(\hat h W_1 + b_1)"),
    "ffn_out": ("f", "f = u W_2 + b_2"),
    "resid2": ("x'", "x' = h + f"),
    "final": (r"\bar x", r"\bar x_c = " + NORM.format("x'")),
    "logits": ("z", r"z = \bar x W"),
    "probs": ("p", r"p = \mathrm{softmax}(z_{N-1})"),
}


def explain_cell(step: fp.Step, g: int, i: int, c: int, rows: list[str],
                 tok: Callable[[int], str]) -> str:
    """Cell (i, c) of head (or group) g of `step`, explained with its numbers.
    rows: the positions' labels; tok: a token ID as the page names it."""
    cell = step.cell(g, i, c)
    last = len(rows) - 1  # the probabilities are position N-1's
    name = explain.cell_name(FORMULA[step.name][0], last if step.name == "probs" else i, c)
    lead = t(f"forward.cell_{step.name}", i=rows[i], c=c, h=g, row=cell.row, head=cell.head,
             col=cell.column, j=rows[c] if c < len(rows) else c, tok=tok(c))
    value = num(cell.value, 4 if step.name == "probs" else 3)
    if cell.blocked:
        blocked = r"-\infty" if cell.op == "score" else "0"
        return explain.formula(t("forward.cell_blocked", i=rows[i], j=rows[c]),
                               f"{name} = {blocked}")
    if cell.op == "add":
        return explain.sum_of(lead, name, list(cell.parts), cell.value)
    if cell.op == "score" or (cell.op == "linear" and cell.bias is None):
        return explain.dot(lead, name, cell.left, cell.right, cell.value,
                           scale_by=cell.scale_dim)
    if cell.op == "softmax" and step.name == "weights":
        return explain.softmax(lead, name, cell.scores, c)
    return explain.formula(lead, f"{name} = {_worked(step, cell, i, c)} = {value}")


def _worked(step: fp.Step, cell, i: int, c: int) -> str:
    """The middle of "name = ... = value" for the ops written out in one line."""
    if cell.op == "lookup":
        return f"{'E' if step.name == 'tok' else 'P'}_{{{cell.row},{c}}}"
    if cell.op == "norm":
        x, mu, sd, gamma, beta = (term(v, 3) for v in cell.parts)
        return rf"\frac{{{x} - {mu}}}{{{sd}}} \cdot {gamma} + {beta}"
    if cell.op == "concat":
        return rf"o^{{({cell.head})}}_{{{i},{cell.column}}}"
    if cell.op == "softmax":  # V logits: the sum is named, not written out
        s = softmax_steps(cell.scores)
        return (rf"\frac{{e^{{{num(s.scores[c])}}}}}{{\sum_k e^{{z_{{N-1,k}}}}}} = "
                rf"\frac{{{num(s.exps[c], 4)}}}{{{num(s.total, 4)}}}")
    # A row times a column, plus a bias (and GELU in the FFN's hidden layer).
    latex = f"{num(cell.dot)} + {term(cell.bias, 3)}"
    if cell.activation:
        latex = rf"\mathrm{{GELU}}({latex}) = \mathrm{{GELU}}({num(cell.pre)})"
    return latex
