"""A formula twice: its symbolic form, and beside it the same with the live numbers."""

from __future__ import annotations

import textwrap

import streamlit as st

from ui import handout
from ui.i18n import t


def formula(symbolic: str, live: str | None = None) -> None:
    handout.add("formula", (symbolic, live))
    if live is None:
        st.latex(symbolic)
        return
    left, right = st.columns([2, 3], vertical_alignment="top")
    # Each side one element, its label and its math: a full run sends 5 messages for a
    # formula, not 7 (every element costs about 0.1 ms a run, docs/deploy.md). Both
    # sides are labelled, so the two lines of math align.
    left.markdown(labelled(t("kit.formula"), symbolic))
    right.markdown(labelled(t("kit.with_numbers"), live))


def labelled(label: str, latex: str) -> str:
    """Markdown for a small label over display math, the math exactly as st.latex
    writes it ("$$" on lines of their own)."""
    return f":small[{label}]\n\n$$\n{textwrap.dedent(latex).strip()}\n$$"


def formula_steps(symbolic: str, *steps: str) -> None:
    """A formula for a narrow column: the symbols, then each "= ..." step on its own
    line (side by side, the live numbers would get only part of the width)."""
    formula(rf"\begin{{aligned}}{symbolic} &= " + r" \\ &= ".join(steps) + r"\end{aligned}")
