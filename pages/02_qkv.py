"""Stage 2: Q, K and V are three different projections of the same rows X."""

import streamlit as st
import torch

from tinyformer.lessons import projection as pj
from tinyformer.lessons.chain import IDS, VOCAB
from ui import chain, explain
from ui.example import Q1_WORDS, Q2_WORDS, TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import latex_matrix, latex_vec, num, places, term
from ui.formula import formula
from ui.i18n import current_lang, t
from ui.inputs import choice, number, toggle
from ui.notes import random_weights_note, shown_errors
from ui.page import part, section
from ui.reveal import Stepper

WORD = "运费"
OTHER = "谁"
cell = explain.cell_name


def scores_map(trace, q: str, k: str, name: str, icon: str) -> None:
    """A score table, what it shows (symmetry, best matches), and its note."""
    heatmap(trace.scores, TAIL4, TAIL4, key=f"s_{name}", **diverging(trace.scores),
            title=t(f"qkv.scores_{name}"),
            explain=lambda i, j: explain.dot(t("qkv.cell_score", i=TAIL4[i], j=TAIL4[j]),
                                             cell("s", i, j), trace.q[i], trace.k[j],
                                             trace.scores[i, j], lhs=rf"{q}_{i} \cdot {k}_{j}"))
    a, b = pj.most_asymmetric_pair(trace.scores)  # the pair whose two readings differ most
    best = t("qkv.list_sep").join(f"{TAIL4[r]} → {TAIL4[c]}"
                                  for r, c in enumerate(trace.best_key.tolist()))
    st.markdown(t("qkv.symmetric_yes" if trace.symmetric else "qkv.symmetric_no", i=TAIL4[a],
                  j=TAIL4[b], ij=num(trace.scores[a, b]), ji=num(trace.scores[b, a])) + " "
                + t("qkv.best_keys", pairs=best, count=int(trace.self_best.sum())))
    note = t(f"qkv.{name}_note")
    if name == "proj" and trace.symmetric and not rand:  # the hand model's defaults
        note += ("" if current_lang() == "zh" else " ") + t("qkv.proj_symmetric")
    st.info(note, icon=icon)


def short_vec(v: torch.Tensor) -> str:
    """A row vector; beyond 6 numbers the middle is elided (the heatmaps show them all)."""
    parts = [num(e) for e in v] if v.numel() <= 6 else [*map(num, v[:3]), r"\cdots", num(v[-1])]
    return r"\begin{bmatrix}" + " & ".join(parts) + r"\end{bmatrix}"


def average_cell(who: str, sentence, i: int, j: int) -> str:
    """Column j of position i's prefix average: the mean of column j of v rows 0..i."""
    column = sentence.qkv.v[: i + 1, j]  # [i + 1]
    terms = " + ".join(term(v, 3) for v in column)
    return explain.formula(t("qkv.cell_avg", who=who, n=len(column), i=i),
                           rf"\bar v_{{{i},{j}}} = \frac{{{terms}}}{{{len(column)}}} = "
                           rf"{num(sentence.average[i, j])}")


@part
def row_steps(x, proj, weights: dict, dec: int) -> None:
    """A row the learner picks through the three matrices, one step each: x_i, q_i, k_i, v_i."""
    i = choice("row", t("qkv.row"), list(range(len(TAIL4))), 0, format_func=TAIL4.__getitem__)
    small = x.shape[1] <= 6 and proj.q.shape[1] <= 6  # larger: names, not every number
    lines = [rf"x_{{{i}}} = {short_vec(x[i])}"] + [
        rf"\begin{{aligned}}{n}_{{{i}}} = x_{{{i}}} W_{n} &= "
        + (rf"{latex_vec(x[i], dec)}{latex_matrix(w, dec)}" if small else rf"x_{{{i}}} W_{n}")
        + rf" \\ &= {short_vec(getattr(proj, n)[i])}\end{{aligned}}" for n, w in weights.items()]
    steps = Stepper("hand", [t(f"qkv.step_{n}", w=TAIL4[i]) for n in "xqkv"])
    for k, line in enumerate(lines, start=1):
        if steps.step(k):
            formula(line)


gloss(TAIL4)
st.info(t("qkv.switch_note"), icon=":material/text_fields:")
section(t("qkv.inputs_title"))
rand = toggle("rand", t("qkv.random"), False)
left, right = st.columns([11, 9])  # the inputs, and beside them one row's projections
with left:
    if rand:
        d = number("d", t("qkv.d"), 2, 16, 8, gesture="slider")
        d_k = number("dk", t("qkv.d_k"), 1, 16, 4, gesture="slider")
        seed = number("seed", t("qkv.seed"), 0, 999, 0, gesture="slider")
        st.markdown(t("qkv.random_lead"))
        random_weights_note()
        x, w_q, w_k, w_v = pj.random_setup(4, d, d_k, torch.Generator().manual_seed(seed))
    else:  # the running example's hand model: X from stage 1.1's table, W_q, W_k, W_v here
        seed = 0
        st.markdown(t("qkv.inputs_lead", ids=", ".join(map(str, IDS))))
        x = chain.edit("X", slider_labels=[f"{w} · x[{c}]" for w in TAIL4 for c in range(2)])
        w_q, w_k, w_v = (chain.edit(f"W{n}", slider_labels=[
            f"W_{n}[{r},{c}]" for r in range(2) for c in range(2)]) for n in "qkv")
        hand = chain.run()  # the chain's Q, K, V and scores: proj below holds the same numbers
