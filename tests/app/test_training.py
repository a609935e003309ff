"""Stage 13.1 in AppTest: settings, a live training, reuse, the queue and the Stop path.

Trainings here are tiny (6 steps of a 1-block, width-8 model) so each takes well under
a second of CPU. What the page sends while it runs (the live curve, the queue message)
is recorded by wrapping DeltaGenerator.plotly_chart / .info, which placeholders call:
AppTest itself only keeps the last state of each element. Every wait is bounded.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from serving.training_slot import DIRECTORY_ENV, training_slot
from tests.app.helpers import (
    answer,
    assert_clean,
    open_page,
    page_text,
    reveal,
    tables,
)
from tinyformer.lessons import gradient_step as gs
from tinyformer.lessons import train as tr
from tinyformer.lessons.corpus import split_corpus
from tinyformer.lessons.example import RUNNING_EXAMPLE, TWIN
from tinyformer.lessons.probe import probe
from tinyformer.lessons.shipped_run import load_run
from ui.fmt import num
from ui.i18n import catalogue
from ui.inputs import number_shown

PAGE = "pages/13_training.py"
TRAIN = "_training.train"
LIMIT_S = 30.0  # the longest any test waits for a held slot to be released
TINY = {"training.layers": "1", "training.heads": "1", "training.width": "8",
        "training.steps": "6", "training.lr": "0.01"}
ANSWERED = {"_training.ex.even.answered": 4.745}  # the untrained loss, beside ln V, shows then
STEP_ANSWERED = {"_training.ex.grad.answered": -0.335, "_training.ex.grad_why.answered": 0}
SHIPPED_POINTS = len(load_run().steps)  # the shipped curve, drawn on every run (30 points)


def text(lang: str, key: str, **values) -> str:
    return catalogue(lang)[key].format(**values)


def before_seconds(lang: str, key: str, **values) -> str:
    """A message up to its measured seconds, which no test can know."""
    return catalogue(lang)[key].split("{s}")[0].format(**values)


def tiny(seed: int) -> tuple[dict[str, str], tr.TrainSettings]:
    """Link parameters and the settings they mean; each test its own seed, so a result
    cached by another test is never mistaken for this one's."""
    settings = tr.TrainSettings(layers=1, heads=1, width=8, steps=6, learning_rate=0.01,
                                seed=seed)
    return {**TINY, "training.seed": str(seed)}, settings


@pytest.fixture
def sent(monkeypatch):
    """What placeholders sent during a run: live curves (their point counts) and infos.
    hooks["chart"](count) / hooks["info"](body) run in the script thread before sending."""
    record = {"charts": [], "infos": [], "hooks": {}}
    chart, info = DeltaGenerator.plotly_chart, DeltaGenerator.info

    def plotly_chart(self, figure, *args, **kwargs):
        points = len(figure.data[0].x)
        if points != SHIPPED_POINTS:  # the shipped run's curve is drawn on every run
            record["charts"].append(points)
            record["hooks"].get("chart", lambda n: None)(points)
        return chart(self, figure, *args, **kwargs)

    def info_(self, body, *args, **kwargs):
        record["infos"].append(body)
        record["hooks"].get("info", lambda b: None)(body)
        return info(self, body, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "plotly_chart", plotly_chart)
    monkeypatch.setattr(DeltaGenerator, "info", info_)
    return record


@pytest.fixture
def slot(monkeypatch, tmp_path):
    """The machine's training queue, in a folder of this test alone."""
    monkeypatch.setenv(DIRECTORY_ENV, str(tmp_path / "queue"))
    training_slot.cache_clear()
    yield training_slot()
    training_slot.cache_clear()


def test_defaults(lang):
    at = open_page(PAGE, lang)
    assert_clean(at)
    shown = page_text(at)
    start = tr.starting_loss(tr.DEFAULT_SETTINGS)
    assert num(start.even) not in shown and f"**{num(start.heldout)}**" not in shown  # predict
    assert text(lang, "kit.after_answer") in shown and text(lang, "kit.random_weights") in shown
    assert text(lang, "training.batch", b=32) in shown  # why it pads on the right
    assert text(lang, "training.ex_explain") not in shown
    keys = [b.key for b in at.button]
    assert TRAIN in keys and "_training.stop" not in keys  # Stop appears only while training
    # Teacher forcing on one training text, and the shipped run, before anyone trains
    forced = gs.teacher_forcing()
    table_ = next(f for f in tables(at) if len(f) == len(forced.pairs))
    assert table_.values.tolist() == [[p.reads, p.target] for p in forced.pairs]
    run = load_run()
    assert text(lang, "training.shipped_facts", layers=2, heads=2, width=32, steps=300,
                lr="0.005", seed=0, train="1,960", heldout=num(run.heldout_loss[-1]),
                answer=num(run.answer_loss[-1]), correct=487, n=490, pct="99.4") in shown
    assert f"{run.parameters:,}" in shown
    curve = next(f for f in tables(at) if len(f.columns) == len(run.steps))
    assert curve.iloc[1].tolist() == [num(v) for v in run.heldout_loss]


