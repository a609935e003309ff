"""Stage 6 (multi-head, GQA, MQA, K/V cache): renders in both languages, shows the worked
numbers, follows edits and shared links, and survives bad input."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from tests.app.conftest import (
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from ui.i18n import catalogue

PAGE = "pages/06_multi_head.py"
TOKENS = ["问题", "，", "运费", "谁", "承担", "？"]


def fmt(v: float) -> str:
    text = f"{v:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def grid(t: torch.Tensor) -> list[list[str]]:
    return [[fmt(v) for v in row] for row in t.tolist()]


def expected(seed: int, heads: int, causal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """The page's seeded example, computed with PyTorch's own attention (not tinyformer)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 6, 8, generator=gen, dtype=torch.float64)
    w_q, w_k, w_v, w_o = (torch.randn(8, 8, generator=gen, dtype=torch.float64) / 8**0.5
                          for _ in range(4))
    hd = 8 // heads
    q, k, v = ((x @ w).reshape(1, 6, heads, hd).transpose(1, 2) for w in (w_q, w_k, w_v))
    scores = q @ k.transpose(-2, -1) / hd**0.5
    if causal:
        scores = scores.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # [1, H, 6, 6]
    heads_out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    output = heads_out.transpose(1, 2).reshape(1, 6, 8) @ w_o
    return weights[0], output[0]


def frames(at) -> list[pd.DataFrame]:
    return tables(at)


def head_tables(at) -> list[list[list[str]]]:
    """Per-head weight tables: tokens on both axes."""
    return [f.values.tolist() for f in frames(at)
            if list(f.index) == TOKENS and list(f.columns) == TOKENS]


def output_table(at) -> list[list[str]]:
    (frame,) = [f for f in frames(at)
                if list(f.index) == TOKENS and list(f.columns) == [str(c) for c in range(8)]]
    return frame.values.tolist()


def shapes(at) -> list[str]:
    return frames(at)[0].iloc[:, 2].tolist()  # the "shape now" column


def test_renders_in_both_languages(lang: str) -> None:
    at = open_page(PAGE, lang)
    assert_clean(at)
    assert at.title[0].value.startswith("6 · ")
    text = page_text(at)
    assert "multihead." not in text
    assert catalogue(lang)["kit.random_weights"] in text  # random weights are labelled


def test_default_two_heads_shapes_and_numbers() -> None:
    at = open_page(PAGE)
    assert shapes(at) == ["[1, 6, 8]", "[1, 6, 8]", "[1, 2, 6, 4]", "[1, 2, 6, 6]",
                          "[1, 2, 6, 4]", "[1, 6, 8]", "[1, 6, 8]"]
    text = page_text(at)
    assert r"d_{head} = \frac{8}{H} = \frac{8}{2} = 4" in text
    assert "each of the 2 heads sees all 6 tokens, but only 4 of the 8 numbers" in text
    weights, output = expected(0, 2)
    tables = head_tables(at)
    assert tables == [grid(weights[h]) for h in range(2)]
    assert tables[0][0] == ["1.000"] + ["0.000"] * 5  # the first row reads only itself
    assert output_table(at) == grid(output)


@pytest.mark.parametrize(("heads", "split"), [(1, "[1, 1, 6, 8]"), (4, "[1, 4, 6, 2]"),
                                              (8, "[1, 8, 6, 1]")])
def test_changing_heads_changes_the_split_not_the_sentence(heads: int, split: str) -> None:
    at = open_page(PAGE)
    at.radio("heads").set_value(heads).run()
    assert_clean(at)
    assert shapes(at)[2] == split
    assert shapes(at)[3] == f"[1, {heads}, 6, 6]"
    assert shapes(at)[5] == shapes(at)[6] == "[1, 6, 8]"
    weights, output = expected(0, heads)
    assert head_tables(at) == [grid(weights[h]) for h in range(heads)]
    assert output_table(at) == grid(output)


def test_three_heads_is_a_clear_error_and_the_page_keeps_working(lang: str) -> None:
    at = open_page(PAGE, lang, state={"heads": 3})
    assert_clean(at)
    message = catalogue(lang)["errors.width_not_divisible"].format(width=8, heads=3)
    assert [e.value for e in at.error] == [message]
    assert head_tables(at) == []
    text = page_text(at)
    assert "1,073,741,824" in text  # the rest of the page still works


def test_seed_and_causal_from_a_shared_link() -> None:
    at = open_page(PAGE, state={"seed": 7, "causal": False, "heads": 4})
    assert_clean(at)
    weights, output = expected(7, 4, causal=False)
    assert head_tables(at) == [grid(weights[h]) for h in range(4)]
    assert output_table(at) == grid(output)


def test_gqa_defaults_32_query_heads_share_8_kv_heads() -> None:
    at = open_page(PAGE)
    text = page_text(at)
    assert "32 query heads share 8 K/V heads, 4 query heads per group" in text
    assert "The K/V cache is 1/4 of MHA's" in text
    (mapping,) = [f for f in frames(at) if len(f) == 8 and f.shape[1] == 2]
    assert mapping.values.tolist()[0] == ["K/V 0", "Q0, Q1, Q2, Q3"]
    assert mapping.values.tolist()[7] == ["K/V 7", "Q28, Q29, Q30, Q31"]
    assert r"\left\lfloor \frac{31}{4} \right\rfloor = 7" in text


