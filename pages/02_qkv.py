"""Stage 2: Q, K, V are three projections of the same rows X; compare with X itself."""

import streamlit as st
import torch

from tinyformer.errors import TinyformerError
from tinyformer.projection import identity_qkv, most_asymmetric_pair, project_qkv, random_setup
from ui.exercise import predict_then_reveal
from ui.figures import diverging, heatmap, matrix_frame
from ui.fmt import dot_terms, latex_matrix, latex_vec, num
from ui.formula import formula
from ui.i18n import t
from ui.inputs import matrix_input
from ui.notes import model_error, random_weights_note
from ui.page import footer_nav, header, setup_page

stage = setup_page("qkv")
header(stage)

TOKENS = ["运费", "谁", "承担", "？"]
X_DEFAULT = [[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, -1, 0]]
W_DEFAULTS = {"Wq": [[-1, 0], [0, 1], [0, 0]], "Wk": [[0, 1], [1, 0], [0, 2]],
              "Wv": [[1, 0], [0, 2], [1, 1]]}
NAMES = {"q": ("Q", "W_q"), "k": ("K", "W_k"), "v": ("V", "W_v")}


@st.cache_data(max_entries=128)
def random_example(d: int, d_k: int, seed: int):
    return random_setup(len(TOKENS), d, d_k, torch.Generator().manual_seed(seed))


def places(values: torch.Tensor) -> int:
    """Decimals an input needs (0 for integers, at most 3): 1 shows as 1, not 1.000."""
    return next((p for p in range(3) if torch.equal(values, torch.round(values, decimals=p))), 3)


def row_vec(values: torch.Tensor, decimals: int = 3) -> str:
    """A row vector; beyond 8 entries the middle is elided (the heatmap shows them all)."""
    if values.numel() <= 8:
        return latex_vec(values, decimals)
    head, tail = latex_vec(values[:4], decimals), latex_vec(values[-2:], decimals)
    return head.replace(r"\end{bmatrix}", r" & \cdots & ") + tail.split("}", 1)[1]


# --- Inputs: hand-sized X and matrices, or random larger ones -------------------------
st.subheader(t("qkv.inputs_title"))
if st.toggle(t("qkv.random"), key="rand", bind="query-params"):
    st.markdown(t("qkv.random_lead"))
    c1, c2, c3 = st.columns(3)
    d = c1.slider(t("qkv.d"), 2, 16, 8, key="dx", bind="query-params")
    d_k = c2.slider(t("qkv.d_k"), 1, 16, 4, key="dqk", bind="query-params")
    seed = c3.slider(t("qkv.seed"), 0, 999, 0, key="wseed", bind="query-params")
    setup = random_example(d, d_k, seed)
    x, w_q, w_k, w_v = setup.x, setup.w_q, setup.w_k, setup.w_v
    random_weights_note()
    with st.expander(t("qkv.random_numbers")):
        for name, matrix, labels in (("X", x, TOKENS), ("W_q", w_q, None), ("W_k", w_k, None),
                                     ("W_v", w_v, None)):
            st.markdown(f"**{name}** [{matrix.shape[0]} × {matrix.shape[1]}]")
            st.table(matrix_frame(matrix, [str(j) for j in range(matrix.shape[1])],
                                  labels or [str(r) for r in range(matrix.shape[0])], 2))
else:
    st.markdown(t("qkv.inputs_lead"))
    cols = st.columns(4)
    with cols[0]:
        x = matrix_input("X", "X [4 × 3]", X_DEFAULT, rows=4)
        st.latex(rf"X = {latex_matrix(x, places(x))}")
    matrices = []
    for col, (key, default) in zip(cols[1:], W_DEFAULTS.items(), strict=True):
        with col:
            matrices.append(matrix_input(key, f"W_{key[1]} [3 × 2]", default, rows=3))
            st.latex(rf"W_{key[1]} = {latex_matrix(matrices[-1], places(matrices[-1]))}")
    w_q, w_k, w_v = matrices
same = st.toggle(t("qkv.same"), key="same", bind="query-params")

try:
    proj, plain = project_qkv(x, w_q, w_k, w_v), identity_qkv(x)
except TinyformerError as error:  # shapes are fixed by the inputs; kept as a safety net
    model_error(error)
    footer_nav(stage)
    st.stop()
shown = plain if same else proj
dec = places(torch.cat([x.flatten(), w_q.flatten(), w_k.flatten(), w_v.flatten()]))

# --- Q, K and V side by side -----------------------------------------------------------
st.subheader(t("qkv.qkv_title"))
st.markdown(t("qkv.qkv_lead_same") if same else t("qkv.qkv_lead"))
weights = {"q": w_q, "k": w_k, "v": w_v}


