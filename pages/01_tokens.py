"""Stage 1: text becomes token IDs; each ID selects one row of the embedding table."""

import streamlit as st
import torch

from tinyformer.lessons.chain import IDS as HAND_IDS
from tinyformer.lessons.chain import VOCAB as HAND_VOCAB
from tinyformer.lessons.chain import WIDTH as HAND_WIDTH
from tinyformer.lessons.chain import WORDS as HAND_WORDS
from tinyformer.masks import position_ids
from tinyformer.tokenizer import UNK_ID, CharVocab, embed, position_table, random_table, same_piece
from ui import chain, explain, state
from ui.corpus import corpus_text
from ui.drawer import drawer, is_open
from ui.example import Q1, Q2, gloss, question_box
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.figures import heatmap
from ui.fmt import num, plain, term
from ui.formula import formula
from ui.headings import subsection
from ui.i18n import t
from ui.inputs import number, text, toggle
from ui.notes import random_weights_note, shown_errors
from ui.page import fold, part, section
from ui.tables import table

MAX_LEN = 32  # characters: the rows of the position table, and each text box's limit
cell = explain.cell_name


def side_by_side(*maps) -> None:
    """Heatmaps in columns, each (title, matrix [rows, d], row labels, key, explain)."""
    for col, (title, matrix, rows, key, explains) in zip(st.columns(len(maps)), maps, strict=True):
        with col:
            subsection(title)
            heatmap(matrix, [str(j) for j in range(matrix.shape[1])], rows, key=key,
                    explain=explains, colorscale="RdBu", zmin=-3, zmax=3)


def looked_up(lead: str, names: list[str], value) -> str:
    """A number copied from a table: X_{i,j} = E_{id,j} = 0.123."""
    return explain.formula(lead, " = ".join([*names, num(value)]))


def p_cell(i: int, j: int, value, kind: str, d: int) -> str:
    """One number of P: a learned (here random) entry, or its sine / cosine."""
    if kind == "learned":
        return looked_up(t("tokens.cell_p_learned", i=i), [cell("P", i, j)], value)
    fn = r"\sin" if j % 2 == 0 else r"\cos"
    return explain.formula(t(f"tokens.cell_p_{fn[1:]}", j=j), rf"{cell('P', i, j)} = {fn}\left("
                           rf"{i} / 10000^{{{j - j % 2}/{d}}}\right) = {num(value)}")


vocab = CharVocab.from_corpus(corpus_text())  # 184 characters: ~0.02 ms a run
# --- 1. Text to token IDs ---------------------------------------------------------
section(t("tokens.ids_title"))
sentence = question_box("text", t("tokens.text_label", limit=MAX_LEN), MAX_LEN)
enc = vocab.encode(sentence)
labels = list(enc.tokens)
n = len(enc.ids)
if enc.unknown:
    st.warning(t("tokens.unknown", chars=" ".join(f"「{plain(c)}」" for c in enc.unknown),
                 id=UNK_ID), icon=":material/help:")
if n:
    table([labels, [str(i) for i in enc.ids]], columns=[str(i) for i in range(n)],
          index=[t("tokens.row_token"), t("tokens.row_id")], name=t("tokens.ids_title"))
st.caption(t("tokens.vocab_note", v=len(vocab), n=n))
# A drawer: the vocabulary's rows (one per token) are sent only while it is open.
vocab_box = drawer(t("tokens.vocab_all", v=len(vocab)), key=state.private("vocab", "box"),
                   icon=":material/list:")
if is_open(vocab_box):
    with vocab_box:  # every character of the corpus: too long for st.table, so it scrolls
        table({t("tokens.row_token"): list(vocab.tokens)}, index_name="ID",
              name=t("tokens.vocab_all", v=len(vocab)), height=400)
# --- 2. Each ID selects a row: X [N, d] --------------------------------------------
rows_answered = choice_exercise("rows", t("tokens.ex_question"),
                                [t(f"tokens.ex_{k}") for k in "abcd"], correct=2,
                                explanation=t("tokens.ex_explain", id=vocab.id_of("运")))
