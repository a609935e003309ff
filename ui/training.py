"""A training run as the training page shows it: the Train button, the wait for the
machine's one training slot (serving.training_slot), the live loss curve, and the
finished result kept on the learner's own shelf (serving.results).

    outcome = training.train_button(settings, questions)
    if outcome is not None:  # a finished model for these settings, trained or reused
        outcome.result, outcome.probes, outcome.how

A learner's result stays while their session lasts (at most serving.results.PER_LEARNER
of them); other learners' trainings never push it out. When the learner's own newer
results did push it out, the page says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from serving.results import Index, Shelf
from serving.training_slot import QueueFull, training_slot
from tinyformer.lessons import train as tr
from tinyformer.lessons.probe import Inspection, probe
from ui.charts import lines_figure
from ui.fmt import num
from ui.i18n import t
from ui.state import kit_key

TIME_LIMIT_S = 90  # the longest one learner may hold the machine's one training slot


@dataclass(frozen=True)
class Outcome:
    how: str  # "trained" (this learner's run) or "reused" (these settings, trained before)
    result: tr.TrainResult
    probes: list[Inspection]  # one per question, probed once when trained


@st.cache_resource(show_spinner=False)
def _index() -> Index:
    """The results some session still holds, for reuse by everyone in this process."""
    return Index()


def shelf() -> Shelf:
    """This learner's finished results (their session's own)."""
    key = kit_key("shelf")
    if not isinstance(st.session_state.get(key), Shelf):
        st.session_state[key] = Shelf(_index())
    return st.session_state[key]


def curves(history: Sequence[tr.Progress]) -> dict[str, list[float]]:
    """The three loss curves of a run, by their translated names."""
    return {
        t("training.train_loss"): [p.train_loss for p in history],
        t("training.heldout_loss"): [p.heldout_loss for p in history],
        t("training.answer_loss"): [p.heldout_answer_loss for p in history],
    }


def train_button(settings: tr.TrainSettings, questions: Sequence[str]) -> Outcome | None:
    """The Train button and what it started; the finished model for `settings` if this
    learner has one (None: the untrained model is still the one on show)."""
    shown = st.session_state.setdefault(kit_key("shown"), {})  # settings -> how
    if st.session_state.pop(kit_key("running"), False):
        st.warning(t("training.stopped"), icon=":material/stop_circle:")
    if st.button(t("training.train"), key=kit_key("train"), type="primary",
                 icon=":material/model_training:"):
        shown[settings] = _run(settings, questions)
    mine = shelf()
    kept = mine.get(settings) if shown.get(settings) else None
    if kept is None:
        if shown.get(settings) and mine.evicted(settings):
            st.warning(t("training.evicted", n=mine.limit), icon=":material/delete_sweep:")
        return None
    result, probes = kept
    return Outcome(shown[settings], result, probes)


def _run(settings: tr.TrainSettings, questions: Sequence[str]) -> str | None:
    """Queue for the slot, train with a live curve, keep the result on the shelf.

    A rerun (Stop, any edit) interrupts at the next st.* call: the slot is freed on
    the way out, and nothing unfinished reaches the shelf."""
    bar, stop, note, curve = st.empty(), st.empty(), st.empty(), st.empty()
    bar.progress(0.0, t("training.starting"))
    stop.button(t("training.stop"), key=kit_key("stop"), icon=":material/stop_circle:")
    history = []

    def report(p: tr.Progress) -> bool:  # True stops the training: over the time limit
        history.append(p)
        bar.progress(p.step / p.steps,
                     t("training.progress", step=p.step, steps=p.steps, s=num(p.seconds, 1)))
        figure = lines_figure([q.step for q in history], curves(history),
                              x_title=t("training.step"), y_title=t("training.loss"),
                              markers=True, x_range=(0, p.steps))
        curve.plotly_chart(figure, width="stretch")
        return p.seconds > TIME_LIMIT_S

    def waiting(ahead: int) -> None:
        note.info(t("training.queue", ahead=ahead), icon=":material/hourglass_top:")

    mine = shelf()
    st.session_state[kit_key("running")] = True  # still there next run: it was stopped
    try:
        with training_slot().turn(on_wait=waiting):
            note.empty()
            # This learner, or another one meanwhile, may have trained these settings.
            if settings in mine or mine.reuse(settings):
                how = "reused"
            else:
                how = _train(settings, questions, report, note)
    except QueueFull:
        note.warning(t("training.queue_full"))
        how = None
    del st.session_state[kit_key("running")]
    for place in (bar, stop, curve):
        place.empty()
    return how


def _train(settings, questions, report, note) -> str | None:
    every = max(1, min(10, settings.steps // 10))  # about ten points on the curve
    result = tr.train(settings, report, every)
    if result.stopped:  # over the time limit: nothing unfinished is kept
        note.warning(t("training.time_limit", s=TIME_LIMIT_S, step=result.steps_done,
                       steps=settings.steps))
        return None
    model = tr.as_trained(result)
    shelf().keep(settings, (result, [probe(model, q) for q in questions]))
    return "trained"
