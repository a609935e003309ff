"""Stage 3: scores are dot products; dividing by sqrt(d_k) keeps their size steady."""

import plotly.graph_objects as go
import streamlit as st
import torch

from tinyformer.errors import TinyformerError
from tinyformer.scaling import hand_scores, histogram, scaling_experiment
from ui.exercise import predict_then_reveal
from ui.figures import matrix_frame
from ui.fmt import dot_terms, latex_vec, num, vec
from ui.formula import formula
from ui.hand_example import hand_example_inputs
from ui.i18n import t
from ui.notes import model_error
from ui.page import footer_nav, header, setup_page

stage = setup_page("scaling")
header(stage)

DK_CHOICES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
PAIR_CHOICES = [1000, 2000, 5000, 10000, 20000]
KEYS = 8  # keys per query: one row of the score table
COLOURS = {"raw": "#e8590c", "scaled": "#3b5bdb"}


@st.cache_data(max_entries=256)
def run(d_k: int, n_pairs: int, seed: int) -> dict:
    """One experiment as plain numbers (cheap to cache and to copy)."""
    exp = scaling_experiment(d_k, n_pairs, torch.Generator().manual_seed(seed), KEYS)
    hist = histogram([exp.raw, exp.scaled], bins=60)
    return {"n": exp.n_pairs, "raw": exp.raw_spread,
            "scaled": exp.scaled_spread, "top": (exp.mean_top_raw, exp.mean_top_scaled),
            "grad": (exp.mean_grad_raw, exp.mean_grad_scaled), "outside": exp.scaled_outside_unit,
            "centres": hist.centres.tolist(), "width": float(hist.edges[1] - hist.edges[0]),
            "counts": [c.tolist() for c in hist.counts]}


@st.cache_data(max_entries=64)
def sweep(n_pairs: int, seed: int) -> list[tuple[float, float]]:
    """Mean largest weight (unscaled, scaled) for every d_k choice: one cache look-up."""
    return [run(d_k, n_pairs, seed)["top"] for d_k in DK_CHOICES]


# --- By hand: q = [1, 0] against k_A = [1, 0] and k_B = [0, 1] -----------------------
st.subheader(t("scaling.hand_title"))
q, k_a, k_b, _, _ = hand_example_inputs(with_values=False)
hand = hand_scores(q, torch.stack([k_a, k_b]))
st.markdown(f"**1 · {t('scaling.step_scores')}** — `{vec(hand.scores)}`")
formula(r"s_j = q \cdot k_j",
        rf"s_A = {dot_terms(q, k_a)} = {num(hand.scores[0])},\quad "
        rf"s_B = {dot_terms(q, k_b)} = {num(hand.scores[1])}")
st.markdown(f"**2 · {t('scaling.step_scaled')}** — `{vec(hand.scaled)}`")
formula(r"\tilde s_j = \frac{s_j}{\sqrt{d_k}}",
        rf"\frac{{{latex_vec(hand.scores)}}}{{\sqrt{{{hand.d_k}}}}} = "
        rf"\frac{{{latex_vec(hand.scores)}}}{{{num(hand.sqrt_d_k)}}} = {latex_vec(hand.scaled)}")
st.markdown(f"**3 · {t('scaling.step_softmax')}**")
st.markdown(t("scaling.softmax_note", raw=vec(hand.weights_raw), scaled=vec(hand.weights_scaled),
              dk=hand.d_k))

# --- The experiment: random q, k with N(0, 1) entries ---------------------------------
st.subheader(t("scaling.exp_title"))
st.markdown(t("scaling.exp_lead", keys=KEYS))
c1, c2, c3 = st.columns([3, 3, 1], vertical_alignment="bottom")
d_k = c1.select_slider(t("scaling.d_k"), DK_CHOICES, value=64, key="dk", bind="query-params")
n = c2.select_slider(t("scaling.pairs"), PAIR_CHOICES, value=5000, key="pairs",
                     bind="query-params")
seed = c3.number_input(t("scaling.seed"), 0, 9999, 0, step=1, key="sseed", bind="query-params")
try:
    res = run(d_k, n, int(seed))
