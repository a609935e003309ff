"""The running example for the pages (defined once, in tinyformer.lessons.example): the two
customer-service questions and the word tokens the attention stages use (docs/curriculum.md).

Stage 1 cuts text into characters; stages 2-6 use whole words (运费, 承担) so that a
table row is a word a learner can read. Real tokenizers do neither exactly: they use
sub-word pieces.
"""

from __future__ import annotations

import html

import streamlit as st

from tinyformer.lessons.example import PAYERS, TAIL4, TAIL6
from tinyformer.lessons.example import RUNNING_EXAMPLE as Q1
from tinyformer.lessons.example import RUNNING_WORDS as Q1_WORDS
from tinyformer.lessons.example import TWIN as Q2
from tinyformer.lessons.example import TWIN_SAME_PLACE as Q2_SAME_PLACE
from tinyformer.lessons.example import TWIN_WORDS as Q2_WORDS
from ui import state
from ui.a11y import HTML_LANG
from ui.i18n import current_lang, t
from ui.sentence import current, follow

__all__ = ["PAYERS", "Q1", "Q1_WORDS", "Q2", "Q2_SAME_PLACE", "Q2_WORDS", "TAIL4", "TAIL6",
           "gloss", "question_box"]


def gloss(words) -> None:
    """In the English view, a one-line glossary of the Chinese words a stage shows
    (where they first appear); the Chinese view needs none."""
    if current_lang() != "en":
        return
    known = [w for w in dict.fromkeys(words) if t(f"gloss.{w}") != f"gloss.{w}"]
    pairs = [f"{chinese(w)} *{t(f'gloss.{w}')}*" for w in known]
    if pairs:
        st.caption(t("kit.glossary") + " " + " · ".join(pairs), unsafe_allow_html=True)


def chinese(word: str) -> str:
    """A Chinese word inside English text, marked as Chinese (the page's language for
    the Chinese view, ui/a11y.py), so a screen reader reads it with a Chinese voice."""
    return f'<span lang="{HTML_LANG["zh"]}">{html.escape(word)}</span>'


def question_box(name: str, label: str, limit: int) -> str:
    """A sentence box that opens on the teacher's sentence (ui/sentence.py, by default
    question 1) and follows it, with a button for each question of the running example
    and the teacher's own (and their glossary): the sentence typed, at most `limit` chars."""
    sentence = follow(name, label, limit)
    own = current()[:limit]
    with st.container(horizontal=True):
        for part, question in (("own", own), ("q1", Q1), ("q2", Q2)):
            if part != "own" or own not in (Q1, Q2):
                st.button(f"「{question}」", on_click=st.session_state.__setitem__,
                          args=(state.qualify(name), question), key=state.private(name, part))
    gloss(Q1_WORDS + Q2_WORDS)
    return sentence
