"""Stage 10.3: the keys and values the generation loop of stage 10.2 keeps instead of
recomputing them, the K/V cache; its size in bytes, and what sharing K/V heads (GQA,
MQA) saves."""

import streamlit as st

from tinyformer.lessons.decoding import cached_or_recomputed
from tinyformer.lessons.forward_pass import ARTICLE_IDS
from tinyformer.lessons.kv_cache import (
    PRESETS,
    binary_size,
    cache_ratio,
    gqa_saving,
    in_unit,
    kv_cache_size,
    preset_caches,
)
from tinyformer.model import TinyDecoder
from ui.charts import bars
from ui.exercise import after_answer, choice_exercise, number_exercise
from ui.fmt import decimals_for, num, places, short
from ui.formula import formula, formula_steps
from ui.i18n import t
from ui.inputs import choice, number
from ui.notes import shown_errors
from ui.page import part, section
from ui.reveal import Stepper
from ui.tables import table

BYTES = {1: "int8, FP8", 2: "FP16, BF16", 4: "FP32"}  # bytes per number: number formats
SYMBOLS = r"L \times H_{kv} \times d_{head} \times N \times 2 \times b"
MISTRAL = PRESETS["Mistral-7B-v0.1"]  # the preset with a sliding window
LOOP_STEPS = 5  # stage 10.2's loop at its defaults: the article's model and prompt, greedy


@st.cache_resource(max_entries=1)
def the_loop():
    """Stage 10.2's default loop without and with the cache (the same for every session)."""
    return cached_or_recomputed(TinyDecoder.seeded(7), ARTICLE_IDS, LOOP_STEPS)


def human(n_bytes: int) -> str:
    """1 GiB, 128 KiB, 4.438 GiB: the largest binary unit, without trailing zeros."""
    value, unit = binary_size(n_bytes)
    return f"{short(value)} {unit}"


def exact(n_bytes: int) -> str:
    return f"{n_bytes:,}"


def product(sizes: tuple[int, ...], total: int) -> tuple[str, str]:
    """The cache formula's numbers, then its exact value, for two lines (a phone is narrow):
    32 × 8 × ... × 2, then 1{,}073{,}741{,}824."""
    return r" \times ".join(str(s) for s in sizes), exact(total).replace(",", "{,}")


def apply_preset(name: str) -> None:
    p = PRESETS[name]
    st.session_state.update({"kv_cache.L": p.layers, "kv_cache.qh": p.n_heads,
                             "kv_cache.kvh": p.n_kv_heads, "kv_cache.hd": p.head_dim})


def size_steps(sv, layers: int, kv_heads: int, head_dim: int, seq: int, nbytes: int) -> None:
    """The cache built up step by step: one position, the whole sequence, against MHA."""
    steps = Stepper("hand", [t(f"kv_cache.step_{k}") for k in ("token", "sequence", "mha")])
    if steps.step(1, human(sv.cache.bytes_per_token)):
        formula_steps(r"S_{KV} / N", r"L \times H_{kv} \times d_{head} \times 2 \times b",
                      *product((layers, kv_heads, head_dim, 2, nbytes), sv.cache.bytes_per_token))
    if steps.step(2, human(sv.cache.total_bytes)):
        formula_steps(r"S_{KV}", SYMBOLS,  # the symbols on a line of their own (phones)
                      *product((layers, kv_heads, head_dim, seq, 2, nbytes), sv.cache.total_bytes))
    if steps.step(3):
        m1, m2, m3 = st.columns(3)
        m1.metric(t("kv_cache.cache_this", kv=kv_heads), human(sv.cache.total_bytes))
        m2.metric(t("kv_cache.cache_mha", q=sv.n_heads), human(sv.mha_cache.total_bytes))
        m3.metric(t("kv_cache.cache_ratio"), str(sv.ratio))
        st.markdown(t("kv_cache.exact", total=exact(sv.cache.total_bytes),
                      mha=exact(sv.mha_cache.total_bytes),
                      per_token=exact(sv.cache.bytes_per_token),
                      per_token_h=human(sv.cache.bytes_per_token)))
        st.success(t(f"kv_cache.saving_{sv.kind}", kv=kv_heads, q=sv.n_heads, ratio=str(sv.ratio),
                     saved=str(sv.saved), saved_bytes=exact(sv.saved_bytes),
                     saved_h=human(sv.saved_bytes)), icon=":material/savings:")


def ids(values) -> str:
    return " ".join(map(str, values))


