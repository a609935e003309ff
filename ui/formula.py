"""A formula twice: its symbolic form, and beside it the same with the live numbers."""

from __future__ import annotations

import streamlit as st

from ui import handout
from ui.i18n import t


def formula(symbolic: str, live: str | None = None) -> None:
    handout.add("formula", (symbolic, live))
    if live is None:
        st.latex(symbolic)
        return
    left, right = st.columns([2, 3], vertical_alignment="top")
    with left:
        st.caption(t("kit.formula"))  # both sides captioned, so the two lines align
        st.latex(symbolic)
    with right:
        st.caption(t("kit.with_numbers"))
        st.latex(live)


def formula_steps(symbolic: str, *steps: str) -> None:
    """A formula for a narrow column: the symbols, then each "= ..." step on its own
    line (side by side, the live numbers would get only part of the width)."""
    formula(rf"\begin{{aligned}}{symbolic} &= " + r" \\ &= ".join(steps) + r"\end{aligned}")
