"""Stage 0.1: before attention, models counted: n-grams, where counting breaks, one-hot."""

import streamlit as st

from tinyformer import ngram
from tinyformer.embedding import cosine_table, one_hot
from ui import explain
from ui.corpus import corpus_text
from ui.example import gloss
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap, matrix_frame
from ui.fmt import num, plain
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import current_lang, t
from ui.inputs import number, text
from ui.page import part, section
from ui.reveal import Stepper
from ui.tables import table

MAX_N = 4
MAX_CONTEXT = 12
MAX_PHRASE = 6
WORDS = ("苹果", "梨", "动漫", "动物")
STACK = r"\begin{gathered}%s\end{gathered}"  # one probability per line (phones are narrow)


@st.cache_resource
def classroom() -> tuple[list[str], list[str], dict[int, ngram.NGramModel]]:
    seqs = ngram.char_sequences(corpus_text())
    models = {k: ngram.NGramModel(k).fit(seqs) for k in range(1, MAX_N + 1)}
    return seqs, ngram.vocabulary(seqs), models


def counted(key: str, count: int) -> str:  # "1 character", "3 characters"
    return t(f"ngrams.{key}_{'one' if count == 1 else 'many'}", count=f"{count:,}")


def p_latex(step: ngram.Probability) -> str:  # P(漫 | 看动) = 4/6 = 0.667
    given = rf" \mid \text{{{''.join(step.context)}}}" if step.context else ""
    value = rf"\frac{{{step.count}}}{{{step.total}}} = {num(step.probability)}" if step.seen \
        else rf"\frac{{0}}{{0}}\ \text{{{t('ngrams.no_counts')}}}"
    return rf"P(\text{{{step.token}}}{given}) = {value}"


def line_gloss(line: str) -> str:
    """A corpus line in English (the glossary's entry; blank for a line it lacks)."""
    return "" if (gloss_text := t(f"gloss.{line}")) == f"gloss.{line}" else gloss_text


def quote(chars) -> str:
    return "、".join(f"「{plain(c)}」" for c in chars)


def cannot_predict(model: ngram.NGramModel, ctx: str, vocab: list[str]) -> str | None:
    """Why this model has no prediction after ctx, or None when it has one."""
    read, _ = model.window(ctx)
    if len(read) < model.n - 1:
        return t("ngrams.too_short", context=counted("chars", model.n - 1),
                 got=counted("chars", len(ctx)))
    if unknown := [c for c in dict.fromkeys(read) if c not in vocab]:
        return t("ngrams.unknown_in", chars=quote(unknown), v=len(vocab))
    return None if model.counts(ctx) else t("ngrams.unseen_context", used=plain("".join(read)))


seqs, vocab, model = classroom()
gloss(["看", "动", "漫", "物", "动漫", "动物", "吃", "苹果", "梨"])
def counting(seqs: list[str], vocab: list[str], model: dict) -> None:
    section(t("ngrams.count_title"))
    left, right = st.columns([2, 3])  # inputs left, their counts right (a projector's width)
    with left:
        n = number("n", t("ngrams.n_label"), 1, MAX_N, 2, gesture="slider")
        ctx = text("ctx", t("ngrams.ctx_label"), "看动", MAX_CONTEXT,
                   help=t("ngrams.ctx_help", limit=MAX_CONTEXT))
        context = counted("chars", n - 1)
        read, cut = (plain("".join(piece)) for piece in model[n].window(ctx))
        st.markdown(t("ngrams.window", name=t(f"ngrams.order_{n}"), n=n, context=context,
                      used=(f":gray[~~{cut}~~]" if cut else "") + f":blue[**{read or '∅'}**]"))
    with right:
        steps = Stepper("hand", [t("ngrams.step_count"), t("ngrams.step_divide")])
        if problem := cannot_predict(model[n], ctx, vocab):
            st.warning(problem)
        else:
            found = [model[n].explain(ctx, w) for w in list(model[n].counts(ctx))[:10]]
            total = found[0].total
            steps.step(1, t("ngrams.count_total", total=total))
            cols = {"next": [s.token for s in found], "count": [s.count for s in found],
                    "prob": [num(s.probability) for s in found]}  # the last: step 2 (divide)
            table({t(f"ngrams.col_{k}"): v for k, v in [*cols.items()][:2 + steps.shows(2)]},
                  name=t("ngrams.count_title"))
            if steps.step(2, t("ngrams.divide_by", total=total)):
                formula(r"P(w \mid c) = \frac{C(c\,w)}{\sum_{w'} C(c\,w')}",
                        STACK % r" \\[8pt] ".join(p_latex(s) for s in found[:2]))
    st.markdown(t("ngrams.count_lead", lines=len(seqs), chars=sum(map(len, seqs)), v=len(vocab)))
    with st.expander(t("ngrams.corpus_show")):
        if current_lang() == "en":  # each line glossed, like every Chinese word on the pages
            table({t("ngrams.col_line"): seqs,
                   t("ngrams.col_gloss"): [line_gloss(line) for line in seqs]},
                  name=t("ngrams.table_corpus"))
        else:
            st.text("\n".join(seqs))
    tri = model[3].explain("看动", "漫")
    after = model[3].counts("看动")
    solved = number_exercise("trigram", t("ngrams.ex_number", a=after.get("漫", 0),
                                           b=after.get("物", 0)), tri.probability,
                             explain.formula(t("ngrams.ex_number_steps"), p_latex(tri)))
    bigram = model[2].explain("动", "漫").probability
    why = choice_exercise("trigram_why", t("ngrams.ex_why", p=num(bigram)),
                          [t(f"ngrams.ex_why_{k}") for k in "abc"], correct=2,
                          explanation=t("ngrams.ex_why_explain"))
    if solved and why:  # the orders table shows the trigram's answer
        orders(ctx, vocab, model)
    else:
        after_answer()
    st.caption(t("ngrams.article_names"))
    section(t("ngrams.limits_title"), folded=True)
    limits(seqs, vocab, model)
    st.markdown(t("ngrams.window_text", n=n, context=context))