proj = pj.project_qkv(x, w_q, w_k, w_v)
plain = pj.identity_qkv(x)
dec = places(torch.cat([x.flatten(), w_q.flatten(), w_k.flatten(), w_v.flatten()]))
with right:  # the row's own choice reruns only these steps
    row_steps(x, proj, {"q": w_q, "k": w_k, "v": w_v}, dec)
section(t("qkv.qkv_title"), folded=True)
st.markdown(t("qkv.qkv_lead"))
places_ = st.columns(3) if proj.q.shape[1] <= 4 else [st.container() for _ in range(3)]
for col, (name, w) in zip(places_, (("q", w_q), ("k", w_k), ("v", w_v)), strict=True):
    with col:
        out = getattr(proj, name)  # [4, d_k]; a click shows x_i · W[:, j]
        heatmap(out, [str(j) for j in range(out.shape[1])], TAIL4, key=f"{name}_map",
                **diverging(out), title=f"{name.upper()} = X W_{name} [{len(TAIL4)} × "
                f"{w.shape[1]}]", explain=lambda i, j, n=name, w=w, out=out: explain.dot(
                    t("qkv.cell_proj", token=TAIL4[i], name=n, j=j), cell(n, i, j), x[i],
                    w[:, j], out[i, j], lhs=rf"x_{{{i}}} \cdot W_{n}[:, {j}]"))
# --- Exercises first, then the score table that answers them ------------------------
scored = number_exercise("s21", t("qkv.ex2_question", i=TAIL4[2], j=TAIL4[1]),
                         float(proj.scores[2, 1]), explain.dot(
                             t("qkv.ex2_steps"), cell("s", 2, 1), proj.q[2], proj.k[1],
                             proj.scores[2, 1], lhs=r"q_2 \cdot k_1"))
why_qk = choice_exercise("qk", t("qkv.ex3_question"), [t(f"qkv.ex3_{k}") for k in "abc"],
                         correct=1, explanation=t("qkv.ex3_explain"))
why_v = choice_exercise("wv", t("qkv.ex_question"), [t("qkv.ex_a"), t("qkv.ex_b"),
                                                      t("qkv.ex_c")],
                        correct=1, explanation=t("qkv.ex_explain"))
section(t("qkv.scores_title"))
if scored and why_qk:
    st.markdown(t("qkv.scores_lead"))
    left, right = st.columns(2)
    with left:
        scores_map(proj, "q", "k", "proj", ":material/call_split:")
    with right:
        scores_map(plain, "x", "x", "same", ":material/flip:")
else:
    after_answer()
if why_v:
    st.info(t("qkv.v_note"), icon=":material/output:")
# --- Why mix at all: 运费 in both questions ------------------------------------------
section(t("qkv.why_title"))
gloss(Q1_WORDS + Q2_WORDS)
with shown_errors():
    # The hand model's table holds every word of question 1; random: only the four rows of X
    known = dict(zip(TAIL4, x, strict=True)) if rand else dict(zip(VOCAB, hand.table,
                                                                   strict=True))
    cmp = pj.two_contexts(WORD, Q1_WORDS, Q2_WORDS, known,
                          torch.Generator().manual_seed(seed), w_q, w_k, w_v)
    others = t("qkv.list_sep").join(f"「{w}」" for w in cmp.rows if w not in known)
    st.caption(t("qkv.context_rows" if rand else "qkv.context_rows_chain", words=others))
    random_weights_note()
    left, right = st.columns(2)
    with left:
        st.markdown(t("qkv.why_rows", word=WORD))
        sides = ((t("qkv.question", n=1), cmp.a), (t("qkv.question", n=2), cmp.b))
        names = [f"{WORD} · {n} · {q}" for n in "qkv" for q, _ in sides]
        per_row = torch.stack([row for n in "qkv" for row in cmp.rows_of(n)])  # [6, d_k]
        heatmap(per_row, [str(j) for j in range(per_row.shape[1])], names, key="ctx_map",
                **diverging(per_row), explain=lambda r, j: explain.dot(
                    t("qkv.cell_ctx", who=names[r], word=WORD),
                    cell("qkv"[r // 2], sides[r % 2][1].at(WORD), j), cmp.rows[WORD],
                    (w_q, w_k, w_v)[r // 2][:, j], per_row[r, j]))
        st.success(t("qkv.same_rows", word=WORD, gap=num(cmp.gap)), icon=":material/equal:")
    with right:
        st.markdown(t("qkv.why_average", word=WORD))
        picks = [(q, s, w) for q, s in sides for w in (WORD, OTHER)]
        avg = torch.stack([s.average[s.at(w)] for _, s, w in picks])  # [4, d_v]
        labels = [f"{w} · {q}" for q, _, w in picks]
        heatmap(avg, [str(j) for j in range(avg.shape[1])], labels, key="avg_map",
                **diverging(avg), explain=lambda r, j: average_cell(
                    labels[r], picks[r][1], picks[r][1].at(picks[r][2]), j))
    a = cmp.a
    st.markdown(t("qkv.why_prefix", word=WORD, other=OTHER, i=a.at(WORD), n=len(a.prefix(WORD)),
                  j=a.at(OTHER), m=len(a.prefix(OTHER)), words=" · ".join(a.prefix(WORD)),
                  b=cmp.b.at(WORD), nb=len(cmp.b.prefix(WORD)),
                  words_b=" · ".join(cmp.b.prefix(WORD))))
    st.markdown(t("qkv.why_attention"))
