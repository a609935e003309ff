"""Stage 0.2: embeddings are dense vectors; the cosine compares their directions; whitening
spreads a narrow cone of trained vectors."""

import streamlit as st
import torch

from tinyformer.embedding import anisotropic_cloud, cosine_table, mean_pairwise_cosine, whiten
from ui import explain
from ui.charts import PALETTE, point_clouds, vectors
from ui.example import gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap
from ui.fmt import dot_terms, latex_matrix, latex_vec, num
from ui.formula import formula
from ui.i18n import t
from ui.inputs import matrix_input, number
from ui.notes import shown_errors
from ui.page import part, section
from ui.reveal import Stepper
from ui.tables import matrix_table

WORDS = ("苹果", "梨", "动漫")
# Two fruits in neighbouring cool colours, the cartoon apart (the kit's checked palette)
COLOURS = {"苹果": PALETTE[2], "梨": PALETTE[4], "动漫": PALETTE[3]}
# Axes (entertainment, edible). Both fruit point up "edible", 动漫 along "entertainment":
# unrelated, so near 90°. The fruit differ in length so that their labels stay apart.
PLANE = [[0.0, 0.9], [0.1, 0.7], [0.9, 0.0]]
PRESETS = {"default": "0, 0.9; 0.1, 0.7; 0.9, 0", "opposite": "0, 0.9; 0.1, 0.7; 0, -0.9"}
BOUND = 2.0


def use_preset(name: str) -> None:
    st.session_state["embeddings.E"] = PRESETS[name]


def cos_latex(cos, i: int, j: int) -> str:
    """cos(苹果, 梨) = (0·0.1 + 0.9·0.7) / (0.900·0.707) = 0.630 / 0.636 = 0.990, θ = 8.1°,
    one step per line so that it fits a narrow column."""
    name = rf"\cos(\text{{{WORDS[i]}}}, \text{{{WORDS[j]}}})"
    ratio = rf"\frac{{{num(cos.dots[i, j])}}}{{{num(cos.denominators[i, j])}}}"
    terms = dot_terms(cos.vectors[i], cos.vectors[j])
    return (rf"\begin{{aligned}}{name} &= \frac{{{terms}}}"
            rf"{{{num(cos.norms[i])} \cdot {num(cos.norms[j])}}} \\[4pt] "
            rf"&= {ratio} = {num(cos.cosine[i, j])} \\[4pt] "
            rf"\theta &= {num(cos.degrees[i, j], 1)}^\circ\end{{aligned}}")


def worked_pair(cos, steps: Stepper) -> None:
    """cos(苹果, 梨) one step at a time: dot product, lengths, their ratio, the angle."""
    a, b = (rf"\text{{{w}}}" for w in WORDS[:2])
    u, v = cos.vectors[:2]
    nu, nv = map(num, cos.norms[:2])
    dot = num(cos.dots[0, 1])
    lines = [rf"{a} \cdot {b} &= {dot_terms(u, v)} \\ &= {dot}",
             rf"\lVert {a} \rVert &= \sqrt{{{dot_terms(u, u)}}} = {nu} \\ "
             rf"\lVert {b} \rVert &= \sqrt{{{dot_terms(v, v)}}} = {nv}",
             rf"\cos({a}, {b}) &= \frac{{{a} \cdot {b}}}{{\lVert {a}\rVert\,\lVert {b}\rVert}}"
             rf" \\ &= \frac{{{dot}}}{{{nu} \cdot {nv}}} = "
             rf"\frac{{{dot}}}{{{num(cos.denominators[0, 1])}}} \\ &= {num(cos.cosine[0, 1])}",
             rf"\theta &= \arccos({num(cos.cosine[0, 1])}) = {num(cos.degrees[0, 1], 1)}^\circ"]
    for k, line in enumerate(lines, start=1):
        if steps.step(k):
            formula(rf"\begin{{aligned}}{line}\end{{aligned}}")


