"""A formula twice: its symbolic form, then the same with the live numbers."""

from __future__ import annotations

import streamlit as st

from ui.i18n import t


def formula(symbolic: str, live: str | None = None) -> None:
    st.latex(symbolic)
    if live is not None:
        st.caption(t("kit.with_numbers"))
        st.latex(live)
