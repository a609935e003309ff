"""Stage 7.2: RoPE turns each pair of q and k by an angle that grows with the position, so
a score depends on how far apart two words are, not on where they stand."""

import math

import streamlit as st

from tinyformer import positional as pos
from ui import explain
from ui.charts import vectors
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import dot_terms, latex_matrix, num, places, short, term, vec
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import matrix_input, number, toggle
from ui.notes import shown_errors
from ui.page import part, section
from ui.reveal import Stepper
from ui.tables import table


def column(v, decimals: int = 3) -> str:
    return latex_matrix([[x] for x in v.tolist()], decimals)


def turned(v, deg: float, out) -> str:
    """R_{30°}[a, b] = [a cos 30° - b sin 30°, a sin 30° + b cos 30°] = [...]."""
    a = term(v[0])
    b = term(v[1])
    th = rf"{short(deg)}^\circ"
    return (rf"R_{{{th}}}{column(v, places(v))} = \begin{{bmatrix}}{a}\cos {th} - {b}\sin "
            rf"{th}\\ {a}\sin {th} + {b}\cos {th}\end{{bmatrix}} = {column(out)}")


def state_row(label: str, pair: pos.PairRotation, a: float, b: float) -> list[str]:
    return [label, f"{short(a)}°", f"{short(b)}°", f"{short(b - a)}°", num(pair.dot),
            num(pair.q_rot_length), num(pair.k_rot_length)]


def score_map(run: pos.RopeScores, rotated: bool, style: dict) -> None:
    """One score table; a cell is a dot product, of the turned vectors with RoPE."""
    qs, ks, scores, key = ((run.q_rot, run.k_rot, run.rotated, "rope") if rotated
                           else (run.q, run.k, run.plain, "plain"))

    def cell(i: int, j: int) -> str:
        lhs = (rf"(R_{{{i}}}q_{{{i}}})\cdot(R_{{{j}}}k_{{{j}}})" if rotated
               else rf"q_{{{i}}}\cdot k_{{{j}}}")
        return explain.dot(t(f"rope.cell_{key}", i=i, j=j), explain.cell_name("s", i, j),
                           qs[i], ks[j], scores[i, j], lhs=lhs)

    subsection(t(f"rope.table_{key}"))
    labels = range(scores.shape[0])
    heatmap(scores, [f"k{j}" for j in labels], [f"q{i}" for i in labels], key=key,
            explain=cell, **style)


@part
def by_hand() -> None:  # q, k, the angles and the shift: this section only
    st.caption(t("rope.tokens"))
    section(t("rope.hand_title"))
    left, right = st.columns([2, 3])
    with left:
        q = matrix_input("q", "q", [1, 0])
        k = matrix_input("k", "k", [1, 0])
        a = number("aq", t("rope.angle_q"), -360, 360, 0, gesture="both")
        b = number("ak", t("rope.angle_k"), -360, 360, 60, gesture="both")
    with shown_errors():
        pair = pos.rotate_pair(q, k, math.radians(a), math.radians(b))
        with right:
            vectors({"R<sub>α</sub>q": pair.q_rot, "R<sub>β</sub>k": pair.k_rot}, key="pair",
                    height=320)
            st.markdown(rf"$(R_\alpha q)\cdot(R_\beta k) = {num(pair.dot)}$")
        steps = Stepper("hand", [t(f"rope.step_{s}") for s in ("q", "k", "dot")])
        if steps.shows(1):
            formula(r"R_\theta\begin{bmatrix}a\\ b\end{bmatrix} = \begin{bmatrix}a\cos\theta - "
                    r"b\sin\theta\\ a\sin\theta + b\cos\theta\end{bmatrix}",
                    turned(q, a, pair.q_rot))
        if steps.shows(2):
            st.latex(turned(k, b, pair.k_rot))
        if steps.shows(3):
            formula(r"(R_\alpha q)\cdot(R_\beta k)",
                    rf"{dot_terms(pair.q_rot.tolist(), pair.k_rot.tolist())} = {num(pair.dot)}")
            st.markdown(t("rope.lengths", q=num(pair.q_length), qr=num(pair.q_rot_length),
                          k=num(pair.k_length), kr=num(pair.k_rot_length), plain=num(pair.plain)))
        section(t("rope.shift_title"), folded=True)
        if choice_exercise("shift", t("rope.ex_question"),
                           [t("rope.ex_bigger"), t("rope.ex_same"), t("rope.ex_zero")],
                           correct=1, explanation=t("rope.ex_explain")):
            shifted(q, k, a, b, pair)
        else:  # turning both and the formula below answer it
            after_answer()


