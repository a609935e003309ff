"""Stage 5.1: masks. Causal (no reading the future) and padding (no reading [PAD]), the
mask M in softmax(QK^T/sqrt(d_k) + M) V, and position ids that count real tokens only."""

import streamlit as st
import torch

from tinyformer.attention import scaled_dot_product_attention
from tinyformer.masks import additive, attention_mask, causal_mask, position_ids
from ui import chain, explain
from ui.example import PAYERS, TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap
from ui.fmt import latex_matrix, num, vec
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import matrix_input, toggle
from ui.page import part, section, stage_link
from ui.reveal import Stepper
from ui.tables import table

TEXT = (*TAIL4, PAYERS[0], TAIL4[2])  # 运费 谁 承担 ？ 商家 承担: a question and its answer
# each position's target is the next token
INPUTS = TEXT[:-1]
TARGETS = TEXT[1:]
PADDED = ("[PAD]", "[PAD]", *TAIL4)  # one request, left-padded with 2 empty positions
VALID = torch.tensor([[False, False, True, True, True, True]])  # [B=1, N=6]: real tokens
N = len(PADDED)
# [PAD] rows first
Q_DEFAULT = [[0.5, 0.5]] * 2 + [[1, 0], [0, 1], [1, 1], [1, -1]]
K_DEFAULT = [[1, 1]] * 2 + [[1, 0], [0, 1], [1, 1], [0.5, 0.5]]
TILDE_S = r"\tilde s"  # a scaled score
M_STYLE = {"decimals": 0, "colorscale": "Greens", "zmin": -1, "zmax": 1}


def explain_m(lead: str, i: int, j: int, allowed: bool) -> str:
    return explain.formula(lead, f"{explain.cell_name('M', i, j)} = "
                           + ("0" if allowed else r"-\infty"))


def weight_checks(att, allowed: torch.Tensor) -> None:
    """Blocked weights are exactly 0; rows with nothing to read are named."""
    blocked = att.weights[~allowed]  # every weight whose key is blocked: [n_blocked]
    exact = bool((blocked == 0).all())
    (st.success if exact else st.error)(t("masks.zero_check" if exact else "masks.zero_check_fail",
                                          n=blocked.numel(), sums=vec(att.weights.sum(-1))))
    empty = [f"{PADDED[i]} ({i})" for i in range(N) if not allowed[i].any()]
    if empty:
        st.warning(t("masks.empty_rows", rows=", ".join(empty)), icon=":material/block:")


# --- 1. Why: every position predicts the next token ------------------------------
section(t("masks.task_title"))
st.markdown(t("masks.task_lead", text="".join(TEXT)))
gloss(TEXT)
table([INPUTS, TARGETS], columns=[str(i) for i in range(len(INPUTS))],
      index=[t("masks.row_input"), t("masks.row_target")], name=t("masks.table_task"))
formula(r"P(x_0, \ldots, x_{n-1}) = \prod_{t=0}^{n-1} P(x_t \mid x_{<t})")
factors = [f"P({word} | {' '.join(TEXT[:k])})" if k else f"P({word})"
           for k, word in enumerate(TEXT)]
st.markdown(t("masks.chain", whole=f"P({' '.join(TEXT)})", factors=" · ".join(factors)))
st.markdown(t("masks.self_note", word=INPUTS[-1], target=TARGETS[-1], pos=len(INPUTS) - 1))

# --- 2. The causal mask, as the matrix M added to the scores ---------------------
choice_exercise("later", t("masks.ex_question"),
                [t("masks.ex_last"), t("masks.ex_all"), t("masks.ex_none")], correct=0,
                explanation=t("masks.ex_explain"))
