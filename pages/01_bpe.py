"""Stage 1.2: byte-level BPE learns its tokens from the corpus: one sentence, two cuts."""

import streamlit as st

from tinyformer.bpe import BPEEncoding, hex_bytes, merge_run
from tinyformer.lessons.bpe_corpus import corpus_bpe, corpus_byte_entries, corpus_cuts
from tinyformer.tokenizer import UNK_ID
from ui.charts import PALETTE, lines, spans
from ui.example import question_box
from ui.exercise import choice_exercise, number_exercise
from ui.fmt import plain
from ui.i18n import t
from ui.inputs import number
from ui.notes import shown_errors
from ui.page import part, section
from ui.tables import table

MAX_LEN = 40  # characters in the box: up to 160 bytes, still one screen wide
PARTIAL = PALETTE[1]  # orange: a token whose bytes are not whole characters
BYTES_TEXT = "运费12元"  # the byte-count exercise: Chinese characters and digits


def cut_table(name: str, tokens, ids, extra: dict | None = None) -> None:
    """One column per token: the token, its ID (and more rows when given); name: its
    name in the downloads."""
    rows = {t("bpe.row_token"): list(tokens), t("bpe.row_id"): [str(i) for i in ids],
            **(extra or {})}
    table(list(rows.values()), index=list(rows),
          columns=[str(j) for j in range(len(tokens))], name=name)


def byte_figure(key: str, n_bytes: int, *rows) -> None:
    """Cuts laid along the sentence's bytes, one bar row per cut, so a token that cuts a
    character shows. Each row: (name, tokens, ids, byte spans, partial flags, colour)."""
    cuts = [(name, [f"{tok}\n{i}" for tok, i in zip(toks, ids, strict=True)], places,
             partial, colour) for name, toks, ids, places, partial, colour in rows]
    spans(cuts, key=key, length=n_bytes, x_title=t("bpe.byte_axis"), marked_colour=PARTIAL)


def byte_ids(char: str) -> None:
    """Why a byte's ID is not its value: the bytes of one character, the printable
    character each is stored as, and its ID."""
    entries = corpus_byte_entries()  # [256], by byte value
    space = entries[0x20]
    st.markdown(t("bpe.byte_ids", char=plain(char), space=space.char, space_id=space.id,
                  last=bpe.vocab_size - 1))
    held = [entries[b] for b in char.encode("utf-8")]
    table({t("bpe.col_byte"): [f"{e.value:02X}" for e in held],
           t("bpe.col_value"): [str(e.value) for e in held],
           t("bpe.col_stored"): [e.char for e in held],
           t("bpe.col_id"): [str(e.id) for e in held]},
          name=t("bpe.table_bytes", char=char))


def bpe_row(name: str, enc: BPEEncoding) -> tuple:
    return name, enc.display, enc.ids, enc.byte_spans, enc.partial, PALETTE[2]


bpe = corpus_bpe()
section(t("bpe.cut_title"))
sentence = question_box("text", t("bpe.text_label", limit=MAX_LEN), MAX_LEN)
cuts = None
with shown_errors():
    cuts = corpus_cuts(sentence)
    chars = cuts.chars
    pieces = cuts.bpe
    st.markdown(t("bpe.cut_lead", v=cuts.char_vocab, n=len(chars.ids), b=cuts.bpe_vocab,
                  m=len(pieces.ids)))
    byte_figure("bytes", cuts.n_bytes, (t("bpe.by_chars"), chars.tokens, chars.ids,
                                        cuts.char_spans, [False] * len(chars.ids),
                                        PALETTE[0]), bpe_row(t("bpe.by_bpe"), pieces))
    for index, covering in cuts.bpe.split_chars()[:1]:  # one example is enough
        st.caption(t("bpe.partial_note", char=plain(sentence[index]),
                     hex=hex_bytes(sentence[index].encode()),
                     parts=" + ".join(plain(pieces.display[i]) for i in covering)))
    if chars.unknown:
        where = " · ".join(f"「{plain(c)}」 → " + " ".join(plain(pieces.display[i]) for i in
                           pieces.covering(sentence.index(c))) for c in chars.unknown)
        st.warning(t("bpe.unknown", id=UNK_ID, where=where), icon=":material/help:")
    with st.expander(t("bpe.as_tables"), expanded=True):
        st.markdown(f"**{t('bpe.by_chars')}** · {t('bpe.count', n=len(chars.ids))}")
        cut_table(t("bpe.by_chars"), chars.tokens, chars.ids)
        st.markdown(f"**{t('bpe.by_bpe')}** · {t('bpe.count', n=len(pieces.ids))}")
        cut_table(t("bpe.by_bpe"), pieces.display, pieces.ids,
                  {t("bpe.row_bytes"): list(pieces.hex)})
    st.markdown(t("bpe.round_trip", text=plain(sentence), bpe=plain(cuts.bpe_decoded),
                  chars=plain(cuts.char_decoded),
                  bpe_ok=t(f"bpe.same_{cuts.bpe_round_trip}"),
                  chars_ok=t(f"bpe.same_{cuts.char_round_trip}")))
    byte_ids(sentence[0])

