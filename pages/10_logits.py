"""Stage 10.1: the last hidden state becomes one logit per vocabulary entry; temperature,
greedy, top-k and top-p shape the distribution the next token is drawn from."""

from functools import partial

import streamlit as st

from tinyformer.lessons.decoding import cut_of, tied_logits, tied_sizes
from tinyformer.model import DecoderConfig
from tinyformer.sampling import ARTICLE_TAIL
from tinyformer.softmax import softmax_steps
from ui import chain, explain
from ui.charts import bars
from ui.example import PAYERS, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap
from ui.fmt import dot_terms, latex_vec, num, short, vec
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import matrix_input, number
from ui.notes import shown_errors
from ui.page import part, section
from ui.reveal import Stepper

TABLE = [[1, 0], [0, 1], [0.5, -1]]  # E, one row per word: h = [2, 1] gives h Eᵀ = [2, 1, 0]
WORKED = (("T = 1", {}), ("T = 0.5", {"temperature": 0.5}), ("T = 2", {"temperature": 2.0}),
          ("top-k = 2", {"top_k": 2}), ("top-p = 0.8", {"top_p": 0.8}),
          ("top-p = 0.6", {"top_p": 0.6}), ("T = 0", {"temperature": 0}))
GREEDY = len(WORKED) - 1
V = len(PAYERS)


def words(mask) -> str:
    return t("logits.sep").join(w for w, k in zip(PAYERS, mask.tolist(), strict=True) if k)


def renormalised(tr, j: int, name: str) -> str:
    """p_j = q_j / (sum of the kept q): the cut's probabilities made to add up to 1 again."""
    kept = [num(q) for q, k in zip(tr.probs_before_filter, tr.kept, strict=True) if k]
    return (rf"{name} = \frac{{{num(tr.probs_before_filter[j])}}}{{{' + '.join(kept)}}}"
            rf" = {num(tr.probs[j])}")


def explain_cell(worked: list, rows: list[str], r: int, j: int) -> str:
    tr = worked[r]
    name = explain.cell_name("p", r, j)
    label = rows[r]
    w = PAYERS[j]
    if not tr.kept[j]:
        return explain.formula(t("logits.cell_cut", w=w, s=label), f"{name} = 0")
    if r == GREEDY:
        return explain.formula(t("logits.cell_greedy", w=w), f"{name} = 1")
    if tr.kept.all():
        return explain.softmax(t("logits.cell_soft", w=w, s=label), name, tr.scaled_logits, j)
    return explain.formula(t("logits.cell_renorm", w=w, s=label), renormalised(tr, j, name))


@part
def chosen_logits(head_logits) -> None:  # z, T, top-k and top-p: this part only
    section(t("logits.probs_title"))
    left, right = st.columns([2, 3])
    with left:
        z = matrix_input("z", t("logits.logits"), [2, 1, 0], sliders=True,
                         slider_labels=list(PAYERS))
        st.caption(t("logits.from_above", z=vec(head_logits)))
    logits = tuple(z.tolist())  # [V] float64, the key of the cuts kept between runs
    plain = cut_of(logits)
    soft = softmax_steps(z)
    with right:
        formula(r"p_i = \frac{e^{z_i}}{\sum_j e^{z_j}}",
                rf"\begin{{aligned}}p &= \frac{{{latex_vec(soft.exps)}}}{{{num(soft.total)}}}"
                rf" \\ &= {latex_vec(plain.probs)}\end{{aligned}}")
        bars(PAYERS, {t("logits.prob"): plain.probs.tolist()}, key="plain", height=260,
             y_range=(0, 1.15))
    st.warning(t("logits.not_legal", p=num(plain.probs[0])), icon=":material/gavel:")

    section(t("logits.cut_title"), folded=True)
    worked = [cut_of(logits, **settings) for _, settings in WORKED]
    rows = [label for label, _ in WORKED[:-1]] + [t("logits.greedy_row")]
    cooled = choice_exercise("cool", t("logits.ex_question"),
                             [t("logits.ex_up"), t("logits.ex_down"), t("logits.ex_same")],
                             correct=0, explanation=t(
                                 "logits.ex_explain", p1=num(worked[0].probs[0]),
                                 p05=num(worked[1].probs[0]), p2=num(worked[2].probs[0])))
    top2 = worked[3]  # T = 1, top-k = 2
    renormed = choice_exercise(  # why, before the arithmetic: its explanation has no number
        "renorm", t("logits.why_question"),
        [t(f"logits.why_{k}") for k in ("rescale", "logits", "handed")], correct=0,
        explanation=t("logits.why_explain", cut=words(~top2.kept)))
    computed = number_exercise("topk", t("logits.ex2_question"), float(top2.probs[0]),
                               explain_cell(worked, rows, 3, 0))
    st.markdown(t("logits.order"))
    left, right = st.columns([2, 3])
    with left:
        temp = number("T", t("logits.temperature"), 0.0, 5.0, 1.0, step=0.05, gesture="both")
        top_k = number("k", t("logits.top_k"), 0, 5, V, gesture="slider",
                       help=t("logits.top_k_help", v=V))
        top_p = number("p", t("logits.top_p"), 0.0, 1.0, 1.0, step=0.05, gesture="both")
    with shown_errors():
        cut = cut_of(logits, temp, top_k, top_p)
        with right:
            bars(PAYERS, {t("logits.before"): cut.probs_before_filter.tolist(),
                          t("logits.after"): cut.probs.tolist()}, kept=cut.kept.tolist(),
                 key="cut", height=300, y_range=(0, 1.15), y_title=t("logits.prob"))
        steps = Stepper("cut", [t(f"logits.step_{s}") for s in ("temp", "k", "p", "norm")])
        if steps.step(1, f"`{vec(cut.probs_before_filter)}`"):
            if temp == 0:
                st.info(t("logits.greedy_note", w=words(cut.kept)), icon=":material/filter_1:")
            else:
                formula(r"p_i = \frac{e^{z_i / T}}{\sum_j e^{z_j / T}}",
                        rf"\begin{{aligned}}\frac{{z}}{{T}} &= \frac{{{latex_vec(z)}}}"
                        rf"{{{short(temp)}}} = {latex_vec(cut.scaled_logits)} \\ p &= "
                        rf"{latex_vec(cut.probs_before_filter)}\end{{aligned}}")
        note = "logits.k_all" if top_k >= V else "logits.k_keeps"
        steps.step(2, t(note, k=top_k, v=V, w=words(cut.kept_top_k))
                   + f" `{vec(cut.after_top_k)}`")
        note = "logits.p_all" if top_p == 1 else "logits.p_keeps"
        steps.step(3, t(note, p=short(top_p), w=words(cut.kept)))
        if steps.step(4, f"`{vec(cut.probs)}`"):
            st.latex(r"\begin{gathered}" + r" \\ ".join(
                renormalised(cut, j, rf"p_{{\text{{{w}}}}}") for j, w in enumerate(PAYERS)
                if cut.kept[j]) + r"\end{gathered}")

    subsection(t("logits.worked_title"))
    if not (cooled and renormed and computed):  # its rows T = 0.5 and top-k = 2 answer them
        after_answer()
        return
    heatmap([tr.probs for tr in worked], list(PAYERS), rows, key="worked",
            explain=partial(explain_cell, worked, rows), zmin=0, zmax=1, colorscale="Oranges")


