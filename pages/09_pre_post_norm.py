"""Stage 9.2: Post-Norm normalizes the residual stream itself; Pre-Norm only the copy each
sub-layer reads, so its stream keeps every block's additions."""

import streamlit as st

from tinyformer.lessons.norm_placement import WIDTHS, gradient_by_block
from tinyformer.residual import BlockFlow, compare_placements
from ui.charts import PALETTE, boxes_and_arrows, lines
from ui.example import TAIL4, gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.fmt import decimals_for, num, vec
from ui.formula import formula
from ui.i18n import t
from ui.inputs import choice, number
from ui.notes import random_weights_note, shown_errors
from ui.page import fold, part, section, stage_link
from ui.reveal import Stepper

FORMULAS = {  # two lines each, so that a formula fits half the page
    "post": r"\begin{aligned}h &= \mathrm{Norm}(x + \mathrm{Attn}(x))\\ "
            r"y &= \mathrm{Norm}(h + \mathrm{FFN}(h))\end{aligned}",
    "pre": r"\begin{aligned}h &= x + \mathrm{Attn}(\mathrm{Norm}(x))\\ "
           r"y &= h + \mathrm{FFN}(\mathrm{Norm}(h))\end{aligned}",
}
NAMES = {"pre": "Pre-Norm", "post": "Post-Norm", "layer": "LayerNorm", "rms": "RMSNorm"}
OP_COLOUR = {"input": PALETTE[0], "add": PALETTE[0], "norm": PALETTE[1],
             "attention": PALETTE[2], "ffn": PALETTE[3]}
N_TOKENS = 4
WIDTH = 4
HEADS = 2
MAX_BLOCKS = 32


@st.cache_resource(max_entries=64)
def measure(blocks: int, seed: int, scale: float, norm: str):
    """Shared by every session: the first blocks drawn from a seed are the same for any
    count, so one block (the diagrams) and the whole stack agree."""
    return compare_placements(blocks, seed, scale, norm, N_TOKENS, WIDTH, HEADS)


@st.cache_resource(max_entries=64)
def gradients(blocks: int, seed: int, scale: float, norm: str, width: int):
    """Shared by every session: at width 4 the same input rows and blocks as measure()."""
    return gradient_by_block(blocks, seed, scale, norm, N_TOKENS, width, HEADS)


def diagram(flow: BlockFlow, row: int, shown: int) -> None:
    """A block as boxes and arrows (stream left, branch right); each box shows its
    step's value for one position."""
    steps = flow.steps[:shown]
    boxes = [(0.0 if s.stream else 1.0,
              f"<b>{t('pre_post_norm.op_' + s.op)}</b><br>{vec(s.value[row])}",
              OP_COLOUR[s.op], s.stream) for s in steps]
    arrows = [(j, i) for i, s in enumerate(steps) for j in s.inputs]
    boxes_and_arrows(boxes, arrows, key=f"flow_{flow.placement}", rows=len(flow.steps))


def ratio(value: float) -> str:
    """A ratio of two gradient norms: 3 decimals, more when it is tiny (2 significant
    digits: 0.00042)."""
    return num(value, decimals_for([value], digits=2))


@part
def stack(seed: int, scale: float, norm: str) -> None:  # the block count: this section's own
    section(t("pre_post_norm.stack_title"))
    with shown_errors():
        st.markdown(t("pre_post_norm.stack_lead", n=N_TOKENS, d=WIDTH, count=N_TOKENS * WIDTH))
        quiz = st.container()  # predict first: filled once the block count is known
        blocks = number("blocks", t("pre_post_norm.blocks"), 1, MAX_BLOCKS, 8, gesture="slider")
        cmp = measure(int(blocks), int(seed), float(scale), norm)  # block 0 as drawn above
        pre = cmp.pre.stream_rms
        post = cmp.post.stream_rms
        larger = 2 if abs(pre[-1] - post[-1]) < 0.05 * max(pre[-1], post[-1]) else \
            int(post[-1] > pre[-1])
        with quiz:
            grew = choice_exercise(
                "grow",
                t("pre_post_norm.ex_question", blocks=blocks),
                [t("pre_post_norm.ex_pre"), t("pre_post_norm.ex_post"), t("pre_post_norm.ex_same")],
                correct=larger,
                explanation=t(
                    "pre_post_norm.ex_explain", blocks=blocks, pre=num(pre[-1]), post=num(post[-1])
                ),
            )
            predicted = number_exercise(
                "post_rms",
                t("pre_post_norm.ex2_question", blocks=blocks, norm=NAMES[norm]),
                post[-1],
                t(f"pre_post_norm.ex2_steps_{norm}", value=num(post[-1])),
            )
        if not (grew and predicted):  # the curve answers both
            after_answer()
        else:
            lines(
                list(range(blocks + 1)),
                {NAMES["pre"]: pre, NAMES["post"]: post},
                key="sizes",
                markers=True,
                whole_x=True,
                x_title=t("pre_post_norm.blocks_x"),
                y_title=t("pre_post_norm.rms_y"),
                y_range=(0, 1.15 * max(*pre, *post)),
            )
            updates = cmp.pre.update_rms
            st.markdown(
                t(
                    "pre_post_norm.measured",
                    blocks=blocks,
                    start=num(pre[0]),
                    pre=num(pre[-1]),
                    post=num(post[-1]),
                    lo=num(min(updates)),
                    hi=num(max(updates)),
                )
            )
            st.caption(t("pre_post_norm.not_training"))
            st.info(t("pre_post_norm.final_norm"), icon=":material/info:")
        gradient_section(int(blocks), seed, scale, norm)


