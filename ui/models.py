"""The trained model the app ships (tinyformer/lessons/data/model/), loaded once per
process and device and shared by every session and page that shows it."""

from __future__ import annotations

import streamlit as st

from tinyformer.lessons.train import TrainedModel, load_model


@st.cache_resource(max_entries=2, show_spinner=False)
def shipped_model(device: str = "cpu") -> TrainedModel:
    """The shipped model on `device` (the sidebar's choice); loading never unpickles.
    Nobody may change it in place: pages read it, they never train it."""
    trained = load_model()
    trained.model.to(device)
    return trained
