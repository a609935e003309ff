"""Stage 8.2: SwiGLU scales each hidden unit by a continuous gate; a mixture of experts
sends each token to a few of many FFNs and adds their outputs with the router's weights."""

from functools import partial

import streamlit as st
import torch

from tinyformer.ffn import activation_curves, gate_example, swiglu
from tinyformer.lessons.ffn_width import swiglu_width
from tinyformer.moe import expert_budget, mixture_of_experts, random_moe, renormalise
from ui import explain
from ui.charts import bars, lines
from ui.example import TAIL6, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap
from ui.fmt import as_typed, latex_vec, num, short, vec
from ui.formula import formula, formula_steps
from ui.i18n import t
from ui.inputs import choice, matrix_input, number
from ui.notes import random_weights_note, shown_errors
from ui.page import fold, part, section
from ui.reveal import Stepper

# width and hidden size of the random experts
D = 4
HIDDEN = 8


def prob_cell(moe, labels, i: int, e: int) -> str:
    return explain.softmax(t("swiglu_moe.cell_prob", w=TAIL6[i], e=labels[e]),
                           explain.cell_name("p", i, e), moe.route.logits[i], e)


def weight_cell(moe, labels, i: int, e: int) -> str:
    if e not in moe.route.indices[i].tolist():
        return t("swiglu_moe.cell_unused", w=TAIL6[i], e=labels[e])
    tops = " + ".join(num(p) for p in moe.route.top_probs[i])
    latex = (rf"{explain.cell_name('w', i, e)} = \frac{{{num(moe.route.probs[i, e])}}}"
             rf"{{{tops}}} = {num(moe.gates[i, e])}")
    return explain.formula(t("swiglu_moe.cell_weight", w=TAIL6[i], e=labels[e]), latex)


@part
def gate_demo(sw) -> None:  # u and s: this section's own inputs
    section(t("swiglu_moe.gate_title"))
    left, right = st.columns([2, 3])
    with left:
        value = number("u", t("swiglu_moe.value"), -10.0, 10.0, 3.0, step=0.1, gesture="both")
        gate = number("s", t("swiglu_moe.gate"), -0.27, 3.0, 0.2, step=0.01, gesture="both")
        with shown_errors():
            ex = gate_example(value, gate)
            formula(r"s \cdot u", rf"{short(ex.gate)} \cdot {short(ex.value)} = {num(ex.passed)}")
            st.caption(t("swiglu_moe.gate_from", g=num(ex.gate_pre), s=num(ex.gate)))
    with right:
        curve = activation_curves(-6.0, 4.0, 201)
        marks = {f"g[{j}]": float(g) for j, g in enumerate(sw.gate_pre)} | {"s": ex.gate_pre}
        lines(curve.x.tolist(), {"SiLU": curve.values["silu"].tolist()}, key="silu",
              x_title="g", y_title=t("swiglu_moe.gate_axis"), marks=marks, table=False, height=300)
    names = t("swiglu_moe.sep").join(f"g[{j}]" for j in range(len(sw.gate)))
    st.markdown(t("swiglu_moe.gate_note", names=names, gates=vec(sw.gate)))


@part
def experts() -> None:  # E, k, seed and the token: this section only
    section(t("swiglu_moe.moe_title"))
    st.markdown(t("swiglu_moe.moe_lead"))
    choice_exercise("why_renorm", t("swiglu_moe.why_question"),
                    [t(f"swiglu_moe.why_{k}") for k in "abc"], correct=0,
                    explanation=t("swiglu_moe.why_explain"))
    first = float(renormalise(torch.tensor([0.3, 0.2]))[0])
    number_exercise(
        "renorm", t("swiglu_moe.ex2_question"), first, t("swiglu_moe.ex2_steps"), tolerance=0.005
    )
    with st.container(horizontal=True):
        n_experts = number("E", t("swiglu_moe.experts"), 2, 64, 8, gesture="slider")
        k = number("k", t("swiglu_moe.top_k"), 1, 64, 2, gesture="slider")
        seed = number("seed", t("swiglu_moe.seed"), 0, 9999, 0)
    random_weights_note()
    gloss(TAIL6)
    with shown_errors():
        setup = random_moe(len(TAIL6), D, HIDDEN, n_experts, seed)
        moe = mixture_of_experts(setup.x, setup.w_router, setup.experts, k)
        labels = [f"E{e}" for e in range(n_experts)]
        cols = st.columns(2)
        with cols[0]:
            heatmap(
                moe.route.probs,
                labels,
                TAIL6,
                key="probs",
                title=t("swiglu_moe.probs_table"),
                explain=partial(prob_cell, moe, labels),
                zmin=0,
                zmax=1,
            )
        with cols[1]:
            heatmap(
                moe.gates,
                labels,
                TAIL6,
                key="weights",
                title=t("swiglu_moe.weights_table", k=k),
                explain=partial(weight_cell, moe, labels),
                zmin=0,
                zmax=1,
                colorscale="Oranges",
            )
        i = choice(
            "tok",
            t("swiglu_moe.token"),
            list(range(len(TAIL6))),
            2,
            widget="select",
            format_func=TAIL6.__getitem__,
        )
        parts = r" \\ &+ ".join(
            rf"{num(w)}\cdot{latex_vec(o)}"
            for w, o in zip(moe.route.weights[i], moe.expert_outputs[i], strict=True)
        )
        formula_steps(
            r"y = \sum_{e \in \mathrm{top}\text{-}k} w_e\,E_e(x)", parts, latex_vec(moe.output[i])
        )
        st.caption(
            t(
                "swiglu_moe.combined",
                w=TAIL6[i],
                experts=", ".join(labels[e] for e in moe.route.indices[i].tolist()),
            )
        )
        bars(
            labels,
            {t("swiglu_moe.load_axis"): moe.load.tolist()},
            key="load",
            decimals=0,
            y_title=t("swiglu_moe.load_axis"),
            height=280,
        )
        st.markdown(
            t(
                "swiglu_moe.load_note",
                even=short(moe.even_load),
                n=len(TAIL6),
                k=k,
                e=n_experts,
                most=int(moe.load.max()),
                idle=int((moe.load == 0).sum()),
            )
        )


