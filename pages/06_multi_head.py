"""Stage 6: multi-head attention splits the width into heads; GQA/MQA share K/V heads."""

import pandas as pd
import streamlit as st
import torch

from tinyformer.attention import multi_head_attention
from tinyformer.errors import TinyformerError
from tinyformer.kv_cache import (
    PRESETS,
    attention_kind,
    binary_size,
    cache_ratio,
    gqa_saving,
    kv_group_of_heads,
)
from tinyformer.masks import causal_mask
from tinyformer.projection import random_mha_setup
from ui.exercise import predict_then_reveal
from ui.figures import diverging, heatmap, matrix_frame
from ui.fmt import latex_vec, num, shape
from ui.formula import formula
from ui.i18n import t
from ui.inputs import guard_state, is_bool, one_of, whole
from ui.notes import model_error, random_weights_note
from ui.page import footer_nav, header, setup_page

stage = setup_page("multihead")
header(stage)

TOKENS = ["问题", "，", "运费", "谁", "承担", "？"]  # the end of the running example
WIDTH = 8
HEAD_CHOICES = [1, 2, 3, 4, 8]
GQA_CHOICES = [1, 2, 4, 8, 16, 32, 64]


@st.cache_resource(max_entries=64)
def random_example(seed: int) -> tuple[torch.Tensor, ...]:
    """X [1, N, 8] and W_q, W_k, W_v, W_o [8, 8]: seeded random teaching data."""
    return random_mha_setup(len(TOKENS), WIDTH, torch.Generator().manual_seed(seed))


def number(col, label: str, key: str, lo: int, hi: int, default: int) -> int:
    """A whole-number box, kept in the URL, that a bad link cannot break."""
    guard_state(key, whole(lo, hi), default)
    return int(col.number_input(label, lo, hi, default, step=1, key=key, bind="query-params"))


# --- Heads split the width -----------------------------------------------------------
st.subheader(t("multihead.split_title"))
c1, c2, c3 = st.columns([3, 2, 2])
guard_state("heads", one_of(HEAD_CHOICES), 2)
guard_state("causal", is_bool, True)
heads = c1.radio(t("multihead.heads"), HEAD_CHOICES, index=1, horizontal=True, key="heads",
                 bind="query-params")
seed = number(c2, t("multihead.seed"), "seed", 0, 9999, 0)
causal = c3.toggle(t("multihead.causal"), value=True, key="causal", bind="query-params")
random_weights_note()
x, w_q, w_k, w_v, w_o = random_example(seed)
try:
    tr = multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads=heads,
                              mask=causal_mask(len(TOKENS)) if causal else None)
except TinyformerError as error:
    model_error(error)
    tr = None

