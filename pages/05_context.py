"""Stage 5.2: the same input row of 运费 leaves attention as two rows, one per context.

After the masks (5.1): the causal mask it relies on is taught. Indices count from 0
(components, blocks, heads)."""

from contextlib import suppress

import streamlit as st

from tinyformer.errors import TinyformerError
from tinyformer.lessons.context import (
    ContextComparison,
    TrainedComparison,
    compare_in_context,
    compare_trained,
)
from tinyformer.lessons.corpus import find_question
from tinyformer.lessons.probe import Shares
from ui import explain, sentence
from ui.example import Q1, Q1_WORDS, Q2, Q2_SAME_PLACE, Q2_WORDS, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import latex_vec, num, term, vec
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import current_lang, t
from ui.inputs import choice, number
from ui.models import shipped_model
from ui.notes import random_weights_note, shown_errors
from ui.page import part, section
from ui.tables import table

# the trained model reads characters: 费 completes the word 运费
WORD = "运费"
CHAR = "费"
QUESTIONS = ((Q1, "a", "^{(1)}"), (Q2, "b", "^{(2)}"))  # question, trace field, superscript
TWINS = {"q2": Q2, "same_place": Q2_SAME_PLACE}


@st.cache_resource(max_entries=16)  # one per question pair, shared by every session
def trained_run(first: str, twin: str) -> TrainedComparison:
    return compare_trained(shipped_model(), first, twin, CHAR)


def first_question() -> str:
    """The teacher's sentence (ui/sentence.py) where this view can follow it: a corpus
    question with 费 in it (the characters the model never saw left out, with a note);
    else the running example, and a note saying why."""
    own = sentence.current()
    if own == Q1:
        return Q1
    with suppress(TinyformerError):  # no shipped model: the comparison below says so
        own = sentence.for_vocab(shipped_model().vocab.tokens, own)
    if CHAR in own and find_question(own) is not None:
        return own
    st.caption(t("context.own_not_used", sentence=own, char=CHAR))
    return Q1


def adds(word: str, c: int, a, v, value) -> str:
    """a_w v_{w,c} = a · v = value: what one word adds to number c of the output."""
    w = rf"\text{{「{word}」}}"
    return rf"a_{{{w}}}\,v_{{{w},{c}}} = {num(a)}\cdot{term(v, 3)} = {num(value)}"


def read_rows(words, at: int, scores, weights, labels, key: str, who: str, places=3) -> None:
    """Rows of `who`'s attention weights over one question; causal: later words get 0."""
    def cell(r: int, j: int) -> str:
        name = explain.cell_name("a", at, j)
        lead = dict(j=words[j], w=who)
        if j > at:
            return explain.blocked(t("context.cell_blocked", **lead), name)
        return explain.softmax(t("context.cell_weight", **lead), name, scores[r], j)

    heatmap(weights, list(words), labels, key=key, explain=cell, zmin=0, zmax=1,
            colorscale="Oranges", decimals=places)


def by_word(matrix, words, key: str, lead: str, latex, style: dict) -> None:
    """A [words, d] table whose cell (w, c) explains itself as lead + latex(w, c)."""
    heatmap(matrix, [str(c) for c in range(matrix.shape[1])], words, key=key, **style,
            explain=lambda w, c: explain.formula(t(lead, j=words[w], c=c), latex(w, c)),
            x_title=t("context.component"))


def share(cmp, w: int, c: int) -> str:
    """Δ_{w,c} = (a⁽¹⁾_w − a⁽²⁾_w) v_{w,c}: one word's part of the difference."""
    word = rf"\text{{「{cmp.share_words[w]}」}}"
    a1, a2 = cmp.share_weights[w].tolist()
    return (rf"\Delta_{{{word},{c}}} = (a^{{(1)}}_{{{word}}} - a^{{(2)}}_{{{word}}})\,v_"
            rf"{{{word},{c}}} = ({num(a1)} - {num(a2)})\cdot{term(cmp.share_values[w, c], 3)}"
            rf" = {num(cmp.shares[w, c])}")


def random_view() -> None:
    """运费 in both questions, through one seeded random attention layer."""
    predicted = choice_exercise("same", t("context.ex_question"),
                                [t("context.ex_same"), t("context.ex_reads"),
                                 t("context.ex_input")],
                                correct=1, explanation=t("context.ex_explain"))
    with st.container(horizontal=True, vertical_alignment="bottom"):
        width = number("d", t("context.width"), 1, 8, 4, gesture="slider")
        seed = number("seed", t("context.seed"), 0, 9999, 0)
    random_weights_note()
    st.caption(t("context.no_positions"))
    with shown_errors():
        cmp = compare_in_context(Q1_WORDS, Q2_WORDS, WORD, int(width), int(seed))
        section(t("context.in_title"))
        if number_exercise("differ", t("context.ex2_question", d=width), cmp.inputs_differ,
                           t("context.ex2_steps", row=", ".join(num(v, 2) for v in
                                                                cmp.a.input_row),
                             n=cmp.inputs_differ), tolerance=0, decimals=0):
            input_rows(cmp)  # the two rows answer the exercise
        else:
            after_answer()
        computed = reads(cmp)
        if predicted and computed:  # the parts and the outputs answer both exercises
            outputs(cmp)
        else:
            after_answer()
    st.info(t("context.not_reason"), icon=":material/school:")


