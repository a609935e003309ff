"""Stage 6: heads split the width; query heads that share a K/V head (GQA, MQA) still
weigh the tokens differently."""

import streamlit as st
import torch

from tinyformer.attention import MultiHeadTrace, kv_group_size, merge_heads, multi_head_attention
from tinyformer.lessons.gqa import grouped_query_attention
from tinyformer.lessons.kv_cache import attention_kind, cache_ratio
from tinyformer.lessons.projection import random_mha_setup
from tinyformer.masks import attention_mask
from ui import explain
from ui.example import TAIL6, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import num, shape
from ui.formula import formula
from ui.i18n import t
from ui.inputs import choice, number, toggle
from ui.notes import random_weights_note, shown_errors
from ui.page import fold, part, section
from ui.reveal import Stepper
from ui.tables import table

WIDTH = 8
N = len(TAIL6)
APPLE = ("苹果", "放进", "冰箱", "，", "它", "会", "保鲜")  # the article's sentence
GQA_HEADS = 4  # query heads in the GQA run: K/V heads 1, 2 or all 4


def head_cell(tr: MultiHeadTrace, h: int, i: int, j: int, lead: str) -> str:
    """One weight of head h: its query · the key it reads, scaled, then softmax."""
    name = explain.cell_name("a", i, j)
    if not torch.isfinite(tr.masked[0, h, i, j]):
        return explain.blocked(t("multi_head.cell_blocked", i=TAIL6[i], j=TAIL6[j]), name)
    score = explain.dot(lead, explain.cell_name(r"\tilde s", i, j), tr.q[0, h, i],
                        tr.k_expanded[0, h, j], tr.scaled[0, h, i, j], per_line=1,
                        scale_by=tr.head_dim)
    return score + explain.softmax("", name, tr.masked[0, h, i], j)


def head_maps(tr: MultiHeadTrace, key: str, label, lead) -> None:
    """One weight table per query head, two side by side (narrower is unreadable)."""
    per_row = min(tr.n_heads, 2)
    for start in range(0, tr.n_heads, per_row):
        for h, col in zip(range(start, start + per_row), st.columns(per_row), strict=False):
            with col:
                heatmap(tr.weights[0, h], TAIL6, TAIL6, key=f"{key}{h}", zmin=0, zmax=1,
                        colorscale="Oranges", title=label(h),
                        explain=lambda i, j, h=h: head_cell(tr, h, i, j, lead(h, i, j)))


def shape_table(x, tr: MultiHeadTrace) -> None:
    """Every step's shape, symbolic and live, and what it holds."""
    rows = [("x", "[B, N, 8]", shape(x)), ("q_full", "[B, N, 8]", shape(merge_heads(tr.q))),
            ("split", "[B, H, N, 8/H]", shape(tr.q)),
            ("weights", "[B, H, N, N]", shape(tr.weights)),
            ("heads_out", "[B, H, N, 8/H]", shape(tr.heads_output)),
            ("concat", "[B, N, 8]", shape(tr.concat)), ("output", "[B, N, 8]", shape(tr.output))]
    table([[t(f"multi_head.step_{k}"), sym, now, t(f"multi_head.what_{k}")]
           for k, sym, now in rows],
          columns=[t(f"multi_head.col_{c}") for c in ("step", "symbolic", "live", "what")],
          name=t("multi_head.table_shapes"))