if tr is not None:
    hd = tr.head_dim
    st.info(t("multihead.split_note", heads=heads, hd=hd, n=len(TOKENS)),
            icon=":material/splitscreen:")
    q_full = "[" + ", ".join(str(s) for s in (*x.shape[:2], w_q.shape[1])) + "]"
    rows = [("x", "[B, N, 8]", shape(x)), ("q_full", "[B, N, 8]", q_full),
            ("split", "[B, H, N, 8/H]", shape(tr.q)),
            ("weights", "[B, H, N, N]", shape(tr.weights)),
            ("heads_out", "[B, H, N, 8/H]", shape(tr.heads_output)),
            ("concat", "[B, N, 8]", shape(tr.concat)), ("output", "[B, N, 8]", shape(tr.output))]
    st.table(pd.DataFrame(
        [[t(f"multihead.step_{k}"), sym, live, t(f"multihead.what_{k}")] for k, sym, live in rows],
        columns=[t("multihead.col_step"), t("multihead.col_symbolic"), t("multihead.col_live"),
                 t("multihead.col_what")]))
    formula(r"\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_{head}}}"
            r" + M\right) V_h",
            rf"d_{{head}} = \frac{{8}}{{H}} = \frac{{8}}{{{heads}}} = {hd},\quad"
            rf" \sqrt{{d_{{head}}}} = \sqrt{{{hd}}} = {num(hd**0.5)}")

    def explain_head(h: int, i: int, j: int) -> str:
        if not torch.isfinite(tr.masked[0, h, i, j]):
            return t("multihead.cell_blocked", i=TOKENS[i], j=TOKENS[j])
        q, k = tr.q[0, h, i], tr.k_expanded[0, h, j]
        return t("multihead.cell_head", h=h, i=TOKENS[i], j=TOKENS[j], hd=hd) + (
            f"\n\n$q = {latex_vec(q)},\\ k = {latex_vec(k)}$\n\n"
            f"$q\\cdot k / \\sqrt{{{hd}}} = {num(tr.scores[0, h, i, j])} / {num(hd**0.5)}"
            f" = {num(tr.scaled[0, h, i, j])},\\quad a = {num(tr.weights[0, h, i, j])}$")

    st.markdown(f"**{t('multihead.per_head')}**")
    per_row = min(heads, 2)  # wider than this, a 6 × 6 table stops being readable
    for start in range(0, heads, per_row):
        for h, col in zip(range(start, start + per_row), st.columns(per_row), strict=True):
            with col:
                label = "multihead.head_label" if hd > 1 else "multihead.head_label_one"
                st.markdown(t(label, h=h, lo=h * hd, hi=(h + 1) * hd - 1))
                heatmap(tr.weights[0, h], TOKENS, TOKENS, key=f"head{h}", zmin=0, zmax=1,
                        colorscale="Oranges", explain=lambda i, j, h=h: explain_head(h, i, j))

    st.markdown(f"**{t('multihead.concat_title')}**")
    cols = [f"h{c // hd}·{c % hd}" for c in range(WIDTH)]
    heatmap(tr.concat[0], cols, TOKENS, key="concat", **diverging(tr.concat),
            explain=lambda i, c: t("multihead.cell_concat", i=TOKENS[i], c=c, h=c // hd,
                                   k=c % hd, v=num(tr.concat[0, i, c])))

    def explain_out(i: int, c: int) -> str:
        terms = " + ".join(f"({num(a)})({num(b)})" for a, b in zip(tr.concat[0, i], w_o[:, c],
                                                                   strict=True))
        return t("multihead.cell_out", i=TOKENS[i], c=c) + (
            f"\n\n$o_{{{i},{c}}} = {terms} = {num(tr.output[0, i, c])}$")

    st.markdown(f"**{t('multihead.output_title')}**")
    formula(r"\mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_0, \dots, "
            r"\mathrm{head}_{H-1})\, W_o")
    heatmap(tr.output[0], [str(c) for c in range(WIDTH)], TOKENS, key="out",
            explain=explain_out, **diverging(tr.output))
    with st.expander(t("multihead.w_o_table")):
        st.table(matrix_frame(w_o, [str(c) for c in range(WIDTH)], cols))
    st.caption(t("multihead.params_note"))

# --- GQA and MQA: query heads share K/V heads ----------------------------------------
st.subheader(t("multihead.gqa_title"))
st.markdown(t("multihead.gqa_lead"))
g1, g2 = st.columns(2)
guard_state("gq", one_of(GQA_CHOICES), 32)
guard_state("gkv", one_of(GQA_CHOICES), 8)
gq = g1.selectbox(t("multihead.q_heads"), GQA_CHOICES, index=5, key="gq", bind="query-params")
gkv = g2.selectbox(t("multihead.kv_heads"), GQA_CHOICES, index=3, key="gkv",
                   bind="query-params")
try:
    groups, kind, ratio = kv_group_of_heads(gq, gkv), attention_kind(gq, gkv), cache_ratio(gq, gkv)
except TinyformerError as error:
    model_error(error)
else:
    size = gq // gkv
    st.markdown(t(f"multihead.kind_{kind}", q=gq, kv=gkv, g=size, ratio=str(ratio)))
    formula(r"g(h) = \left\lfloor \frac{h}{H / H_{kv}} \right\rfloor",
            rf"g({gq - 1}) = \left\lfloor \frac{{{gq - 1}}}{{{gq}/{gkv}}} \right\rfloor"
            rf" = \left\lfloor \frac{{{gq - 1}}}{{{size}}} \right\rfloor = {groups[-1]}")
    heatmap([groups], [f"Q{h}" for h in range(gq)], ["K/V"], key="groups", decimals=0,
            colorscale="Viridis", table=False, height=150,
            explain=lambda _, h: t("multihead.cell_group", h=h, g=groups[h], size=size))
    st.table(pd.DataFrame(
        [[f"K/V {g}", ", ".join(f"Q{h}" for h in range(gq) if groups[h] == g)]
         for g in range(gkv)],
        columns=[t("multihead.col_kv"), t("multihead.col_readers")]))