@part
def parameter_count() -> None:
    section(t("swiglu_moe.count_title"))
    answered = choice_exercise(
        "memory",
        t("swiglu_moe.ex3_question"),
        [t(f"swiglu_moe.ex3_{o}") for o in ("active", "all", "one")],
        correct=1,
        explanation=t("swiglu_moe.ex3_explain"),
    )
    with st.container(horizontal=True):
        count_e = number("n", t("swiglu_moe.experts"), 1, 1024, 8)
        count_k = number("pk", t("swiglu_moe.top_k"), 1, 1024, 2)
        millions = number("mpe", t("swiglu_moe.millions"), 0.01, 1_000_000.0, 10.0, step=1.0)
    with shown_errors():
        b = expert_budget(count_e, millions, count_k)  # 10{,}000: LaTeX spaces a bare comma
        per, total, active = (
            f"{n:,}".replace(",", "{,}") for n in (b.per_expert, b.total, b.active)
        )
        formula(
            r"N_{total} = E \times P,\qquad N_{active} = k \times P",
            rf"{b.n_experts} \times {per} = {total},\qquad {b.k} \times {per} = {active}",
        )
        for col, name in zip(st.columns(2), ("total", "active"), strict=True):
            col.metric(t(f"swiglu_moe.{name}"), f"{short(getattr(b, name) / 1e6)} M")
    if answered:  # which figure must sit in memory: the exercise's answer
        st.markdown(t("swiglu_moe.figures_note"))
    else:
        after_answer()


@part
def width() -> None:  # d: this section only
    section(t("swiglu_moe.width_title"))
    st.markdown(t("swiglu_moe.width_lead"))
    d = number("dw", t("swiglu_moe.width_d"), 1, 65536, 4096)
    with shown_errors():
        c = swiglu_width(d)
        big = [f"{n:,}".replace(",", "{,}") for n in (c.dense_params, c.exact_params,
                                                      c.llama_params)]
        formula(r"2 \cdot d \cdot 4d = 8d^2,\qquad 3 \cdot d \cdot \tfrac{8}{3}d = 8d^2",
                rf"2 \cdot {d} \cdot {c.dense_hidden} = {big[0]},\qquad "
                rf"3 \cdot {d} \cdot \tfrac{{{c.exact_hidden.numerator}}}"
                rf"{{{c.exact_hidden.denominator}}} = {big[1]}")
        st.markdown(t("swiglu_moe.width_llama", d=d, h=c.llama_hidden,
                      p=big[2].replace("{,}", ",")))


st.caption(t("swiglu_moe.tokens"))
section(t("swiglu_moe.swiglu_title"))
answered = choice_exercise(
    "gate",
    t("swiglu_moe.ex_question"),
    [t(f"swiglu_moe.ex_{o}") for o in ("01", "unit", "any")],
    correct=2,
    explanation=t("swiglu_moe.ex_explain"),
)
left, right = st.columns([2, 3])
with left:
    x = matrix_input("x", "x", [1, -1], sliders=True, slider_labels=["x[0]", "x[1]"])
    wg = matrix_input("Wg", "W_gate [2 × 3]", [[1, 0, 1], [0, 1, -1]], rows=2)
    wu = matrix_input("Wu", "W_up [2 × 3]", [[3, 1, 0.5], [0, -1, 0]], rows=2)
    wd = matrix_input("Wd", "W_down [3 × 2]", [[1, 0], [0, 1], [0, 1]], rows=3)
sw = None
with right, shown_errors():
    sw = swiglu(x, wg, wu, wd)
    if not answered:  # the gates it computes answer the exercise
        after_answer()
    else:
        steps = Stepper("hand", [t(f"swiglu_moe.step_{s}") for s in ("gate", "up", "gated",
                                                                        "down")])
        if steps.step(1, f"`{vec(sw.gate)}`"):
            formula_steps(
                r"s = \mathrm{SiLU}(xW_{gate})",
                rf"\mathrm{{SiLU}}({as_typed(x)}{as_typed(wg)})",
                rf"\mathrm{{SiLU}}({latex_vec(sw.gate_pre)})",
                latex_vec(sw.gate),
            )
        if steps.step(2, f"`{vec(sw.up)}`"):
            formula_steps(r"u = xW_{up}", rf"{as_typed(x)}{as_typed(wu)}", latex_vec(sw.up))
        if steps.step(3, f"`{vec(sw.gated)}`"):
            formula_steps(
                r"s \odot u", rf"{latex_vec(sw.gate)} \odot {latex_vec(sw.up)}",
                latex_vec(sw.gated)
            )
        if steps.step(4, f"`{vec(sw.output)}`"):
            formula_steps(
                r"y = (s \odot u)W_{down}",
                rf"{latex_vec(sw.gated)}{as_typed(wd)}",
                latex_vec(sw.output),
            )
fold(t("swiglu_moe.gate_title"))
if answered and sw is not None:  # the curve of every possible gate answers it too
    gate_demo(sw)
else:
    section(t("swiglu_moe.gate_title"))
    after_answer()
width()
experts()
parameter_count()