def shifted(q, k, a: float, b: float, pair: pos.PairRotation) -> None:
    """Both turned by m more degrees: the same dot product; only β − α enters."""
    m = number("shift", t("rope.shift"), -360, 360, 0, gesture="slider")
    moved = pos.shift_pair(q, k, math.radians(a), math.radians(b), math.radians(m))
    cols = st.columns(2)
    with cols[0]:
        vectors({"R<sub>α+m</sub>q": moved.after.q_rot, "R<sub>β+m</sub>k": moved.after.k_rot},
                key="moved", height=320)
    with cols[1]:
        table([state_row(t("rope.before"), moved.before, a, b),
               state_row(t("rope.after", m=short(m)), moved.after, a + m, b + m)],
              columns=[t(f"rope.col_{c}") for c in ("state", "a", "b", "diff", "dot", "q", "k")],
              name=t("rope.shift_title"))
        if moved.unchanged:
            st.success(t("rope.unchanged", dot=num(moved.after.dot)))
        else:
            st.warning(t("rope.changed", change=num(moved.change)))
        st.markdown(t("rope.positions_note"))
    formula(r"(R_\alpha q)\cdot(R_\beta k) = q\cdot(R_{\beta-\alpha}\,k)",
            rf"{column(q, places(q))}\cdot{column(pair.k_relative)} = {num(pair.relative)}")
    st.caption(t("rope.relative_note", diff=short(b - a)))


# Where RoPE sits in an attention layer: q and k are turned after their projections; v
# takes the same path without the turn (an arrow with no R_p).
FLOW = (r"\begin{array}{ccccc} "
        r"x_p & \xrightarrow{\;W_q\;} & x_pW_q & \xrightarrow{\;R_p\;} & q_p \\ "
        r"x_p & \xrightarrow{\;W_k\;} & x_pW_k & \xrightarrow{\;R_p\;} & k_p \\ "
        r"x_p & \xrightarrow{\;W_v\;} & x_pW_v & \xrightarrow{\phantom{\;R_p\;}} & v_p "
        r"\end{array}")


def where_it_acts() -> None:
    section(t("rope.where_title"))
    st.markdown(t("rope.where_lead"))
    st.latex(FLOW)
    st.markdown(t("rope.where_cache"))


@part
def frequencies() -> None:  # d, n, seed and 'same rows': the rest of the page
    section(t("rope.freq_title"))
    formula(r"\theta_i = \text{base}^{-2i/d},\quad \text{angle}_{p,i} = p\,\theta_i")
    at7 = float(pos.rope_angles([7.0], 8)[0, 1])  # pair 1 at position 7, d = 8
    typed = number_exercise(
        "angle", t("rope.ex2_question"), at7,
        explain.formula(t("rope.ex2_steps"), rf"\theta_1 = 10000^{{-2/8}} = "
                        rf"{num(pos.rope_frequencies(8)[1])},\quad 7\,\theta_1 = "
                        rf"{num(at7)}\ \text{{rad}}"))
    choice_exercise("linear", t("rope.why_question"), [t(f"rope.why_{k}") for k in "abc"],
                    correct=0, explanation=t("rope.why_explain"))
    cols = st.columns([2, 2, 1], vertical_alignment="bottom")
    with cols[0]:
        d = number("d", t("rope.d"), 1, 16, 8, gesture="slider")
    with cols[1]:
        n = number("n", t("rope.n"), 1, 16, 8, gesture="slider")
    with cols[2]:
        seed = number("seed", t("rope.seed"), 0, 9999, 0, help=t("rope.seed_help"))
    same = toggle("same", t("rope.same"), False)
    with shown_errors():
        run = pos.random_rope_example(n, d, seed, same_rows=same)
        # [d/2], [n, d/2]
        theta = pos.rope_frequencies(d)
        turns = pos.within_turn(run.angles)
        if typed:  # θ and the angles answer the exercise
            st.caption(t("rope.thetas", d=d, theta=vec(theta, 4)))
            heatmap(turns, [f"i={i}" for i in range(len(theta))], [str(p) for p in range(n)],
                    key="angles", zmin=0, zmax=360, title=t("rope.angles_title"),
                    colorscale="Twilight", decimals=1, x_title=t("rope.pair"),
                    y_title=t("rope.position"), explain=lambda p, i: explain.formula(
                        t("rope.cell_angle", p=p, i=i, a=2 * i, b=2 * i + 1),
                        rf"{p}\cdot\theta_{{{i}}} = {p}\cdot{num(theta[i], 4)} = "
                        rf"{num(run.angles[p, i], 4)}\ \text{{rad}} \to "
                        rf"{num(turns[p, i], 1)}^\circ"))
        else:
            after_answer()
        section(t("rope.scores_title"))
        st.info(t("rope.random_qk"), icon=":material/casino:")
        for col, rotated in zip(st.columns(2), (False, True), strict=True):
            with col:
                score_map(run, rotated, diverging(run.plain, run.rotated))
        st.caption(t("rope.same_note" if same else "rope.try_same"))
        section(t("rope.half_title"))
        cmp = pos.compare_pairings(run.q, run.k)
        st.markdown(t("rope.half", order=", ".join(map(str, cmp.order.tolist())),
                      same=num(cmp.gap_same), reordered=num(cmp.gap_reordered)))
        st.caption(t("rope.half_why"))


by_hand()
where_it_acts()
frequencies()
st.warning(t("rope.long_context"), icon=":material/warning:")