# --- What BPE learned: its merges, in the order it learned them ----------------------
first = bpe.merges[0]
choice_exercise("first", t("bpe.ex_question", left=plain(first.left_display),
                            right=plain(first.right_display)),
                [t("bpe.ex_a"), t("bpe.ex_b"), t("bpe.ex_c"), t("bpe.ex_d")], correct=0,
                explanation=t("bpe.ex_explain"))
section(t("bpe.merges_title"), folded=True)
st.markdown(t("bpe.merges_lead", k=len(bpe.merges), v=bpe.vocab_size))
run = merge_run(bpe, sentence) if cuts else None
# Every merge (hundreds of rows): too long for st.table, so a frame that scrolls.
table({
    t("bpe.col_left"): [m.left_display for m in bpe.merges],
    t("bpe.col_right"): [m.right_display for m in bpe.merges],
    t("bpe.col_merged"): [m.merged_display for m in bpe.merges],
    t("bpe.col_uses"): list(run.uses) if run else [0] * len(bpe.merges),
}, index_name=t("bpe.col_rank"), name=t("bpe.merges_title"), height=320)

# --- The merges one by one on the sentence ---------------------------------------------
@part
def merges_one_by_one(sentence: str, cuts, run) -> None:
    section(t("bpe.steps_title"))
    k = number("k", t("bpe.k_label", k=len(bpe.merges)), 0, len(bpe.merges), 0,
               gesture="both")
    now = bpe.first_merges(k).encode(sentence)
    st.markdown(t("bpe.after_k", k=k, n=len(now.ids), bytes=cuts.n_bytes))
    if k:
        merge = bpe.merges[k - 1]
        st.markdown(t("bpe.last_merge", rank=k - 1, left=plain(merge.left_display),
                      right=plain(merge.right_display), merged=plain(merge.merged_display),
                      uses=t("bpe.uses", n=run.uses[k - 1]) if run.uses[k - 1]
                      else t("bpe.unused")))
    byte_figure("steps", cuts.n_bytes, bpe_row(t("bpe.first_k", k=k), now),
                bpe_row(t("bpe.by_bpe"), cuts.bpe))
    with st.expander(t("bpe.as_table")):
        cut_table(t("bpe.first_k", k=k), now.display, now.ids)
    lines(list(range(len(run.counts))), {t("bpe.tokens"): run.counts}, key="curve",
          x_title=t("bpe.k_axis"), y_title=t("bpe.tokens"), marks={f"k = {k}": k},
          table=False, height=260, decimals=0)
    st.caption(t("bpe.used", ranks=", ".join(map(str, run.used)), n=len(run.used),
                 k=len(bpe.merges)))
# --- Before the merges: how many bytes, and why a character takes 1 or 3 ---------------
bytes_cut = corpus_cuts(BYTES_TEXT)  # its UTF-8 bytes, character by character
number_exercise("bytes", t("bpe.ex2_question", text=BYTES_TEXT),
                len(bpe.first_merges(0).encode(BYTES_TEXT).ids), t(
                    "bpe.ex2_steps", sum=" + ".join(str(b - a) for a, b in bytes_cut.char_spans),
                    n=bytes_cut.n_bytes), tolerance=0, decimals=0)
choice_exercise("bytes_why", t("bpe.ex3_question"), [t(f"bpe.ex3_{k}") for k in "abc"],
                correct=1, explanation=t("bpe.ex3_explain"))
if cuts is not None:
    merges_one_by_one(sentence, cuts, run)
st.info(t("bpe.model_note"), icon=":material/lightbulb:")
