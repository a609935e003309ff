"""Stage 12: three backbones; in cross-attention the decoder's queries read the encoder output."""

import streamlit as st

from tinyformer.lessons import backbones
from tinyformer.masks import additive
from ui import explain
from ui.example import gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import diverging, heatmap
from ui.fmt import shape
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import number, text
from ui.notes import random_weights_note, shown_errors
from ui.page import fold, part, section, stage_link
from ui.reveal import Stepper
from ui.tables import table

SOURCE = "who pays the shipping ?"
TARGET = "运费 谁 承担"
CHAT = "请解释Transformer"
PATTERN = backbones.backbone_masks(4, 3)  # the side-by-side view: 4 source and 3 target positions
M_STYLE = {"decimals": 0, "colorscale": "Greens", "zmin": -1, "zmax": 1}
WEIGHTS = {"colorscale": "Oranges", "zmin": 0, "zmax": 1}


@st.cache_resource(max_entries=64)  # one run per setting, shared by every session
def example(source: tuple, target: tuple, d: int, seed: int) -> backbones.TranslationExample:
    return backbones.translation_example(source, target, d, seed)


def mask_map(kind: str, allowed) -> None:
    """One backbone's mask M over numbered positions: 0 = may read, −∞ = blocked."""
    rows = (str(i) for i in range(allowed.shape[0]))
    cols = range(allowed.shape[1])

    def cell(i: int, j: int) -> str:
        ok = bool(allowed[i, j])
        lead = t(f"backbones.m_{kind}" if ok else "backbones.m_later", i=i, j=j)
        return explain.formula(lead, f"{explain.cell_name('M', i, j)} = "
                               + ("0" if ok else r"-\infty"))

    heatmap(additive(allowed), [str(j) for j in cols], list(rows), key=f"{kind}_mask",
            explain=cell, x_title=t(f"backbones.x_{kind}"), y_title=t(f"backbones.y_{kind}"),
            height=250, **M_STYLE)


def weight_cell(att, rows, cols, i: int, j: int, who: str) -> str:
    """A weight of a self- or cross-attention table: softmax, or blocked."""
    name = explain.cell_name("a", i, j)
    lead = t(f"backbones.cell_{who}", i=rows[i], j=cols[j])
    if not bool(att.masked[..., i, j].isfinite().all()):
        return explain.blocked(t("backbones.cell_blocked", i=rows[i], j=cols[j]), name)
    return explain.softmax(lead, name, att.masked.reshape(len(rows), len(cols))[i], j)


def self_step(number: int, who: str, att, words, said: str) -> None:
    """Step 1 or 2: the encoder's self-attention table, or the decoder's causal one."""
    subsection(f"{number} · {t(f'backbones.step_{who}')}")
    st.markdown(said)
    heatmap(att.weights[0, 0], words, words, key=f"{who}_w", **WEIGHTS,
            title=t(f"backbones.{who}_table", n=len(words)),
            explain=lambda i, j: weight_cell(att, words, words, i, j, who))


def shifted(ex: backbones.TranslationExample) -> None:
    """Teacher forcing on the example: what each decoder position reads, what it learns."""
    st.markdown(t("backbones.shift", start=backbones.START, first=ex.target[0]))
    table([ex.decoder_input, ex.target], columns=range(len(ex.target)),
          index=[t("backbones.row_input"), t("backbones.row_label")],
          name=t("backbones.table_shift"))


