"""Stage 7.1: without positions attention cannot tell 我吃苹果 from 苹果吃我; sinusoidal
position rows fix that."""

import streamlit as st

from tinyformer.lessons.word_order import ShuffleComparison, compare_orders, shuffles
from tinyformer.positional import sinusoidal, sinusoidal_row
from ui import explain
from ui.example import gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import latex_matrix, num, short, vec
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import choice, number
from ui.notes import random_weights_note, shown_errors
from ui.page import fold, part, section
from ui.reveal import Stepper

WORDS = ("我", "吃", "苹果")
ORDERS = {"".join(map(str, p)): p for p in shuffles(len(WORDS))}  # "210" -> (2, 1, 0)
PE_SYMBOLIC = (r"PE_{pos,\,2i} = \sin\frac{pos}{10000^{2i/d}},\quad "
               r"PE_{pos,\,2i+1} = \cos\frac{pos}{10000^{2i/d}}")


def pe_cell(pos: int, col: int, d: int) -> str:
    """PE[pos, col] = sin or cos of pos / 10000^(2i/d), with the live numbers."""
    row = sinusoidal_row(pos, d)
    fn = r"\sin" if col % 2 == 0 else r"\cos"
    return (rf"PE_{{{pos},{col}}} = {fn}\frac{{{pos}}}{{10000^{{{col - col % 2}/{d}}}}} = "
            rf"{fn}\frac{{{pos}}}{{{short(row.divisors[col])}}} = {fn}({num(row.angles[col], 4)})"
            rf" = {num(row.values[col])}")


def outputs(cmp: ShuffleComparison, tag: str) -> None:
    """Each order's output rows side by side, on one colour scale; cells explain themselves."""
    style = diverging(cmp.first.output, cmp.second.output)
    dims = list(range(cmp.gap.shape[1]))
    for col, run, side in zip(st.columns(2), (cmp.first, cmp.second), "ab", strict=True):
        def cell(i: int, c: int, run=run) -> str:
            return explain.dot(t("positions.cell_out", w=run.words[i], c=c),
                               explain.cell_name("o", i, c), run.attention.weights[i],
                               run.v[:, c], run.output[i, c],
                               lhs=rf"\sum_j a_{{{i},j}} v_{{j,{c}}}")
        with col:
            subsection(f"「{''.join(run.words)}」")
            heatmap(run.output, [str(c) for c in dims], run.words, key=f"{tag}_{side}",
                    explain=cell, x_title=t("positions.component"), **style)


def matched(cmp: ShuffleComparison, tag: str, suffix: str = "") -> None:
    """Each word's output row in the first order minus its row in the second."""
    first = "".join(cmp.first.words)
    second = "".join(cmp.second.words)

    def cell(i: int, c: int) -> str:
        j = cmp.order.index(i)  # where word i went
        return explain.formula(t("positions.cell_gap", w=WORDS[i], a=first, b=second),
                               rf"{num(cmp.first.output[i, c])} - ({num(cmp.second.output[j, c])})"
                               rf" = {num(cmp.gap[i, c])}")

    subsection(f"{t('positions.gap_title', a=first, b=second)}{suffix}")
    heatmap(cmp.gap, [str(c) for c in range(cmp.gap.shape[1])], WORDS, key=f"{tag}_gap",
            explain=cell, x_title=t("positions.component"),
            **diverging(cmp.first.output, cmp.second.output))
    if cmp.rows_match:
        st.success(t("positions.rows_match", a=first, b=second))
    else:
        st.warning(t("positions.rows_differ", gap=num(cmp.largest_gap)))


