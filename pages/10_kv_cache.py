"""Stage 6.2: the K/V cache a decoder keeps while generating, in bytes, and what sharing
K/V heads (GQA, MQA) saves."""

import pandas as pd
import streamlit as st

from tinyformer.lessons.kv_cache import (
    PRESETS,
    binary_size,
    cache_ratio,
    gqa_saving,
    in_unit,
    kv_cache_size,
    preset_caches,
)
from ui.charts import bars
from ui.exercise import choice_exercise, number_exercise
from ui.fmt import places, short
from ui.formula import formula, formula_steps
from ui.i18n import t
from ui.inputs import choice, number
from ui.notes import shown_errors
from ui.page import part, section
from ui.reveal import Stepper

BYTES = {1: "int8, FP8", 2: "FP16, BF16", 4: "FP32"}  # bytes per number: number formats
SYMBOLS = r"L \times H_{kv} \times d_{head} \times N \times 2 \times b"


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


choice_exercise("stored", t("kv_cache.ex_question"),
                [t("kv_cache.ex_a"), t("kv_cache.ex_b"), t("kv_cache.ex_c")], correct=0,
                explanation=t("kv_cache.ex_explain"))
@part
def calculator() -> None:
    section(t("kv_cache.calc_title"))
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
        st.caption(t("kv_cache.presets_lead"))
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

    section(t("kv_cache.what_title"), folded=True)
    st.markdown(t("kv_cache.what"))
    formula(r"S_{KV} = " + SYMBOLS)

    section(t("kv_cache.compare_title", n=exact(seq), b=nbytes))
    caches = preset_caches(seq, nbytes)
    mib = [in_unit(c.total_bytes, "MiB") for c in caches.values()]
    bars(list(caches), {t("kv_cache.mib"): mib}, key="presets", y_title=t("kv_cache.mib"),
         decimals=places(mib))
    llama3 = PRESETS["Llama-3-8B"]  # Llama-2-7B's sizes, but 8 K/V heads for 32 query heads
    ratio = cache_ratio(llama3.n_heads, llama3.n_kv_heads)
    st.markdown(t("kv_cache.compare_note", ratio=str(ratio)))
    st.table(pd.DataFrame(  # six narrow columns, so that a phone shows them all
        [[p.name, p.layers, p.n_heads, p.n_kv_heads, p.head_dim,
          exact(caches[p.name].total_bytes)] for p in PRESETS.values()],
        columns=[t(f"kv_cache.col_{c}") for c in ("model", "layers", "q", "kv", "hd", "bytes")]))
    st.caption(t("kv_cache.sources", list="; ".join(f"{p.name}: {p.source}"
                                                   for p in PRESETS.values())))
calculator()
