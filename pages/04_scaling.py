"""Stage 4: scores are dot products; dividing by sqrt(d_k) keeps their size steady.

Softmax (stage 3) is taught before this page: the hand example recalls it."""

import math

import streamlit as st
import torch

from tinyformer.lessons import scaling
from tinyformer.lessons.chain import WIDTH
from ui import chain, explain
from ui.charts import lines
from ui.example import TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import decimals_for, latex_vec, num, vec
from ui.formula import formula
from ui.hand_example import hand_example_inputs, score_steps
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import choice, matrix_input, number
from ui.page import part, section, stage_link
from ui.reveal import Stepper
from ui.tables import matrix_table

DK_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# 2,000 rows of 8 keys for every d_k
KEYS = 8
PAIRS = 16_000
TILDE_S = r"\tilde s"  # a scaled score


@st.cache_resource(max_entries=8)
def sweep(seed: int):
    """One experiment per d_k, all from the same seed (shared by every session)."""
    return scaling.saturation_sweep(list(DK_CHOICES), PAIRS, seed, KEYS)


def cosine(value: float, name: str) -> str:
    """A zero vector has no angle: the symbol stays (any angle gives 0)."""
    return num(value) if math.isfinite(value) else rf"\cos\theta_{name}"


# --- By hand: q = [1, 0] against k_A = [1, 0] and k_B = [0, 1] -------------------
section(t("scaling.hand_title"))
q, k_a, k_b, _, _ = hand_example_inputs(with_values=False)
hand = scaling.hand_scores(q, torch.stack([k_a, k_b]))
steps = Stepper("hand", [t(f"scaling.step_{k}") for k in ("scores", "scaled", "softmax")])
score_steps(steps, q, k_a, k_b, hand.scores, hand.scaled)
if steps.step(3, t("scaling.softmax_recall")):
    st.markdown(t("scaling.softmax_note", raw=vec(hand.weights_raw),
                  scaled=vec(hand.weights_scaled), dk=hand.d_k))
    stage_link("softmax")
st.markdown(t("scaling.length_note"))  # an aside to step 1, after the steps
formula(r"q \cdot k = |q|\,|k|\cos\theta", r"\begin{gathered}" + r" \\ ".join(
    rf"s_{n} = {num(hand.q_norm)} \cdot {num(hand.key_norms[i])} \cdot "
    rf"{cosine(float(hand.cosines[i]), n)} = {num(hand.scores[i])}"
    for i, n in enumerate("AB")) + r"\end{gathered}")

# --- The running example: stage 2's scores divided by √2 -----------------------
section(t("scaling.chain_title"))
run = chain.run()  # the hand model with the learner's values (edited on stages 1.1 and 2)
st.markdown(t("scaling.chain_lead", dk=WIDTH, root=num(math.sqrt(WIDTH))))
gloss(TAIL4)
left, right = st.columns(2)
with left:
    heatmap(run.scores, TAIL4, TAIL4, key="chain_s", **diverging(run.scores),
            title=t("scaling.chain_scores"), explain=lambda i, j: explain.dot(
                t("scaling.chain_cell_s", i=TAIL4[i], j=TAIL4[j]), explain.cell_name("s", i, j),
                run.Q[i], run.K[j], float(run.scores[i, j]), lhs=rf"q_{i} \cdot k_{j}"))
with right:
    heatmap(run.scaled, TAIL4, TAIL4, key="chain_scaled", **diverging(run.scaled),
            title=t("scaling.chain_scaled"), explain=lambda i, j: explain.formula(
                t("scaling.chain_cell_scaled", i=TAIL4[i], j=TAIL4[j]),
                explain.cell_name(TILDE_S, i, j) + rf" = \frac{{{num(run.scores[i, j])}}}"
                rf"{{\sqrt{{{WIDTH}}}}} = {num(run.scaled[i, j])}"))
st.markdown(t("scaling.chain_note", dk=WIDTH, inv=num(1 / math.sqrt(WIDTH))))

# --- Why the variance is d_k: predict first, then derive, then measure ----------
section(t("scaling.why_title"), folded=True)
var_answered = number_exercise("var", t("scaling.ex_var_question"), 256.0,
                               t("scaling.ex_var_steps"), tolerance=0.5, decimals=1)
if var_answered:  # the derivation, and the experiment's variances, give the answer
    st.markdown(t("scaling.why"))
    formula(r"\operatorname{Var}(q\cdot k) = \sum_{i=0}^{d_k-1} \operatorname{Var}(q_i k_i)"
            r" = d_k,\qquad \operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1")
    choice_exercise("root", t("scaling.ex_root_question"),  # why √d_k: beside the product
                    [t("scaling.ex_root_order"), t("scaling.ex_root_square"),
                     t("scaling.ex_root_range")], correct=1,
                    explanation=t("scaling.ex_root_explain"))
else:
    after_answer()