fold(t("tokens.lookup_title"))
@part
def rows_and_positions(vocab: CharVocab, enc, labels: list[str], n: int,
                       rows_answered: bool) -> None:
    section(t("tokens.lookup_title"))
    c_d, c_seed, c_sin = st.columns([3, 1, 2], vertical_alignment="bottom")
    with c_d:
        d = number("d", t("tokens.d_label"), 4, 16, 8, gesture="slider")
    with c_seed:
        seed = number("seed", t("tokens.seed_label"), 0, 999, 0)
    with c_sin:
        kind = "sinusoidal" if toggle("sin", t("tokens.sin_label"), False) else "learned"
    random_weights_note()
    # ~0.1 ms
    E = random_table(len(vocab), d, seed)
    P = position_table(kind, MAX_LEN, d, seed)
    with shown_errors():
        tr = embed(torch.tensor(enc.ids, dtype=torch.int64), E, P)  # X [N, d], P, X + P
        used = sorted(set(enc.ids))
        st.markdown(t("tokens.x_lead", v=len(vocab), d=d, k=len(used), n=n)
                    + (t("tokens.x_repeat") if rows_answered else ""))  # the answer
        side_by_side(
            (t("tokens.e_table", k=len(used), v=len(vocab)), E[used],
             [f"{i} · {vocab.tokens[i]}" for i in used], "e_map", lambda r, j: looked_up(
                 t("tokens.cell_table", id=used[r], tok=vocab.tokens[used[r]]),
                 [cell("E", used[r], j)], E[used[r], j])),
            (t("tokens.x_table", n=n, d=d), tr.rows, labels, "x_map", lambda i, j: looked_up(
                t("tokens.cell_x", i=i, tok=labels[i], id=enc.ids[i]),
                [cell("X", i, j), cell("E", enc.ids[i], j)], tr.rows[i, j])))
        lookups = [f"x_{{{i}}} = E[{enc.ids[i]}]" for i in range(n)]  # x_0, x_1, ..., x_N-1
        lookups = lookups if n <= 3 else [*lookups[:2], r"\ldots", lookups[-1]]
        formula(r"x_i = E[\mathrm{id}_i], \quad X \in \mathbb{R}^{N \times d}",
                r",\ ".join(lookups) + rf",\quad X \in \mathbb{{R}}^{{{n} \times {d}}}")
        section(t("tokens.pos_title"))
        st.markdown(t(f"tokens.pos_lead_{kind}", rows=MAX_LEN))
        side_by_side(
            (t("tokens.p_table", n=n, d=d), tr.positions,
             [t("tokens.pos_n", i=i) for i in range(n)], "p_map",
             lambda i, j: p_cell(i, j, tr.positions[i, j], kind, d)),
            (t("tokens.sum_table", n=n, d=d), tr.summed, labels, "sum_map",
             lambda i, j: explain.sum_of(t("tokens.cell_sum", i=i, tok=labels[i]),
                                         cell("(X+P)", i, j), [tr.rows[i, j],
                                         tr.positions[i, j]], tr.summed[i, j])))
        formula(r"x_i \leftarrow E[\mathrm{id}_i] + P[i]",
                rf"(X + P)_{{0,0}} = E_{{{enc.ids[0]},0}} + P_{{0,0}} = {num(tr.rows[0, 0])} + "
                rf"{term(tr.positions[0, 0], 3)} = {num(tr.summed[0, 0])}")
    q1 = vocab.encode(Q1)
    q2 = vocab.encode(Q2)
    same = same_piece(("运", "费"), q1.tokens, embed(torch.tensor(q1.ids), E, P),
                      q2.tokens, embed(torch.tensor(q2.ids), E, P))
    yun = same.ids[0]
    pa = same.start_a
    pb = same.start_b
    gap = same.difference[0, 0]
    steps = explain.formula(
        t("tokens.ex2_steps"), rf"(E_{{{yun},0}} + P_{{{pa},0}}) - (E_{{{yun},0}} + "
        rf"P_{{{pb},0}}) = P_{{{pa},0}} - P_{{{pb},0}} = {num(P[pa, 0])} - {term(P[pb, 0], 3)}"
        rf" = {num(gap)}")
    solved = number_exercise("gap", t("tokens.ex2_question", pa=pa, pb=pb), float(gap), steps)
    why = choice_exercise("gap_why", t("tokens.ex3_question"),
                          [t(f"tokens.ex3_{k}") for k in "abc"], correct=1,
                          explanation=t("tokens.ex3_explain", pa=pa, pb=pb))
    section(t("tokens.same_title"))
    st.markdown(t("tokens.same_lead", q1=Q1, q2=Q2))
    view = same.side_by_side()  # 运 in Q1, 运 in Q2, 费 in Q1, 费 in Q2: equal rows adjacent
    twin = [t("tokens.twin_label", tok=tok, q=1 if w == "a" else 2, pos=pos)
            for tok, _, w, pos in view.rows]
    before = (t("tokens.before"), view.before, twin, "before_map", lambda r, j: looked_up(
        t("tokens.cell_before", who=twin[r]), [cell("E", view.rows[r][1], j)],
        view.before[r, j]))
    if not (solved and why):  # the rows after positions hold the exercise's answer
        side_by_side(before)
        after_answer()
        return
    after = (t("tokens.after"), view.after, twin, "after_map", lambda r, j: explain.sum_of(
        t("tokens.cell_after", who=twin[r]), cell("(X+P)", view.rows[r][3], j),
        [view.before[r, j], P[view.rows[r][3], j]], view.after[r, j]))
    side_by_side(before, after)
    st.success(t("tokens.same_result", ids=", ".join(map(str, same.ids)), pa=pa, pb=pb,
                 gap_before=num(same.gap_rows), gap_after=num(same.gap_summed)),
               icon=":material/compare_arrows:")
