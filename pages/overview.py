"""The overview: the path from text to the next token, each step linked to its stages."""

import streamlit as st

from ui import sentence
from ui.i18n import t
from ui.page import link_to
from ui.stages import PIPELINE, built

PER_ROW = 5

st.subheader(t("home.pipeline_title"))
for start in range(0, len(PIPELINE), PER_ROW):
    steps = PIPELINE[start : start + PER_ROW]
    for column, (step, stage_ids) in zip(st.columns(PER_ROW), steps, strict=False):
        with column.container(border=True, height="stretch"):
            # Title and note in one element: the overview is drawn on every full run
            st.markdown(f"**{t(f'home.step.{step}')}**\n\n:small[{t(f'home.step_note.{step}')}]")
            for page in filter(None, map(built, stage_ids)):
                link_to(page, t("home.open", n=page.number), icon=":material/arrow_forward:")
st.subheader(t("home.example_title"))
st.markdown(t("home.example"))
st.markdown(t("home.sentence_lead"))
sentence.box(where="home")  # the same value as the sidebar's box
st.subheader(t("home.classroom_title"))
st.markdown(t("home.classroom"))
