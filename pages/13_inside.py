"""Stage 13.2: inside the trained model: its attention, its next-token probabilities, and
where the answering position reads, measured."""

import pandas as pd
import streamlit as st

from tinyformer.lessons.probe import Inspection, probe
from tinyformer.lessons.train import TrainedModel
from ui import explain, training
from ui.charts import bars
from ui.example import PAYERS, Q1, Q1_WORDS, Q2, Q2_WORDS, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap
from ui.fmt import num
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import choice, text
from ui.notes import shown_errors
from ui.page import device_name, part, section
from ui.state import kit_key
from ui.tables import table

MAX_CHARS = 40  # the box's limit; the model's own limit gets a translated message
PARTS = ("reason", "item", "rest")
QUESTIONS = (("q1", Q1), ("q2", Q2))


@st.cache_resource(max_entries=64)  # typed questions: bounded
def inspect(device: str, model: str, question: str, _trained: TrainedModel) -> Inspection:
    """`model` names `_trained` (SHIPPED, or a learner's settings: the same settings train
    the same weights on this machine, so the name is the cache's key for it)."""
    return probe(_trained, question)


def positions(insp: Inspection, part: str) -> list[int]:
    if part != "rest":
        return list(insp.reason_positions if part == "reason" else insp.item_positions)
    return [j for j in range(len(insp.tokens))
            if j not in insp.reason_positions + insp.item_positions]


def part_of(insp: Inspection, j: int) -> str:
    return next(p for p in PARTS if j in positions(insp, p))


def answer(insp: Inspection) -> None:
    payer = "none" if insp.predicted is None else insp.predicted
    st.markdown(t("inside.answer", answer=insp.greedy_answer, payer=t(f"inside.payer_{payer}"),
                  corpus=insp.example.answer))


