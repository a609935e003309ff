"""Stage 11: the whole decoder, one intermediate at a time, from token IDs to the next token."""

import streamlit as st

from tinyformer import forward_pass as fp
from tinyformer.softmax import softmax_steps
from ui import explain
from ui.charts import bars
from ui.example import PAYERS, Q1, Q1_WORDS, Q2, Q2_WORDS, gloss
from ui.exercise import choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import num, shape, short, term
from ui.formula import formula
from ui.i18n import t
from ui.inputs import choice, number, text, toggle
from ui.models import shipped_model
from ui.notes import random_weights_note, shown_errors
from ui.page import device_name, part, section

VOCAB, MAX_LEN = 50, 16  # the article's vocabulary and position table
QUESTIONS = {"q1": Q1, "q2": Q2}  # what the trained model reads
NORM = r"\frac{{{0}_c - \mu}}{{\sqrt{{\sigma^2 + \epsilon}}}}\,\gamma_c + \beta_c"  # of row i
FORMULA = {  # step name -> (the symbol of one cell, the step's formula)
    "tok": ("e", r"e_i = E[\mathrm{id}_i]"), "pos": ("p", r"p_i = P[i]"), "x0": ("x", "x = e + p"),
    "norm1": (r"\hat x", r"\hat x_c = " + NORM.format("x")), "q": ("q", r"Q = \hat x W_q"),
    "k": ("k", r"K = \hat x W_k"), "v": ("v", r"V = \hat x W_v"),
    "scores": ("s", r"S^{(h)} = \frac{Q^{(h)} K^{(h)\top}}{\sqrt{d_h}} + M"),
    "weights": ("a", r"A^{(h)} = \mathrm{softmax}(S^{(h)})"), "proj": ("y", "y = O W_o"),
    "heads": ("o", r"O^{(h)} = A^{(h)} V^{(h)}"), "resid1": ("h", "h = x + y"),
    "merged": ("o", r"O = [O^{(0)} \cdots O^{(H-1)}]"), "ffn_out": ("f", "f = u W_2 + b_2"),
    "norm2": (r"\hat h", r"\hat h_c = " + NORM.format("h")), "resid2": ("x'", "x' = h + f"),
    "ffn_hidden": ("u", r"u = \mathrm{GELU}(\hat h W_1 + b_1)"), "logits": ("z", r"z = \bar x W"),
    "final": (r"\bar x", r"\bar x_c = " + NORM.format("x'")),
    "probs": ("p", r"p = \mathrm{softmax}(z_{N-1})"),
}


random_run = st.cache_resource(max_entries=32)(fp.seeded_run)  # one run per setting, shared
shipped_run = st.cache_resource(max_entries=4)(lambda q, d: fp.trained_run(q, d, shipped_model(d)))


def explain_cell(step: fp.Step, g: int, i: int, c: int, rows: list[str], tok) -> str:
    cell, last = step.cell(g, i, c), len(rows) - 1  # the probabilities are position N-1's
    name = explain.cell_name(FORMULA[step.name][0], last if step.name == "probs" else i, c)
    lead = t(f"forward.cell_{step.name}", i=rows[i], c=c, h=g, row=cell.row, head=cell.head,
             col=cell.column, j=rows[c] if c < len(rows) else c, tok=tok(c))
    value = num(cell.value, 4 if step.name == "probs" else 3)
    if cell.blocked:
        return explain.formula(t("forward.cell_blocked", i=rows[i], j=rows[c]),
                               f"{name} = " + (r"-\infty" if cell.op == "score" else "0"))
    if cell.op == "add":
        return explain.sum_of(lead, name, list(cell.parts), cell.value)
    if cell.op == "score" or (cell.op == "linear" and cell.bias is None):
        return explain.dot(lead, name, cell.left, cell.right, cell.value, scale_by=cell.scale_dim)
    if cell.op == "softmax" and step.name == "weights":
        return explain.softmax(lead, name, cell.scores, c)
    if cell.op == "lookup":
        latex = f"{'E' if step.name == 'tok' else 'P'}_{{{cell.row},{c}}}"
    elif cell.op == "norm":
        x, mu, sd, gamma, beta = (term(v, 3) for v in cell.parts)
        latex = rf"\frac{{{x} - {mu}}}{{{sd}}} \cdot {gamma} + {beta}"
    elif cell.op == "concat":
        latex = rf"o^{{({cell.head})}}_{{{i},{cell.column}}}"
    elif cell.op == "softmax":  # V logits: the sum is named, not written out
        s = softmax_steps(cell.scores)
        latex = (rf"\frac{{e^{{{num(s.scores[c])}}}}}{{\sum_k e^{{z_{{N-1,k}}}}}} = "
                 rf"\frac{{{num(s.exps[c], 4)}}}{{{num(s.total, 4)}}}")
    else:  # a row times a column, plus a bias (and GELU in the FFN's hidden layer)
        latex = f"{num(cell.dot)} + {term(cell.bias, 3)}"
        if cell.activation:
            latex = rf"\mathrm{{GELU}}({latex}) = \mathrm{{GELU}}({num(cell.pre)})"
    return explain.formula(lead, f"{name} = {latex} = {value}")