def explainer(name: str):
    def explain(i: int, j: int) -> str:
        value = num(getattr(shown, name)[i, j])
        if same:
            return t("qkv.cell_same", token=TOKENS[i], name=name, j=j) + (
                f"\n\n${name}_{{{i}}}[{j}] = x_{{{i}}}[{j}] = {value}$")
        w = weights[name]
        return t("qkv.cell_proj", token=TOKENS[i], name=name, j=j, matrix=NAMES[name][1]) + (
            f"\n\n${name}_{{{i}}}[{j}] = x_{{{i}}} \\cdot {NAMES[name][1]}[:, {j}] = "
            f"{dot_terms(x[i], w[:, j])} = {value}$")
    return explain


width = shown.q.shape[-1]
columns = st.columns(3) if width <= 4 else [st.container() for _ in range(3)]
for col, name in zip(columns, NAMES, strict=True):
    with col:
        st.markdown(f"**{NAMES[name][0]}** [{len(TOKENS)} × {width}]")
        heatmap(getattr(shown, name), [str(j) for j in range(width)], TOKENS,
                key=f"{name}_map", explain=explainer(name), **diverging(shown.q, shown.k, shown.v))

# --- The formula for one row -----------------------------------------------------------
st.subheader(t("qkv.formula_title"))
st.markdown(t("qkv.formula_lead"))
i = st.radio(t("qkv.row"), range(len(TOKENS)), format_func=TOKENS.__getitem__, key="row",
             bind="query-params", horizontal=True)
small = x.shape[-1] <= 6 and width <= 6  # larger sizes: write the names, not every number
size = "" if small else r"\footnotesize "
if same:
    formula(r"Q = K = V = X,\qquad q_i = k_i = v_i = x_i",
            size + rf"q_{{{i}}} = k_{{{i}}} = v_{{{i}}} = x_{{{i}}} = {row_vec(x[i], dec)}")
else:
    xi = latex_vec(x[i], dec) if small else f"x_{{{i}}}"
    for name, (big, w_name) in NAMES.items():
        w = latex_matrix(weights[name], dec) if small else w_name
        formula(rf"{big} = X{w_name},\qquad {name}_i = x_i {w_name}",
                size + rf"{name}_{{{i}}} = {xi}\,{w} = {row_vec(getattr(proj, name)[i])}")

# --- What separate projections add: the score table with and without them ------------
st.subheader(t("qkv.scores_title"))
st.markdown(t("qkv.scores_lead"))


def score_explainer(trace, q_name: str, k_name: str):
    def explain(a: int, b: int) -> str:
        return t("qkv.cell_score", i=TOKENS[a], j=TOKENS[b]) + (
            f"\n\n$s_{{{a},{b}}} = {q_name}_{{{a}}} \\cdot {k_name}_{{{b}}} = "
            f"{dot_terms(trace.q[a], trace.k[b])} = {num(trace.scores[a, b])}$")
    return explain


def observations(trace) -> None:
    a, b = most_asymmetric_pair(trace.scores)
    if trace.symmetric:
        st.markdown(t("qkv.symmetric_yes", i=TOKENS[a], j=TOKENS[b]))
    else:
        st.markdown(t("qkv.symmetric_no", i=TOKENS[a], j=TOKENS[b],
                      ij=num(trace.scores[a, b]), ji=num(trace.scores[b, a])))
    st.markdown(t("qkv.self_best", count=int(trace.self_best.sum()), n=len(TOKENS)) + " "
                + t("qkv.best_keys", pairs=t("qkv.list_sep").join(
                    f"{TOKENS[r]} → {TOKENS[c]}" for r, c in enumerate(trace.best_key.tolist()))))


scale = diverging(proj.scores, plain.scores)
left, right = st.columns(2)
with left:
    st.markdown(f"**{t('qkv.scores_proj')}**")
    heatmap(proj.scores, TOKENS, TOKENS, key="s_proj", explain=score_explainer(proj, "q", "k"),
            **scale)
    observations(proj)
    st.info(t("qkv.proj_note"), icon=":material/call_split:")
with right:
    st.markdown(f"**{t('qkv.scores_same')}**")
    heatmap(plain.scores, TOKENS, TOKENS, key="s_same", explain=score_explainer(plain, "x", "x"),
            **scale)
    observations(plain)
    st.info(t("qkv.same_note"), icon=":material/flip:")
st.info(t("qkv.v_note"), icon=":material/output:")

# --- Exercise: must A reading B score like B reading A? ------------------------------
a, b = most_asymmetric_pair(proj.scores)
ab, ba = num(proj.scores[a, b]), num(proj.scores[b, a])
values = {"a": TOKENS[a], "b": TOKENS[b], "ab": ab, "ba": ba, "xx": num(plain.scores[a, b])}
predict_then_reveal(
    "qkv", t("qkv.ex_question", **values),
    [t("qkv.ex_same", ab=ab), t("qkv.ex_other")], correct=1,
    explanation=t("qkv.ex_explain_diff" if ab != ba else "qkv.ex_explain_same", **values),
)
footer_nav(stage)