def test_mqa_and_mha() -> None:
    at = open_page(PAGE)
    at.selectbox("gkv").set_value(1).run()
    assert "all 32 query heads share one K/V head" in page_text(at)
    assert "1/32" in page_text(at)
    at.selectbox("gkv").set_value(32).run()
    assert "every query head has its own K/V head (32 of each)" in page_text(at)


def test_uneven_gqa_is_a_clear_error(lang: str) -> None:
    at = open_page(PAGE, lang, state={"gq": 4, "gkv": 8})
    assert_clean(at)
    message = catalogue(lang)["errors.heads_not_divisible"].format(heads=4, kv_heads=8)
    assert message in [e.value for e in at.error]


def test_cache_defaults_llama3_8b_at_8192_tokens() -> None:
    at = open_page(PAGE)
    text = page_text(at)
    assert r"32 \times 8 \times 128 \times 8192 \times 2 \times 2 = 1{,}073{,}741{,}824" in text
    assert "Exactly 1,073,741,824 bytes for one sequence (MHA: 4,294,967,296 bytes)" in text
    assert "1.000 GiB" in text and "4.000 GiB" in text
    assert "the cache is 1/4 of the MHA cache: it saves 3/4 of it, 3,221,225,472 bytes" in text
    assert "131,072 bytes (128.000 KiB)" in text


def test_cache_follows_edits() -> None:
    at = open_page(PAGE)
    at.number_input("seq").set_value(1024).run()
    at.number_input("L").set_value(2).run()
    assert_clean(at)
    text = page_text(at)
    assert "Exactly 8,388,608 bytes" in text  # 2 * 8 * 128 * 1024 * 2 * 2
    assert "8.000 MiB" in text
    at.selectbox("bytes").set_value(4).run()
    assert "Exactly 16,777,216 bytes" in page_text(at)


def test_presets_fill_the_calculator() -> None:
    at = open_page(PAGE)
    at.button("_preset_Falcon-7B").click().run()
    assert_clean(at)
    assert at.number_input("qh").value == 71 and at.number_input("kvh").value == 1
    text = page_text(at)
    assert "Exactly 67,108,864 bytes" in text  # 32 * 1 * 64 * 8192 * 2 * 2
    assert "64.000 MiB" in text
    assert "1/71" in text
    at.button("_preset_Llama-2-7B").click().run()
    assert "Exactly 4,294,967,296 bytes" in page_text(at)


def test_cache_from_a_shared_link() -> None:
    at = open_page(PAGE, state={"L": 80, "qh": 64, "kvh": 8, "hd": 128, "seq": 4096, "bytes": 2})
    assert_clean(at)
    assert "Exactly 1,342,177,280 bytes" in page_text(at)  # 80 * 8 * 128 * 4096 * 2 * 2
    assert "1/8" in page_text(at)


def test_uneven_calculator_heads_is_a_clear_error() -> None:
    at = open_page(PAGE, state={"qh": 32, "kvh": 5})
    assert_clean(at)
    message = catalogue("en")["errors.heads_not_divisible"].format(heads=32, kv_heads=5)
    assert message in [e.value for e in at.error]


@pytest.mark.parametrize(
    ("key", "bad"),
    [("seq", 10**300), ("seq", float("nan")), ("seq", float("inf")), ("seq", ""), ("seq", 0),
     ("L", -5), ("hd", 2.5), ("seed", "abc"), ("kvh", None), ("qh", 10**6), ("heads", 7),
     ("heads", "2"), ("gq", 5), ("gkv", True), ("bytes", 3), ("causal", "maybe")],
)
def test_bad_values_in_a_link_show_an_error_and_keep_working(key: str, bad: object) -> None:
    at = open_page(PAGE, state={key: bad})
    assert_clean(at)
    assert any(f"“{key}”" in e.value for e in at.error)
    assert "1,073,741,824" in page_text(at)  # defaults are used instead


def test_exercise_reveals_the_answer(lang: str) -> None:
    at = open_page(PAGE, lang)
    reveal(at, "multihead", 0)
    assert_clean(at)
    explanation = catalogue(lang)["multihead.ex_explain"]
    assert any(explanation in s.value for s in at.success)


def test_clicked_cells_explain_themselves() -> None:
    at = open_page(PAGE, state=click(("head1", 2, 1), ("head0", 0, 1), ("concat", 0, 5),
                                     ("out", 0, 0), ("groups", 0, 5)))
    assert_clean(at)
    text = explanations(at)
    weights, output = expected(0, 2)
    assert "Head 1, row 「运费」, column 「，」" in text
    assert f"a = {fmt(weights[1, 2, 1])}$" in text
    assert "「问题」 may not read the later 「，」" in text
    assert "component 1 of head 1's output" in text
    assert f" = {fmt(output[0, 0])}$" in text
    assert "Query head Q5 reads K/V head 1: 5 // 4 = 1." in text
