"""Stage 13.2: inside the trained model: its attention, its next-token probabilities, and
where the answering position reads, measured."""

import streamlit as st

from tinyformer.lessons import interventions as iv
from tinyformer.lessons import rule_limits as rl
from tinyformer.lessons.corpus import find_question
from tinyformer.lessons.probe import Inspection, max_question_length, probe
from tinyformer.lessons.train import TrainedModel
from ui import explain, sentence, training
from ui.charts import bars
from ui.example import PAYERS, Q1, Q1_WORDS, Q2, Q2_SAME_PLACE, Q2_WORDS, gloss
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


@st.cache_resource(max_entries=8, show_spinner=False)
def untrained(device: str, model: str, _trained: TrainedModel) -> TrainedModel:
    """`model` before its first training step: the same settings' seed."""
    return iv.untrained_like(_trained)


@st.cache_resource(max_entries=32, show_spinner=False)
def ablated(device: str, model: str, q1: str, q2: str,
            _trained: TrainedModel) -> tuple[iv.AblationRow, ...]:
    return iv.ablations(_trained, [q1, q2])


@st.cache_resource(max_entries=32, show_spinner=False)
def patched(device: str, model: str, question: str, source: str,
            _trained: TrainedModel) -> tuple[iv.Patching, tuple | None]:
    """The grid, and the reason's positions patched together (None: the source lacks some)."""
    grid = iv.patching(_trained, question, source)
    start, end = find_question(grid.question).reason_span
    span = None if end > len(grid.source) else iv.patch_span(_trained, grid.question,
                                                             grid.source, range(start, end))
    return grid, span


@st.cache_resource(max_entries=8, show_spinner=False)
def rule_limits(device: str, model: str, _trained: TrainedModel) -> tuple:
    """The held-out misses (490 greedy answers) and the cases outside the corpus."""
    return rl.heldout_misses(_trained), dict(rl.cases(_trained))


@st.cache_resource(max_entries=64, show_spinner=False)
def free(device: str, model: str, question: str, _trained: TrainedModel) -> rl.FreeAnswer:
    return rl.free_answer(_trained, question)


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
    table(rows, index=[*names, t("inside.even", n=len(insp.tokens))],
          columns=[t(f"inside.col_{p}", n=sizes[p]) for p in PARTS])
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


def before_and_after(after: Inspection, before: Inspection) -> None:
    """The answering rows of the same seed's untrained model beside the trained one's."""
    subsection(t("inside.ba_title"))
    st.markdown(t("inside.ba_lead", q=after.question))
    for column, (name, insp) in zip(st.columns(2), (("before", before), ("after", after)),
                                    strict=True):
        with column:
            subsection(t(f"inside.ba_{name}"))
            answering_rows(insp, name)
    names = [t("inside.head_label", b=h.block, h=h.head) for h in after.heads]
    rows = [[num(b.shares.reason), num(a.shares.reason)]
            for b, a in zip(before.heads, after.heads, strict=True)]
    rows.append([num(after.uniform.reason)] * 2)
    table(rows, index=[*names, t("inside.even", n=len(after.tokens))],
          columns=[t("inside.ba_col_before"), t("inside.ba_col_after")])
    st.caption(t("inside.ba_note", reason=after.example.reason))


def ablation_label(ablation: iv.Ablation | None) -> str:
    if ablation is None:
        return t("inside.ab_none")
    if ablation.head is None:
        return t("inside.ab_ffn", b=ablation.block)
    return t("inside.head_label", b=ablation.block, h=ablation.head)


