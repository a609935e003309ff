"""Stage 3: softmax turns a row of scores into weights; the output blends the values.

Taught before scaling (4) and the masks (5.1): the hand example divides by sqrt(d_k)
and says that stage 4 explains why; the matrix form has no mask (stage 5.1 adds M)."""

import streamlit as st
import torch

from tinyformer.attention import scaled_dot_product_attention
from tinyformer.lessons.chain import unmasked_attention
from tinyformer.softmax import softmax_steps
from ui import chain, explain
from ui.example import TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap
from ui.fmt import latex_matrix, latex_vec, num, places, short, vec
from ui.formula import formula
from ui.hand_example import hand_example_inputs, score_steps, set_hand_example
from ui.headings import subsection
from ui.i18n import t
from ui.page import fold, part, section, stage_link
from ui.reveal import Stepper


def rounding_note(weights, v_a, v_b, output) -> str:
    """Results come from the unrounded weights; with a component of these inputs where the
    rounded weights, multiplied by hand, give another last digit (when one does)."""
    wa, wb = (float(num(w)) for w in weights)  # the weights as shown
    example = ""
    for c in range(output.numel()):
        hand = wa * float(v_a[c]) + wb * float(v_b[c])
        if num(hand) != num(output[c]):
            expr = rf"{num(wa)} × {short(v_a[c])} + {num(wb)} × {short(v_b[c])}"
            example = t("softmax.rounding_example", expr=expr, hand=num(hand),
                        shown=num(output[c]))
            break
    return t("softmax.rounding_note", wa=num(weights[0], 4), wb=num(weights[1], 4),
             example=example)


choice_exercise("kb", t("softmax.ex_question"),
                [t("softmax.ex_a"), t("softmax.ex_b"), t("softmax.ex_equal")], correct=1,
                explanation=t("softmax.ex_explain"))

# --- The hand example: one query, two keys, two values ---------------------------
@part
def by_hand() -> None:
    section(t("softmax.hand_title"))
    inputs, worked = st.columns([5, 6])  # the inputs, and beside them their steps
    with inputs:
        q, k_a, k_b, v_a, v_b = hand_example_inputs(with_values=True)
    with inputs, st.container(horizontal=True):
        st.button(t("softmax.preset_default"), on_click=set_hand_example,
                  kwargs={"q": "1, 0", "kA": "1, 0", "kB": "0, 1"})
        st.button(t("softmax.preset_kb"), on_click=set_hand_example,
                  kwargs={"q": "1, 0", "kA": "1, 0", "kB": "2, 0"})
    trace = scaled_dot_product_attention(q[None, :], torch.stack([k_a, k_b]),
                                         torch.stack([v_a, v_b]))
    # [2] each
    scores = trace.scores[0]
    scaled = trace.scaled[0]
    weights = trace.weights[0]
    output = trace.output[0]
    soft = softmax_steps(scaled)

    with worked:
        steps = Stepper("hand", [t(f"softmax.step_{k}") for k in
                                 ("scores", "scaled", "weights", "output")])
        score_steps(steps, q, k_a, k_b, scores, scaled)
        if steps.shows(2):  # a forward reference: stage 4 explains the division
            st.markdown(t("softmax.why_scale", dk=q.numel()))
        if steps.step(3, f"`{vec(weights)}`"):
            e_a, e_b, total = (num(v) for v in (soft.exps[0], soft.exps[1], soft.total))
            formula(r"a_j = \frac{e^{\tilde s_j}}{\sum_k e^{\tilde s_k}}",  # a line each
                    rf"\begin{{gathered}}e^{{{num(scaled[0])}}} = {e_a},\ "
                    rf"e^{{{num(scaled[1])}}} = {e_b} \\ a_A = \frac{{{e_a}}}{{{e_a} + {e_b}}}"
                    rf" = \frac{{{e_a}}}{{{total}}} = {num(weights[0])} \\ "
                    rf"a_B = \frac{{{e_b}}}{{{total}}} = {num(weights[1])}\end{{gathered}}")
        if steps.step(4, f"`{vec(output)}`"):
            formula(r"o = a_A v_A + a_B v_B",
                    rf"\begin{{aligned}}&{num(weights[0])}\cdot{latex_vec(v_a)} + "
                    rf"{num(weights[1])}\cdot{latex_vec(v_b)} \\ &= {latex_vec(output)}"
                    r"\end{aligned}")
            st.caption(rounding_note(weights, v_a, v_b, output))
            st.info(t("softmax.blend_note", wb=num(weights[1])), icon=":material/blender:")
by_hand()
fold(t("softmax.matrix_title"))

# --- All positions at once: the matrix form --------------------------------------
@part
def matrix_form() -> None:
    section(t("softmax.matrix_title"))
    st.markdown(t("softmax.matrix_lead"))
    gloss(TAIL4)
    run = chain.run()  # the running example's hand model, as left on stages 1.1 and 2
    Q = run.Q  # [4, 2]
    K = run.K  # [4, 2]
    V = run.V  # [4, 2]
    dec = places(torch.cat([Q.flatten(), K.flatten(), V.flatten()]))
    formula(r"Q = XW_q,\quad K = XW_k,\quad V = XW_v", rf"Q = {latex_matrix(Q, dec)},\quad "
            rf"K = {latex_matrix(K, dec)},\quad V = {latex_matrix(V, dec)}")
    stage_link("qkv")
    full = unmasked_attention(run)  # no mask: every position reads all
    formula(r"\mathrm{Attention}(Q,K,V) = "
            r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
    st.caption(t("softmax.mask_later", last=TAIL4[-1]))

    def explain_weight(i: int, j: int) -> str:
        return explain.softmax(t("softmax.cell_weight", i=TAIL4[i], j=TAIL4[j]),
                               explain.cell_name("a", i, j), full.scaled[i], j)

    def explain_score(i: int, j: int) -> str:
        return explain.dot(t("softmax.cell_score", i=TAIL4[i], j=TAIL4[j]),
                           explain.cell_name(r"\tilde s", i, j), Q[i], K[j],
                           full.scaled[i, j], lhs=f"q_{i} \\cdot k_{j} / \\sqrt{{2}}",
                           scale_by=2)

    subsection(t("softmax.scaled_table"))
    heatmap(full.scaled, TAIL4, TAIL4, key="scores_map", explain=explain_score)
    computed = number_exercise("a10", t("softmax.ex2_question"), float(full.weights[1, 0]),
                               explain_weight(1, 0))
    choice_exercise("row", t("softmax.ex3_question"),
                          [t("softmax.ex3_sum"), t("softmax.ex3_scale"), t("softmax.ex3_values")],
                          correct=0, explanation=t("softmax.ex3_explain"))
    if computed:  # the weights table holds the answer
        subsection(t("softmax.weights_table"))
        heatmap(full.weights, TAIL4, TAIL4, key="weights_map", explain=explain_weight,
                zmin=0, zmax=1, colorscale="Oranges")
        subsection(t("softmax.output_table"))
        formula(r"O = AV",
                rf"{latex_matrix(full.weights)}{latex_matrix(V)} = {latex_matrix(full.output)}")
    else:
        after_answer()
    st.caption(t("softmax.not_explanation"))
matrix_form()