def test_training_draws_a_growing_curve_then_the_results(sent):
    params, settings = tiny(seed=101)
    at = open_page(PAGE, "en", params=params, state=ANSWERED)
    assert f"**{num(tr.starting_loss(settings).heldout)}**" in page_text(at)  # the link's
    at.button(TRAIN).click().run()
    assert_clean(at)
    assert sent["charts"] == list(range(1, 7))  # one more point at every report
    expected, _ = at.session_state["_training.shelf"].get(settings)  # the page's own run
    assert expected.settings == settings and expected.steps_done == 6  # the link's
    shown = page_text(at)
    assert before_seconds("en", "training.trained", steps=6) in shown
    for p in expected.history:
        assert num(p.heldout_loss) in shown and num(p.heldout_answer_loss) in shown
    ev = expected.heldout
    assert text("en", "training.correct_of", correct=ev.correct, n=ev.n,
                pct=num(100 * ev.accuracy, 1)) in shown
    seen = probe(tr.as_trained(expected), RUNNING_EXAMPLE)
    assert text("en", "training.answer_cell", answer=seen.greedy_answer,
                m=num(seen.word.merchant), b=num(seen.word.buyer)) in shown
    shipped = tr.load_model()  # the comparison column, computed here on its own
    ev = tr.evaluate(shipped.model, shipped.vocab, split_corpus().heldout)
    assert text("en", "training.correct_of", correct=ev.correct, n=ev.n,
                pct=num(100 * ev.accuracy, 1)) in shown
    seen = probe(shipped, TWIN)
    assert text("en", "training.answer_cell", answer=seen.greedy_answer,
                m=num(seen.word.merchant), b=num(seen.word.buyer)) in shown
    assert text("en", "training.generated") in shown


def test_the_same_settings_reuse_the_result_in_another_session(sent):
    params, _ = tiny(seed=102)
    first = open_page(PAGE, "en", params=params)
    first.button(TRAIN).click().run()
    assert sent["charts"]  # it trained
    sent["charts"].clear()
    second = open_page(PAGE, "zh", params=params)  # another learner
    second.button(TRAIN).click().run()
    assert_clean(second)
    assert sent["charts"] == []  # nothing trained again
    shown = page_text(second)
    assert before_seconds("zh", "training.reused", steps=6) in shown
    curves = [[f for f in tables(at) if len(f.columns) == 6] for at in (second, first)]
    assert len(curves[0]) == 1 and (curves[0][0].values == curves[1][0].values).all()


def place_shown(lang: str, body: str) -> int | None:
    """The place in the queue an info shows (None: it shows none)."""
    return next((n for n in (2, 1) if body.startswith(text(lang, "training.queue", ahead=n))),
                None)


def test_a_learner_who_asks_while_others_train_sees_their_place_move_up(sent, slot, lang):
    params, _ = tiny(seed=103 if lang == "zh" else 113)
    # One learner trains (40 s expected, just started), another waits (25 s expected)
    # before this one.
    ahead = [slot.join({"key": "x", "train_s": 40.0}), slot.join({"train_s": 25.0})]
    ahead[0].update(started=time.time())
    fallbacks = [threading.Timer(LIMIT_S, ticket.release) for ticket in ahead]  # never hang
    for timer in fallbacks:
        timer.start()
    waits = {2: text(lang, "training.queue_wait", wait=text(lang, "training.minutes", m=1, s=5)),
             1: text(lang, "training.queue_wait", wait=text(lang, "training.seconds", s=25))}

    def leave(body: str) -> None:  # each time the page shows a place, the first one finishes
        if (place := place_shown(lang, body)) is not None:
            assert body.endswith(waits[place])  # 40 + 25 s, then 25 s: an estimate
            ahead[2 - place].release()

    sent["hooks"]["info"] = leave
    try:
        at = open_page(PAGE, lang, params=params)
        at.button(TRAIN).click().run(timeout=LIMIT_S + 60)
    finally:
        for timer, ticket in zip(fallbacks, ahead, strict=True):
            timer.cancel()
            ticket.release()
    assert_clean(at)
    shown = [p for body in sent["infos"] if (p := place_shown(lang, body)) is not None]
    assert shown[0] == 2 and shown[-1] == 1 and shown == sorted(shown, reverse=True)
    assert sent["charts"] == list(range(1, 7))  # then it trained, when its turn came
    assert text(lang, "training.queue", ahead=1) not in page_text(at)  # gone once it trained
    assert slot.live() == []


def test_stop_interrupts_frees_the_slot_and_keeps_nothing(sent, slot):
    params, _ = tiny(seed=104)

    def press_stop(points: int) -> None:  # what the Stop button does: a rerun request
        if points == 3:
            ctx = get_script_run_ctx()
            ctx.script_requests.request_rerun(RerunData(query_string=ctx.query_string,
                                                        page_script_hash=ctx.page_script_hash))

    sent["hooks"]["chart"] = press_stop
    at = open_page(PAGE, "en", params=params)
    at.button(TRAIN).click().run()
    assert_clean(at)
    assert sent["charts"][:3] == [1, 2, 3] and 6 not in sent["charts"]  # cut short
    shown = page_text(at)
    assert text("en", "training.stopped") in shown and "Trained:" not in shown
    assert slot.live() == []  # the slot was released on the way out
    del sent["hooks"]["chart"]
    sent["charts"].clear()
    at.button(TRAIN).click().run()  # nothing half-trained was kept: it trains afresh
    assert sent["charts"] == list(range(1, 7))
    shown = page_text(at)
    assert before_seconds("en", "training.trained", steps=6) in shown
    assert text("en", "training.stopped") not in shown


