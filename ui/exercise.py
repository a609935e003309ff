"""Exercises: the learner commits to an answer before seeing it.

A page places each exercise BEFORE the content that answers it (predict first); the
answer and its worked steps appear only after the learner has answered. Each exercise
returns whether it has been answered; whatever on the page would give its answer away
(a table the answer can be read from, a printed θ) is drawn only then, with
`after_answer()` in its place before. The first answer of an exercise inside a section
(ui.page.part) reruns the whole page, so such content anywhere below appears at once.
The feedback stays on screen until the learner changes the answer. In presenter view
an exercise is one line that the teacher opens when asking the class, so the stage's
first result still fits the projector's first screen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import streamlit as st

from ui import class_session, classroom, handout, state
from ui.fmt import num
from ui.i18n import t
from ui.inputs import refuse_number, row

SHORT_OPTION = 20  # display width (a Chinese character counts 2): these fit side by side


def _width(text: str) -> int:
    return sum(2 if ord(c) >= 0x2E80 else 1 for c in text)


def _box(kind: str, question: str):
    """Where an exercise is drawn: a bordered box with its question, or in presenter view
    a closed expander whose label is the question."""
    heading = f"**{t(kind)}** · {question}"
    if classroom.presenting():
        return st.expander(heading)
    box = st.container(border=True)
    box.markdown(heading)
    return box


# Set when an exercise is answered for the first time in this run: a section (ui.page.part)
# then reruns the whole page, so content gated on the answer elsewhere on it appears.
FIRST_ANSWER = "_exercise_first_answer"


def _answered(key: str) -> object | None:
    """The answer the learner last checked (None: not answered yet)."""
    return st.session_state.get(f"{key}.answered")


def _record(key: str, answer: object) -> None:
    if _answered(key) is None:
        st.session_state[FIRST_ANSWER] = True
    st.session_state[f"{key}.answered"] = answer


def after_answer() -> None:
    """Stands where content that answers an exercise will appear once it is answered."""
    st.caption(t("kit.after_answer"))


def choice_exercise(name: str, question: str, options: Sequence[str], correct: int,
                    explanation: str) -> bool:
    """Multiple choice: pick one, press Reveal, read why. True once answered."""
    key = state.kit_key(f"ex.{name}")
    handout.add("exercise", (question, list(options), options[correct], explanation))
    with _box("kit.exercise", question):
        # The question above says what to do, so the label is for screen readers only;
        # short options sit on one line so the result below stays on a projector's screen.
        choice = st.radio(t("kit.your_prediction"), range(len(options)), index=None,
                          format_func=lambda i: options[i], key=f"{key}.choice",
                          label_visibility="collapsed",
                          horizontal=max(map(_width, options)) <= SHORT_OPTION)
        if st.button(t("kit.reveal"), key=f"{key}.reveal", disabled=choice is None):
            _record(key, choice)
            class_session.record(state.current_stage(), name, str(choice), choice == correct)
        if choice is not None and _answered(key) == choice:
            if choice == correct:
                st.success(t("kit.right") + " " + explanation)
            else:
                st.warning(t("kit.not_quite", answer=options[correct]) + " " + explanation)
        shown = _class_view(name, list(options), t("kit.class_answer", answer=options[correct])
                            + " " + explanation)
    return _answered(key) is not None or shown


def _class_view(name: str, options: list[str] | None, answer: str,
                right: str | None = None) -> bool:
    """In a class session: the teacher's tally under the exercise; for the class, the
    answer and everyone's answers once the teacher shows them. True: shown to the class."""
    stage = state.current_stage()
    class_session.tally(stage, name, options, right)
    if not class_session.revealed(stage, name):
        return False
    st.info(answer, icon=":material/groups:")
    class_session.distribution(stage, name, options, right)
    return True


def number_exercise(name: str, question: str, answer: float, steps: str, *,
                    tolerance: float = 0.005, decimals: int = 3) -> bool:
    """Type a number (the tolerance is shown), press Check, then see the worked steps.
    True once answered."""
    key = state.kit_key(f"ex.{name}")
    handout.add("exercise", (question, None, num(answer, decimals), steps))
    with _box("kit.exercise_number", question):
        line = row()
        label = (t("kit.your_answer_exact") if tolerance == 0
                 else t("kit.your_answer", tol=num(tolerance, decimals)))
        typed = line.number_input(
            label, value=None,
            step=10.0 ** -decimals, format=f"%.{decimals}f", key=f"{key}.value")
        # Enabled while the box is empty too: letters or 1e309 reach us as no number (the
        # box then looks empty), and Check is where the learner learns why.
        pressed = line.button(t("kit.check"), key=f"{key}.check")
        if pressed and (typed is None or not math.isfinite(typed)):
            refuse_number(t("kit.answer_box"))
        elif pressed:
            _record(key, typed)
            class_session.record(state.current_stage(), name, num(typed, decimals),
                                 abs(typed - answer) <= tolerance + 1e-12)
        if typed is not None and _answered(key) == typed:
            if abs(typed - answer) <= tolerance + 1e-12:
                st.success(t("kit.right_number", answer=num(answer, decimals)))
            else:
                st.warning(t("kit.not_quite_number", typed=num(typed, decimals),
                             answer=num(answer, decimals)))
            st.markdown(steps)
        shown = _class_view(name, None, t("kit.class_answer", answer=num(answer, decimals))
                            + " " + steps, num(answer, decimals))
    return _answered(key) is not None or shown
