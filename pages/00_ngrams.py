"""Stage 0: before Transformers. n-grams count windows; one-hot vectors share nothing;
embeddings place words so that similarity is a cosine; whitening spreads a narrow cone."""

import math
from itertools import pairwise

import plotly.graph_objects as go
import streamlit as st
import torch

from tinyformer import embedding as emb_lib
from tinyformer.errors import TinyformerError
from tinyformer.ngram import NGramModel
from ui.corpus import corpus_text
from ui.exercise import predict_then_reveal
from ui.figures import heatmap, matrix_frame
from ui.fmt import dot_terms, latex_matrix, latex_vec, num, plain, short
from ui.formula import formula
from ui.i18n import t
from ui.inputs import matrix_input
from ui.notes import model_error
from ui.page import footer_nav, header, setup_page

stage = setup_page("ngram")
header(stage)
MAX_N, MAX_CONTEXT, MAX_PHRASE = 4, 12, 6
WORDS, PLANE = ["苹果", "梨", "动漫", "动物"], ["苹果", "梨", "动漫"]


@st.cache_resource
def corpus() -> tuple[list[str], list[str]]:
    sequences = emb_lib.char_sequences(corpus_text())
    return sequences, emb_lib.vocabulary(sequences)


@st.cache_resource
def model(n: int) -> NGramModel:
    return NGramModel(n).fit(corpus()[0])


def order_name(n: int) -> str:
    return t(f"ngram.order_{n}") if n <= 4 else t("ngram.order_n", n=n)


def cond_prob(context: str, token: str) -> str:
    """P(token | context) = C(context token) / C(context ·) with the live counts."""
    counts = model(len(context) + 1).counts(context)
    total = sum(counts.values())
    p = counts.get(token, 0) / total if total else 0.0
    given = f"\\mid \\text{{{context}}}" if context else ""
    return f"P(\\text{{{token}}}{given}) = {counts.get(token, 0)}/{total} = {num(p)}"


def quote(chars) -> str:
    return "、".join(f"「{plain(c)}」" for c in chars)


def window(text: str, k: int) -> tuple[str, str]:
    """(read, ignored): an order-k model reads only the last k-1 tokens."""
    cut = max(0, len(text) - (k - 1))
    return text[cut:], text[:cut]


sequences, vocab = corpus()
# --- 1. The playground: count, then divide -----------------------------------------------
st.subheader(t("ngram.count_title"))
st.markdown(t("ngram.count_lead", lines=len(sequences), chars=sum(map(len, sequences)),
              v=len(vocab)))
with st.expander(t("ngram.corpus_show")):
    st.text("\n".join(sequences))
left, right = st.columns(2)
n = left.slider(t("ngram.n_label"), 1, MAX_N, 2, key="n", bind="query-params")
left.caption(t("ngram.order_caption", name=order_name(n), n=n, c=n - 1))
ctx = right.text_input(t("ngram.ctx_label"), "看动", max_chars=MAX_CONTEXT, key="ctx",
                       bind="query-params", help=t("ngram.ctx_help", limit=MAX_CONTEXT))
ctx = (ctx or "").strip()[:MAX_CONTEXT]
used, ignored = window(ctx, n)
unknown = [c for c in dict.fromkeys(ctx) if c not in vocab]
inside = [c for c in unknown if c in used]
st.markdown(t("ngram.window", used=f":blue[{plain(used)}]" if used else "∅", c=n - 1)
            + ("  \n" + t("ngram.ignored", ignored=f":gray-background[{plain(ignored)}]")
               if ignored else ""))
if unknown:
    (st.error if inside else st.info)(t("ngram.unknown_in" if inside else "ngram.unknown_out",
                                        chars=quote(unknown), v=len(vocab)))
counts = model(n).counts(used) if len(ctx) >= n - 1 else {}
if len(ctx) < n - 1:
    st.warning(t("ngram.too_short", c=n - 1, got=len(ctx)))
elif not counts and not inside:
    st.warning(t("ngram.unseen_context", used=plain(used)))
elif counts:
    total = sum(counts.values())
    top = list(counts.items())[:10]
    st.table({t("ngram.col_next"): [w for w, _ in top], t("ngram.col_count"): [c for _, c in top],
              t("ngram.col_prob"): [num(c / total) for _, c in top]})
    if len(counts) > len(top):
        st.caption(t("ngram.more_rows", k=len(counts) - len(top)))
    formula(r"P(w \mid c) = \frac{C(c\,w)}{\sum_{w'} C(c\,w')}",
            ",\\quad ".join(cond_prob(used, w) for w, _ in top[:2]))

st.markdown(f"**{t('ngram.orders_title')}**")
rows = [model(k).next_token_probs(ctx) if len(ctx) >= k - 1 else {} for k in range(1, MAX_N + 1)]
columns = list(dict.fromkeys(w for r in rows[1:] for w in r))[:8] or list(rows[0])[:6]
table = [[r.get(w, 0.0) for w in columns] for r in rows]
row_labels = [f"n={k} · {order_name(k)}" + ("" if len(ctx) >= k - 1 else " ✕")
              for k in range(1, MAX_N + 1)]


