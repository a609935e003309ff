"""Stage 8.1: the feed-forward network widens each position, bends it with an activation
and narrows it back; every position alone, with the same weights."""

from functools import partial

import streamlit as st

from tinyformer import ffn
from ui import explain
from ui.charts import lines
from ui.example import TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap, matrix_frame
from ui.fmt import as_typed, dot_terms, latex_matrix, latex_vec, num, places, term, vec
from ui.formula import formula, formula_steps
from ui.i18n import t
from ui.inputs import choice, matrix_input
from ui.notes import shown_errors
from ui.page import part, section
from ui.reveal import Stepper
from ui.tables import table

ACTS = {"relu": r"\mathrm{ReLU}", "gelu": r"\mathrm{GELU}", "silu": r"\mathrm{SiLU}"}
NAMES = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU"}


def weights(name: str, sub: str, default: list, rows: int) -> object:
    """A weight matrix with one named slider per entry: W₁[0,2] is row 0, column 2."""
    cols = len(default[0])
    labels = [f"W{sub}[{r},{c}]" for r in range(rows) for c in range(cols)]
    return matrix_input(name, f"W{sub} [{rows} × {cols}]", default, rows=rows, sliders=True,
                        slider_labels=labels)


def hidden_cell(run, X, w1, b1, act: str, i: int, j: int) -> str:
    """a_{i,j} = ReLU(x_i · column j of W₁ + b₁[j]) with the numbers written out."""
    pre = run.together.hidden_pre[i, j]
    a = run.together.hidden[i, j]
    inner = rf"{dot_terms(X[i].tolist(), w1[:, j].tolist())} + {term(b1[j])}"
    return explain.formula(t("ffn.cell_hidden", w=TAIL4[i], j=j, act=NAMES[act]),
                           rf"{explain.cell_name('a', i, j)} = {ACTS[act]}({inner}) = "
                           rf"{ACTS[act]}({num(pre)}) = {num(a)}")


def out_cell(run, w2, b2, i: int, c: int) -> str:
    """y_{i,c} = a_i · column c of W₂ + b₂[c]."""
    a = run.together.hidden[i].tolist()
    y = run.together.output[i, c]
    return explain.formula(t("ffn.cell_out", w=TAIL4[i], c=c),
                           rf"{explain.cell_name('y', i, c)} = "
                           rf"{dot_terms(a, w2[:, c].tolist())} + {term(b2[c])} = {num(y)}")


@part
def rows_at_once(w1, b1, w2, b2, act: str) -> None:  # X: this section's own input
    section(t("ffn.rows_title"))
    st.markdown(t("ffn.rows_lead"))
    gloss(TAIL4)
    X = matrix_input("X", "X [4 × 2]", [[1, -1], [0, 1], [2, 1], [-1, 0.5]], rows=4)
    with shown_errors():
        run = ffn.position_wise(X, w1, b1, w2, b2, act)
        units = [f"h[{j}]" for j in range(w1.shape[1])]
        cols = st.columns(2)
        with cols[0]:
            heatmap(run.together.hidden, units, TAIL4, key="hidden_map",
                    explain=partial(hidden_cell, run, X, w1, b1, act),
                    title=t("ffn.hidden_table", act=NAMES[act]), **diverging(run.together.hidden))
        with cols[1]:
            heatmap(run.together.output, ["y[0]", "y[1]"], TAIL4, key="out_map",
                    explain=partial(out_cell, run, w2, b2), title=t("ffn.out_table"),
                    **diverging(run.together.output))
        st.success(t("ffn.rows_same", gap=f"{run.gap:.1g}"), icon=":material/equal:")


st.caption(t("ffn.tokens"))
section(t("ffn.hand_title"))
left, right = st.columns([2, 3])
with left:
    x = matrix_input("x", "x", [1, -1], sliders=True, slider_labels=["x[0]", "x[1]"])
    w1 = weights("W1", "₁", [[1, 0, 1], [0, 1, -1]], 2)
    w2 = weights("W2", "₂", [[1, 0], [0, 1], [0, 1]], 3)
    with st.expander(t("ffn.biases")):
        b1 = matrix_input("b1", "b₁", [0, 0, 0], sliders=True,
                          slider_labels=[f"b₁[{i}]" for i in range(3)])
        b2 = matrix_input("b2", "b₂", [0, 0], sliders=True, slider_labels=["b₂[0]", "b₂[1]"])