def from_the_loop() -> None:
    """The page's opening: stage 10.2's loop, run again without and with the cache."""
    loop = the_loop()
    last = len(loop.prompt) - 1
    section(t("kv_cache.loop_title"))
    st.markdown(t("kv_cache.loop_lead", n=len(loop.prompt), last=last, prompt=ids(loop.prompt),
                  steps=len(loop.steps)))
    answered = choice_exercise(
        "reuse", t("kv_cache.reuse_question", new=last + 1, last=last),
        [t(f"kv_cache.reuse_{k}") for k in ("causal", "query", "token")], correct=0,
        explanation=t("kv_cache.reuse_explain"))
    if not answered:
        after_answer()
        return
    table(  # one row per step, named by it (no 0-based row number beside it)
        [[f"0–{s.read - 1}", str(s.rows_recomputed), str(s.rows_cached)] for s in loop.steps],
        index=[t("kv_cache.step_row", k=k) for k in range(1, len(loop.steps) + 1)],
        columns=[t(f"kv_cache.col_{c}") for c in ("read", "without", "with")])
    gap = max(s.logit_gap for s in loop.steps)
    st.markdown(t("kv_cache.loop_total", k=len(loop.steps),
                  without=sum(s.rows_recomputed for s in loop.steps),
                  cached=sum(s.rows_cached for s in loop.steps), blocks=loop.blocks,
                  prompt=ids(loop.prompt), new=ids(loop.new), gap=num(gap, decimals_for([gap]))))


from_the_loop()
st.markdown(t("kv_cache.size_lead"))
stored = choice_exercise("stored", t("kv_cache.ex_question"),
                         [t("kv_cache.ex_a"), t("kv_cache.ex_b"), t("kv_cache.ex_c")], correct=0,
                         explanation=t("kv_cache.ex_explain"))


@part
def calculator() -> None:
    st.caption(t("kv_cache.symbols"))  # before the formulas below use them
    left, right = st.columns([2, 3])  # the settings, and beside them the size they give
    with left:
        c1, c2 = st.columns(2)
        with c1:
            layers = number("L", t("kv_cache.layers"), 1, 1000, 32)
            kv_heads = number("kvh", t("kv_cache.kv_heads"), 1, 1024, 8)
        with c2:
            q_heads = number("qh", t("kv_cache.q_heads"), 1, 1024, 32)
            head_dim = number("hd", t("kv_cache.head_dim"), 1, 1024, 128)
        seq = number("seq", t("kv_cache.seq"), 1, 1_048_576, 8192, gesture="both")
        nbytes = choice("bytes", t("kv_cache.bytes"), list(BYTES), 2, widget="select",
                        format_func=lambda b: f"{b} ({BYTES[b]})")
        st.caption(t("kv_cache.presets_lead", w=f"{MISTRAL.window:,}"))
        with st.container(horizontal=True):
            for name in PRESETS:
                st.button(name, on_click=apply_preset, args=(name,),
                          key=f"_kv_cache.preset.{name}")
    with right, shown_errors():
        size_steps(gqa_saving(layers, q_heads, kv_heads, head_dim, seq, nbytes), layers,
                   kv_heads, head_dim, seq, nbytes)
    longer = kv_cache_size(32, 8, 128, 16_384, 2)  # Llama-3-8B, twice the tokens, FP16
    factors, total = product((32, 8, 128, 16_384, 2, 2), longer.total_bytes)
    number_exercise(
        "longer", t("kv_cache.ex2_question"), in_unit(longer.total_bytes, "GiB"),
        t("kv_cache.ex2_steps", total=exact(longer.total_bytes), gib=human(longer.total_bytes))
        + "\n\n" + rf"$$S_{{KV}} = \begin{{aligned}}&{factors} \\ &= {total}\end{{aligned}}$$",
        tolerance=0.01, decimals=2)
    st.caption(t("kv_cache.batch_note"))

    section(t("kv_cache.what_title"))
    st.markdown(t("kv_cache.what"))
    formula(r"S_{KV} = " + SYMBOLS)

    section(t("kv_cache.compare_title", n=exact(seq), b=nbytes))
    caches = preset_caches(seq, nbytes)
    mib = [in_unit(c.total_bytes, "MiB") for c in caches.values()]
    bars(list(caches), {t("kv_cache.mib"): mib}, key="presets", y_title=t("kv_cache.mib"),
         decimals=places(mib))
    llama3 = PRESETS["Llama-3-8B"]  # Llama-2-7B's sizes, but 8 K/V heads for 32 query heads
    ratio = cache_ratio(llama3.n_heads, llama3.n_kv_heads)
    st.markdown(t("kv_cache.compare_note", ratio=str(ratio), w=f"{MISTRAL.window:,}",
                  m=f"{caches[MISTRAL.name].seq_len:,}"))
    table(  # narrow columns, so that a phone shows them all; rows by model
        [[p.layers, p.n_heads, p.n_kv_heads, p.head_dim, exact(caches[p.name].total_bytes)]
         for p in PRESETS.values()], index=list(PRESETS),
        columns=[t(f"kv_cache.col_{c}") for c in ("layers", "q", "kv", "hd", "bytes")])
    st.caption(t("kv_cache.sources", list="; ".join(f"{p.name}: {p.source}"
                                                   for p in PRESETS.values())))


section(t("kv_cache.calc_title"), folded=True)  # the first part ends with the question
if stored:  # the calculator's formula has H_kv and no query heads: the answer
    calculator()
else:
    after_answer()