def running_example() -> None:
    """The running example's hand model (tinyformer.lessons.chain) ends here: Y[？] U^T
    gives the logits of the three candidate answers, then their probabilities."""
    section(t("logits.chain_title"))
    st.markdown(t("logits.chain_lead"))
    left, right = st.columns([2, 3])
    with left:
        chain.edit("U", t("logits.chain_u"), slider_labels=[
            f"{w} · U[{i},{j}]" for i, w in enumerate(PAYERS) for j in range(2)])
    run = chain.run()
    y = run.Y[-1]  # [d] the last position's hidden state, 「？」
    soft = softmax_steps(run.logits)
    with right:
        formula(r"z = Y_3\,U^\top,\quad z_i = Y_3 \cdot U_i", r"\begin{gathered}" + r" \\ ".join(
            rf"z_{{\text{{{w}}}}} = {dot_terms(y, run.params.U[i])} = {num(run.logits[i])}"
            for i, w in enumerate(PAYERS)) + r"\end{gathered}")
        formula(r"p_i = \frac{e^{z_i}}{\sum_j e^{z_j}}",
                rf"p = \frac{{{latex_vec(soft.exps)}}}{{{num(soft.total)}}}"
                rf" = {latex_vec(run.probs)}")
    bars(PAYERS, {t("logits.prob"): run.probs.tolist()}, key="chain_probs", height=260,
         y_range=(0, 1.15))
    top = int(run.probs.argmax())
    st.info(t("logits.chain_honest", w=PAYERS[top], p=num(run.probs[top])),
            icon=":material/calculate:")


st.caption(t("logits.tokens"))
gloss(PAYERS)
running_example()
section(t("logits.head_title"))
st.caption(t("logits.on_its_own"))
left, right = st.columns([2, 3])
with left:
    h = matrix_input("h", t("logits.hidden"), [2, 1], sliders=True,
                     slider_labels=["h[0]", "h[1]"])
    table = matrix_input("E", t("logits.table"), TABLE, rows=V)
head = tied_logits(h, table)
sizes = tied_sizes(DecoderConfig())
with right:
    formula(r"z = h\,E^\top,\quad z_i = h \cdot E_i", r"\begin{gathered}" + r" \\ ".join(
        rf"z_{{\text{{{w}}}}} = {dot_terms(h, table[i])} = {num(head.logits[i])}"
        for i, w in enumerate(PAYERS)) + r"\end{gathered}")
    st.markdown(t("logits.tied", head=sizes.head, untied=f"{sizes.untied:,}",
                  tied=f"{sizes.tied:,}"))
chosen_logits(head.logits)

section(t("logits.real_title"))
tail = ARTICLE_TAIL
st.markdown(t("logits.real_lead", v=f"{tail.vocab:,}"))
formula(r"z = h\,W_{\text{head}}:\quad [1 \times d]\,[d \times V] \to [1 \times V]",
        rf"[1 \times d]\,[d \times \text{{{tail.vocab:,}}}] \to "
        rf"[1 \times \text{{{tail.vocab:,}}}]")
labels = [t("logits.candidate", n=i + 1) for i in range(len(tail.top))]
bars([*labels, t("logits.rest", n=f"{tail.rest_count:,}")],
     {t("logits.prob"): [*tail.top, tail.rest_mass]}, key="tail", decimals=2, height=280)
st.markdown(t("logits.real_note", rest=f"{tail.rest_mass:.0%}", n=f"{tail.rest_count:,}",
              top=f"{tail.top_mass:.0%}", k=len(tail.top)))