@part
def cross_attention(qkv_answered: bool) -> None:  # sentences, width, seed, steps: this only
    section(t("backbones.cross_title"))
    left, right = st.columns(2)
    words_help = t("backbones.words_help", n=backbones.MAX_TOKENS)
    with left:
        src = text("src", t("backbones.source"), SOURCE, 80, help=words_help)
        tgt = text("tgt", t("backbones.target"), TARGET, 40, help=words_help)
    with right:
        d = number("d", t("backbones.width"), backbones.MIN_WIDTH, backbones.MAX_WIDTH, 8,
                   gesture="both")
        seed = number("seed", t("backbones.seed"), 0, 9999, 0)
    random_weights_note()
    with shown_errors():
        ex = example(backbones.split_words(src), backbones.split_words(tgt), int(d), int(seed))
        gloss(ex.target)
        source = ex.source
        target = ex.decoder_input  # the rows of the decoder's tables
        ns = len(ex.source)
        nt = len(ex.target)
        shifted(ex)
        cells = number_exercise("cells", t("backbones.ex2_question", ns=ns, nt=nt), nt * ns,
                                t("backbones.ex2_steps", ns=ns, nt=nt, cells=nt * ns),
                                tolerance=0, decimals=0)
        rect = choice_exercise("rect", t("backbones.ex3_question"), [
            t(f"backbones.ex3_{k}") for k in ("two", "mask", "cut")], correct=0,
            explanation=t("backbones.ex3_explain", ns=ns, nt=nt))
        answered = qkv_answered and cells and rect  # steps 3 and 4 answer all three
        st.markdown(t("backbones.post_norm"))
        formula(r"\mathrm{AddNorm}(x) = \mathrm{LayerNorm}\big(x + \mathrm{Sublayer}(x)\big)")
        steps = Stepper("flow", [t(f"backbones.step_{k}") for k in ("enc", "dec", "cross", "ffn")])
        cross = ex.cross
        sides = (("enc", ex.encoder.self_attention, source,
                  t("backbones.do_enc", x=shape(ex.x_source), h=shape(ex.h_enc))),
                 ("dec", ex.decoder.self_attention, target,
                  t("backbones.do_dec", y=shape(ex.x_target), h=shape(cross.h_dec))))
        for k, (column, side) in enumerate(zip(st.columns(2), sides, strict=True), start=1):
            if steps.shows(k):
                with column:
                    self_step(k, *side)
        if steps.step(3) and not answered:
            after_answer()
        elif steps.shows(3):
            formula(r"\begin{gathered}Q = H_{\mathrm{dec}} W_q \\ K = H_{\mathrm{enc}} W_k \\ "
                    r"V = H_{\mathrm{enc}} W_v\end{gathered}", r"\begin{gathered}" + r" \\ ".join(
                        rf"{n} = H_{{\mathrm{{{h}}}}} W_{m}:\ {shape(a)}\,[{d}, {d}] \to {shape(r)}"
                        for n, h, m, a, r in (("Q", "dec", "q", cross.h_dec, cross.q),
                                              ("K", "enc", "k", cross.h_enc, cross.k),
                                              ("V", "enc", "v", cross.h_enc, cross.v)))
                    + r"\end{gathered}")
            formula(r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d}}\right),\quad O = AV",
                    rf"A\,{shape(cross.attention.weights)},\quad "
                    rf"O = A V:\ {shape(cross.attention.weights)}\,{shape(cross.v)}"
                    rf" \to {shape(cross.attention.output)}")
            st.markdown(t("backbones.do_cross", nt=nt, ns=ns))

            def score_cell(i: int, j: int) -> str:
                return explain.dot(t("backbones.cell_score", i=target[i], j=source[j]),
                                   explain.cell_name(r"\tilde s", i, j), cross.q[i],
                                   cross.k[j], float(cross.attention.scaled[i, j]),
                                   lhs=rf"q_{i} \cdot k_{j} / \sqrt{{{d}}}", scale_by=d)
            col_scores, col_weights = st.columns(2)
            with col_scores:
                heatmap(cross.attention.scaled, source, target, key="cross_s",
                        title=t("backbones.score_table", nt=nt, ns=ns), explain=score_cell,
                        **diverging(cross.attention.scaled))
            with col_weights:
                heatmap(cross.attention.weights, source, target, key="cross_w", **WEIGHTS,
                        title=t("backbones.weight_table", nt=nt, ns=ns),
                        explain=lambda i, j: weight_cell(cross.attention, target, source, i,
                                                         j, "cross"))
            st.caption(t("backbones.not_alignment"))
        if answered and steps.step(4):
            st.markdown(t("backbones.do_ffn", h=shape(ex.decoder.output), last=target[-1],
                          word=ex.target[-1]))


section(t("backbones.side_title"))
kinds = (("enc", PATTERN.encoder_self), ("dec", PATTERN.decoder_self), ("cross", PATTERN.cross))
for column, (kind, allowed) in zip(st.columns(3), kinds, strict=True):
    with column:
        subsection(t(f"backbones.{kind}_name"))
        mask_map(kind, allowed)
        st.markdown(t(f"backbones.{kind}_text"))
        st.caption(t(f"backbones.{kind}_use"))
st.caption(t("backbones.legend"))

qkv = choice_exercise("qkv", t("backbones.ex_question"), [t(f"backbones.ex_{k}") for k in (
    "all_dec", "right", "swapped")], correct=1, explanation=t("backbones.ex_explain"))
fold(t("backbones.cross_title"))
cross_attention(qkv)

section(t("backbones.why_title"))
st.markdown(t("backbones.why", chat=CHAT))
gloss(("请", "解释"))
formula(r"P(x_0, \ldots, x_{n-1}) = \prod_{t=0}^{n-1} P(x_t \mid x_{<t})")
st.markdown(t("backbones.why_cache"))
stage_link("kv_cache")
