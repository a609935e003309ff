"""Stage 13.1: training turns random weights into a model that answers; watch the loss fall."""

import pandas as pd
import streamlit as st

from tinyformer import train as tr
from tinyformer.corpus import PAYER_WORDS, RUNNING_EXAMPLE, TWIN, find_question, generate
from tinyformer.probe import probe
from ui.charts import lines, lines_figure
from ui.example import Q1_WORDS, Q2_WORDS, gloss
from ui.exercise import choice_exercise, number_exercise
from ui.fmt import num
from ui.i18n import t
from ui.inputs import number
from ui.notes import random_weights_note, shown_errors
from ui.page import section
from ui.state import kit_key
from ui.training_slot import QueueFull, training_slot

QUESTIONS, D, B = (RUNNING_EXAMPLE, TWIN), tr.DEFAULT_SETTINGS, tr.SETTING_BOUNDS
TIME_LIMIT_S = 90  # the longest one learner may hold the machine's one training slot
untrained = st.cache_resource(max_entries=16, show_spinner=False)(tr.starting_loss)


@st.cache_resource(show_spinner=False)
def finished() -> dict:  # settings -> (fully trained result, its probes), oldest first, shared
    return {}


@st.cache_resource(show_spinner=False)
def shipped() -> tuple:  # its held-out results and both questions' probes, once per process
    model = tr.load_model()
    return (tr.evaluate(model.model, model.vocab, generate().heldout),
            [probe(model, q) for q in QUESTIONS])


def curves(history) -> dict[str, list[float]]:
    return {t("training.train_loss"): [p.train_loss for p in history],
            t("training.heldout_loss"): [p.heldout_loss for p in history],
            t("training.answer_loss"): [p.heldout_answer_loss for p in history]}


def run(settings: tr.TrainSettings, store: dict) -> str | None:
    """Queue for the machine's one training slot, train with a live curve, keep the result.
    A rerun (Stop, any edit) interrupts at the next st.* call: the slot is freed on the way
    out, and nothing unfinished reaches the store."""
    bar, stop, note, curve = (st.empty() for _ in range(4))
    bar.progress(0.0, t("training.starting"))
    stop.button(t("training.stop"), key=kit_key("stop"), icon=":material/stop_circle:")
    history = []

    def report(p) -> bool:  # True stops the training: the time limit is reached
        history.append(p)
        bar.progress(p.step / p.steps, t("training.progress", step=p.step, steps=p.steps,
                                         s=num(p.seconds, 1)))
        curve.plotly_chart(lines_figure([q.step for q in history], curves(history),
                                        x_title=t("training.step"), y_title=t("training.loss"),
                                        markers=True, x_range=(0, p.steps)), width="stretch")
        return p.seconds > TIME_LIMIT_S

    st.session_state[kit_key("running")] = True  # still there next run: it was stopped
    try:
        with training_slot().turn(on_wait=lambda ahead: note.info(
                t("training.queue", ahead=ahead), icon=":material/hourglass_top:")):
            note.empty()  # another learner may have trained these settings meanwhile
            how = "reused" if settings in store else "trained"
            if how == "trained":
                result = tr.train(settings, report, max(1, min(10, settings.steps // 10)))
                if result.stopped:  # over the time limit: nothing unfinished is kept
                    note.warning(t("training.time_limit", s=TIME_LIMIT_S,
                                   step=result.steps_done, steps=settings.steps))
                    how = None
                else:
                    store[settings] = result, [probe(tr.as_trained(result), q) for q in QUESTIONS]
                    if len(store) > 8:  # a few MB each at most
                        del store[next(iter(store))]
    except QueueFull:
        note.warning(t("training.queue_full"))
        how = None
    del st.session_state[kit_key("running")]
    for place in (bar, stop, curve):
        place.empty()
    return how


def answers(ev, seen) -> list[str]:  # held-out count, then both questions' answers
    return [t("training.correct_of", correct=ev.correct, n=ev.n, pct=num(100 * ev.accuracy, 1)),
            *(t("training.answer_cell", answer=s.greedy_answer, m=num(s.word.merchant),
                b=num(s.word.buyer)) for s in seen)]


left, right = st.columns([1, 2], gap="large")
with left:
    section(t("training.settings"))
    layers = number("layers", t("training.layers"), *B["layers"], D.layers, gesture="slider")
    heads = number("heads", t("training.heads"), *B["heads"], D.heads, gesture="slider")
    width = number("width", t("training.width"), *B["width"], D.width, gesture="both",
                   help=t("training.width_help"))
    steps = number("steps", t("training.steps"), *B["steps"], D.steps, gesture="both")
    rate = number("lr", t("training.rate"), *B["learning_rate"], D.learning_rate, step=0.0005,
                  fmt="%.4f")
    seed = number("seed", t("training.seed"), *B["seed"], D.seed)
result = seen = None  # probed once, when trained: a rerun repeats no model run
with right:
    even = untrained(D)
    number_exercise("even", t("training.ex2_question", v=even.vocab), even.even, t(
        "training.ex2_steps", v=even.vocab, even=num(even.even)), tolerance=0.01)
    with shown_errors():
        settings = tr.check_settings(tr.TrainSettings(layers, width, heads, steps, rate, seed))
        start = untrained(settings)
        st.markdown(t("training.untrained", loss=num(start.heldout), v=start.vocab,
                      even=num(start.even)))
        weights_note, shown = st.empty(), st.session_state.setdefault(kit_key("shown"), {})
        if st.session_state.pop(kit_key("running"), False):
            st.warning(t("training.stopped"), icon=":material/stop_circle:")
        if st.button(t("training.train"), key=kit_key("train"), type="primary",
                     icon=":material/model_training:"):
            shown[settings] = run(settings, finished())
        kept = finished().get(settings) if shown.get(settings) else None
        result, seen = kept or (None, None)
        if result is None:  # the model on show is still the untrained one
            with weights_note:
                random_weights_note()
        else:
            (st.info if shown[settings] == "reused" else st.success)(t(
                f"training.{shown[settings]}", steps=result.steps_done,
                s=num(result.seconds, 1)))
            lines([p.step for p in result.history], curves(result.history), key="curve",
                  x_title=t("training.step"), y_title=t("training.loss"), markers=True)
            st.caption(t("training.curve_note"))

choice_exercise("rule", t("training.ex_question"),
                [t(f"training.ex_{k}") for k in ("train", "heldout", "steps")], correct=1,
                explanation=t("training.ex_explain"))
if result is not None:
    section(t("training.results"))
    st.warning(t("training.generated"), icon=":material/gavel:")
    st.markdown(t("training.accuracy", correct=result.heldout.correct, n=result.heldout.n,
                  pct=num(100 * result.heldout.accuracy, 1)))
    gloss([*Q1_WORDS, *Q2_WORDS, *PAYER_WORDS.values()])
    rows = [t("training.row_heldout"), *(t("training.row_question", q=q, payer=PAYER_WORDS[
        find_question(q).payer]) for q in QUESTIONS)]
    columns = {t("training.col_yours"): answers(result.heldout, seen)}
    with shown_errors():
        columns[t("training.col_shipped")] = answers(*shipped())
    st.table(pd.DataFrame(columns, index=rows))
    st.caption(t("training.table_note"))