@part
def shuffle() -> None:
    """The order, width and seed drive only this section."""
    st.caption(t("positions.tokens"))
    gloss(WORDS)
    cols = st.columns([3, 2, 1], vertical_alignment="bottom")
    with cols[0]:
        order = choice("order", t("positions.order"), list(ORDERS), "210", widget="select",
                       format_func=lambda key: "".join(WORDS[i] for i in ORDERS[key]))
    with cols[1]:
        width = number("d", t("positions.width"), 1, 8, 4, gesture="slider")
    with cols[2]:
        seed = number("seed", t("positions.seed"), 0, 9999, 0, help=t("positions.seed_help"))
    random_weights_note()
    steps = Stepper("shuffle", [t(f"positions.step_{k}") for k in ("orders", "gap", "pe")],
                    fold_at=3)
    with shown_errors():
        plain = compare_orders(WORDS, ORDERS[order], width, seed)
        if steps.shows(1):
            outputs(plain, "out")
            st.caption(t("positions.no_mask"))
        if steps.shows(2):
            matched(plain, "out")
        fold(t("positions.pe_title"))
        if steps.shows(3):
            section(t("positions.pe_title"))
            moved = next(w for w in range(len(WORDS)) if plain.order[w] != w)  # first word moved
            answered = choice_exercise(
                "pe", t("positions.ex_question"),
                [t("positions.ex_same"), t("positions.ex_change"), t("positions.ex_cols")],
                correct=1, explanation=t("positions.ex_explain", w=WORDS[moved], p=moved,
                                         q=plain.order.index(moved), a="".join(WORDS),
                                         b="".join(plain.second.words)))
            with_pe = compare_orders(WORDS, ORDERS[order], width, seed, with_positions=True)
            st.markdown(t("positions.pe_lead"))
            formula(r"x_p = e_{w_p} + PE_p",
                    rf"\begin{{bmatrix}}PE_0\\ PE_1\\ PE_2\end{{bmatrix}} = "
                    rf"{latex_matrix(with_pe.first.positions)}")
            if answered:  # the rows with positions answer the exercise
                matched(with_pe, "pos", " (+ PE)")
            else:
                after_answer()


def explore() -> None:
    """Any width, position and length: one row worked out, then the whole table."""
    left, right = st.columns([2, 3])
    with left:
        d = number("table_d", t("positions.table_d"), 1, 32, 4, gesture="both")
        pos = number("pos", t("positions.pos"), 0, 999, 1, gesture="both")
        n = number("n", t("positions.n"), 1, 64, 16, gesture="slider")
    with right:
        row = sinusoidal_row(pos, d)
        st.markdown(f"**PE[{pos}]** (d = {d}) = `{vec(row.values)}`")
        shown = min(d, 4)
        lines = [pe_cell(pos, c, d) for c in range(shown)] + ([r"\ldots"] if d > shown else [])
        st.latex(r"\begin{gathered}" + r"\\[6pt] ".join(lines) + r"\end{gathered}")
        st.caption(t("positions.pair_note"))
    table = sinusoidal(n, d, dtype=row.values.dtype)  # [n, d]
    heatmap(table, [f"{c} {'sin' if c % 2 == 0 else 'cos'}" for c in range(d)],
            [str(p) for p in range(n)], key="table", zmin=-1, zmax=1, colorscale="RdBu",
            explain=lambda p, c: explain.formula(t("positions.cell_pe"), pe_cell(p, c, d)),
            x_title=t("positions.dim"), y_title=t("positions.position"))
    st.markdown(t("positions.table_read"))


@part
def sinusoidal_table() -> None:
    """The table's own width, position and length."""
    section(t("positions.table_title"))
    formula(PE_SYMBOLIC)
    five = sinusoidal_row(5, 4)
    typed = number_exercise("pe52", t("positions.ex2_question"), float(five.values[2]),
                            explain.formula(t("positions.ex2_steps"), pe_cell(5, 2, 4)))
    why = choice_exercise("freqs", t("positions.why_question"),
                          [t(f"positions.why_{k}") for k in "abc"], correct=0,
                          explanation=t("positions.why_explain"))
    if typed and why:  # the table holds PE[5, 2] and shows the pairs' speeds
        explore()
    else:
        after_answer()
    st.info(t("positions.no_params"), icon=":material/straighten:")
    st.warning(t("positions.long_context"), icon=":material/warning:")


shuffle()
sinusoidal_table()
