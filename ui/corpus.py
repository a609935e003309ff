"""The classroom corpus the app ships (assets/corpus/classroom.txt), read once."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

CORPUS_PATH = Path(__file__).resolve().parent.parent / "assets" / "corpus" / "classroom.txt"


@st.cache_resource
def corpus_text() -> str:
    return CORPUS_PATH.read_text(encoding="utf-8")
