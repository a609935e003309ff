"""Stage 13.3: generation token by token: the new token's query reads a K/V cache that grows
by one row a step; recomputing everything gives the same logits at a measured cost."""

import streamlit as st

from tinyformer.lessons.cache_work import (
    MAX_GREEDY_TOKENS,
    CacheComparison,
    compare_cache,
    question_prompt,
)
from tinyformer.lessons.train import ANSWER_LENGTH, TrainedModel
from ui import explain, sentence, training
from ui.charts import lines
from ui.example import PAYERS, Q1_WORDS, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import num
from ui.i18n import t
from ui.inputs import choice, number, toggle
from ui.notes import shown_errors
from ui.page import device_name, fold, part, section
from ui.tables import table

MAX_CHARS = 40  # the box's limit; the model's own limit gets a translated message
NEW = " ★"  # marks a K/V row computed in the step shown
COLUMNS = ("token", "pos_c", "pos_f", "kv_c", "kv_f", "ma_c", "ma_f", "sum_c", "sum_f")


@st.cache_resource(max_entries=32)  # typed questions x lengths: bounded
def run(device: str, model: str, question: str, n_new: int,
        _trained: TrainedModel) -> CacheComparison:
    """`model` names `_trained` (SHIPPED, or a learner's settings: the same settings train
    the same weights on this machine, so the name is the cache's key for it)."""
    return compare_cache(_trained.model, question_prompt(_trained, question), n_new)


def kv_maps(att, head: int, k: int, tokens: list[str], n: int, gap: float, cached: bool) -> None:
    """K and V of one head: cached rows, then the rows step k computed (★)."""
    past = att.past_length
    rows = att.k.shape[-2]
    hd = att.k.shape[-1]
    labels = [f"{j} · {tokens[j]}" + (NEW if j >= past else "") for j in range(rows)]

    def origin(j: int) -> str:  # where row j of K and V came from in step k
        made = 1 if j < n else j - n + 2  # the step that first computed row j
        kind = "cached" if j < past else "new" if cached or made == k else "again"
        return t(f"generate.cell_{kind}", j=j, tok=tokens[j], made=made, k=k, gap=f"{gap:.1e}")

    for column, name in zip(st.columns(2), "kv", strict=True):
        kv = getattr(att, name)[0, head].cpu()  # [P + N, hd]
        with column:
            heatmap(kv, [str(c) for c in range(hd)], labels, key=f"{name}_map",
                    explain=lambda j, c, name=name, kv=kv: explain.formula(
                        origin(j), f"{explain.cell_name(name, j, c)} = {num(kv[j, c])}"),
                    title=t(f"generate.{name}_title", rows=rows, past=past, hd=hd),
                    **diverging(kv))


def weights_map(att, head: int, tokens: list[str]) -> None:
    """The new queries' scores become weights over every cached and new key."""
    # [N, P + N]
    masked = att.masked[0, head].cpu()
    weights = att.weights[0, head].cpu()
    past = att.past_length
    rows = [f"{past + i} · {tokens[past + i]}" for i in range(weights.shape[0])]
    cols = [f"{j} · {tokens[j]}" for j in range(weights.shape[1])]

    def cell(i: int, j: int) -> str:
        name = explain.cell_name("a", past + i, j)
        if not bool(masked[i, j].isfinite()):
            return explain.blocked(t("generate.cell_blocked", i=rows[i], j=cols[j]), name)
        return explain.softmax(t("generate.cell_weight", i=rows[i], j=cols[j]), name,
                               masked[i], j)

    heatmap(weights, cols, rows, key="weights_map", explain=cell, zmin=0, zmax=1,
            colorscale="Oranges", title=t("generate.weights_title"), decimals=2)


@part
def one_step(cmp: CacheComparison, tokens: list[str], n: int, n_new: int, layers: int,
             heads: int) -> None:  # the cache, step, block and head: this section only
    section(t("generate.steps_title"))
    if not choice_exercise("rows", t("generate.ex_question"),
                           [t("generate.ex_one"), t("generate.ex_so_far"), t("generate.ex_all")],
                           correct=0, explanation=t("generate.ex_explain")):
        after_answer()  # the K and V tables below mark the rows each step computes
        return
    use_cache = toggle("cache", t("generate.cache"), True, help=t("generate.cache_help"))
    gen = cmp.cached if use_cache else cmp.recomputed
    k = choice("step", t("generate.step"), list(range(1, n_new + 1)), min(2, n_new),
               widget="slider", options_shrink=True,
               format_func=lambda s: t("generate.step_label", k=s, tok=tokens[n + s - 1]))
    with st.container(horizontal=True):
        block = choice("block", t("generate.block"), list(range(layers)), 0, widget="segmented")
        head = choice("head", t("generate.head"), list(range(heads)), 0, widget="segmented")
    step = gen.steps[k - 1]
    att = step.trace.blocks[block].attention
    facts = "full" if not use_cache else "first" if k == 1 else "cache"
    st.markdown(t(f"generate.facts_{facts}", k=k, prev=k - 1, new=len(step.fed),
                  fed="".join(tokens[n + k - 1 - len(step.fed):n + k - 1]),
                  past=step.past, rows=att.k.shape[-2], tok=tokens[n + k - 1],
                  p=num(step.probability)))
    q_table = att.q[0, head].cpu()  # [N, hd]
    heatmap(q_table, [str(c) for c in range(q_table.shape[-1])],
            [f"{j} · {tokens[j]}" for j in range(att.past_length, att.k.shape[-2])],
            key="q_map", title=t("generate.q_title", new=len(step.fed),
                                 hd=q_table.shape[-1]), **diverging(q_table))
    fold(t("generate.weights_title"))
    weights_map(att, head, tokens)
    kv_maps(att, head, k, tokens, n, cmp.kv_gaps[k - 1], use_cache)
    st.caption(t("generate.star"))
    (st.success if cmp.same_tokens else st.warning)(t(
        "generate.same" if cmp.same_tokens else "generate.differ", k=k, tok=tokens[n + k - 1],
        logit=f"{cmp.logit_gaps[k - 1]:.1e}", kv=f"{cmp.kv_gaps[k - 1]:.1e}"))