def explain_order(i: int, j: int) -> str:
    k, (read, _) = i + 1, window(ctx, i + 1)
    if len(ctx) < k - 1:
        return t("ngram.too_short", c=k - 1, got=len(ctx))
    if any(c not in vocab for c in read):
        return t("ngram.unknown_in", chars=quote(c for c in read if c not in vocab), v=len(vocab))
    return (t("ngram.cell_order", name=order_name(k), used=read or "∅")
            + f"\n\n${cond_prob(read, columns[j])}$")


heatmap(table, columns, row_labels, key="orders_map", explain=explain_order, zmin=0, zmax=1,
        colorscale="Greens", height=260)

# --- 2. The limits, each live ---------------------------------------------------------------
st.subheader(t("ngram.limits_title"))
st.markdown(f"**1 · {t('ngram.sparse_title')}**")
cols = st.columns(2)
for col, key, default in zip(cols, ("pa", "pb"), ("吃苹果", "吃梨"), strict=True):
    with col:
        phrase = (st.text_input(t("ngram.phrase_label"), default, max_chars=MAX_PHRASE, key=key,
                                bind="query-params") or "").strip()[:MAX_PHRASE]
        missing = [c for c in dict.fromkeys(phrase) if c not in vocab]
        if len(phrase) < 2:
            st.error(t("ngram.phrase_short"))
        elif missing:
            st.error(t("ngram.unknown_in", chars=quote(missing), v=len(vocab)))
        else:
            count = emb_lib.phrase_count(sequences, phrase)
            st.markdown(t("ngram.phrase_count", phrase=phrase, count=count))
            st.latex(r"\ \cdot\ ".join(cond_prob(a, b) for a, b in pairwise(phrase)))
            p = math.prod(model(2).next_token_probs(a).get(b, 0.0) for a, b in pairwise(phrase))
            st.markdown(t("ngram.chain", p=num(p)))
st.info(t("ngram.share_nothing"), icon=":material/link_off:")
st.markdown(f"**2 · {t('ngram.window_title')}**  \n" + t("ngram.window_text", c=n - 1, n=n))
st.markdown(f"**3 · {t('ngram.size_title')}**")
left, right = st.columns(2)
v_size = left.number_input(t("ngram.v_label"), 1, 1_000_000, 100_000, step=1, key="V",
                           bind="query-params")
tn = right.slider(t("ngram.tn_label"), 1, 10, 5, key="tn", bind="query-params")
v_size = min(max(int(v_size), 1), 1_000_000)  # a link could carry anything
size = NGramModel.table_size(v_size, tn)
digits = len(str(size)) - 1
power = f"10^{{{digits}}}" if str(size) == "1" + "0" * digits else \
    rf"\approx {num(size / 10**digits)} \times 10^{{{digits}}}"
formula(r"|\text{table}| = V^{\,n}", rf"{v_size:,}^{{{tn}}} = {power}".replace(",", "{,}"))
st.markdown(t("ngram.size_exact", size=f"{size:,}"))
seen, possible = emb_lib.distinct_windows(sequences, n), NGramModel.table_size(len(vocab), n)
st.caption(t("ngram.size_corpus", v=len(vocab), n=n, possible=f"{possible:,}", seen=seen,
             pct=num(100 * seen / possible, 2)))

# --- 3. One-hot vectors: every pair is orthogonal ------------------------------------------
st.subheader(t("ngram.onehot_title"))
st.markdown(t("ngram.onehot_lead"))
hot = emb_lib.cosine_table(emb_lib.one_hot(range(len(WORDS)), len(WORDS)))
left, right = st.columns(2)
with left:
    st.markdown(f"**{t('ngram.onehot_table')}**")
    st.table(matrix_frame(hot.vectors, WORDS, WORDS, decimals=0))
with right:
    st.markdown(f"**{t('ngram.onehot_dots')}**")
    heatmap(hot.dots, WORDS, WORDS, key="onehot_dots", zmin=0, zmax=1, height=240,
            explain=lambda i, j: f"$e_{{{WORDS[i]}}}\\cdot e_{{{WORDS[j]}}} = "
            f"{dot_terms(hot.vectors[i], hot.vectors[j])} = {short(hot.dots[i, j])}$")

# --- 4. Embeddings: a plane where direction means something ------------------------------
st.subheader(t("ngram.embed_title"))
st.markdown(t("ngram.embed_lead"))
left, right = st.columns([2, 3])
with left:
    emb = matrix_input("E", t("ngram.embed_input"), [[0.9, 0.8], [0.8, 0.9], [-0.8, -0.3]],
                       rows=3, bound=2.0, sliders=True, slider_range=(-2.0, 2.0),
                       help=t("ngram.embed_help"))
