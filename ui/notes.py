"""Short notices shared by pages."""

from __future__ import annotations

import streamlit as st

from ui.i18n import t


def random_weights_note() -> None:
    """Random weights are teaching data: say so wherever a random model is shown."""
    st.info(t("kit.random_weights"), icon=":material/casino:")


def model_error(error: Exception) -> None:
    """A tinyformer error as a translated message (its `key` picks the text)."""
    key = getattr(error, "key", None)
    values = getattr(error, "values", None) or {}
    if key:
        st.error(t(f"errors.{key}", **values), icon=":material/error:")
    else:
        st.error(t("errors.generic"), icon=":material/error:")
