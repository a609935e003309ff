"""'Predict, then reveal': the learner commits to an answer before seeing it."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from ui.i18n import t


def predict_then_reveal(key: str, question: str, options: Sequence[str], correct: int,
                        explanation: str) -> None:
    with st.container(border=True):
        st.markdown(f"**{t('kit.exercise')}** · {question}")
        choice = st.radio(t("kit.your_prediction"), range(len(options)), index=None,
                          format_func=lambda i: options[i], key=f"_{key}__choice")
        if st.button(t("kit.reveal"), key=f"_{key}__reveal", disabled=choice is None):
            if choice == correct:
                st.success(t("kit.right") + " " + explanation)
            else:
                st.warning(t("kit.not_quite", answer=options[correct]) + " " + explanation)
