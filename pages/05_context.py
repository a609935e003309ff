"""Stage 5.2: the same input row of 运费 leaves attention as two rows, one per context."""

import streamlit as st

from tinyformer.context import compare_in_context
from ui import explain
from ui.charts import bars
from ui.example import Q1, Q1_WORDS, Q2, Q2_WORDS, gloss
from ui.exercise import choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import latex_vec, num, term, vec
from ui.formula import formula
from ui.i18n import t
from ui.inputs import number
from ui.notes import random_weights_note, shown_errors
from ui.page import stage_page

WORD = "运费"
QUESTIONS = ((Q1, "a", "^{(1)}"), (Q2, "b", "^{(2)}"))  # question, trace field, superscript


def part(word: str, c: int, a, v, value) -> str:
    """a_w v_{w,c} = a · v = value: what one word adds to number c of the output."""
    w = rf"\text{{「{word}」}}"
    return rf"a_{{{w}}}\,v_{{{w},{c}}} = {num(a)}\cdot{term(v, 3)} = {num(value)}"


def input_rows(cmp) -> None:
    """运费's input row in each question, and whether they are equal (as computed)."""
    cols = st.columns(2)
    for col, (question, side, sup) in zip(cols, QUESTIONS, strict=True):
        reading = getattr(cmp, side)
        col.markdown(f"**{question}**")
        with col:
            st.latex(rf"x{sup}_{{\text{{{WORD}}}}} = {latex_vec(reading.x[reading.at], 2)}")
    if cmp.inputs_differ == 0:
        st.success(t("context.same_input", d=cmp.a.x.shape[1]), icon=":material/equal:")
    else:
        st.warning(t("context.inputs_differ", n=cmp.inputs_differ))


def weights_row(reading, question: str, side: str) -> None:
    """运费's attention row over one question: causal, so later words get 0."""
    def cell(_: int, j: int) -> str:
        name = explain.cell_name("a", reading.at, j)
        lead = t("context.cell_weight", j=reading.words[j])
        if j > reading.at:
            return explain.blocked(t("context.cell_blocked", j=reading.words[j]), name)
        return explain.softmax(lead, name, reading.scores, j)

    st.markdown(f"**{question}**")
    heatmap(reading.weights[None], reading.words, [WORD], key=f"read_{side}", explain=cell,
            zmin=0, zmax=1, colorscale="Oranges")


def contributions(reading, side: str, style: dict) -> None:
    """Each word's part a_j v_j of 运费's output row; the rows add up to the output."""
    dims = [str(c + 1) for c in range(reading.v.shape[1])]

    def cell(j: int, c: int) -> str:
        return explain.formula(t("context.cell_part", j=reading.words[j], c=c + 1),
                               part(reading.words[j], c + 1, reading.weights[j],
                                    reading.v[j, c], reading.contributions[j, c]))

    heatmap(reading.contributions[: reading.at + 1], dims, reading.read, key=f"parts_{side}",
            explain=cell, x_title=t("context.component"), **style)


def shares(cmp, style: dict) -> None:
    """The difference split by word: (a⁽¹⁾ − a⁽²⁾) · v, one row per word read."""
    dims = [str(c + 1) for c in range(cmp.difference.shape[0])]

    def value_row(word: str):
        reading = cmp.a if word in cmp.a.read else cmp.b
        return reading.v[reading.words.index(word)]

    def cell(w: int, c: int) -> str:
        word = rf"\text{{「{cmp.share_words[w]}」}}"
        (a1, a2), v = cmp.share_weights[w].tolist(), value_row(cmp.share_words[w])[c]
        return explain.formula(t("context.cell_share", j=cmp.share_words[w], c=c + 1),
                               rf"\Delta_{{{word},{c + 1}}} = (a^{{(1)}}_{{{word}}} - "
                               rf"a^{{(2)}}_{{{word}}})\,v_{{{word},{c + 1}}} = "
                               rf"({num(a1)} - {num(a2)})\cdot{term(v, 3)} = "
                               rf"{num(cmp.shares[w, c])}")

    heatmap(cmp.shares, dims, cmp.share_words, key="shares", explain=cell,
            x_title=t("context.component"), **style)


with stage_page("context"):
    gloss(Q1_WORDS + Q2_WORDS)
    choice_exercise("same", t("context.ex_question"),
                    [t("context.ex_same"), t("context.ex_reads"), t("context.ex_input")],
                    correct=1, explanation=t("context.ex_explain"))
    left, right = st.columns(2)
    with left:
        width = number("d", t("context.width"), 1, 8, 4, gesture="slider")
    with right:
        seed = number("seed", t("context.seed"), 0, 9999, 0)
    random_weights_note()
    st.caption(t("context.no_positions"))

    with shown_errors():
        cmp = compare_in_context(Q1_WORDS, Q2_WORDS, WORD, int(width), int(seed))
        a, b = cmp.a, cmp.b
        x_word = a.x[a.at]
        st.subheader(t("context.in_title"))
        number_exercise("differ", t("context.ex2_question", d=width), cmp.inputs_differ,
                        t("context.ex2_steps", row=", ".join(num(v, 2) for v in x_word),
                          n=cmp.inputs_differ),
                        tolerance=0, decimals=0)
        input_rows(cmp)

        st.subheader(t("context.read_title"))
        st.markdown(t("context.read_lead"))
        for (question, side, _), reading in zip(QUESTIONS, (a, b), strict=True):
            weights_row(reading, question, side)
        j = b.words.index("退货")
        number_exercise("part", t("context.ex3_question", v=vec(b.v[j])),
                        float(b.contributions[j, 0]),
                        explain.formula(t("context.ex3_steps"),
                                        part("退货", 1, b.weights[j], b.v[j, 0],
                                             b.contributions[j, 0])))

        st.subheader(t("context.parts_title"))
        st.markdown(t("context.parts_lead"))
        style = diverging(a.contributions, b.contributions)
        for col, (question, side, _) in zip(st.columns(2), QUESTIONS, strict=True):
            with col:
                st.markdown(f"**{question}**")
                contributions(getattr(cmp, side), side, style)
        for _, side, sup in QUESTIONS:
            st.latex(rf"o{sup} = \sum_j a{sup}_j v_j = {latex_vec(getattr(cmp, side).output)}")

        st.subheader(t("context.diff_title"))
        formula(r"o^{(1)} - o^{(2)} = \sum_w \big(a^{(1)}_w - a^{(2)}_w\big)\,v_w",
                rf"o^{{(1)}} - o^{{(2)}} = {latex_vec(cmp.difference)}")
        st.markdown(t("context.weights_moved"))
        bars(cmp.share_words, {t("context.q1"): cmp.share_weights[:, 0].tolist(),
                               t("context.q2"): cmp.share_weights[:, 1].tolist()},
             key="moved", y_title=t("context.weight"), height=300)
        st.markdown(t("context.shares_lead"))
        shares(cmp, diverging(cmp.shares))
        st.caption(t("context.shares_sum"))
    st.info(t("context.not_reason"), icon=":material/school:")