@part
def experiment() -> None:
    section(t("scaling.exp_title"))
    exercise = st.container()  # predict first: filled once the sweep is measured
    st.markdown(t("scaling.exp_lead", keys=KEYS, rows=f"{PAIRS // KEYS:,}", pairs=f"{PAIRS:,}"))
    left, right = st.columns([4, 1], vertical_alignment="bottom")
    with left:
        d_k = choice("dk", t("scaling.d_k"), DK_CHOICES, 64, widget="slider")
    with right:
        seed = number("seed", t("scaling.seed"), 0, 9999, 0, help=t("scaling.seed_help"))
    runs = sweep(seed)
    with exercise:
        sat_answered = choice_exercise(
            "sat", t("scaling.ex_sat_question"),
            [t("scaling.ex_sat_grows"), t("scaling.ex_sat_stays"), t("scaling.ex_sat_falls")],
            correct=1, explanation=t("scaling.ex_sat_explain",
                                     worst=num(max(runs.saturated_scaled)),
                                     top=num(runs.saturated_raw[-1]), dk=DK_CHOICES[-1]))
    if not var_answered:  # the measured variances answer the variance exercise above
        after_answer()
        return
    exp = runs.at(d_k)
    raw = exp.raw_spread
    scaled = exp.scaled_spread
    st.caption(t("scaling.measured", n=f"{exp.n_pairs:,}"))
    formula(r"\operatorname{Var}(q\cdot k) \approx d_k,\qquad "
            r"\operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) \approx 1",
            rf"{num(raw.variance)} \approx {d_k},\qquad {num(scaled.variance)} \approx 1")
    hist = scaling.histogram([exp.raw, exp.scaled], bins=60)
    lines(hist.centres.tolist(), {t("scaling.hist_raw"): hist.counts[0].tolist(),
                                  t("scaling.hist_scaled"): hist.counts[1].tolist()},
          key="hist", x_title=t("scaling.hist_x"), y_title=t("scaling.hist_y"), table=False)
    rows = [(t("scaling.row_mean"), raw.mean, scaled.mean),
            (t("scaling.row_var"), raw.variance, scaled.variance),
            (t("scaling.row_std"), raw.std, scaled.std),
            (t("scaling.row_min"), raw.min, scaled.min),
            (t("scaling.row_max"), raw.max, scaled.max)]
    if sat_answered:  # the softmax rows answer the saturation exercise
        rows += [(t("scaling.row_top", keys=KEYS), exp.mean_top_raw, exp.mean_top_scaled),
                 (t("scaling.row_sat"), exp.saturated_raw, exp.saturated_scaled)]
    matrix_table([r[1:] for r in rows], [t("scaling.col_raw"), t("scaling.col_scaled")],
                       [r[0] for r in rows], name=t("scaling.table_stats"))
    st.info(t("scaling.range_note", lo=num(scaled.min), hi=num(scaled.max),
              count=f"{exp.scaled_outside_unit:,}", n=f"{exp.n_pairs:,}"),
            icon=":material/straighten:")

    # --- Saturation: the share of nearly one-hot rows as d_k grows -------------------
    section(t("scaling.sat_title"))
    if not sat_answered:
        after_answer()
        return
    st.markdown(t("scaling.sat_lead", threshold=scaling.SATURATED, keys=KEYS,
                  rows=f"{exp.n_queries:,}"))
    shares = {t("scaling.hist_raw"): runs.saturated_raw,
              t("scaling.hist_scaled"): runs.saturated_scaled}
    lines(list(DK_CHOICES), shares, key="sat", log_x=True, markers=True, y_range=(0, 1),
          x_title="d_k", y_title=t("scaling.sat_y"), marks={f"d_k = {d_k}": d_k})
    st.warning(t("scaling.sat_note", dk=d_k, raw=f"{exp.n_saturated_raw:,}",
                 scaled=f"{exp.n_saturated_scaled:,}", rows=f"{exp.n_queries:,}",
                 share_raw=num(exp.saturated_raw), share_scaled=num(exp.saturated_scaled)),
               icon=":material/bolt:")
experiment()

# --- One gap of 10 is enough: softmax of two scores and its derivative -----------
@part
def one_gap() -> None:
    subsection(t("scaling.gap_title"))
    pair = matrix_input("pair", t("scaling.pair"), [30, 20], sliders=True,
                        slider_range=(-40.0, 40.0), slider_labels=["s₀", "s₁"])
    row = scaling.softmax_sensitivity(pair)
    even = scaling.softmax_sensitivity(torch.zeros(2))
    places_ = decimals_for([*row.weights, row.jacobian_norm])
    formula(r"\begin{gathered}a = \mathrm{softmax}(s) \\ \Big\| \frac{\partial a}{\partial s}"
            r" \Big\|_F = 2\,a_0 a_1\end{gathered}",  # one per line: phones are narrow
            rf"\begin{{gathered}}a = {latex_vec(row.weights, places_)} \\ "
            rf"\Big\| \frac{{\partial a}}{{\partial s}} \Big\|_F = "
            rf"{num(row.jacobian_norm, places_)}\end{{gathered}}")
    st.markdown(t("scaling.gap_note", norm=num(row.jacobian_norm, places_),
                  even=num(even.jacobian_norm)))
one_gap()