def gradient_section(blocks: int, seed: int, scale: float, norm: str) -> None:
    """Inside stack(): the same block count, seed, input size and norm."""
    section(t("pre_post_norm.grad_title"))
    st.markdown(t("pre_post_norm.grad_lead", n=N_TOKENS))
    width = choice("grad_d", t("pre_post_norm.grad_width"), WIDTHS, WIDTH,
                   format_func=lambda d: f"d = {d}", widget="segmented",
                   help=t("pre_post_norm.grad_width_help", d=WIDTH, heads=HEADS))
    if blocks < 2:
        st.info(t("pre_post_norm.grad_needs_two"))
        return
    grads = gradients(blocks, seed, scale, norm, width)
    pre = grads.pre.block_grad
    post = grads.post.block_grad
    last = blocks - 1
    smaller = (pre[0] < pre[-1], post[0] < post[-1])  # block 0 below the last block?
    options = {(True, False): 0, (False, True): 1, (True, True): 2, (False, False): 3}
    answered = choice_exercise(
        "starved",
        t("pre_post_norm.grad_question", last=last, d=width),
        [t(f"pre_post_norm.grad_{k}") for k in ("pre_only", "post_only", "both", "neither")],
        correct=options[smaller],
        explanation=t("pre_post_norm.grad_explain", last=last, pre0=num(pre[0]),
                      pre_last=num(pre[-1]), post0=num(post[0]), post_last=num(post[-1])),
    )
    if not answered:
        after_answer()
        return
    lines(list(range(blocks)), {NAMES["pre"]: pre, NAMES["post"]: post}, key="grads",
          markers=True, whole_x=True, x_title=t("pre_post_norm.grad_x"),
          y_title=t("pre_post_norm.grad_y"), y_range=(0, 1.15 * max(*pre, *post)))
    st.markdown(t("pre_post_norm.grad_ratios", last=last, pre=ratio(pre[0] / pre[-1]),
                  post=ratio(post[0] / post[-1])))
    st.markdown(t("pre_post_norm.grad_why"))
    st.markdown(t("pre_post_norm.grad_width_note", d=width))
    st.info(t("pre_post_norm.grad_reason"), icon=":material/school:")
    st.caption(t("pre_post_norm.grad_not_training"))


cols = st.columns([3, 2, 4, 3])
with cols[0]:
    norm = choice(
        "norm",
        t("pre_post_norm.norm"),
        ("layer", "rms"),
        "layer",
        format_func=NAMES.get,
        widget="segmented",
        help=t("pre_post_norm.norm_help"),
    )
with cols[1]:
    seed = number("seed", t("pre_post_norm.seed"), 0, 9999, 0)
with cols[2]:
    scale = number(
        "scale",
        t("pre_post_norm.scale"),
        0.1,
        10.0,
        1.0,
        gesture="both",
        step=0.1,
        help=t("pre_post_norm.scale_help"),
    )
with cols[3]:
    row = choice(
        "pos",
        t("pre_post_norm.pos"),
        tuple(range(N_TOKENS)),
        N_TOKENS - 1,
        format_func=TAIL4.__getitem__,
        widget="segmented",
    )
st.caption(t("pre_post_norm.tokens", n=N_TOKENS))
gloss(TAIL4)
with shown_errors():
    cmp = measure(1, int(seed), float(scale), norm)
    steps = Stepper("block", [t("pre_post_norm.step_attention"), t("pre_post_norm.step_ffn")])
    shown = 7 if steps.shows(2) else 4  # x and the attention half, then the FFN half
    for column, placement in zip(st.columns(2), ("pre", "post"), strict=True):
        with column:
            st.markdown(f"**{NAMES[placement]}** · {t('pre_post_norm.when_' + placement)}")
            formula(FORMULAS[placement])
            diagram(getattr(cmp, placement).first_block, row, shown)
    st.caption(t("pre_post_norm.how_to_read"))
    random_weights_note()
    st.caption(
        t(
            "pre_post_norm.setup",
            n=N_TOKENS,
            d=WIDTH,
            heads=HEADS,
            norm=NAMES[norm],
            word=TAIL4[row],
        )
    )

fold(t("pre_post_norm.stack_title"))
stack(int(seed), float(scale), norm)
stage_link("forward")
