"""Stage 13.1: training turns random weights into a model that answers; watch the loss fall."""

import streamlit as st

from tinyformer.lessons import gradient_step as gs
from tinyformer.lessons import train as tr
from tinyformer.lessons.corpus import (
    PAYER_WORDS,
    RUNNING_EXAMPLE,
    TWIN,
    find_question,
    split_corpus,
)
from tinyformer.lessons.probe import probe
from tinyformer.lessons.shipped_run import load_run
from ui import training
from ui.charts import lines
from ui.example import PAYERS, Q1_WORDS, Q2_WORDS, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.fmt import num, short, vec
from ui.i18n import t
from ui.inputs import choice, number
from ui.notes import random_weights_note, shown_errors
from ui.page import part, section
from ui.tables import table

QUESTIONS = (RUNNING_EXAMPLE, TWIN)
D = tr.DEFAULT_SETTINGS
B = tr.SETTING_BOUNDS
untrained = st.cache_resource(max_entries=16, show_spinner=False)(tr.starting_loss)
recorded_run = st.cache_resource(show_spinner=False)(load_run)  # the shipped run, once


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


@part
def gradient_step() -> None:  # the right answer and the learning rate: this section only
    section(t("training.step_title"))
    base = gs.logit_step()  # 商家 right, as in the exercise
    st.markdown(t("training.step_lead", z=vec(base.logits, 0), p=vec(base.probs)))
    grad = number_exercise("grad", t("training.ex_grad_question", p=num(base.probs[0])),
                           float(base.grad[0]),
                           t("training.ex_grad_steps", p=num(base.probs[0]),
                             g=num(base.grad[0])))
    why = choice_exercise("grad_why", t("training.ex_why_question"),
                          [t(f"training.ex_why_{k}") for k in ("sign", "lr", "small")],
                          correct=0, explanation=t("training.ex_why_explain"))
    if not (grad and why):  # the tables below print p - onehot
        after_answer()
        return
    left, right = st.columns(2)
    with left:
        target = choice("step_y", t("training.step_target"), [0, 1, 2], 0,
                        format_func=PAYERS.__getitem__)
    with right:
        lr = number("step_lr", t("training.step_lr"), *gs.LR_BOUNDS, gs.DEFAULT_LR, step=0.1,
                    help=t("training.step_lr_help", low=short(gs.LR_BOUNDS[0]),
                           high=short(gs.LR_BOUNDS[1])))
    with shown_errors():
        step = gs.logit_step(target, lr)
        head = gs.head_step(target, lr)
        onehot = [float(i == target) for i in range(len(PAYERS))]
        names = ("z", "p", "onehot", "grad", "new_z", "new_p")
        values = (step.logits, step.probs, onehot, step.grad, step.new_logits, step.new_probs)
        table([[num(v) for v in row] for row in values],
              index=[t(f"training.row_{k}", y=PAYERS[target], lr=short(lr)) for k in names],
              columns=list(PAYERS))
        st.markdown(t("training.step_loss", y=PAYERS[target], before=num(step.loss),
                      after=num(step.new_loss), lr=short(lr)))

        table_e = "[" + ", ".join("[" + ", ".join(short(v) for v in row) + "]"
                                  for row in head.table.tolist()) + "]"
        st.markdown(t("training.head_lead", h=vec(head.hidden, 0), e=table_e))
        rows = [[vec(head.table[i]), vec(head.grad_table[i]), vec(head.new_table[i]),
                 num(head.new_logits[i]), num(head.new_probs[i])] for i in range(len(PAYERS))]
        table(rows, index=list(PAYERS), columns=[
            t(f"training.col_{k}", lr=short(lr)) for k in ("e", "grad_e", "new_e", "new_z",
                                                           "new_p")])
        st.markdown(t("training.one_weight", y=PAYERS[target], p=num(head.probs[0]),
                      o=num(onehot[0], 0), h=num(head.hidden[0], 0),
                      g=num(head.grad_table[0, 0]), e=num(head.table[0, 0]), lr=short(lr),
                      new=num(head.new_table[0, 0])))
        squares = " + ".join(f"{short(v)}²" for v in head.hidden.tolist())
        st.markdown(t("training.head_scale", s=short(head.scale), squares=squares,
                      after=num(head.new_loss), direct=num(step.new_loss)))


def from_step_to_training(run) -> None:
    """Teacher forcing on one training text, then what the Train button repeats."""
    section(t("training.forcing_title"))
    forced = gs.teacher_forcing()
    text = forced.example.text
    st.markdown(t("training.forcing_lead", text=text, n=len(forced.pairs)))
    answer_rows = [p.position for p in forced.pairs if p.in_answer]
    table([[p.reads, p.target] for p in forced.pairs],
          index=[p.position for p in forced.pairs], index_name=t("training.col_position"),
          columns=[t(f"training.col_{k}") for k in ("reads", "target")])
    st.caption(t("training.forcing_note", first=answer_rows[0], last=answer_rows[-1],
                 answer=forced.example.answer, n=len(forced.pairs)))
    s = run.settings
    st.markdown(t("training.to_train", steps=s.steps, b=s.batch_size,
                  params=f"{run.parameters:,}"))
    st.markdown(t("training.adamw"))


def shipped_curve(run) -> None:
    """The shipped run, read from its files: nobody queues to see a curve."""
    section(t("training.shipped_title"))
    s = run.settings
    lines(list(run.steps), {t("training.train_loss"): list(run.train_loss),
                            t("training.heldout_loss"): list(run.heldout_loss),
                            t("training.answer_loss"): list(run.answer_loss)},
          key="shipped_curve", x_title=t("training.step"), y_title=t("training.loss"),
          markers=True)
    st.markdown(t("training.shipped_facts", layers=s.layers, heads=s.heads, width=s.width,
                  steps=s.steps, lr=short(s.learning_rate), seed=s.seed,
                  train=f"{run.train_questions:,}", heldout=num(run.heldout_loss[-1]),
                  answer=num(run.answer_loss[-1]), correct=run.correct, n=run.heldout,
                  pct=num(100 * run.correct / run.heldout, 1)))
    st.caption(t("training.curve_note"))


gradient_step()
with shown_errors():
    shipped_run = recorded_run()
    from_step_to_training(shipped_run)
    shipped_curve(shipped_run)

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
    table(columns, index=rows)
    st.caption(t("training.table_note"))
    st.info(t("training.use_elsewhere"), icon=":material/arrow_forward:")
