"""The overview: the path from text to the next token, each step linked to its stages."""

import streamlit as st

from ui import link_cards, sentence, state
from ui.i18n import t
from ui.stages import PIPELINE, built

st.subheader(t("home.pipeline_title"))
# One element for all 15 cards and 25 links: the overview is drawn on every full run.
link_cards.draw([link_cards.Card(
    t(f"home.step.{step}"), t(f"home.step_note.{step}"),
    tuple((page, t("home.open", n=page.number)) for page in filter(None, map(built, ids))))
    for step, ids in PIPELINE], state.link_params(), t("home.pipeline_title"))
st.subheader(t("home.example_title"))
st.markdown(t("home.example"))
st.markdown(t("home.sentence_lead"))
sentence.box(where="home")  # the same value as the sidebar's box
st.subheader(t("home.classroom_title"))
st.markdown(t("home.classroom"))