with right:
    reach = max(1.2, 1.2 * float(emb.abs().max()))
    arrows = [{"x": x, "y": y, "ax": 0, "ay": 0, "axref": "x", "ayref": "y", "showarrow": True,
               "arrowhead": 3, "arrowwidth": 2, "arrowcolor": "#868e96"} for x, y in emb.tolist()]
    fig = go.Figure(
        go.Scatter(x=emb[:, 0].tolist(), y=emb[:, 1].tolist(), text=PLANE, mode="markers+text",
                   textposition=["bottom right", "top left", "top center"],
                   marker={"size": 12, "color": ["#2f9e44", "#66a80f", "#d6336c"]},
                   hovertemplate="%{text}: (%{x:.3f}, %{y:.3f})<extra></extra>"),
        {"height": 420, "margin": {"l": 10, "r": 10, "t": 10, "b": 10}, "annotations": arrows,
         "xaxis": {"range": [-reach, reach], "title": t("ngram.axis_edible")},
         "yaxis": {"range": [-reach, reach], "title": t("ngram.axis_object"), "scaleanchor": "x"}})
    st.plotly_chart(fig, config={"displayModeBar": False}, width="stretch", key="plane")
cos = emb_lib.cosine_table(emb)
if (cos.norms == 0).any():
    st.error(t("ngram.zero_vector", words=quote(w for w, z in zip(PLANE, cos.norms == 0,
                                                                   strict=True) if z)))


def explain_cos(i: int, j: int) -> str:
    dot = dot_terms(emb[i], emb[j])
    return t("ngram.cell_cos", a=PLANE[i], b=PLANE[j]) + (
        f"\n\n$\\cos = \\frac{{{dot}}}{{{num(cos.norms[i])}\\cdot{num(cos.norms[j])}}} = "
        f"\\frac{{{num(cos.dots[i, j])}}}{{{num(cos.norms[i] * cos.norms[j])}}} = "
        f"{num(cos.cosine[i, j])}$")


heatmap(cos.cosine, PLANE, PLANE, key="cos_map", explain=explain_cos, zmin=-1, zmax=1,
        colorscale="RdBu", height=240)
formula(r"\cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}",
        rf"\cos(\text{{苹果}}, \text{{梨}}) = \frac{{{num(cos.dots[0, 1])}}}"
        rf"{{{num(cos.norms[0])}\cdot{num(cos.norms[1])}}} = {num(cos.cosine[0, 1])}")
st.caption(t("ngram.real_widths"))

# --- 5. Anisotropy and whitening ---------------------------------------------------------------
st.subheader(t("ngram.whiten_title"))
st.markdown(t("ngram.whiten_lead"))
left, right = st.columns(2)
points = left.slider(t("ngram.points_label"), 20, 500, 200, step=10, key="pts",
                     bind="query-params")
seed = right.number_input(t("ngram.seed_label"), 0, 9999, 0, step=1, key="seed",
                          bind="query-params")


def whitening_demo(points: int, seed: int) -> None:
    try:
        cloud = emb_lib.anisotropic_cloud(points, torch.Generator().manual_seed(seed))
        white = emb_lib.whiten(cloud)
    except TinyformerError as error:
        model_error(error)
        return
    st.caption(t("ngram.cloud_note"))
    lim = 1.1 * max(float(cloud.abs().max()), float(white.whitened.abs().max()))
    traces, layout = [], {"height": 380, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
                          "showlegend": False}
    for col, data, key, colour, ax in zip(st.columns(2), (cloud, white.whitened),
                                          ("before", "after"), ("#e8590c", "#1971c2"),
                                          ("", "2"), strict=True):
        col.metric(t(f"ngram.mean_cos_{key}"), num(emb_lib.mean_pairwise_cosine(data)))
        traces.append(go.Scatter(x=data[:, 0].tolist(), y=data[:, 1].tolist(), mode="markers",
                                 xaxis=f"x{ax}", yaxis=f"y{ax}",
                                 marker={"size": 5, "color": colour, "opacity": 0.7},
                                 hovertemplate="(%{x:.3f}, %{y:.3f})<extra></extra>"))
        layout[f"xaxis{ax}"] = {"range": [-lim, lim], "domain": [0, 0.47] if not ax else [0.53, 1]}
        layout[f"yaxis{ax}"] = {"range": [-lim, lim], "scaleanchor": f"x{ax}", "anchor": f"x{ax}"}
    st.plotly_chart(go.Figure(traces, layout), config={"displayModeBar": False},
                    width="stretch", key="clouds")
    formula(r"\tilde x = (x - \mu)\,\Sigma^{-1/2}",
            rf"\begin{{gathered}}\mu = {latex_vec(white.mean)},\quad "
            rf"\Sigma = {latex_matrix(white.covariance)} \\[4pt] "
            rf"\Sigma^{{-1/2}} = {latex_matrix(white.inv_sqrt)}\end{{gathered}}")
    with st.expander(t("ngram.whiten_check")):
        st.table(matrix_frame(white.whitened_covariance, ["x", "y"], ["x", "y"]))


whitening_demo(int(points), min(max(int(seed), 0), 9999))

predict_then_reveal(
    "ngram", t("ngram.ex_question"), ["0.600", "0.667", "1.000"], correct=0,
    explanation=t("ngram.ex_explain"),
)
footer_nav(stage)