# --- The K/V cache calculator --------------------------------------------------------
st.subheader(t("multihead.cache_title"))
st.markdown(t("multihead.cache_lead"))


def apply_preset(name: str) -> None:
    p = PRESETS[name]
    st.session_state.update(L=p.layers, qh=p.n_heads, kvh=p.n_kv_heads, hd=p.head_dim)


for name, col in zip(PRESETS, st.columns(len(PRESETS)), strict=True):
    col.button(name, on_click=apply_preset, args=(name,), key=f"_preset_{name}")
BYTES = [1, 2, 4]  # int8 / FP8, FP16 / BF16, FP32
i1, i2, i3 = st.columns(3)
layers = number(i1, t("multihead.layers"), "L", 1, 1000, 32)
q_heads = number(i2, t("multihead.q_heads"), "qh", 1, 1024, 32)
kv_heads = number(i3, t("multihead.kv_heads"), "kvh", 1, 1024, 8)
i4, i5, i6 = st.columns(3)
head_dim = number(i4, t("multihead.head_dim"), "hd", 1, 1024, 128)
seq = number(i5, t("multihead.seq"), "seq", 1, 10_000_000, 8192)
guard_state("bytes", one_of(BYTES), 2)
nbytes = i6.selectbox(t("multihead.bytes"), BYTES, index=1, key="bytes", bind="query-params",
                      help=t("multihead.bytes_help"))
try:
    sv = gqa_saving(layers, q_heads, kv_heads, head_dim, seq, nbytes)
except TinyformerError as error:
    model_error(error)
else:
    def human(n: int) -> str:
        value, unit = binary_size(n)
        return f"{num(value)} {unit}"

    formula(r"S_{KV} = L \times H_{kv} \times d_{head} \times N \times 2 \times b",
            rf"{layers} \times {kv_heads} \times {head_dim} \times {seq} \times 2 \times {nbytes}"
            rf" = {sv.cache.total_bytes:,}".replace(",", "{,}"))
    m1, m2, m3 = st.columns(3)
    m1.metric(t("multihead.cache_this", kv=kv_heads), human(sv.cache.total_bytes))
    m2.metric(t("multihead.cache_mha", q=q_heads), human(sv.mha_cache.total_bytes))
    m3.metric(t("multihead.cache_ratio"), str(sv.ratio))
    st.markdown(t("multihead.cache_exact", total=f"{sv.cache.total_bytes:,}",
                  mha=f"{sv.mha_cache.total_bytes:,}", per_token=f"{sv.cache.bytes_per_token:,}",
                  per_token_h=human(sv.cache.bytes_per_token)))
    st.success(t("multihead.cache_saving", kv=kv_heads, q=q_heads, ratio=str(sv.ratio),
                 saved=str(sv.saved), saved_bytes=f"{sv.saved_bytes:,}",
                 saved_h=human(sv.saved_bytes)), icon=":material/savings:")
    st.caption(t("multihead.cache_batch_note"))
with st.expander(t("multihead.presets_table")):
    st.table(pd.DataFrame(
        [[p.name, p.layers, p.n_heads, p.n_kv_heads, p.head_dim, p.source]
         for p in PRESETS.values()],
        columns=[t("multihead.col_model"), t("multihead.layers"), t("multihead.q_heads"),
                 t("multihead.kv_heads"), t("multihead.head_dim"), t("multihead.col_source")]))

predict_then_reveal(
    "multihead", t("multihead.ex_question"),
    [t("multihead.ex_a"), t("multihead.ex_b"), t("multihead.ex_c")], correct=0,
    explanation=t("multihead.ex_explain"),
)
footer_nav(stage)