def ablation_section(found: dict[str, Inspection]) -> None:
    section(t("inside.ab_title"))
    st.markdown(t("inside.ab_lead"))
    if len(found) < 2:
        return  # a question was refused: its message is at the top
    q1 = found["q1"].question
    q2 = found["q2"].question
    rows = ablated(device, shown.key, q1, q2, shown.trained)
    base = rows[0]
    parts = rows[1:]
    labels = [ablation_label(r.ablation) for r in parts]
    moved = [abs(r.probs[1].merchant - base.probs[1].merchant) for r in parts]
    most = max(range(len(parts)), key=moved.__getitem__)
    done = choice_exercise(
        "ablate", t("inside.ex_ab_question", q=q2, p=num(base.probs[1].merchant)), labels,
        correct=most, explanation=t("inside.ex_ab_explain", part=labels[most],
                                    before=num(base.probs[1].merchant),
                                    after=num(parts[most].probs[1].merchant)))
    if not done:  # the table answers it
        after_answer()
        return
    left, right = st.columns([3, 2])
    with left:
        table([[num(p) for probs in r.probs for p in probs] for r in rows],
              index=[ablation_label(r.ablation) for r in rows],
              columns=[t(f"inside.ab_col_{k}") for k in ("q1m", "q1b", "q2m", "q2b")])
    with right:
        st.info(t("inside.not_why"), icon=":material/school:")
    st.caption(t("inside.ab_note", q1=q1, q2=q2))



def stream_label(stream: int, layers: int) -> str:
    if stream < layers:
        return t("inside.stream_in", b=stream)
    return t("inside.stream_out", b=layers - 1)


def patch_exercise() -> bool:
    """Asked on the running example patched from its same-length twin, whatever the boxes
    hold, so the answer does not change with them."""
    grid, _ = patched(device, shown.key, Q1, Q2_SAME_PLACE, shown.trained)
    n = len(grid.question)
    flips = [(s, j) for s, row in enumerate(grid.merchant) for j, v in enumerate(row)
             if v is not None and (v >= 0.5) != (grid.clean.merchant >= 0.5)]
    verdict = 2 if not flips else 0 if all(j == n - 1 for _, j in flips) else 1
    return choice_exercise(
        "patch", t("inside.ex_pa_question", q=grid.question, src=grid.source),
        [t(f"inside.ex_pa_{k}") for k in ("last", "earlier", "nowhere")], correct=verdict,
        explanation=t("inside.ex_pa_explain", n=len(flips)))


def patching_section(found: dict[str, Inspection]) -> None:
    section(t("inside.pa_title"))
    st.markdown(t("inside.pa_lead"))
    if not patch_exercise():  # the map answers it
        after_answer()
        return
    source_box = text("patch_from", t("inside.pa_source"), Q2_SAME_PLACE, MAX_CHARS,
                      help=t("inside.pa_source_help"))
    if "q1" not in found:
        return
    q1 = found["q1"].question
    into = choice("patch_into", t("inside.pa_into"), ["q1", "source"], "q1",
                  format_func=lambda k: t(f"inside.pa_into_{k}"))
    with shown_errors():
        question, source = (q1, source_box) if into == "q1" else (source_box, q1)
        grid, span = patched(device, shown.key, question.strip(), source.strip(),
                             shown.trained)
        layers = len(grid.merchant) - 1
        n = len(grid.question)
        if grid.missing:  # the source is shorter: those positions have nothing to copy
            st.warning(t("inside.pa_missing", src=grid.source, k=len(grid.source),
                         q=grid.question, n=n,
                         positions=", ".join(map(str, grid.missing))),
                       icon=":material/warning:")
        change = [[float("nan") if v is None else v - grid.clean.merchant for v in row]
                  for row in grid.merchant]
        labels = [stream_label(s, layers) for s in range(layers + 1)]

        def cell(s: int, j: int) -> str:
            value = grid.merchant[s][j]
            if value is None:
                return t("inside.pa_cell_missing", j=j, src=grid.source)
            return t("inside.pa_cell", stream=labels[s], j=j, c=grid.question[j],
                     d=grid.source[j], before=num(grid.clean.merchant), after=num(value))

        st.markdown(t("inside.pa_map_lead", q=grid.question, src=grid.source,
                      p=num(grid.clean.merchant)))
        heatmap(change, list(grid.question), labels, key="patch_map", explain=cell,
                colorscale="RdBu", zmin=-1, zmax=1, decimals=2)
        if span is not None:
            start, end = find_question(grid.question).reason_span
            st.markdown(t("inside.pa_span", reason=grid.question[start:end], a=start,
                          b=end - 1, values=t("inside.sep").join(
                              t("inside.pa_span_item", stream=labels[s], p=num(p.merchant))
                              for s, p in enumerate(span))))
        st.caption(t("inside.pa_note"))


