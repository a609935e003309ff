"""Stage 1: text becomes token IDs; each ID selects one row of the embedding table."""


import pandas as pd
import streamlit as st
import torch

from tinyformer.errors import TinyformerError
from tinyformer.tokenizer import UNK_ID, CharVocab, embed, position_table, random_table, same_piece
from ui.corpus import corpus_text
from ui.exercise import predict_then_reveal
from ui.figures import heatmap
from ui.fmt import num, plain, term
from ui.formula import formula
from ui.i18n import t
from ui.inputs import guard_state, is_bool, whole
from ui.notes import model_error, random_weights_note
from ui.page import footer_nav, header, setup_page

stage = setup_page("tokens")
header(stage)

MAX_LEN = 32  # rows of the position table: the longest text this page embeds
D_RANGE, SEED_RANGE, KINDS = (4, 16), (0, 999), ("learned", "sinusoidal")
Q1, Q2 = "商品有质量问题，运费谁承担？", "无理由退货，运费谁承担？"


@st.cache_resource
def load_vocab() -> CharVocab:
    return CharVocab.from_corpus(corpus_text())


@st.cache_resource(max_entries=256)  # d x seed x kind: bounded, ~7 KB an entry
def tables(vocab_size: int, d: int, seed: int, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    return random_table(vocab_size, d, seed), position_table(kind, MAX_LEN, d, seed)


def set_text(value: str) -> None:
    st.session_state["text"] = value


def read_text(key: str, default: str) -> str:
    text = (st.text_input(t(f"tokens.{key}_label"), value=default, key=key,
                          bind="query-params", max_chars=200) or "").strip()
    if len(text) > MAX_LEN:
        st.error(t("tokens.too_long", n=len(text), limit=MAX_LEN), icon=":material/error:")
    if not text:
        st.error(t("tokens.empty"), icon=":material/error:")
    return text[:MAX_LEN]


vocab = load_vocab()
for key, ok in (("d", whole(*D_RANGE)), ("seed", whole(*SEED_RANGE)), ("sin", is_bool)):
    guard_state(key, ok, label=t(f"tokens.{key}_label"))

# --- 1. Text to token IDs -------------------------------------------------------------
st.subheader(t("tokens.ids_title"))
text = read_text("text", Q1)
with st.container(horizontal=True):
    st.button(t("tokens.use_q1"), on_click=set_text, args=(Q1,))
    st.button(t("tokens.use_q2"), on_click=set_text, args=(Q2,))
enc = vocab.encode(text)
if enc.unknown:
    unknown = " ".join(f"「{plain(c)}」" for c in enc.unknown)
    st.warning(t("tokens.unknown", chars=unknown, id=UNK_ID),
               icon=":material/help:")
labels = list(enc.tokens)
if labels:
    st.table(pd.DataFrame([labels, [str(i) for i in enc.ids]],
                          index=[t("tokens.row_token"), t("tokens.row_id")],
                          columns=[str(i) for i in range(len(labels))]))
st.caption(t("tokens.vocab_note", v=len(vocab), n=len(labels)))
with st.expander(t("tokens.vocab_all", v=len(vocab))):
    st.dataframe(pd.DataFrame({t("tokens.row_id"): range(len(vocab)),
                               t("tokens.row_token"): vocab.tokens}), hide_index=True)

# --- 2. Each ID selects a row: X [N, d] ------------------------------------------------
st.subheader(t("tokens.lookup_title"))
c_d, c_seed, c_sin = st.columns([3, 1, 2], vertical_alignment="bottom")
d = c_d.slider(t("tokens.d_label"), *D_RANGE, 8, key="d", bind="query-params")
seed = c_seed.number_input(t("tokens.seed_label"), *SEED_RANGE, 0, key="seed",
                           bind="query-params")
# A toggle, not a radio: the URL then holds true/false, the same in both languages.
sin = c_sin.toggle(t("tokens.sin_label"), key="sin", bind="query-params")
kind = KINDS[1] if sin else KINDS[0]
random_weights_note()
E, P = tables(len(vocab), int(d), int(seed), kind)
cols = [str(j) for j in range(int(d))]
z = {"colorscale": "RdBu", "zmin": -3, "zmax": 3}
try:
    trace = embed(torch.tensor(enc.ids, dtype=torch.int64), E, P)  # X [N, d], P, X + P
except TinyformerError as error:
    model_error(error)
    trace = None

if trace is not None and labels:
    used = sorted(set(enc.ids))
    st.markdown(t("tokens.x_lead", v=len(vocab), d=int(d), k=len(used), n=len(labels)))
    c_e, c_x = st.columns(2)
    with c_e:
        st.markdown(f"**{t('tokens.e_table', k=len(used), v=len(vocab), d=int(d))}**")
        heatmap(E[used], cols, [f"{i} · {vocab.tokens[i]}" for i in used], key="table_map",
                explain=lambda r, j: t("tokens.cell_table", id=used[r], j=j,
                                       tok=vocab.tokens[used[r]], value=num(E[used[r], j])), **z)
    with c_x:
        st.markdown(f"**{t('tokens.x_table', n=len(labels), d=int(d))}**")
        heatmap(trace.rows, cols, labels, key="x_map", explain=lambda i, j: t(
            "tokens.cell_x", i=i, tok=labels[i], id=enc.ids[i], j=j,
            value=num(trace.rows[i, j])), **z)
    shown = [*range(min(3, len(labels) - 1)), len(labels) - 1]  # x_0, x_1, x_2, ..., x_{N-1}
    lookups = [f"x_{{{i}}} = E[{enc.ids[i]}]" for i in shown]
    if len(labels) > 4:
        lookups.insert(-1, r"\ldots")
    formula(r"x_i = E[\mathrm{id}_i], \quad X \in \mathbb{R}^{N \times d}",
            r",\ ".join(lookups)
            + rf",\quad X \in \mathbb{{R}}^{{{len(labels)} \times {int(d)}}}")

    # --- 3. Positions -------------------------------------------------------------------
    st.subheader(t("tokens.pos_title"))
    st.markdown(t(f"tokens.pos_lead_{kind}"))
    pos_labels = [t("tokens.pos_n", i=i) for i in range(len(labels))]
    c_p, c_sum = st.columns(2)
    with c_p:
        st.markdown(f"**{t('tokens.p_table', n=len(labels), d=int(d))}**")
        p_key = {"learned": ("learned", "learned"), "sinusoidal": ("sin", "cos")}[kind]
        heatmap(trace.positions, cols, pos_labels, key="p_map", explain=lambda i, j: t(
            f"tokens.cell_p_{p_key[j % 2]}", i=i, j=j, two_k=j - j % 2, d=int(d),
            value=num(trace.positions[i, j])), **z)
    with c_sum:
        st.markdown(f"**{t('tokens.sum_table', n=len(labels), d=int(d))}**")
        heatmap(trace.summed, cols, labels, key="sum_map", explain=lambda i, j: t(
            "tokens.cell_sum", i=i, tok=labels[i], j=j, x=num(trace.rows[i, j]),
            p=term(trace.positions[i, j], 3), value=num(trace.summed[i, j])), **z)
    formula(r"x_i \leftarrow E[\mathrm{id}_i] + P[i]",
            rf"(X + P)_{{0,0}} = E[{enc.ids[0]}]_0 + P[0]_0 = {num(trace.rows[0, 0])} + "
            rf"{term(trace.positions[0, 0], 3)} = {num(trace.summed[0, 0])}")

# --- 4. The same token in both questions -------------------------------------------------
st.subheader(t("tokens.same_title"))
st.markdown(t("tokens.same_lead", q1=Q1, q2=Q2))
q1, q2 = vocab.encode(Q1), vocab.encode(Q2)
same = same_piece(("运", "费"), q1.tokens, embed(torch.tensor(q1.ids), E, P),
                  q2.tokens, embed(torch.tensor(q2.ids), E, P))
view = same.side_by_side()  # 运 in Q1, 运 in Q2, 费 in Q1, 费 in Q2: equal rows adjacent
twin = [t("tokens.twin_label", tok=tok, q=1 if w == "a" else 2, pos=pos)
        for tok, _, w, pos in view.rows]
c_before, c_after = st.columns(2)
with c_before:
    st.markdown(f"**{t('tokens.before')}**")
    heatmap(view.before, cols, twin, key="before_map", **z, explain=lambda r, j: t(
        "tokens.cell_before", who=twin[r], id=view.rows[r][1], j=j,
        value=num(view.before[r, j])))
with c_after:
    st.markdown(f"**{t('tokens.after')}**")
    heatmap(view.after, cols, twin, key="after_map", **z, explain=lambda r, j: t(
        "tokens.cell_after", who=twin[r], id=view.rows[r][1], pos=view.rows[r][3], j=j,
        x=num(view.before[r, j]), p=term(P[view.rows[r][3], j], 3), value=num(view.after[r, j])))
st.success(t("tokens.same_result", ids=", ".join(map(str, same.ids)),
             gap_before=num(same.gap_rows), gap_after=num(same.gap_summed),
             pa=same.start_a, pb=same.start_b), icon=":material/compare_arrows:")

# --- 5. A batch: left padding ----------------------------------------------------------
st.subheader(t("tokens.batch_title"))
st.markdown(t("tokens.batch_lead"))
text2 = read_text("text2", Q2)
batch = vocab.batch_encode([text, text2])
n_batch = batch.ids.shape[1]
if n_batch:
    rows, names = [], []
    for row, (toks, ids, valid) in enumerate(zip(batch.tokens, batch.ids.tolist(),
                                                  batch.valid.int().tolist(), strict=True)):
        rows += [list(toks), [str(i) for i in ids], [str(v) for v in valid]]
        names += [t(f"tokens.batch_{what}", b=row + 1) for what in ("tokens", "ids", "valid")]
    # A plain table: a pandas Styler to grey the padding cost ~40 ms a rerun.
    st.table(pd.DataFrame(rows, index=names, columns=[str(i) for i in range(n_batch)]))
    formula(r"\mathrm{ids} \in \mathbb{Z}^{B \times N},\ \mathrm{valid} \in \{0,1\}^{B \times N}",
            rf"B = 2,\ N = {n_batch}")
st.info(t("tokens.batch_note", n=n_batch, pads=batch.n_padding),
        icon=":material/visibility_off:")

predict_then_reveal(
    "tokens", t("tokens.ex_question"),
    [t("tokens.ex_a"), t("tokens.ex_b"), t("tokens.ex_c"), t("tokens.ex_d")], correct=2,
    explanation=t("tokens.ex_explain", id=vocab.id_of("运")),
)
footer_nav(stage)