def input_rows(cmp: ContextComparison) -> None:
    """Section 1's result: 运费's input row in each question, compared."""
    for col, (question, side, sup) in zip(st.columns(2), QUESTIONS, strict=True):
        subsection(question, where=col)
        col.latex(rf"x{sup}_{{\text{{{WORD}}}}} = {latex_vec(getattr(cmp, side).input_row, 2)}")
    (st.success if cmp.inputs_differ == 0 else st.warning)(t(
        "context.same_input" if cmp.inputs_differ == 0 else "context.inputs_differ",
        d=cmp.a.x.shape[1], n=cmp.inputs_differ))


def reads(cmp: ContextComparison) -> bool:
    """Section 2: 运费's weights in each question, then a contribution to compute and why
    it is a product. True once the computation is answered."""
    a = cmp.a
    b = cmp.b
    section(t("context.read_title"), folded=True)
    st.markdown(t("context.read_lead"))
    for (question, side, _), reading in zip(QUESTIONS, (a, b), strict=True):
        subsection(question)
        read_rows(reading.words, reading.at, reading.scores[None], reading.weights[None],
                  [WORD], f"read_{side}", WORD)
    j = b.words.index("退货")
    computed = number_exercise("part", t("context.ex3_question", v=vec(b.v[j])),
                               float(b.contributions[j, 0]),
                               explain.formula(t("context.ex3_steps"), adds(
                                   "退货", 0, b.weights[j], b.v[j, 0], b.contributions[j, 0])))
    choice_exercise("blend", t("context.ex4_question"),
                    [t("context.ex4_count"), t("context.ex4_blend"), t("context.ex4_key")],
                    correct=1, explanation=t("context.ex4_explain"))
    return computed


def outputs(cmp: ContextComparison) -> None:
    """Sections 3 and 4: 运费's output word by word in each question, and the difference."""
    a = cmp.a
    b = cmp.b
    section(t("context.parts_title"))
    st.markdown(t("context.parts_lead"))
    style = diverging(a.contributions, b.contributions)
    for col, (question, side, sup) in zip(st.columns(2), QUESTIONS, strict=True):
        r = getattr(cmp, side)
        subsection(question, where=col)
        with col:
            by_word(r.contributions[: r.at + 1], r.read, f"parts_{side}", "context.cell_part",
                    lambda w, c, r=r: adds(r.words[w], c, r.weights[w], r.v[w, c],
                                           r.contributions[w, c]), style)
        col.latex(rf"o{sup} = \sum_j a{sup}_j v_j = {latex_vec(r.output)}")
    section(t("context.diff_title"))
    formula(r"o^{(1)} - o^{(2)} = \sum_w \big(a^{(1)}_w - a^{(2)}_w\big)\,v_w",
            rf"o^{{(1)}} - o^{{(2)}} = {latex_vec(cmp.difference)}")
    st.markdown(t("context.weights_moved") + "\n\n" + t("context.shares_lead"))
    by_word(cmp.shares, cmp.share_words, "shares", "context.cell_share",
            lambda w, c: share(cmp, w, c), diverging(cmp.shares))
    st.caption(t("context.shares_sum"))


def trained_view() -> None:
    """费 in the running example and a twin, through the trained model."""
    st.info(t("context.trained_note", char=CHAR), icon=":material/model_training:")
    first = first_question()
    twin = choice("twin", t("context.twin", question=first), list(TWINS), "q2",
                  format_func=TWINS.get)
    with shown_errors():
        cmp = trained_run(first, TWINS[twin])
        a = cmp.a
        b = cmp.b
        w = cmp.a.rows.shape[1]
        section(t("context.t_rows_title", char=CHAR))
        rows_text = t(f"context.t_rows_{'same' if cmp.same_position else 'moved'}", char=CHAR,
                      pa=a.at, pb=b.at)
        gap = "" if current_lang() == "zh" else " "  # no space after a Chinese full stop
        if cmp.same_position and first == Q1:  # the twins differ in their reason alone
            rows_text += gap + t("context.t_rows_reason")
        if not cmp.same_position and Q2_SAME_PLACE.index(CHAR) == a.at:
            rows_text += gap + t("context.t_rows_switch", char=CHAR, pa=a.at)
        st.markdown(rows_text)
        table({t("context.t_differ", w=w): [f"{n} / {w}" for n in cmp.differ],
               t("context.t_largest"): [num(x) for x in cmp.largest]},
              index=[t(f"context.stage_{k}", b=i or 0) for k, i in cmp.stages],
              name=t("context.t_rows_table", char=CHAR))
        section(t("context.t_read_title", char=CHAR), folded=True)
        st.markdown(t("context.t_read_lead", char=CHAR))
        labels = [t("context.head_label", b=b, h=h) for b, h in cmp.block_heads]
        for column, r, side in zip(st.columns(2), (a, b), "ab", strict=True):
            with column:
                subsection(r.question)
                read_rows(r.tokens, r.at, r.scores, r.weights, labels, f"trained_{side}", CHAR, 2)
                table([[num(v) for v in s] for s in (*r.shares, r.even)],
                      index=[*labels, t("context.even", n=r.at + 1)],
                      columns=[t(f"context.col_{p}", reason=r.reason_text)
                               for p in Shares._fields],
                      name=t("context.t_shares_table", char=CHAR, question=r.question))
        m1, b1, m2, b2 = (num(p) for r in (a, b) for p in r.answer_probs)  # P(商), P(买)
        st.info(t("context.t_answer", m1=m1, b1=b1, m2=m2, b2=b2, question=first),
                icon=":material/school:")


gloss(Q1_WORDS + Q2_WORDS + ("运", CHAR))  # 运, 费: the characters the trained view follows
model = choice("model", t("context.model"), ["random", "trained"], "random",
               widget="segmented", format_func=lambda m: t(f"context.model_{m}"))
part(random_view if model == "random" else trained_view)()  # reruns alone on its inputs
