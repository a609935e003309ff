"""Stage 5: softmax turns scores into weights; the output is a weighted blend of values."""

import streamlit as st
import torch

from tinyformer.attention import scaled_dot_product_attention
from tinyformer.masks import causal_mask
from ui.exercise import predict_then_reveal
from ui.figures import heatmap
from ui.fmt import dot_terms, latex_matrix, latex_vec, num, vec
from ui.formula import formula
from ui.hand_example import hand_example_inputs
from ui.i18n import t
from ui.inputs import matrix_input
from ui.page import footer_nav, header, setup_page

stage = setup_page("softmax")
header(stage)

PRESETS = {"default": ("1, 0", "0, 1"), "kb_20": ("1, 0", "2, 0")}
TOKENS = ["运费", "谁", "承担", "？"]


def apply_preset(name: str) -> None:
    st.session_state["kA"], st.session_state["kB"] = PRESETS[name]


# --- The hand example: one query, two keys, two values -------------------------------
st.subheader(t("softmax.hand_title"))
q, k_a, k_b, v_a, v_b = hand_example_inputs(with_values=True)
left, right, _ = st.columns([1, 1, 3])
left.button(t("softmax.preset_default"), on_click=apply_preset, args=("default",))
right.button(t("softmax.preset_kb"), on_click=apply_preset, args=("kb_20",))

trace = scaled_dot_product_attention(q[None, :], torch.stack([k_a, k_b]), torch.stack([v_a, v_b]))
scores, scaled = trace.scores[0], trace.scaled[0]  # [2]
weights, output = trace.weights[0], trace.output[0]  # [2], [2]
d_k = q.numel()
exps = torch.exp(scaled)

st.markdown(f"**1 · {t('softmax.step_scores')}** — `{vec(scores)}`")
formula(r"s_j = q \cdot k_j",
        rf"s_A = {dot_terms(q, k_a)} = {num(scores[0])},\quad "
        rf"s_B = {dot_terms(q, k_b)} = {num(scores[1])}")
st.markdown(f"**2 · {t('softmax.step_scaled')}** — `{vec(scaled)}`")
formula(r"\tilde s_j = \frac{s_j}{\sqrt{d_k}}",
        rf"\frac{{{latex_vec(scores)}}}{{\sqrt{{{d_k}}}}} = {latex_vec(scaled)}")
st.markdown(f"**3 · {t('softmax.step_weights')}** — `{vec(weights)}`")
formula(r"a_j = \frac{e^{\tilde s_j}}{\sum_k e^{\tilde s_k}}",
        rf"e^{{{num(scaled[0])}}} = {num(exps[0])},\ e^{{{num(scaled[1])}}} = {num(exps[1])}"
        rf"\ \Rightarrow\ a = {latex_vec(weights)}")
st.markdown(f"**4 · {t('softmax.step_output')}** — `{vec(output)}`")
formula(r"o = a_A v_A + a_B v_B",
        rf"{num(weights[0])}\cdot{latex_vec(v_a, 0)} + {num(weights[1])}\cdot"
        rf"{latex_vec(v_b, 0)} = {latex_vec(output)}")
st.info(t("softmax.blend_note", wb=num(weights[1])), icon=":material/blender:")

# --- All positions at once: the matrix form ------------------------------------------
st.subheader(t("softmax.matrix_title"))
st.markdown(t("softmax.matrix_lead"))
cols = st.columns(3)
with cols[0]:
    Q = matrix_input("Q", "Q [4 × 2]", [[1, 0], [0, 1], [1, 1], [1, -1]], rows=4)
with cols[1]:
    K = matrix_input("K", "K [4 × 2]", [[1, 0], [0, 1], [1, 1], [0.5, 0.5]], rows=4)
with cols[2]:
    V = matrix_input("V", "V [4 × 2]", [[2, 0], [0, 4], [1, 1], [3, -1]], rows=4)
causal = st.toggle(t("softmax.causal"), value=True, key="causal", bind="query-params")
full = scaled_dot_product_attention(Q, K, V, mask=causal_mask(4) if causal else None)
formula(r"\mathrm{Attention}(Q,K,V) = "
        r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V")


def explain_weight(i: int, j: int) -> str:
    row = full.masked[i]
    if not torch.isfinite(row[j]):
        return t("softmax.cell_blocked", i=TOKENS[i], j=TOKENS[j])
    terms = " + ".join(f"e^{{{num(s)}}}" for s in row if torch.isfinite(s))
    return t("softmax.cell_weight", i=TOKENS[i], j=TOKENS[j]) + (
        f"\n\n$a_{{{i}{j}}} = e^{{{num(row[j])}}} / ({terms}) = {num(full.weights[i, j])}$")


def explain_score(i: int, j: int) -> str:
    if not torch.isfinite(full.masked[i, j]):
        return t("softmax.cell_blocked", i=TOKENS[i], j=TOKENS[j])
    return t("softmax.cell_score", i=TOKENS[i], j=TOKENS[j]) + (
        f"\n\n$({dot_terms(Q[i], K[j])}) / \\sqrt{{2}} = {num(full.scaled[i, j])}$")


col_scores, col_weights = st.columns(2)
with col_scores:
    st.markdown(f"**{t('softmax.scaled_table')}**")
    heatmap(full.masked, TOKENS, TOKENS, key="scores_map", explain=explain_score,
            colorscale="Blues")
with col_weights:
    st.markdown(f"**{t('softmax.weights_table')}**")
    heatmap(full.weights, TOKENS, TOKENS, key="weights_map", explain=explain_weight,
            zmin=0, zmax=1, colorscale="Oranges")
st.markdown(f"**{t('softmax.output_table')}**")
formula(r"O = AV",
        rf"{latex_matrix(full.weights)}{latex_matrix(V, 1)} = {latex_matrix(full.output)}")

predict_then_reveal(
    "softmax", t("softmax.ex_question"),
    [t("softmax.ex_a"), t("softmax.ex_b"), t("softmax.ex_equal")], correct=1,
    explanation=t("softmax.ex_explain"),
)
footer_nav(stage)
