"""Stage 8.1: the feed-forward network widens each position, bends it with an activation
and narrows it back; every position alone, with the same weights."""

from functools import partial

import streamlit as st
import torch

from tinyformer import ffn
from tinyformer.lessons.chain import ChainRun
from ui import chain, explain
from ui.charts import lines
from ui.example import TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import as_typed, dot_terms, latex_matrix, latex_vec, num, places, vec
from ui.formula import formula, formula_steps
from ui.i18n import t
from ui.inputs import choice, matrix_input
from ui.notes import shown_errors
from ui.page import section
from ui.reveal import Stepper
from ui.tables import matrix_table

ACTS = {"relu": r"\mathrm{ReLU}", "gelu": r"\mathrm{GELU}", "silu": r"\mathrm{SiLU}"}
NAMES = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU"}


def weights(name: str, sub: str, default: list, rows: int) -> object:
    """A weight matrix with one named slider per entry: W₁[0,2] is row 0, column 2."""
    cols = len(default[0])
    labels = [f"W{sub}[{r},{c}]" for r in range(rows) for c in range(cols)]
    return matrix_input(name, f"W{sub} [{rows} × {cols}]", default, rows=rows, sliders=True,
                        slider_labels=labels)


def chain_sliders(symbol: str, rows: int, cols: int) -> list[str]:
    """Slider names for a weight of the running example's model: W₁[0,2] (running example)."""
    return [t("ffn.chain_slider", cell=f"{symbol}[{r},{c}]") for r in range(rows)
            for c in range(cols)]


def hidden_cell(run: ChainRun, i: int, j: int) -> str:
    """a_{i,j} = ReLU(H_i · column j of W₁), with the numbers written out."""
    H = run.H  # [N, d]
    w1 = run.params.W1  # [d, F]
    return explain.formula(t("ffn.cell_hidden", w=TAIL4[i], j=j),
                           rf"{explain.cell_name('a', i, j)} = \mathrm{{ReLU}}"
                           rf"({dot_terms(H[i].tolist(), w1[:, j].tolist())}) = "
                           rf"\mathrm{{ReLU}}({num(run.ffn.hidden_pre[i, j])}) = "
                           rf"{num(run.ffn.hidden[i, j])}")


def out_cell(run: ChainRun, i: int, c: int) -> str:
    """FFN(H)_{i,c} = a_i · column c of W₂."""
    a = run.ffn.hidden[i].tolist()  # [F]
    w2 = run.params.W2  # [F, d]
    return explain.formula(t("ffn.cell_out", w=TAIL4[i], c=c),
                           rf"{explain.cell_name('f', i, c)} = "
                           rf"{dot_terms(a, w2[:, c].tolist())} = {num(run.ffn.output[i, c])}")


def running_example() -> None:
    """The running example's model (tinyformer.lessons.chain): its H through its FFN."""
    section(t("ffn.chain_title"))
    st.markdown(t("ffn.chain_lead"))
    gloss(TAIL4)
    left, right = st.columns(2)
    with left:
        chain.edit("W1", t("ffn.chain_w1"), slider_labels=chain_sliders("W₁", 2, 3))
    with right:
        chain.edit("W2", t("ffn.chain_w2"), slider_labels=chain_sliders("W₂", 3, 2))
    run = chain.run()
    st.markdown(t("ffn.chain_input"))
    matrix_table(torch.cat([run.A, run.H], dim=1).tolist(),
                       ["A[0]", "A[1]", "H[0]", "H[1]"], list(TAIL4),
          name=t("ffn.chain_input_table"))
    last = len(TAIL4) - 1
    formula(rf"H_{last} = \mathrm{{RMSNorm}}(X_{last} + A_{last})",
            rf"\mathrm{{RMSNorm}}\left({as_typed(run.X[last])} + {latex_vec(run.A[last])}\right)"
            rf" = \mathrm{{RMSNorm}}\left({latex_vec(run.R[last])}\right)"
            rf" = {latex_vec(run.H[last])}")
    units = [f"a[{j}]" for j in range(run.ffn.hidden.shape[1])]
    cols = st.columns(2)
    with cols[0]:
        heatmap(run.ffn.hidden, units, TAIL4, key="chain_hidden",
                explain=partial(hidden_cell, run), title=t("ffn.hidden_table"),
                **diverging(run.ffn.hidden))
    with cols[1]:
        heatmap(run.ffn.output, ["FFN(H)[0]", "FFN(H)[1]"], TAIL4, key="chain_out",
                explain=partial(out_cell, run), title=t("ffn.out_table"),
                **diverging(run.ffn.output))
    alone = ffn.position_wise(run.H, run.params.W1, None, run.params.W2, None, "relu")
    st.success(t("ffn.rows_same", gap=f"{alone.gap:.1g}"), icon=":material/equal:")
    st.markdown(t("ffn.chain_next", f=vec(run.ffn.output[last])))


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
        matrix_table([v.tolist() for v in at_h.values()], hs, [NAMES[n] for n in at_h],
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

running_example()
st.caption(t("ffn.context_note"))