with right, shown_errors():
    act = choice("act", t("ffn.activation"), list(ACTS), "relu", format_func=NAMES.get,
                 widget="segmented")
    ff = ffn.feed_forward(x, w1, b1, w2, b2, act)
    f = ACTS[act]
    steps = Stepper("hand", [t("ffn.step_widen"), t("ffn.step_act"), t("ffn.step_narrow")])
    if steps.step(1, f"`{vec(ff.hidden_pre)}`"):
        formula_steps(r"h = xW_1 + b_1", rf"{as_typed(x)}{as_typed(w1)} + {as_typed(b1)}",
                latex_vec(ff.hidden_pre))
    if steps.step(2, f"`{vec(ff.hidden)}`"):
        formula_steps(rf"a = {f}(h)", rf"{f}\left({latex_vec(ff.hidden_pre)}\right)",
                latex_vec(ff.hidden))
    if steps.step(3, f"`{vec(ff.output)}`"):
        formula_steps(r"y = aW_2 + b_2",
                      rf"{latex_vec(ff.hidden)}{as_typed(w2)} + {as_typed(b2)}",
                      latex_vec(ff.output))
        st.caption(t("ffn.shape_note", d=x.numel(), h=w1.shape[1]))

section(t("ffn.act_title"), folded=True)
if choice_exercise("neg", t("ffn.ex_question"),
                   [t("ffn.ex_zero"), t("ffn.ex_small"), t("ffn.ex_flip")], correct=1,
                   explanation=t("ffn.ex_explain")):
    with shown_errors():  # the curves answer the exercise
        h = ff.hidden_pre
        at_h = ffn.compare_activations(h)
        hs = [f"h[{i}] = {num(v)}" for i, v in enumerate(h)]
        curves = ffn.activation_curves(min(-4.0, float(h.min()) - 1),
                                       max(4.0, float(h.max()) + 1))
        lines(curves.x.tolist(), {NAMES[n]: v.tolist() for n, v in curves.values.items()},
              key="curves", x_title="h", y_title=t("ffn.act_y"),
              marks={label: float(v) for label, v in zip(hs, h, strict=True)}, table=False)
        table(matrix_frame([v.tolist() for v in at_h.values()], hs, [NAMES[n] for n in at_h]),
              name=t("ffn.act_title"))
        st.markdown(t("ffn.act_note"))
else:
    after_answer()

section(t("ffn.collapse_title"))
with shown_errors():
    flat = ffn.without_activation(x, w1, b1, w2, b2)
    y1 = float(flat.two_step[1])
    whole = y1 == round(y1)  # whole inputs, a whole answer: typed exactly, as a whole number
    typed = number_exercise("y2", t("ffn.ex2_question", x=vec(x, places(x))), y1,
                            t("ffn.ex2_steps", h=vec(flat.hidden), y=vec(flat.two_step)),
                            tolerance=0 if whole else 0.005, decimals=0 if whole else 3)
    why = choice_exercise("merge", t("ffn.why_question"), [t(f"ffn.why_{k}") for k in "abc"],
                          correct=0, explanation=t("ffn.why_explain"))
    if typed and why:  # the merged matrix gives the same output: both answers
        st.markdown(t("ffn.collapse_lead"))
        formula(r"(xW_1 + b_1)W_2 + b_2",
                rf"{latex_vec(flat.hidden)}{as_typed(w2)} + {as_typed(b2)}"
                rf" = {latex_vec(flat.two_step)}")
        formula(r"W_1W_2,\quad b_1W_2 + b_2",
                rf"{as_typed(w1)}{as_typed(w2)} = {latex_matrix(flat.merged_w.tolist())},\quad "
                rf"{latex_vec(flat.merged_b)}")
        formula(r"x(W_1W_2) + (b_1W_2 + b_2)",
                rf"{as_typed(x)}{latex_matrix(flat.merged_w.tolist())}"
                rf" + {latex_vec(flat.merged_b)} = {latex_vec(flat.one_step)}")
        st.success(t("ffn.collapse_same", a=vec(flat.two_step, 6), b=vec(flat.one_step, 6),
                     gap=f"{flat.gap:.1g}"), icon=":material/equal:")
        st.markdown(t("ffn.collapse_why", with_act=vec(ff.output), act=NAMES[act]))
    else:
        after_answer()

rows_at_once(w1, b1, w2, b2, act)
st.caption(t("ffn.context_note"))