def answering_rows(insp: Inspection, name: str) -> None:
    """Every block's and head's row of the answering position, one heatmap row each."""
    heads = insp.attention.shape[1]
    rows = insp.attention[:, :, -1].reshape(-1, len(insp.tokens))  # [L * H, N]
    labels = [t("inside.head_label", b=r // heads, h=r % heads) for r in range(len(rows))]

    def cell(r: int, j: int) -> str:
        b, h = divmod(r, heads)
        part = part_of(insp, j)
        share = insp.heads[r].shares._asdict()[part]
        lead = t("inside.cell_row", b=b, h=h, c=insp.tokens[j], w=num(rows[r, j]),
                 part=t(f"inside.part_{part}"))
        return explain.sum_of(lead, rf"s^{{({b},{h})}}_\text{{{t('inside.sym_' + part)}}}",
                              [float(rows[r, k]) for k in positions(insp, part)], share)

    heatmap(rows, list(insp.tokens), labels, key=f"rows_{name}", explain=cell, zmin=0, zmax=1,
            colorscale="Oranges", decimals=2)


def shares_table(insp: Inspection) -> None:
    """The measured shares per head, and an even spread's shares, side by side."""
    sizes = {p: len(positions(insp, p)) for p in PARTS}
    names = [t("inside.head_label", b=s.block, h=s.head) for s in insp.heads]
    rows = [[num(v) for v in shares] for shares in (*(s.shares for s in insp.heads), insp.uniform)]
    table(pd.DataFrame(rows, index=[*names, t("inside.even", n=len(insp.tokens))],
                          columns=[t(f"inside.col_{p}", n=sizes[p]) for p in PARTS]))
    st.caption(t("inside.spans", reason="".join(insp.tokens[j] for j in insp.reason_positions),
                 item="".join(insp.tokens[j] for j in insp.item_positions) or "—"))


@part
def every_head(found: dict[str, Inspection]) -> None:  # the question shown: this part only
    section(t("inside.full_title"))
    if found:
        shown = found[choice("which", t("inside.which"), list(found), next(iter(found)),
                             format_func=lambda n: found[n].question, options_shrink=True)]
        st.caption(t("inside.full_lead", n=len(shown.tokens), last=shown.tokens[-1]))
        layers, heads = shown.attention.shape[:2]
        for b in range(layers):
            for h, column in zip(range(heads), st.columns(heads), strict=True):
                with column:
                    heatmap(shown.attention[b, h], list(shown.tokens), list(shown.tokens),
                            key=f"full_{b}_{h}", zmin=0, zmax=1, colorscale="Oranges",
                            title=t("inside.head_label", b=b, h=h))


device = device_name()
shown = training.model_choice(device)
found: dict[str, Inspection] = {}
for column, (name, default) in zip(st.columns(2), QUESTIONS, strict=True):
    with column:
        asked = text(name, t(f"inside.{name}"), default, MAX_CHARS, help=t("inside.q_help"))
        with shown_errors():
            found[name] = inspect(device, shown.key, asked, shown.trained)
            answer(found[name])
s = shown.trained.settings
st.caption(t("inside.model_facts_yours" if shown.mine else "inside.model_facts",
             layers=s.layers, heads=s.heads, width=s.width, steps=shown.steps,
             train=shown.train_questions, right=shown.right, n=shown.heldout,
             device=device.upper()))
extra = [w for insp in found.values() for w in (insp.example.item, insp.example.reason) if w]
gloss(Q1_WORDS + Q2_WORDS + PAYERS[:2] + tuple(extra))

section(t("inside.probs_title"))
running = inspect(device, shown.key, Q1, shown.trained)
first = running.first_token
word = running.word
second = word.merchant / first.merchant  # P(家 | 商)
product = number_exercise("word", t("inside.ex2_question", p1=num(first.merchant),
                                    p2=num(second)),
                          word.merchant, t("inside.ex2_steps", p1=num(first.merchant, 4),
                                           p2=num(second, 4), p=num(word.merchant, 4)))
why = choice_exercise("why", t("inside.ex3_question"),
                      [t(f"inside.ex3_{k}") for k in ("appended", "independent", "softmax")],
                      correct=0, explanation=t("inside.ex3_explain", p2=num(second)))
if product and why:  # the bars print P(商家), the words below say why it is a product
    st.markdown(t("inside.probs_lead"))
    for column, (name, _) in zip(st.columns(2), QUESTIONS, strict=True):
        if name in found:
            insp = found[name]
            with column:
                subsection(insp.question)
                bars(list(PAYERS[:2]), {
                    t("inside.first"): [insp.first_token.merchant, insp.first_token.buyer],
                    t("inside.word"): [insp.word.merchant, insp.word.buyer]},
                    key=f"probs_{name}", decimals=4, y_range=(0, 1.15), height=280)
else:
    after_answer()

section(t("inside.where_title"), folded=True)
even = running.uniform.reason
reason_shares = [h.shares.reason for h in running.heads]
verdict = 0 if min(reason_shares) > even else 1 if max(reason_shares) < even else 2
spread = choice_exercise(
    "even", t("inside.ex_question", even=num(even), n=len(running.tokens),
              r=len(running.reason_positions), reason=running.example.reason),
    [t("inside.ex_all_more"), t("inside.ex_all_less"), t("inside.ex_mixed")], correct=verdict,
    explanation=t("inside.ex_explain", shares=", ".join(map(num, reason_shares)), even=num(even)))
if spread:  # every head's row and share answers it
    st.markdown(t("inside.where_lead"))
    for column, (name, _) in zip(st.columns(2), QUESTIONS, strict=True):
        if name in found:
            with column:
                subsection(found[name].question)
                answering_rows(found[name], name)
                shares_table(found[name])
    st.info(t("inside.not_why"), icon=":material/school:")  # it names a large share
    more = st.expander(t("inside.full_title"), key=kit_key("full.open"), on_change="rerun")
    with more:  # drawn once opened: L x H more tables would slow every open of this page
        if more.open:
            every_head(found)
else:
    after_answer()
