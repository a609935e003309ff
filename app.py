"""tinyformer: the entry file and the overview page."""

import streamlit as st

from ui.i18n import current_lang, t
from ui.page import footer_nav, header, setup_page
from ui.stages import PIPELINE, built

stage = setup_page("home")
header(stage)

st.subheader(t("home.pipeline_title"))
per_row = 6
for start in range(0, len(PIPELINE), per_row):
    steps = PIPELINE[start : start + per_row]
    for column, (step, stage_id) in zip(st.columns(per_row), steps, strict=False):
        with column.container(border=True, height="stretch"):
            st.markdown(f"**{t(f'home.step.{step}')}**")
            st.caption(t(f"home.step_note.{step}"))
            if (page := built(stage_id)) is not None:
                st.page_link(page.path, label=t("home.open", n=page.number),
                             icon=":material/arrow_forward:",
                             query_params={"lang": current_lang()})

if (before := built("ngram")) is not None:
    st.page_link(before.path, label=t("home.before"), icon=":material/history_edu:",
                 query_params={"lang": current_lang()})

st.subheader(t("home.example_title"))
st.markdown(t("home.example"))
st.subheader(t("home.classroom_title"))
st.markdown(t("home.classroom"))
footer_nav(stage)
