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
    # One row, each side one element (its label and its math): a full run sends 3
    # messages for a formula, where columns sent 5 and separate labels 7 (every element
    # costs about 0.1 ms a run, docs/deploy.md). The frame's CSS (ROW_CSS) gives the
    # sides 2 : 3 like the columns they replace, one above the other where the row is too
    # narrow for both. Both sides are labelled, so the math aligns.
    with st.container(horizontal=True, wrap=True, gap="medium"):
        st.markdown(labelled(t("kit.formula"), symbolic))
        st.markdown(labelled(t("kit.with_numbers"), live))


# A formula's row is the one horizontal block whose elements hold display math (no key
# names it: a key must be unique in a run, and a section's rerun counts anew).
_SIDE = ('[data-testid="stHorizontalBlock"]:has(> [data-testid="stElementContainer"] '
         '.katex-display) > [data-testid="stElementContainer"]')
ROW_CSS = f"""
{_SIDE} {{ flex: 2 1 18rem; min-width: 0; }}
{_SIDE}:last-child {{ flex: 3 1 18rem; }}
"""


def labelled(label: str, latex: str) -> str:
    """Markdown for a small label over display math, the math exactly as st.latex
    writes it ("$$" on lines of their own)."""
    return f":small[{label}]\n\n$$\n{textwrap.dedent(latex).strip()}\n$$"


def formula_steps(symbolic: str, *steps: str) -> None:
    """A formula for a narrow column: the symbols, then each "= ..." step on its own
    line (side by side, the live numbers would get only part of the width)."""
    formula(rf"\begin{{aligned}}{symbolic} &= " + r" \\ &= ".join(steps) + r"\end{aligned}")