except TinyformerError as error:  # the widgets bound every size; kept as a safety net
    model_error(error)
    footer_nav(stage)
    st.stop()
raw, scaled = res["raw"], res["scaled"]

m = st.columns(5)
m[0].metric("d_k", d_k)
m[1].metric(t("scaling.var_raw"), num(raw.variance))
m[2].metric(t("scaling.var_scaled"), num(scaled.variance))
m[3].metric(t("scaling.top_raw"), num(res["top"][0]))
m[4].metric(t("scaling.top_scaled"), num(res["top"][1]))

fig = go.Figure([
    go.Bar(x=res["centres"], y=counts, width=res["width"], name=t(f"scaling.hist_{name}"),
           marker_color=COLOURS[name], opacity=0.6)
    for name, counts in zip(("raw", "scaled"), res["counts"], strict=True)
])
fig.update_layout(barmode="overlay", height=340, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                  title=t("scaling.hist_title", n=res["n"]), xaxis_title=t("scaling.hist_x"),
                  yaxis_title=t("scaling.hist_y"), legend={"orientation": "h", "y": -0.25})
st.plotly_chart(fig, config={"displayModeBar": False}, width="stretch")

st.markdown(f"**{t('scaling.why_title')}** — {t('scaling.why')}")
formula(r"\operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k,"
        r"\qquad \operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1")
st.caption(t("scaling.measured", n=res["n"]))
st.latex(rf"{num(raw.variance)} \approx {d_k},\qquad {num(scaled.variance)} \approx 1")

st.markdown(f"**{t('scaling.table_title')}**")
rows = [(t("scaling.row_mean"), raw.mean, scaled.mean),
        (t("scaling.row_var"), raw.variance, scaled.variance),
        (t("scaling.row_std"), raw.std, scaled.std),
        (t("scaling.row_min"), raw.min, scaled.min), (t("scaling.row_max"), raw.max, scaled.max),
        (t("scaling.row_top", keys=KEYS), *res["top"]), (t("scaling.row_grad"), *res["grad"])]
st.table(matrix_frame([r[1:] for r in rows], [t("scaling.col_raw"), t("scaling.col_scaled")],
                      [r[0] for r in rows]))
st.info(t("scaling.range_note", lo=num(scaled.min), hi=num(scaled.max), count=res["outside"],
          n=res["n"]), icon=":material/straighten:")

# --- The largest softmax weight as d_k grows ------------------------------------------
st.subheader(t("scaling.sweep_title"))
st.markdown(t("scaling.sweep_lead", keys=KEYS, uniform=num(1 / KEYS)))
tops = sweep(n, int(seed))
fig = go.Figure([
    go.Scatter(x=DK_CHOICES, y=[top[i] for top in tops], mode="lines+markers",
               name=t(f"scaling.hist_{name}"), marker_color=COLOURS[name])
    for i, name in enumerate(("raw", "scaled"))
])
fig.add_hline(y=1 / KEYS, line_dash="dot", annotation_text=t("scaling.sweep_uniform"))
fig.add_vline(x=d_k, line_dash="dash", line_color="#868e96")
fig.update_layout(height=320, margin={"l": 10, "r": 10, "t": 20, "b": 10},
                  xaxis={"type": "log", "title": t("scaling.sweep_x"), "tickvals": DK_CHOICES},
                  yaxis={"range": [0, 1.05], "title": t("scaling.sweep_y")},
                  legend={"orientation": "h", "y": -0.3})
st.plotly_chart(fig, config={"displayModeBar": False}, width="stretch")
st.warning(t("scaling.onehot_note", dk=d_k, top_raw=num(res["top"][0]),
             top_scaled=num(res["top"][1]), grad_raw=num(res["grad"][0]),
             grad_scaled=num(res["grad"][1])), icon=":material/bolt:")

predict_then_reveal(
    "scaling", t("scaling.ex_question"),
    [t("scaling.ex_1"), t("scaling.ex_16"), t("scaling.ex_256")], correct=2,
    explanation=t("scaling.ex_explain"),
)
footer_nav(stage)