section(t("masks.causal_title"))
st.markdown(t("masks.causal_lead"))
causal = causal_mask(len(INPUTS))  # [5, 5] True = may read
left, right = st.columns([3, 2])
with left:
    subsection(t("masks.mask_label"))
    heatmap(additive(causal), INPUTS, INPUTS, key="causal_map", **M_STYLE,
            explain=lambda i, j: explain_m(t(
                "masks.cell_allowed" if causal[i, j] else "masks.cell_future",
                i=INPUTS[i], j=INPUTS[j], pi=i, pj=j), i, j, bool(causal[i, j])))
with right:
    formula(r"M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}")
    st.markdown(t("masks.legend"))
st.info(t("masks.parallel_note"), icon=":material/bolt:")
st.markdown(t("masks.formula_lead"))
formula(r"\mathrm{Attention}(Q,K,V) = "
        r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V")
st.markdown(t("masks.softmax_recall"))
stage_link("softmax")

def running_example(answered: bool) -> None:
    """The causal mask on the running example's hand model: its masked scores, then (once
    the self-weight exercise above is answered: 运费 reading itself is its answer here
    too) its weights and output A."""
    section(t("masks.chain_title"))
    run = chain.run()  # the hand model with the learner's values (edited on 1.1 and 2)
    st.markdown(t("masks.chain_lead"))
    gloss(TAIL4)
    may_read = causal_mask(len(TAIL4))  # [4, 4] True = may read

    def reason(i: int, j: int) -> str:
        return t("masks.cell_allowed" if may_read[i, j] else "masks.cell_future",
                 i=TAIL4[i], j=TAIL4[j], pi=i, pj=j)

    def explain_masked(i: int, j: int) -> str:
        m = "0" if may_read[i, j] else r"(-\infty)"
        return explain.formula(reason(i, j), explain.cell_name(TILDE_S, i, j) + " = "
                               + f"{num(run.scaled[i, j])} + {m} = {num(run.masked[i, j])}")

    def explain_weight(i: int, j: int) -> str:
        name = explain.cell_name("a", i, j)
        if not may_read[i, j]:
            return explain.blocked(reason(i, j), name)
        return explain.softmax(t("masks.cell_weight", i=TAIL4[i], j=TAIL4[j]), name,
                               run.masked[i], j)

    left, middle, right = st.columns([4, 4, 3])
    with left:
        heatmap(run.masked, TAIL4, TAIL4, key="chain_masked", explain=explain_masked,
                title=t("masks.chain_masked"))
    if not answered:  # 运费's weight on itself is the exercise's answer
        with middle:
            after_answer()
        return
    with middle:
        heatmap(run.weights, TAIL4, TAIL4, key="chain_weights", explain=explain_weight,
                zmin=0, zmax=1, colorscale="Oranges", title=t("masks.chain_weights"))
    with right:
        heatmap(run.A, ["0", "1"], TAIL4, key="chain_a", title=t("masks.chain_a"),
                explain=lambda i, c: explain.dot(t("masks.chain_cell_a", i=TAIL4[i], c=c),
                                                 explain.cell_name("A", i, c), run.weights[i],
                                                 run.V[:, c], float(run.A[i, c])))
    formula(r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V",
            rf"{latex_matrix(run.weights)}{latex_matrix(run.V)} = {latex_matrix(run.A)}")
    st.markdown(t("masks.chain_note", first=TAIL4[0], a0=vec(run.A[0]), v0=vec(run.V[0]),
                  last=TAIL4[-1]))


# --- 3. Padding, and both masks together ----------------------------------------
@part
def masked_attention() -> None:
    section(t("masks.pad_title"), folded=True)
    st.markdown(t("masks.pad_lead", tokens=" ".join(PADDED)))
    left, right = st.columns(2)
    with left:
        use_causal = toggle("causal", t("masks.toggle_causal"), True)
    with right:
        use_pad = toggle("pad", t("masks.toggle_pad"), True)
    allowed = attention_mask(N, use_causal, VALID if use_pad else None).reshape(N, N)  # [N, N]
    future = ~causal_mask(N)  # [6, 6] True = a later position

    def reason(i: int, j: int) -> str:
        late = use_causal and bool(future[i, j])
        pad = use_pad and not bool(VALID[0, j])
        key = "both" if late and pad else "future" if late else "pad" if pad else "allowed"
        return t(f"masks.cell_{key}", i=PADDED[i], j=PADDED[j], pi=i, pj=j)

    subsection(t("masks.combined_label"))
    heatmap(additive(allowed), PADDED, PADDED, key="mask_map", **M_STYLE,
            explain=lambda i, j: explain_m(reason(i, j), i, j, bool(allowed[i, j])))
    st.caption(t("masks.real_block"))

    subsection(t("masks.pos_title"))
    st.markdown(t("masks.pos_lead"))
    ids = position_ids(VALID)[0]  # [N]: 0 0 0 1 2 3
    table([PADDED, [int(v) for v in VALID[0]], ids.tolist()],
          columns=[str(i) for i in range(N)],
          index=[t("masks.pos_row_token"), t("masks.pos_row_valid"), t("masks.pos_row_id")],
          name=t("masks.pos_title"))
    st.markdown(t("masks.pos_sides"))

    # --- 4. Scores after the mask, and the weights ----------------------------------
    section(t("masks.scores_title"))
    exercise = st.container()  # predict first: filled once Q and K are known
    st.markdown(t("masks.scores_lead"))
    left, right = st.columns(2)
    with left:
        Q = matrix_input("Q", "Q [6 × 2]", Q_DEFAULT, rows=6)
    with right:
        K = matrix_input("K", "K [6 × 2]", K_DEFAULT, rows=6)
    att = scaled_dot_product_attention(Q, K, K, mask=allowed)  # K stands in for V: no output
    def explain_score(i: int, j: int, masked: bool = True) -> str:
        name = explain.cell_name(r"\tilde s", i, j)
        if masked and not allowed[i, j]:
            return explain.formula(reason(i, j), rf"{name} = {num(att.scaled[i, j])} + "
                                   r"(-\infty) = -\infty")
        return explain.dot(reason(i, j) if masked else t("masks.cell_scaled", i=PADDED[i],
                           j=PADDED[j]), name, Q[i], K[j], float(att.scaled[i, j]), scale_by=2)

    def explain_weight(i: int, j: int) -> str:
        name = explain.cell_name("a", i, j)
        if not allowed[i].any():
            return explain.formula(t("masks.cell_empty_row", i=PADDED[i], pi=i), f"{name} = 0")
        if not allowed[i, j]:
            return explain.blocked(reason(i, j), name)
        return explain.softmax(t("masks.cell_weight", i=PADDED[i], j=PADDED[j]), name,
                               att.masked[i], j)

    with exercise:
        answered = number_exercise("self", t("masks.ex2_question"), float(att.weights[2, 2]),
                                   explain_weight(2, 2))
    steps = Stepper("hand", [t(f"masks.step_{k}") for k in ("scaled", "masked", "weights")])
    top = st.columns(2)
    bottom = st.columns(2)
    if steps.shows(1):
        with top[0]:
            heatmap(att.scaled, PADDED, PADDED, key="raw_map", title=f"1 · {steps.labels[0]}",
                    explain=lambda i, j: explain_score(i, j, masked=False))
    if steps.shows(2):
        with top[1]:
            heatmap(att.masked, PADDED, PADDED, key="scores_map", explain=explain_score,
                    title=f"2 · {steps.labels[1]}")
    if steps.shows(3) and not answered:  # the weights hold the exercise's answer
        with bottom[0]:
            after_answer()
    elif steps.shows(3):
        with bottom[0]:
            heatmap(att.weights, PADDED, PADDED, key="weights_map", explain=explain_weight,
                    zmin=0, zmax=1, colorscale="Oranges", title=f"3 · {steps.labels[2]}")
        with bottom[1]:
            weight_checks(att, allowed)
    running_example(answered)  # after the exercise whose answer its weights would give
    st.caption(t("masks.not_explanation"))
masked_attention()