def orders(ctx: str, vocab: list[str], model: dict) -> None:
    """The same context at every order: one row of next-character probabilities each."""
    rows = [model[k].next_token_probs(ctx) for k in range(1, MAX_N + 1)]
    columns = list(dict.fromkeys(w for r in rows[1:] for w in r))[:8] or list(rows[0])[:6]
    def explain_order(i: int, j: int) -> str:
        step = model[i + 1].explain(ctx, columns[j])
        lead = t("ngrams.cell_order", name=t(f"ngrams.order_{i + 1}"),
                 used="".join(step.context)) if i else t("ngrams.cell_unigram")
        return cannot_predict(model[i + 1], ctx, vocab) or explain.formula(lead, p_latex(step))
    heatmap([[r.get(w, 0.0 if r else float("nan")) for w in columns] for r in rows], columns,
            [f"n={k} · {t(f'ngrams.order_{k}')}" + ("" if len(ctx) >= k - 1 else " ✕")
             for k in range(1, MAX_N + 1)], key="orders_map", explain=explain_order,
            title=t("ngrams.orders_title"), zmin=0, zmax=1, colorscale="Greens", height=260)


def limits(seqs: list[str], vocab: list[str], model: dict) -> None:
    """Sparsity: 吃梨 never counted, so raw counts call it impossible (after the exercise)."""
    pear = model[2].explain("吃", "梨")
    answered = choice_exercise(
        "pear", t("ngrams.ex_choice"),
        [t("ngrams.ex_zero"), t("ngrams.ex_like_apple"), t("ngrams.ex_needs_more")], correct=0,
        explanation=t("ngrams.ex_choice_explain", count=pear.count, total=pear.total,
                      p=num(pear.probability)))
    subsection(f"1 · {t('ngrams.sparse_title')}")
    if not answered:  # the phrase 吃梨 below shows P(梨 | 吃)
        after_answer()
        return
    for col, name, default in zip(st.columns(2), ("pa", "pb"), ("吃苹果", "吃梨"), strict=True):
        with col:
            phrase = text(name, t("ngrams.phrase_label", limit=MAX_PHRASE), default, MAX_PHRASE)
            missing = [c for c in dict.fromkeys(phrase) if c not in vocab]
            if len(phrase) < 2 or missing:
                st.error(t("ngrams.unknown_in", chars=quote(missing), v=len(vocab)) if missing
                         else t("ngrams.phrase_short"))
                continue
            chain = model[2].chain(phrase)
            st.markdown(t("ngrams.phrase_count", phrase=plain(phrase),
                          times=counted("times", ngram.phrase_count(seqs, phrase))))
            st.latex(STACK % r" \\[8pt] ".join(map(p_latex, chain.steps)))
            st.markdown(t("ngrams.chain", p=num(chain.probability)))
    st.markdown(t("ngrams.smoothing"))
    st.info(t("ngrams.share_nothing"), icon=":material/link_off:")


part(counting)(seqs, vocab, model)  # reruns alone when one of its own inputs changes
subsection(f"3 · {t('ngrams.size_title')}")
v_size = number("V", t("ngrams.v_label", limit=f"{ngram.MAX_TABLE_VOCAB:,}"), 1,
                ngram.MAX_TABLE_VOCAB, 100_000)
tn = number("tn", t("ngrams.tn_label"), 1, ngram.MAX_TABLE_ORDER, 5, gesture="slider")
# both bounded
size = ngram.table_size(v_size, tn)
cover = ngram.coverage(seqs, tn)
value = f"= {size.entries:,}" if size.exponent < 6 else f"= 10^{{{size.exponent}}}" \
    if size.power_of_ten else rf"\approx {num(size.mantissa)} \times 10^{{{size.exponent}}}"
formula(rf"\text{{{t('ngrams.table_symbol')}}} = V^{{\,n}}",
        rf"{v_size:,}^{{{tn}}} {value}".replace(",", "{,}"))
st.markdown(t("ngrams.size_exact", size=f"{size.entries:,}"))
share = num(100 * cover.share, 2) if cover.share >= 1e-4 else "< 0.01"
st.caption(t("ngrams.size_corpus", v=cover.vocab_size, n=tn, possible=f"{cover.possible:,}",
             seen=f"{cover.seen:,}", pct=share))
section(t("ngrams.onehot_title"))
st.markdown(t("ngrams.onehot_lead", v=f"{v_size:,}", components=counted("components", v_size)))
hot = cosine_table(one_hot(range(len(WORDS)), len(WORDS)))
left, right = st.columns(2)
left.table(matrix_frame(hot.vectors, WORDS, WORDS, decimals=0))
left.caption(t("ngrams.onehot_columns", k=len(WORDS), v=f"{v_size:,}") if v_size >= len(WORDS)
             else t("ngrams.onehot_columns_small", k=len(WORDS), v=f"{v_size:,}"))
with right:
    heatmap(hot.dots, WORDS, WORDS, key="onehot_dots", zmin=0, zmax=1, decimals=0,
            height=240, explain=lambda i, j: explain.dot(
                t("ngrams.cell_dot", a=WORDS[i], b=WORDS[j]),
                rf"e_{{\text{{{WORDS[i]}}}}} \cdot e_{{\text{{{WORDS[j]}}}}}",
                hot.vectors[i], hot.vectors[j], float(hot.dots[i, j]), decimals=0))
st.markdown(t("ngrams.onehot_next"))
