"""The overview: the path from text to the next token, each step linked to its stages."""

import streamlit as st

from ui import html_links, sentence, state
from ui.i18n import t
from ui.stages import PIPELINE, built

st.subheader(t("home.pipeline_title"))
# One element for all 15 cards and 25 links: the overview is drawn on every full run.
html_links.draw([html_links.Card(
    t(f"home.step.{step}"), t(f"home.step_note.{step}"),
    tuple((page, t("home.open", n=page.number)) for page in filter(None, map(built, ids))))
    for step, ids in PIPELINE], state.link_params(), t("home.pipeline_title"))
# A heading and its text in one element each, as st.subheader draws it (h3).
st.markdown(f'### {t("home.example_title")}\n\n{t("home.example")}\n\n{t("home.sentence_lead")}')
sentence.box(where="home")  # the same value as every stage's sidebar box
st.markdown(f'### {t("home.classroom_title")}\n\n{t("home.classroom")}')
