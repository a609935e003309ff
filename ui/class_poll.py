"""The class's "predict the next token" poll, on the logits (10.1) and decoding (10.2)
stages, drawn by the class bar (ui/class_session.py) so that the pages stay as they are.

The teacher opens the poll; each learner in the class picks the token they expect next
among the page's candidates (the running example's 商家 / 买家 / 未知 after 运费 谁 承担 ？);
the teacher sees the votes live and shows them to the class. A vote is stored as an
answer to the exercise NAME (its choice's index), with no right or wrong: the class
overview leaves polls out of its share right. That the poll is open is stored as a
revealed pseudo-exercise OPEN, so only the teacher key opens it and followers learn of
it through the same check that brings them a revealed answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from serving.class_store import Answer
from tinyformer.lessons.example import PAYERS
from ui import class_session
from ui.i18n import current_lang, t

STAGES = ("logits", "decoding")
NAME = "poll.next"  # the store's exercise name of a vote
OPEN = "poll.next.open"  # revealed: the teacher has opened the poll
CANDIDATES = PAYERS  # the pages' vocabulary: the tokens a learner can pick


def is_poll(exercise: str) -> bool:
    return exercise.startswith("poll.")


def tally(answers: Sequence[Answer], exercise: str = NAME,
          n: int = len(CANDIDATES)) -> list[int]:
    """Votes per candidate, in the candidates' order; a vote that names no candidate (a
    crafted one) is not counted."""
    counts = [0] * n
    for answer in answers:
        if answer.exercise == exercise and answer.answer.isdigit() and int(answer.answer) < n:
            counts[int(answer.answer)] += 1
    return counts


def label(word: str) -> str:
    """A candidate as the learner reads it: glossed in the English view."""
    return word if current_lang() == "zh" else f"{word} ({t(f'gloss.{word}')})"


def draw(stage_id: str) -> None:
    """Under the class bar on 10.1 and 10.2: the teacher's poll controls and live votes,
    or a learner's vote and, once shown, the class's votes."""
    if stage_id not in STAGES or class_session.code() is None:
        return
    opened = class_session.shown(stage_id, OPEN)
    if class_session.teaching():
        _teacher(stage_id, opened)
    elif opened:
        _learner(stage_id)


def _teacher(stage_id: str, opened: bool) -> None:
    if not opened:
        st.button(t("class.poll_open"), key="_class_poll_open", icon=":material/how_to_vote:",
                  on_click=class_session.reveal, args=(stage_id, OPEN))
        return
    with st.container(border=True, key="class_poll"):
        st.markdown(t("class.poll_question"))
        votes(stage_id)
        if not class_session.shown(stage_id, NAME):
            st.button(t("class.poll_show"), key="_class_poll_show",
                      on_click=class_session.reveal, args=(stage_id, NAME))


def _learner(stage_id: str) -> None:
    with st.container(border=True, key="class_poll"):
        st.markdown(t("class.poll_question"))
        labels = [label(word) for word in CANDIDATES]  # in this run's language
        pick = st.radio(t("class.poll_pick"), range(len(CANDIDATES)), index=None,
                        format_func=labels.__getitem__, horizontal=True,
                        key=f"_class_poll.{stage_id}", label_visibility="collapsed")
        closed = class_session.shown(stage_id, NAME)  # the votes are shown: no more
        if st.button(t("class.poll_send"), key=f"_class_poll_send.{stage_id}",
                     disabled=pick is None or closed):
            class_session.record(stage_id, NAME, str(pick), False)
            st.session_state[f"_class_poll_sent.{stage_id}"] = pick
        sent = st.session_state.get(f"_class_poll_sent.{stage_id}")
        if sent is not None:
            st.caption(t("class.poll_sent", word=label(CANDIDATES[sent])))
        if closed:
            votes(stage_id)


def votes(stage_id: str) -> None:
    """The class's votes: how many, and one bar per candidate."""
    counts = tally(class_session.answers(stage_id))
    total = sum(counts)
    st.caption(t("class.poll_votes", n=total))
    for word, count in zip(CANDIDATES, counts, strict=True):
        st.progress(count / total if total else 0.0, text=f"{label(word)} · {count}")
