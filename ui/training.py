"""A training run as the training page shows it: the Train button, the wait for the
machine's one training slot (serving.training_slot) with an estimate of how long, the
live loss curve, and the finished result kept on the learner's own shelf
(serving.results); and, for the pages that run the trained model (13.2, 13.3), the
choice between the shipped model and the learner's own.

    outcome = training.train_button(settings, questions)
    if outcome is not None:  # a finished model for these settings, trained or reused
        outcome.result, outcome.probes, outcome.how

    shown = training.model_choice(device)  # the shipped model unless the learner picks
    shown.trained, shown.key, shown.mine    # one of theirs

A learner's result stays while their session lasts (at most serving.results.PER_LEARNER
of them); other learners' trainings never push it out. When the learner's own newer
results did push it out, the page says so.
"""

from __future__ import annotations

import copy
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from serving.results import Index, Shelf, StepTimes, TimeEstimate
from serving.training_slot import QueueFull, WaitEstimate, training_slot
from tinyformer.lessons import train as tr
from tinyformer.lessons.probe import Inspection, probe
from ui import state
from ui.charts import lines_figure
from ui.fmt import num
from ui.i18n import t
from ui.inputs import choice
from ui.models import shipped_model
from ui.state import kit_key

TIME_LIMIT_S = 90  # the longest one learner may hold the machine's one training slot
SHIPPED = "shipped"  # the model choice's value for the shipped model
# A trained model's name in a link: its settings (model_code)
_CODE = re.compile(r"b\d+-h\d+-d\d+-s\d+-lr[0-9.e+-]+-seed\d+(-n\d+)?")


@dataclass(frozen=True)
class Outcome:
    how: str  # "trained" (this learner's run) or "reused" (these settings, trained before)
    result: tr.TrainResult
    probes: list[Inspection]  # one per question, probed once when trained


@st.cache_resource(show_spinner=False)
def _index() -> Index:
    """The results some session still holds, for reuse by everyone in this process."""
    return Index()


@st.cache_resource(show_spinner=False)
def step_times() -> StepTimes:
    """Seconds per step of each model size trained in this process: the queue's estimate."""
    return StepTimes()


_SHELF = "_training.shelf"  # one shelf per session, whichever page reads it


def shelf() -> Shelf:
    """This learner's finished results (their session's own)."""
    if not isinstance(st.session_state.get(_SHELF), Shelf):
        st.session_state[_SHELF] = Shelf(_index())
    return st.session_state[_SHELF]


def model_code(settings: tr.TrainSettings) -> str:
    """A trained model's name in a link and in the queue: its settings, short."""
    code = (f"b{settings.layers}-h{settings.heads}-d{settings.width}-s{settings.steps}"
            f"-lr{state.number_text(settings.learning_rate)}-seed{settings.seed}")
    default = tr.DEFAULT_SETTINGS.batch_size
    return code if settings.batch_size == default else f"{code}-n{settings.batch_size}"


def _size(settings: tr.TrainSettings) -> tuple:
    """What sets the time of one step (not the steps, rate or seed)."""
    return settings.layers, settings.heads, settings.width, settings.batch_size, settings.device


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

    def waiting(place: WaitEstimate) -> None:
        note.info(queue_text(place), icon=":material/hourglass_top:")

    mine = shelf()
    # Reused at its turn (no training): no time; else as long as this size took here.
    quick = settings in mine or mine.index.find(settings) is not None
    timed = TimeEstimate(0.0, 0.0) if quick else step_times().estimate(_size(settings),
                                                                       settings.steps)
    info = {"key": model_code(settings), "train_s": timed and timed.train_s,  # None: unknown
            "extra_s": timed and timed.extra_s}
    st.session_state[kit_key("running")] = True  # still there next run: it was stopped
    try:
        with training_slot().turn(on_wait=waiting, info=info, limit_s=TIME_LIMIT_S) as ticket:
            note.empty()
            # This learner, or another one meanwhile, may have trained these settings.
            if settings in mine or mine.reuse(settings):
                how = "reused"
            else:
                def tracked(p: tr.Progress) -> bool:  # others estimate their wait from it
                    ticket.update(done=p.step / p.steps, elapsed_s=p.seconds)
                    return report(p)

                how = _train(settings, questions, tracked, note)
    except QueueFull:
        note.warning(t("training.queue_full"))
        how = None
    del st.session_state[kit_key("running")]
    for place in (bar, stop, curve):
        place.empty()
    return how


