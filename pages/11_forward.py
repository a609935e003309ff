"""Stage 11: the whole decoder, one intermediate at a time, from token IDs to the next token."""

from contextlib import suppress

import streamlit as st

from tinyformer.errors import TinyformerError
from tinyformer.lessons import forward_pass as fp
from tinyformer.lessons import trace as tr
from tinyformer.lessons.corpus import find_question
from ui import explain, sentence
from ui.charts import bars
from ui.example import PAYERS, Q1_WORDS, Q2, Q2_WORDS, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import num, shape
from ui.formula import formula
from ui.forward_cells import FORMULA, explain_cell, trace_button, trace_view
from ui.i18n import t
from ui.inputs import choice, number, text, toggle
from ui.models import shipped_model
from ui.notes import random_weights_note, shown_errors
from ui.page import device_name, part, section

VOCAB = 50  # the article's vocabulary
MAX_LEN = 16  # and its position table


random_run = st.cache_resource(max_entries=32)(fp.seeded_run)  # one run per setting, shared
# Any text of known characters (the teacher's own sentence too): bounded by its length
shipped_run = st.cache_resource(max_entries=16)(
    lambda text, d: tr.text_run(shipped_model(d), text, d))


def step_label(k: int, step: fp.Step) -> str:  # "4 · Block 0 · LayerNorm 1"
    block = "" if step.block is None else t("forward.block", b=step.block) + " · "
    return f"{k + 1} · {block}" + t(f"forward.step_{step.name}")


def weights_row(values: list[float]) -> str:
    """A row of attention weights with one number of decimals: [1, 0, 0] when every
    weight is exactly 0 or 1 (a row the mask leaves one position), else 3 decimals each."""
    exact = all(v in (0.0, 1.0) for v in values)
    return ", ".join(str(int(v)) if exact else num(v) for v in values)