def work_table(cmp: CacheComparison, tokens: list[str], n: int, n_new: int) -> None:
    """Each step's counted work with and without the cache, its running sums and chart."""
    full = cmp.recomputed
    st.markdown(t("generate.work_lead"))
    pairs = zip(cmp.cached.steps, full.steps, cmp.cached.cumulative, full.cumulative,
                strict=True)
    table([[tokens[n + a.index - 1], *(f"{v:,}" for v in (
        a.work.positions, b.work.positions, a.work.kv_rows, b.work.kv_rows,
        a.work.multiply_adds, b.work.multiply_adds, ca.multiply_adds, cb.multiply_adds))]
        for a, b, ca, cb in pairs], index=range(1, n_new + 1), columns=[
        t(f"generate.col_{c}") for c in COLUMNS])
    lines(list(range(1, n_new + 1)), {
        t("generate.with_cache"): [w.multiply_adds for w in cmp.cached.cumulative],
        t("generate.without"): [w.multiply_adds for w in full.cumulative]},
        key="work", x_title=t("generate.x_tokens"), y_title=t("generate.y_work"),
        markers=True, table=False, decimals=0, whole_x=True)
    a = cmp.cached.cumulative[-1].multiply_adds
    b = full.cumulative[-1].multiply_adds
    st.markdown(t("generate.work_sum", m=n_new, a=f"{a:,}", b=f"{b:,}", r=f"{b / a:.2f}"))
    st.caption(t("generate.work_note"))


device = device_name()
shown = training.model_choice(device)
left, right = st.columns([3, 2], vertical_alignment="bottom")
with left:
    asked = sentence.follow("q", t("generate.q"), MAX_CHARS, help=t("generate.q_help"))
with right:
    n_new = number("n", t("generate.n"), 1, MAX_GREEDY_TOKENS, ANSWER_LENGTH, gesture="slider")
gloss(Q1_WORDS + PAYERS[:2])
asked = sentence.for_vocab(shown.trained.vocab.tokens, asked)  # names what it drops
with shown_errors():
    cmp = run(device, shown.key, asked, n_new, shown.trained)
    trained = shown.trained
    n = len(cmp.cached.prompt)
    layers = trained.model.layers
    heads = trained.model.heads
    tokens = [trained.vocab.tokens[i] for i in cmp.cached.prompt + cmp.cached.new_ids]
    st.markdown(t("generate.result", question="".join(tokens[:n]),
                  answer="".join(tokens[n:]), device=device.upper(),
                  model=t("generate.by_yours" if shown.mine else "generate.by_shipped")))
    st.caption(t("generate.not_advice") + (" " + t("generate.beyond", m=ANSWER_LENGTH)
                                           if n_new > ANSWER_LENGTH else ""))
    one_step(cmp, tokens, n, n_new, layers, heads)
    full = cmp.recomputed
    section(t("generate.work_title"), folded=True)  # where no earlier fold ended the page
    total = number_exercise("total", t("generate.ex2_question", n=n, m=n_new),
                            full.cumulative[-1].positions,
                            t("generate.ex2_steps", terms=" + ".join(
                                str(s.work.positions) for s in full.steps),
                              total=full.cumulative[-1].positions, cached=" + ".join(
                                str(s.work.positions) for s in cmp.cached.steps),
                              cached_total=cmp.cached.cumulative[-1].positions),
                            tolerance=0, decimals=0)
    why = choice_exercise("grows", t("generate.ex3_question"),
                          [t(f"generate.ex3_{k}") for k in ("again", "changed", "weights")],
                          correct=0, explanation=t("generate.ex3_explain", n=n))
    if total and why:
        work_table(cmp, tokens, n, n_new)
    else:  # the table counts the rows; its growth says why
        after_answer()