gloss(WORDS)
@part
def plane() -> None:
    section(t("embeddings.plane_title"))
    st.markdown(t("embeddings.plane_lead"))
    unrelated = choice_exercise(
        "unrelated", t("embeddings.ex_choice"),
        [t("embeddings.ex_one"), t("embeddings.ex_zero"), t("embeddings.ex_minus")], correct=1,
        explanation=t("embeddings.ex_choice_explain"))
    axes = (t("embeddings.axis_x"), t("embeddings.axis_y"))
    left, middle, right = st.columns([4, 4, 3])  # inputs, their picture, one worked cosine
    with left:
        emb = matrix_input("E", t("embeddings.plane_input"), PLANE, rows=3, bound=BOUND,
                           sliders=True, slider_range=(-BOUND, BOUND),
                           slider_labels=[f"{w} · {a}" for w in WORDS for a in axes],
                           help=t("embeddings.plane_help", bound=num(BOUND, 0)))
        with st.container(horizontal=True):
            for name in PRESETS:
                st.button(t(f"embeddings.preset_{name}"), on_click=use_preset, args=(name,))
    with middle:
        vectors(dict(zip(WORDS, emb.tolist(), strict=True)), key="plane", colours=COLOURS,
                x_title=axes[0], y_title=axes[1], height=380, decimals=2,
                reach=max(1.5, 1.5 * float(emb.abs().max())))
    cos = cosine_table(emb)
    with right:
        worked_pair(cos, Stepper("hand", [t(f"embeddings.step_{k}")
                                          for k in ("dot", "norms", "cos", "angle")]))
    worked = True  # the cosine exercise is answered (or has no answer: a zero vector)
    if (cos.norms == 0).any():
        st.error(t("embeddings.zero_vector", words="、".join(
            w for w, zero in zip(WORDS, (cos.norms == 0).tolist(), strict=True) if zero)))
    else:
        worked = number_exercise("cos", t("embeddings.ex_number"), float(cos.cosine[1, 2]),
                                 explain.formula(t("embeddings.ex_number_steps"),
                                                 cos_latex(cos, 1, 2)))
    why = choice_exercise("cos_why", t("embeddings.ex_why"),
                          [t(f"embeddings.ex_why_{k}") for k in "abc"], correct=1,
                          explanation=t("embeddings.ex_why_explain"))
    if unrelated and worked and why:  # the tables hold every exercise's answer
        cosine_tables(cos)
    else:
        after_answer()
    st.caption(t("embeddings.real_widths"))


def cosine_tables(cos) -> None:
    """The cosine and the angle of every pair, and what each range of values means."""
    def explain_cos(i: int, j: int) -> str:
        return explain.formula(t("embeddings.cell_cos", a=WORDS[i], b=WORDS[j]),
                               cos_latex(cos, i, j))
    left, right = st.columns(2)
    with left:
        heatmap(cos.cosine, WORDS, WORDS, key="cos_map", explain=explain_cos, zmin=-1, zmax=1,
                colorscale="RdBu", height=240, title=t("embeddings.cos_table"))
    with right:
        heatmap(cos.degrees, WORDS, WORDS, key="angle_map", explain=explain_cos, zmin=0,
                zmax=180, colorscale="Purples", decimals=1, height=240,
                title=t("embeddings.angle_table"))
    st.markdown(t("embeddings.which_is_which"))


plane()
@part
def whitening() -> None:
    section(t("embeddings.whiten_title"), folded=True)
    st.markdown(t("embeddings.whiten_lead"))
    with st.container(horizontal=True, vertical_alignment="bottom"):
        points = number("pts", t("embeddings.points_label"), 20, 500, 200, step=10,
                        gesture="slider")
        seed = number("seed", t("embeddings.seed_label"), 0, 9999, 0)
    with shown_errors():
        white = whiten(cloud := anisotropic_cloud(points, torch.Generator().manual_seed(seed)))
        st.caption(t("embeddings.cloud_note"))
        before, after = st.columns(2)
        before.metric(t("embeddings.mean_cos_before"), num(mean_pairwise_cosine(cloud)))
        after.metric(t("embeddings.mean_cos_after"), num(mean_pairwise_cosine(white.whitened)))
        point_clouds([cloud.tolist(), white.whitened.tolist()], key="clouds")
        formula(r"\tilde x = (x - \mu)\,\Sigma^{-1/2}",
                rf"\begin{{gathered}}\mu = {latex_vec(white.mean)},\quad "
                rf"\Sigma = {latex_matrix(white.covariance)} \\[4pt] "
                rf"\Sigma^{{-1/2}} = {latex_matrix(white.inv_sqrt)}\end{{gathered}}")
        with st.expander(t("embeddings.whiten_check")):
            matrix_table(white.whitened_covariance, ["x", "y"], ["x", "y"],
                  name=t("embeddings.table_whitened"))
    st.info(t("embeddings.whiten_when"), icon=":material/schedule:")
whitening()