@part
def walk(run: fp.ForwardRun, rows: list[str], tok, answered: bool) -> None:  # this part only
    section(t("forward.walk_title"), folded=True)
    if not answered:  # the weights' tables show the shape and row 0: both answers
        after_answer()
        return
    names = {s.id: step_label(k, s) for k, s in enumerate(run.steps)}
    chosen = choice("step", t("forward.step"), list(names), "tok", widget="slider",
                    format_func=names.get, options_shrink=True)
    step = run.steps[list(names).index(chosen)]
    cfg = run.model.config
    n = len(rows)
    out = step.output
    hd = run.model.head_dim
    grid = run.grid
    st.markdown(t(f"forward.do_{step.name}", n=n, w=cfg.width, h=cfg.heads, hd=hd,
                  ff=4 * cfg.width, v=cfg.vocab, last=n - 1, rows=cfg.max_length, grid=grid))
    if step.name in ("scores", "weights"):
        cols = rows
    elif step.name in ("q", "k", "v", "merged"):  # Q, K, V: column c belongs to head c // hd
        cols = [f"h{c // hd}·{c % hd}" for c in range(out.shape[-1])]
    else:
        cols = [str(c) for c in range(out.shape[-1])]
    first = (0, 0, run.top[0][0]) if step.name == "probs" else (0, n - 1, 0)
    formula(FORMULA[step.name][1], explain.latex_part(explain_cell(step, *first, rows, tok)))
    style = {"colorscale": "Oranges", "zmin": 0} if step.op == "softmax" else diverging(out)
    if step.name == "probs":  # one row of V, drawn `grid` token IDs to a row
        cell = heatmap(out[0, 0].reshape(-1, grid), [str(c) for c in range(grid)],
                       [f"{r * grid} +" for r in range(out.shape[-1] // grid)], key="probs",
                       **style, explain=lambda r, c: explain_cell(step, 0, 0, r * grid + c,
                                                                  rows, tok))
        if cell is not None:
            trace_button(tr.Address(step.id, 0, 0, cell[0] * grid + cell[1]), "probs")
    else:
        for g, column in zip(range(len(out)), st.columns(len(out)), strict=True):
            with column:
                key = f"map_{step.id.replace('.', '_')}_{g}"
                cell = heatmap(out[g], cols, rows, key=key, **style,
                               x_title=t("forward.head", h=g, hd=hd) if len(out) > 1 else "",
                               explain=lambda i, c, g=g: explain_cell(step, g, i, c, rows, tok))
                if cell is not None:
                    trace_button(tr.Address(step.id, g, *cell), key)
    trace_view(run, rows, tok)


trained = choice("model", t("forward.model"), ["random", "trained"], "random",
                 widget="segmented", format_func=lambda m: t(f"forward.model_{m}")) != "random"
shapes = ["[1, 2, 8, 8]", "[1, 8, 50]", "[1, 2, 8, 4]", "[1, 8, 8]"]  # the first is right
shape_answered = choice_exercise("shape", t("forward.ex_question"), shapes, 0,
                                 t("forward.ex_explain"))
a00_answered = number_exercise("a00", t("forward.ex2_question"), 1.0, t("forward.ex2_steps"))
answered = shape_answered and a00_answered  # the run shows both answers
section(t("forward.settings"))
if trained:
    # "q1": the teacher's own sentence (ui/sentence.py), by default question 1
    questions = {"q1": sentence.current(), "q2": Q2}
    question = questions[choice("question", t("forward.question"), list(questions), "q1",
                                format_func=questions.get)]
    with suppress(TinyformerError):  # no shipped model: the run below says so, once
        question = sentence.for_vocab(shipped_model(device_name()).vocab.tokens, question)
    st.info(t("forward.trained_note"), icon=":material/model_training:")
    if find_question(question) is None:
        st.caption(t("forward.not_in_corpus"))
    gloss(Q1_WORDS + Q2_WORDS + PAYERS[:2] + ("商", "买"))
else:
    with st.container(horizontal=True, vertical_alignment="bottom"):
        width = choice("width", t("forward.width"), [4, 8, 12, 16], 8, widget="segmented")
        heads = choice("heads", t("forward.heads"), [1, 2, 3, 4], 2, widget="segmented")
        layers = choice("layers", t("forward.layers"), [1, 2, 3], 1, widget="segmented")
        seed = number("seed", t("forward.seed"), 0, 9999, 7)
    ids_text = text("ids", t("forward.ids"), ", ".join(map(str, fp.ARTICLE_IDS)), 100,
                    help=t("forward.ids_help", v=VOCAB - 1, n=MAX_LEN))
    causal = toggle("causal", t("forward.causal"), True)
    ids = list(fp.ARTICLE_IDS)
    with shown_errors():
        ids = fp.parse_ids(ids_text, VOCAB, MAX_LEN)
    random_weights_note()
with shown_errors():
    if trained:
        run = shipped_run(question, device_name())
    else:
        run = random_run(seed, tuple(ids), device_name(), width=width, heads=heads,
                         layers=layers, causal=causal)
    c = run.model.config
    trace = run.trace
    n = len(run.ids)
    attention = run.attention
    tok = (lambda i: f"{i}「{run.names[i]}」") if trained else str  # an ID, named
    rows = [f"{i} · " + (run.names[v] if trained else f"ID {v}") for i, v in enumerate(run.ids)]
    section(t("forward.run_title"))
    if answered:
        st.markdown(t("forward.run_facts", params=f"{c.parameter_count:,}", h=c.heads,
                      w=c.width, device=run.model.device.type.upper(), n=n, v=c.vocab,
                      logits=shape(trace.logits), attention=shape(trace.attention_weights),
                      hd=c.head_dim))
        mode = "on" if c.causal else "off"
        st.markdown("\n".join(t(f"forward.rows_{mode}", h=h, n=n, last=n - 1,
                                first=weights_row(attention[h, 0].tolist()),
                                all=weights_row(attention[h, -1].tolist()))
                              for h in range(c.heads)))
        said = st.success if c.causal else st.warning
        said(t(f"forward.causal_{mode}", w=num(fp.later_weight(attention)[0, 0])))
        top3 = ", ".join(f"({tok(i)}, {num(p, 4)})" for i, p in run.top[:3])
        st.info(t("forward.last_only", last=n - 1, id=tok(run.ids[-1]), v=c.vocab,
                  logits=shape(trace.logits), top=top3), icon=":material/arrow_forward:")
        bars([tok(i) for i, _ in run.top], {t("forward.prob"): [p for _, p in run.top]},
             key="top", decimals=4, x_title=t("forward.next_id"), height=260)
    else:  # its shapes and rows answer both exercises
        after_answer()
    walk(run, rows, tok, answered)