rows_and_positions(vocab, enc, labels, n, rows_answered)

# --- 5. A batch: left padding ---------------------------------------------------------
section(t("tokens.batch_title"))
st.markdown(t("tokens.batch_lead"))
second = text("text2", t("tokens.text2_label", limit=MAX_LEN), Q2, MAX_LEN)
batch = vocab.batch_encode([sentence, second])
positions = position_ids(batch.valid)  # [2, N]: real tokens counted from 0, padding none
rows = {t(f"tokens.batch_{name}", b=b): values for b in range(2) for name, values in
        (("tokens", batch.tokens[b]), ("ids", batch.ids[b].tolist()),
         ("valid", batch.valid[b].int().tolist()),  # 1 = a real token, 0 = padding
         ("pos", [str(p) if ok else "–" for p, ok in zip(positions[b].tolist(),
                                                          batch.valid[b].tolist(), strict=True)]))}
table([[str(v) for v in values] for values in rows.values()], index=list(rows),
      name=t("tokens.batch_title"))
st.markdown(t("tokens.batch_positions"))
st.info(t("tokens.batch_note", n=batch.ids.shape[1], pads=batch.n_padding),
        icon=":material/visibility_off:")

# --- 6. The running example's hand model: whole words, IDs, a table of width 2 ----------
section(t("tokens.chain_title"))
st.markdown(t("tokens.chain_lead", v=len(HAND_VOCAB), d=HAND_WIDTH, first=HAND_IDS[0],
              last=HAND_IDS[-1]))
gloss(HAND_VOCAB)
x_box, tables_side = st.columns([2, 3])
with x_box:  # the box first: the table beside it shows its rows
    chain.edit("X", t("tokens.chain_x_label", d=HAND_WIDTH),
               slider_labels=[f"{w} · x[{c}]" for w in HAND_WORDS for c in range(HAND_WIDTH)])
hand = chain.run()  # the hand model with these rows (also what stages 2 to 10.1 compute with)
with tables_side:
    side_by_side(
        (t("tokens.chain_table", v=len(HAND_VOCAB), d=HAND_WIDTH), hand.table,
         [f"{i} · {w}" for i, w in enumerate(HAND_VOCAB)], "hand_e_map", lambda r, j: looked_up(
             t("tokens.cell_hand_table", id=r, tok=HAND_VOCAB[r]), [cell("E", r, j)],
             hand.table[r, j])),
        (t("tokens.chain_x", n=len(HAND_IDS), d=HAND_WIDTH), hand.X, list(HAND_WORDS),
         "hand_x_map", lambda i, j: looked_up(
             t("tokens.cell_x", i=i, tok=HAND_WORDS[i], id=HAND_IDS[i]),
             [cell("X", i, j), cell("E", HAND_IDS[i], j)], hand.X[i, j])))
formula(r"x_i = E[\mathrm{id}_i]", r",\ ".join(
    f"x_{{{i}}} = E[{k}]" for i, k in enumerate(HAND_IDS)))
st.caption(t("tokens.chain_note"))