@part
def split(heads_box, right, x, weights: list, mask, answered: bool) -> None:
    """The head count (in `heads_box`) and everything it changes: the split, the heads, W_o.
    answered: the shapes exercise is, so the table of symbolic shapes may show."""
    with heads_box:
        heads = choice("heads", t("multi_head.heads"), [1, 2, 3, 4, 8], 2)
    (w_q, w_k, w_v, w_o) = weights
    tr = None
    with right, shown_errors():
        tr = multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads=heads, mask=mask)
        # q_full [N, 8]: heads side by side
        hd = tr.head_dim
        q_full = merge_heads(tr.q)[0]
        steps = Stepper("hand", [t(f"multi_head.reveal_{k}") for k in ("split", "heads", "out")],
                        fold_at=2)
        if steps.step(1):
            formula(r"d_{head} = \frac{d}{H}", rf"d_{{head}} = \frac{{8}}{{{heads}}} = {hd}")
            cols = [f"h{c // hd}·{c % hd}" for c in range(WIDTH)]  # column c: head c // hd
            heatmap(q_full, cols, TAIL6, key="q", **diverging(q_full), height=300,
                    title=t("multi_head.q_title"), explain=lambda i, c: explain.dot(
                        t("multi_head.cell_q", i=TAIL6[i], c=c, h=c // hd),
                        explain.cell_name("q", i, c), x[0, i], w_q[:, c], q_full[i, c],
                        per_line=4, lhs=rf"x_{{{i}}} \cdot W_q[:, {c}]"))
    if tr is None:
        return
    st.info(t("multi_head.split_note", heads=heads, hd=hd, n=N), icon=":material/splitscreen:")
    fold(t("multi_head.reveal_heads"))
    if steps.step(2):
        head_maps(tr, "head", lead=lambda h, i, j: t("multi_head.cell_head", h=h, i=TAIL6[i],
                                                    j=TAIL6[j], hd=hd),
                  label=lambda h: t(f"multi_head.head_label{'_one' if hd == 1 else ''}", h=h,
                                    lo=h * hd, hi=(h + 1) * hd - 1))
    if steps.step(3):
        formula(r"\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_0, \dots, "
                r"\mathrm{head}_{H-1})\, W_o")
        heatmap(tr.output[0], [str(c) for c in range(WIDTH)], TAIL6, key="out",
                **diverging(tr.output), explain=lambda i, c: explain.dot(
                    t("multi_head.cell_out", i=TAIL6[i], c=c), explain.cell_name("o", i, c),
                    tr.concat[0, i], w_o[:, c], tr.output[0, i, c], per_line=4))
        st.caption(t("multi_head.params_note"))
    if answered:  # its symbolic shapes answer the exercise for any H
        shape_table(x, tr)
    else:
        after_answer()


@part
def grouped(x, weights: list, mask, shapes_answered: bool) -> None:
    """GQA and MQA, run: query heads that share a K/V head still weigh the tokens differently."""
    section(t("multi_head.gqa_title"))
    groups = number_exercise("groups", t("multi_head.ex2_question"), kv_group_size(32, 8),
                             t("multi_head.ex2_steps", g=kv_group_size(32, 8)), tolerance=0,
                             decimals=0)
    why = choice_exercise("why", t("multi_head.why_question"),
                          [t(f"multi_head.why_{k}") for k in "abc"], correct=0,
                          explanation=t("multi_head.why_explain", ratio=str(cache_ratio(32, 8))))
    shared = choice_exercise("shared", t("multi_head.ex3_question"),
                             [t(f"multi_head.ex3_{k}") for k in "abc"], correct=1,
                             explanation=t("multi_head.ex3_explain"))
    st.markdown(t("multi_head.gqa_lead"))
    kv = choice("kv", t("multi_head.kv_heads"), [1, 2, GQA_HEADS], 2,
                format_func=lambda k: f"{k} ({attention_kind(GQA_HEADS, k).upper()})")
    if shared and shapes_answered:  # the tables answer both: each head's width, Q0 vs Q1
        run = grouped_query_attention(x, *weights, GQA_HEADS, kv, mask)
        gt = run.trace
        st.markdown(t(f"multi_head.kind_{attention_kind(GQA_HEADS, kv)}", q=GQA_HEADS, kv=kv,
                      g=kv_group_size(GQA_HEADS, kv), wk=shape(run.w_k)))
        head_maps(gt, "gqa", label=lambda h: t("multi_head.gqa_label", h=h,
                                                g=gt.kv_group_of_head[h]),
                  lead=lambda h, i, j: t("multi_head.cell_gqa", h=h, g=gt.kv_group_of_head[h],
                                         i=TAIL6[i], j=TAIL6[j]))
        for group in run.groups:
            names = t("multi_head.sep").join(f"Q{h}" for h in group.query_heads)
            one = len(group.query_heads) == 1
            st.markdown(t(f"multi_head.group_{'one' if one else 'shared'}", heads=names,
                          g=group.kv_head, gap=num(group.weight_gap)))
    else:
        after_answer()
    if groups and why:  # the group size and what sharing saves
        st.success(t("multi_head.gqa_32", g=kv_group_size(32, 8), ratio=str(cache_ratio(32, 8)),
                     mqa=str(cache_ratio(32, 1))), icon=":material/memory:")
    else:
        after_answer()


st.caption(t("multi_head.tokens"))
gloss(TAIL6)
st.info(t("multi_head.chain_note"), icon=":material/link:")  # the hand model has one head
section(t("multi_head.split_title"))
left, right = st.columns([2, 3])  # the question and the settings, beside the split
with left:
    shapes_answered = choice_exercise(
        "shapes",
        t("multi_head.ex_question"),
        [t("multi_head.ex_a"), t("multi_head.ex_b"), t("multi_head.ex_c")],
        correct=0,
        explanation=t("multi_head.ex_explain"),
    )
    heads_box = st.container()  # the head count, drawn by split(): only it reads it
    c1, c2 = st.columns(2, vertical_alignment="bottom")
    with c1:
        seed = number("seed", t("multi_head.seed"), 0, 9999, 0)
    with c2:
        causal = toggle("causal", t("multi_head.causal"), True)
    random_weights_note()
x, *weights = random_mha_setup(N, WIDTH, torch.Generator().manual_seed(seed))
mask = attention_mask(N, causal=causal)
split(heads_box, right, x, weights, mask, shapes_answered)
st.markdown(t("multi_head.roles"))
gloss(APPLE)
grouped(x, weights, mask, shapes_answered)