def test_width_that_heads_cannot_split_is_one_message_and_the_page_goes_on(lang):
    at = open_page(PAGE, lang, state=ANSWERED)
    at.slider("training.heads").set_value(3).run()
    assert_clean(at)
    assert [e.value for e in at.error] == [text(lang, "errors.train_width_heads", width=32,
                                                heads=3)]
    assert TRAIN not in [b.key for b in at.button]
    at.number_input("_training.width~n").set_value(48).run()
    assert not at.error and TRAIN in [b.key for b in at.button]
    start = tr.starting_loss(replace(tr.DEFAULT_SETTINGS, heads=3, width=48))
    assert f"**{num(start.heldout)}**" in page_text(at)


def test_bad_link_values_fall_back_to_the_defaults_with_a_note(lang):
    bad = {"training.width": "abc", "training.steps": "1e300", "training.lr": "nan",
           "training.layers": "9", "training.heads": "-1", "training.seed": "2.5"}
    at = open_page(PAGE, lang, params=bad, state=ANSWERED)
    assert_clean(at)
    assert len(at.error) == len(bad)
    start = tr.starting_loss(tr.DEFAULT_SETTINGS)
    assert f"**{num(start.heldout)}**" in page_text(at)


def test_exercises():
    at = open_page(PAGE, "en")
    reveal(at, "training.rule", 1)
    assert text("en", "training.ex_explain") in at.success[0].value
    answer(at, "training.even", 4.745)
    assert "Right: 4.745" in page_text(at)
    start = tr.starting_loss(tr.DEFAULT_SETTINGS)  # the untrained loss beside ln V, now
    assert text("en", "training.untrained", loss=num(start.heldout), v=start.vocab,
                even=num(start.even)) in page_text(at)
    answer(at, "training.even", 1.0)
    assert "the answer is 4.745" in page_text(at)


def step_rows(step: gs.LogitStep) -> list[list[str]]:
    onehot = [float(i == step.target) for i in range(3)]
    return [[num(v) for v in row] for row in (step.logits, step.probs, onehot, step.grad,
                                              step.new_logits, step.new_probs)]


def test_a_gradient_step_by_hand_asks_first_then_shows_and_follows_edits():
    at = open_page(PAGE, "en")
    assert "-0.335" not in page_text(at) and "0.245, 0.090" in page_text(at)  # p, not p - 1
    answer(at, "training.grad", -0.335)
    assert "-0.335" in page_text(at) and "∂L/∂E" not in page_text(at)  # the why comes next
    reveal(at, "training.grad_why", 0)
    assert_clean(at)
    first = tables(at)[0]
    assert first.values.tolist() == step_rows(gs.logit_step(0, 1.0))
    assert first.iloc[3].tolist() == ["-0.335", "0.245", "0.090"]  # p - onehot
    shown = page_text(at)
    for number in ("**0.408** before the step, **0.258** after", "= **-0.670**", "**1.670**",
                   "|h|² = 2² + 1² = 5", "falls to **0.036**"):
        assert number in shown
    at.radio("training.step_y").set_value(1).run()  # 买家 is right, half the step
    at.number_input("training.step_lr").set_value(0.5).run()
    assert_clean(at)
    step, head = gs.logit_step(1, 0.5), gs.head_step(1, 0.5)
    assert tables(at)[0].values.tolist() == step_rows(step)
    assert tables(at)[1].iloc[0].tolist()[:3] == [
        "[1.000, 0.000]", f"[{num(head.grad_table[0, 0])}, {num(head.grad_table[0, 1])}]",
        f"[{num(head.new_table[0, 0])}, {num(head.new_table[0, 1])}]"]
    assert f"**{num(step.new_loss)}** after it (learning rate 0.5)" in page_text(at)
    assert at.query_params["training.step_lr"] == "0.5"


def test_a_learning_rate_of_0_1e9_or_nan_gets_a_translated_message():
    lang = "zh"
    at = open_page(PAGE, lang, params={"training.step_lr": "nan"}, state=STEP_ANSWERED)
    assert_clean(at)
    assert len(at.error) == 1  # the link's NaN: the default is used, with a note
    assert tables(at)[0].values.tolist() == step_rows(gs.logit_step(0, 1.0))
    for typed, used in ((1e9, 10.0), (0.0, 0.01)):
        at.number_input("training.step_lr").set_value(typed).run()
        assert_clean(at)
        assert [w.value for w in at.warning] == [text(
            lang, "input.number_clamped", name=text(lang, "training.step_lr"),
            typed=number_shown(typed), lo="0.01", hi="10", used=number_shown(used))]
        assert tables(at)[0].values.tolist() == step_rows(gs.logit_step(0, used))