@part
def walk(run: fp.ForwardRun, rows: list[str], tok) -> None:  # the step slider: this part only
    section(t("forward.walk_title"), folded=True)
    names = {s.id: f"{k + 1} · " + ("" if s.block is None else t("forward.block", b=s.block + 1)
             + " · ") + t(f"forward.step_{s.name}") for k, s in enumerate(run.steps)}
    step = run.steps[list(names).index(choice("step", t("forward.step"), list(names), "tok",
                                              widget="slider", format_func=names.get,
                                              options_shrink=True))]
    cfg, n, out, hd, grid = run.model.config, len(rows), step.output, run.model.head_dim, run.grid
    st.markdown(t(f"forward.do_{step.name}", n=n, w=cfg.width, h=cfg.heads, hd=hd,
                  ff=4 * cfg.width, v=cfg.vocab, last=n - 1, rows=cfg.max_length, grid=grid))
    cols = rows if step.name in ("scores", "weights") else [
        f"h{c // hd}·{c % hd}" if step.name in ("q", "k", "v", "merged") else str(c)
        for c in range(out.shape[-1])]  # Q, K, V: column c belongs to head c // hd
    first = (0, 0, run.top[0][0]) if step.name == "probs" else (0, len(rows) - 1, 0)
    formula(FORMULA[step.name][1], explain.latex_part(explain_cell(step, *first, rows, tok)))
    style = {"colorscale": "Oranges", "zmin": 0} if step.op == "softmax" else diverging(out)
    if step.name == "probs":  # one row of V, drawn `grid` token IDs to a row
        heatmap(out[0, 0].reshape(-1, grid), [str(c) for c in range(grid)],
                [f"{r * grid} +" for r in range(out.shape[-1] // grid)], key="probs", **style,
                explain=lambda r, c: explain_cell(step, 0, 0, r * grid + c, rows, tok))
        return
    for g, column in zip(range(len(out)), st.columns(len(out)), strict=True):
        with column:
            heatmap(out[g], cols, rows, key=f"map_{step.id.replace('.', '_')}_{g}", **style,
                    x_title=t("forward.head", h=g, hd=hd) if len(out) > 1 else "",
                    explain=lambda i, c, g=g: explain_cell(step, g, i, c, rows, tok))


trained = choice("model", t("forward.model"), ["random", "trained"], "random",
                 widget="segmented", format_func=lambda m: t(f"forward.model_{m}")) != "random"
shapes = ["[1, 2, 8, 8]", "[1, 8, 50]", "[1, 2, 8, 4]", "[1, 8, 8]"]  # the first is right
choice_exercise("shape", t("forward.ex_question"), shapes, 0, t("forward.ex_explain"))
number_exercise("a00", t("forward.ex2_question"), 1.0, t("forward.ex2_steps"))
section(t("forward.settings"))
if trained:
    question = QUESTIONS[choice("question", t("forward.question"), list(QUESTIONS), "q1",
                                format_func=QUESTIONS.get)]
    st.info(t("forward.trained_note"), icon=":material/model_training:")
    gloss(Q1_WORDS + Q2_WORDS + PAYERS[:2] + ("商", "买"))
else:
    with st.container(horizontal=True, vertical_alignment="bottom"):
        width = choice("width", t("forward.width"), [4, 8, 12, 16], 8, widget="segmented")
        heads = choice("heads", t("forward.heads"), [1, 2, 3, 4], 2, widget="segmented")
        layers = choice("layers", t("forward.layers"), [1, 2, 3], 1, widget="segmented")
        seed = number("seed", t("forward.seed"), 0, 9999, 7)
    ids_text = text("ids", t("forward.ids"), ", ".join(map(str, fp.ARTICLE_IDS)), 100,
                    help=t("forward.ids_help", v=VOCAB - 1, n=MAX_LEN))
    causal, ids = toggle("causal", t("forward.causal"), True), list(fp.ARTICLE_IDS)
    with shown_errors():
        ids = fp.parse_ids(ids_text, VOCAB, MAX_LEN)
    random_weights_note()
with shown_errors():
    run = shipped_run(question, device_name()) if trained else random_run(
        seed, tuple(ids), device_name(), width=width, heads=heads, layers=layers, causal=causal)
    c, trace, n, attention = run.model.config, run.trace, len(run.ids), run.attention
    tok = (lambda i: f"{i}「{run.names[i]}」") if trained else str  # an ID, named
    rows = [f"{i} · " + (run.names[v] if trained else f"ID {v}") for i, v in enumerate(run.ids)]
    section(t("forward.run_title"))
    st.markdown(t("forward.run_facts", params=f"{c.parameter_count:,}", h=c.heads, w=c.width,
                  device=run.model.device.type.upper(), logits=shape(trace.logits), n=n,
                  v=c.vocab, attention=shape(trace.attention_weights), hd=c.head_dim))
    mode = "on" if c.causal else "off"
    st.markdown("\n".join(t(f"forward.rows_{mode}", h=h, n=n, last=n - 1,
                            first=", ".join(map(short, attention[h, 0].tolist())),
                            all=", ".join(map(short, attention[h, -1].tolist())))
                          for h in range(c.heads)))
    (st.success if c.causal else st.warning)(t(f"forward.causal_{mode}",
                                               w=num(fp.later_weight(attention)[0, 0])))
    st.info(t("forward.last_only", last=n - 1, id=tok(run.ids[-1]), v=c.vocab, logits=shape(
        trace.logits), top=", ".join(f"({tok(i)}, {num(p, 4)})" for i, p in run.top[:3])),
            icon=":material/arrow_forward:")
    bars([tok(i) for i, _ in run.top], {t("forward.prob"): [p for _, p in run.top]},
         key="top", decimals=4, x_title=t("forward.next_id"), height=260)
    walk(run, rows, tok)