def said(answer) -> dict[str, str]:
    return {"answer": answer.answer, "m": num(answer.probs.merchant),
            "b": num(answer.probs.buyer)}


def limits_section() -> None:
    section(t("inside.lim_title"))
    st.markdown(t("inside.lim_lead"))
    misses, found = rule_limits(device, shown.key, shown.trained)
    negated = found["negated"]
    verdict = next((i for i, w in enumerate(("商家", "买家")) if negated.answer.startswith(w)), 2)
    if not choice_exercise("negated", t("inside.ex_lim_question", q=negated.question),
                           [t(f"inside.ex_lim_{k}") for k in ("merchant", "buyer", "neither")],
                           correct=verdict, explanation=t("inside.ex_lim_explain",
                                                          **said(negated))):
        after_answer()  # the cases below answer it
        return
    st.markdown("\n".join([t("inside.lim_misses", n=len(misses), total=shown.heldout),
                           *(t("inside.lim_miss", q=m.question, expected=m.expected, **said(m))
                             for m in misses)]))
    unknown = found["unknown"]
    for kind, answer in found.items():
        st.markdown(t(f"inside.lim_{kind}", q=answer.question, n=len(answer.question),
                      longest=rl.longest_question(), chars="".join(unknown.unknown),
                      v=len(shown.trained.vocab), **said(answer)))
    limit = max_question_length(shown.trained)
    typed = text("free", t("inside.lim_free"), rl.UNKNOWN, MAX_CHARS,
                 help=t("inside.lim_free_help", limit=limit))
    with shown_errors():
        mine = free(device, shown.key, typed.strip(), shown.trained)
        notes = [t("inside.lim_free_answer", **said(mine))]
        if mine.unknown:
            chars = t("inside.list_sep").join(mine.unknown)
            notes.append(t("inside.lim_free_unknown", chars=chars))
        if len(mine.question) > rl.longest_question():
            notes.append(t("inside.lim_free_longer", n=len(mine.question),
                           longest=rl.longest_question()))
        where = "heldout" if mine.heldout else "train" if mine.in_corpus else "new"
        notes.append(t(f"inside.lim_free_{where}"))
        st.markdown(" ".join(notes))


device = device_name()
shown = training.model_choice(device)
found: dict[str, Inspection] = {}
own = sentence.current()  # the teacher's sentence (ui/sentence.py): question 1 if it can
own_fits = find_question(own) is not None
for column, (name, default) in zip(st.columns(2), QUESTIONS, strict=True):
    with column:
        if name == "q1" and own_fits:  # opens on the teacher's sentence, and follows it
            asked = sentence.follow(name, t(f"inside.{name}"), MAX_CHARS,
                                    help=t("inside.q_help"))
        else:
            asked = text(name, t(f"inside.{name}"), default, MAX_CHARS,
                         help=t("inside.q_help"))
            if name == "q1" and not sentence.is_default():
                st.caption(t("inside.own_not_corpus", s=own))
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
    if "q1" in found:
        before_and_after(found["q1"], probe(untrained(device, shown.key, shown.trained),
                                            found["q1"].question))
    more = st.expander(t("inside.full_title"), key=kit_key("full.open"), on_change="rerun")
    with more:  # drawn once opened: L x H more tables would slow every open of this page
        if more.open:
            every_head(found)
else:
    after_answer()

ablation_section(found)
patching_section(found)
limits_section()
