"""The running example, in one place: the two customer-service questions and the word
tokens the attention stages use (CURRICULUM.md, top).

Stage 1 cuts text into characters; stages 2-6 use whole words (运费, 承担) so that a
table row is a word a learner can read. Real tokenizers do neither exactly: they use
sub-word pieces.
"""

from __future__ import annotations

import streamlit as st

from ui import state
from ui.i18n import current_lang, t
from ui.inputs import text

Q1 = "商品有质量问题，运费谁承担？"  # the merchant pays
Q2 = "无理由退货，运费谁承担？"  # the buyer usually pays
# The twin with as many characters before 运费 as Q1, so that 费 sits at the same
# position in both (a model with position rows then sees the same input row there).
Q2_SAME_PLACE = "商品无理由退货，运费谁承担？"
Q1_WORDS = ("商品", "有", "质量", "问题", "，", "运费", "谁", "承担", "？")
Q2_WORDS = ("无理由", "退货", "，", "运费", "谁", "承担", "？")
TAIL4 = ("运费", "谁", "承担", "？")  # the shared ending, as four positions
TAIL6 = ("问题", "，", "运费", "谁", "承担", "？")  # six positions, for a wider table
PAYERS = ("商家", "买家", "未知")  # merchant, buyer, unknown: the stage 10 vocabulary


def gloss(words) -> None:
    """In the English view, a one-line glossary of the Chinese words a stage shows
    (where they first appear); the Chinese view needs none."""
    if current_lang() != "en":
        return
    known = [w for w in dict.fromkeys(words) if t(f"gloss.{w}") != f"gloss.{w}"]
    pairs = [f"{w} *{t(f'gloss.{w}')}*" for w in known]
    if pairs:
        st.caption(t("kit.glossary") + " " + " · ".join(pairs))


def question_box(name: str, label: str, limit: int) -> str:
    """A sentence box that opens on question 1, with a button for each question of the
    running example (and their glossary): the sentence typed, at most `limit` chars."""
    sentence = text(name, label, Q1, limit)
    with st.container(horizontal=True):
        for n, question in enumerate((Q1, Q2), start=1):
            st.button(f"「{question}」", on_click=st.session_state.__setitem__,
                      args=(state.qualify(name), question), key=state.private(name, f"q{n}"))
    gloss(Q1_WORDS + Q2_WORDS)
    return sentence
