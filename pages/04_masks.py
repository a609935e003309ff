"""Stage 4: masks. Causal (no reading the future) and padding (no reading [PAD])."""

import streamlit as st
import torch

from tinyformer.attention import scaled_dot_product_attention
from tinyformer.masks import additive, causal_mask, combine, padding_mask
from ui.exercise import predict_then_reveal
from ui.figures import heatmap
from ui.fmt import latex_matrix, num, short, vec
from ui.formula import formula
from ui.i18n import t
from ui.inputs import guard_state, is_bool, matrix_input
from ui.page import footer_nav, header, setup_page

stage = setup_page("masks")
header(stage)

TOKENS = ["运费", "谁", "承担", "？"]
PADDED = ["[PAD]", "[PAD]", *TOKENS]  # one request, left-padded with 2 empty positions
VALID = torch.tensor([[False, False, True, True, True, True]])  # [B=1, N=6]
N_PAD = 2


# --- 1. The causal pattern for 4 positions ------------------------------------------
st.subheader(t("masks.causal_title"))
st.markdown(t("masks.causal_lead"))
causal4 = causal_mask(4)  # [4, 4]


def explain_causal(i: int, j: int) -> str:
    key = "masks.cell_allowed" if causal4[i, j] else "masks.cell_future"
    return t(key, i=TOKENS[i], j=TOKENS[j], pi=i, pj=j)


left, right = st.columns([2, 3])
with left:
    st.markdown(f"**{t('masks.mask_label')}**")
    heatmap(causal4.double(), TOKENS, TOKENS, key="causal_map", explain=explain_causal,
            decimals=0, zmin=0, zmax=1, colorscale="Greens")
with right:
    formula(r"M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}",
            "M = " + latex_matrix(additive(causal4), 0))
    st.info(t("masks.parallel_note"), icon=":material/bolt:")

# --- 2. Padding, and both masks together --------------------------------------------
st.subheader(t("masks.pad_title"))
left, right = st.columns([3, 2])
with right:
    for name in ("causal", "pad"):
        guard_state(name, is_bool, True)
    use_causal = st.toggle(t("masks.toggle_causal"), value=True, key="causal",
                           bind="query-params")
    use_pad = st.toggle(t("masks.toggle_pad"), value=True, key="pad", bind="query-params")
    st.markdown(t("masks.pad_lead", tokens=" ".join(PADDED)))
parts = ([causal_mask(6)] if use_causal else []) + ([padding_mask(VALID)[0]] if use_pad else [])
allowed = combine(*parts) if parts else torch.ones(6, 6, dtype=torch.bool)  # [6, 6]


def reason(i: int, j: int) -> str:
    future, pad = j > i and use_causal, j < N_PAD and use_pad
    key = "both" if future and pad else "future" if future else "pad" if pad else "allowed"
    return t(f"masks.cell_{key}", i=PADDED[i], j=PADDED[j], pi=i, pj=j)


with left:
    st.markdown(f"**{t('masks.combined_label')}**")
    heatmap(allowed.double(), PADDED, PADDED, key="mask_map", explain=reason, decimals=0,
            zmin=0, zmax=1, colorscale="Greens")

# --- 3. Scores before and after the mask, then the weights ---------------------------
st.subheader(t("masks.scores_title"))
st.markdown(t("masks.scores_lead"))
cq, ck = st.columns(2)
with cq:
    Q = matrix_input("Q", "Q [6 × 2]", [[0.5, 0.5]] * 2 + [[1, 0], [0, 1], [1, 1], [1, -1]],
                     rows=6)
with ck:
    K = matrix_input("K", "K [6 × 2]", [[1, 1]] * 2 + [[1, 0], [0, 1], [1, 1], [0.5, 0.5]],
                     rows=6)
# V is not shown on this page; K stands in for it so the call is complete.
att = scaled_dot_product_attention(Q, K, K, mask=allowed)


def explain_score(i: int, j: int, after: bool) -> str:
    terms = " + ".join(f"{short(a)}\\cdot{short(b)}" for a, b in zip(Q[i], K[j], strict=True))
    arrow = r"\ \rightarrow\ -\infty" if after and not allowed[i, j] else ""
    return reason(i, j) + f"\n\n$({terms}) / \\sqrt{{2}} = {num(att.scaled[i, j])}{arrow}$"


def explain_weight(i: int, j: int) -> str:
    row = att.masked[i]
    if not allowed[i].any():
        return t("masks.cell_empty_row", i=PADDED[i], pi=i)
    if not allowed[i, j]:
        return reason(i, j) + f"\n\n$a_{{{i}{j}}} = 0$"
    terms = " + ".join(f"e^{{{num(s)}}}" for s in row if torch.isfinite(s))
    return t("masks.cell_weight", i=PADDED[i], j=PADDED[j]) + (
        f"\n\n$a_{{{i}{j}}} = e^{{{num(row[j])}}} / ({terms}) = {num(att.weights[i, j])}$")


before, after = st.columns(2)
with before:
    st.markdown(f"**{t('masks.before')}**")
    heatmap(att.scaled, PADDED, PADDED, key="before_map",
            explain=lambda i, j: explain_score(i, j, False))
with after:
    st.markdown(f"**{t('masks.after')}**")
    heatmap(att.masked, PADDED, PADDED, key="after_map",
            explain=lambda i, j: explain_score(i, j, True))
formula(r"\tilde S = \frac{QK^\top}{\sqrt{d_k}} + M,\qquad A = \mathrm{softmax}(\tilde S)")
left, right = st.columns([3, 2])
with left:
    st.markdown(f"**{t('masks.weights')}**")
    heatmap(att.weights, PADDED, PADDED, key="weights_map", explain=explain_weight,
            zmin=0, zmax=1, colorscale="Oranges")
with right:
    blocked = att.weights[~allowed]  # every weight whose key is blocked
    if bool((blocked == 0).all()):
        st.success(t("masks.zero_check", n=blocked.numel()), icon=":material/check_circle:")
    else:
        st.error(t("masks.zero_check_fail", n=blocked.numel()))
    st.caption(t("masks.row_sums", sums=vec(att.weights.sum(-1))))
    empty = [i for i in range(6) if not allowed[i].any()]
    if empty:
        st.warning(t("masks.empty_rows", rows=", ".join(f"{PADDED[i]} ({i})" for i in empty)),
                   icon=":material/block:")

predict_then_reveal(
    "masks", t("masks.ex_question"),
    [t("masks.ex_last"), t("masks.ex_all"), t("masks.ex_none")], correct=0,
    explanation=t("masks.ex_explain"),
)
footer_nav(stage)