def _train(settings, questions, report, note) -> str | None:
    every = max(1, min(10, settings.steps // 10))  # about ten points on the curve
    start = time.perf_counter()
    result = tr.train(settings, report, every)
    if result.stopped:  # over the time limit: nothing unfinished is kept
        note.warning(t("training.time_limit", s=TIME_LIMIT_S, step=result.steps_done,
                       steps=settings.steps))
        how, kept = None, None
    else:
        how, kept = "trained", (result, [probe(tr.as_trained(result), q) for q in questions])
    # What the next learners in the queue will be told to expect from this size
    step_times().record(_size(settings), result.seconds, result.steps_done,
                        time.perf_counter() - start - result.seconds)
    if kept is not None:
        shelf().keep(settings, kept)
    return how


def queue_text(place: WaitEstimate) -> str:
    """The place in the queue and the wait estimated behind it."""
    wait = duration(place.seconds)
    said = (t("training.queue_wait", wait=wait) if place.untimed == 0 else
            t("training.queue_wait_untimed", wait=wait, n=place.untimed, limit=TIME_LIMIT_S))
    return t("training.queue", ahead=place.ahead) + "\n\n" + said


def duration(seconds: float) -> str:
    """A wait as people say it: rounded up to 5 s (at least 5 s), minutes from 60 s."""
    total = max(5, 5 * math.ceil(seconds / 5 - 1e-9))
    minutes, rest = divmod(total, 60)
    if not minutes:
        return t("training.seconds", s=rest)
    if not rest:
        return t("training.minutes_whole", m=minutes)
    return t("training.minutes", m=minutes, s=rest)


# --- The trained model shown on 13.2 and 13.3 ------------------------------------------


@dataclass(frozen=True)
class ShownModel:
    """The model a page runs: the shipped one, or one the learner trained."""

    key: str  # SHIPPED, or the learner's model's code (model_code)
    trained: tr.TrainedModel  # on the device asked for
    steps: int  # steps it trained
    train_questions: int  # questions in its training set
    right: int  # held-out questions whose greedy answer names the right payer
    heldout: int  # held-out questions

    @property
    def mine(self) -> bool:
        return self.key != SHIPPED


def model_choice(device: str) -> ShownModel:
    """Which trained model the page runs: the shipped one by default; the learner's own
    finished trainings (stage 13.1, this session) as further choices. A link that names
    a trained model this learner does not have falls back to the shipped one, with a
    note saying why."""
    yours = {model_code(s): s for s in shelf().newest_first()}  # newest first
    key = state.qualify("model")
    linked = st.query_params.get(key)
    if linked is not None and linked != SHIPPED and linked not in yours:
        del st.query_params[key]  # so the choice below starts from its default, quietly
        if _CODE.fullmatch(linked):
            st.info(t("training.model_not_here"), icon=":material/info:")
        else:
            state.bad_value_note(t("training.model"))
    if not yours:
        st.caption(t("training.model_only_shipped"))
        return _shipped(device)
    picked = choice("model", t("training.model"), [SHIPPED, *yours], SHIPPED,
                    format_func=lambda code: _label(code, yours), options_shrink=True)
    if picked == SHIPPED:
        return _shipped(device)
    result, _ = shelf().get(yours[picked])
    return ShownModel(picked, _on_device(picked, result, device), result.steps_done,
                      len(result.corpus.train), result.heldout.correct, result.heldout.n)


def _label(code: str, yours: dict[str, tr.TrainSettings]) -> str:
    if code == SHIPPED:
        return t("training.model_shipped")
    s = yours[code]
    return t("training.model_yours", layers=s.layers, heads=s.heads, width=s.width,
             steps=s.steps, lr=state.number_text(s.learning_rate), seed=s.seed)


def _shipped(device: str) -> ShownModel:
    trained = shipped_model(device)
    heldout = trained.config["heldout"]
    return ShownModel(SHIPPED, trained, trained.settings.steps,
                      trained.config["corpus"]["train"], heldout["correct"], heldout["n"])


_ON_DEVICE = "_training.on_device"  # (code, device) -> this session's copy there


def _on_device(code: str, result: tr.TrainResult, device: str) -> tr.TrainedModel:
    """The learner's model on `device`: on the CPU the trained one itself (read only, as
    other learners may reuse it), elsewhere a copy kept for this session."""
    trained = tr.as_trained(result)
    if device == "cpu":
        return trained
    copies = st.session_state.setdefault(_ON_DEVICE, {})
    if (code, device) not in copies:
        copies.clear()  # one copy at a time: the model shown
        copies[(code, device)] = copy.deepcopy(result.model).to(device)
    return tr.TrainedModel(copies[(code, device)], trained.vocab, trained.settings,
                           trained.config)
