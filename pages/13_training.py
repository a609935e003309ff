"""Stage 13.1: training turns random weights into a model that answers; watch the loss fall."""

import pandas as pd
import streamlit as st

from tinyformer.lessons import train as tr
from tinyformer.lessons.corpus import (
    PAYER_WORDS,
    RUNNING_EXAMPLE,
    TWIN,
    find_question,
    split_corpus,
)
from tinyformer.lessons.probe import probe
from ui import training
from ui.charts import lines
from ui.example import Q1_WORDS, Q2_WORDS, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.fmt import num
from ui.i18n import t
from ui.inputs import number
from ui.notes import random_weights_note, shown_errors
from ui.page import section
from ui.tables import table

QUESTIONS = (RUNNING_EXAMPLE, TWIN)
D = tr.DEFAULT_SETTINGS
B = tr.SETTING_BOUNDS
untrained = st.cache_resource(max_entries=16, show_spinner=False)(tr.starting_loss)


@st.cache_resource(show_spinner=False)
def shipped() -> tuple:  # its held-out results and both questions' probes, once per process
    model = tr.load_model()
    heldout = tr.evaluate(model.model, model.vocab, split_corpus().heldout)
    return heldout, [probe(model, q) for q in QUESTIONS]


def answers(ev, seen) -> list[str]:  # held-out count, then both questions' answers
    pct = num(100 * ev.accuracy, 1)
    count = t("training.correct_of", correct=ev.correct, n=ev.n, pct=pct)
    return [count, *(t("training.answer_cell", answer=s.greedy_answer,
                       m=num(s.word.merchant), b=num(s.word.buyer)) for s in seen)]


left, right = st.columns([1, 2], gap="large")
with left:
    section(t("training.settings"))
    layers = number("layers", t("training.layers"), *B["layers"], D.layers, gesture="slider")
    heads = number("heads", t("training.heads"), *B["heads"], D.heads, gesture="slider")
    width = number("width", t("training.width"), *B["width"], D.width, gesture="both",
                   help=t("training.width_help"))
    steps = number("steps", t("training.steps"), *B["steps"], D.steps, gesture="both")
    rate = number("lr", t("training.rate"), *B["learning_rate"], D.learning_rate,
                  step=0.0005, fmt="%.4f")
    seed = number("seed", t("training.seed"), *B["seed"], D.seed)
outcome = None
with right:
    even = untrained(D)
    answered = number_exercise("even", t("training.ex2_question", v=even.vocab), even.even,
                               t("training.ex2_steps", v=even.vocab, even=num(even.even)),
                               tolerance=0.01)
    with shown_errors():
        settings = tr.check_settings(tr.TrainSettings(layers, width, heads, steps, rate, seed))
        start = untrained(settings)
        if answered:  # it prints ln V, the exercise's answer
            st.markdown(t("training.untrained", loss=num(start.heldout), v=start.vocab,
                          even=num(start.even)))
        else:
            after_answer()
        st.markdown(t("training.batch", b=settings.batch_size))
        weights_note = st.empty()
        outcome = training.train_button(settings, QUESTIONS)
        if outcome is None:  # the model on show is still the untrained one
            with weights_note:
                random_weights_note()
        else:
            result = outcome.result
            said = st.info if outcome.how == "reused" else st.success
            said(t(f"training.{outcome.how}", steps=result.steps_done, s=num(result.seconds, 1)))
            lines([p.step for p in result.history], training.curves(result.history),
                  key="curve", x_title=t("training.step"), y_title=t("training.loss"),
                  markers=True)
            st.caption(t("training.curve_note"))

choice_exercise("rule", t("training.ex_question"),
                [t(f"training.ex_{k}") for k in ("train", "heldout", "steps")], correct=1,
                explanation=t("training.ex_explain"))
if outcome is not None:
    result = outcome.result
    section(t("training.results"))
    st.warning(t("training.generated"), icon=":material/gavel:")
    st.markdown(t("training.accuracy", correct=result.heldout.correct, n=result.heldout.n,
                  pct=num(100 * result.heldout.accuracy, 1)))
    gloss([*Q1_WORDS, *Q2_WORDS, *PAYER_WORDS.values()])
    rows = [t("training.row_heldout")]
    for q in QUESTIONS:
        payer = PAYER_WORDS[find_question(q).payer]
        rows.append(t("training.row_question", q=q, payer=payer))
    columns = {t("training.col_yours"): answers(result.heldout, outcome.probes)}
    with shown_errors():
        columns[t("training.col_shipped")] = answers(*shipped())
    table(pd.DataFrame(columns, index=rows))
    st.caption(t("training.table_note"))
    st.info(t("training.use_elsewhere"), icon=":material/arrow_forward:")
