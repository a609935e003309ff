"""Stage 6 in AppTest: heads split the width (docs/curriculum.md, stage 6), and GQA/MQA run
live: query heads that share a K/V head still have different weight tables. Every table
is checked against PyTorch's own attention, not tinyformer's. What answers an exercise
shows only once it is answered: most tests open the page with every exercise answered."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.app.helpers import (
    answer,
    assert_clean,
    click,
    explanations,
    open_page,
    page_text,
    reveal,
    tables,
)
from ui.example import TAIL6
from ui.fmt import num
from ui.i18n import _STAGE_REF, _stage_number, catalogue

PAGE = "pages/06_multi_head.py"
TOKENS = list(TAIL6)
# Every exercise answered (as session state, no extra run): the gated tables show.
ANSWERED = {f"_multi_head.ex.{name}.answered": value
            for name, value in (("shapes", 0), ("groups", 4), ("why", 0), ("shared", 1))}


def page(**kwargs):
    """The page with its exercises answered."""
    return open_page(PAGE, state=ANSWERED | kwargs.pop("state", {}), **kwargs)


def said(lang: str, key: str, **values) -> str:
    """A text as the page shows it: other stages' numbers filled in, then the values."""
    return _STAGE_REF.sub(_stage_number, catalogue(lang)[f"multi_head.{key}"]).format(**values)


def grid(t: torch.Tensor) -> list[list[str]]:
    return [[num(v) for v in row] for row in t.tolist()]


def setup(seed: int) -> tuple[torch.Tensor, ...]:
    """The page's seeded random example, drawn here in the documented order."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 6, 8, generator=gen, dtype=torch.float64)
    return x, *(torch.randn(8, 8, generator=gen, dtype=torch.float64) / 8**0.5 for _ in range(4))


def expected(seed: int, heads: int, kv: int | None = None, causal: bool = True):
    """Weights [H, 6, 6], Q [6, 8] and output [6, 8] by PyTorch (enable_gqa for GQA)."""
    x, w_q, w_k, w_v, w_o = setup(seed)
    kv = kv or heads
    hd = 8 // heads
    q = (x @ w_q).reshape(1, 6, heads, hd).transpose(1, 2)
    k, v = ((x @ w[:, : kv * hd]).reshape(1, 6, kv, hd).transpose(1, 2) for w in (w_k, w_v))
    scores = q @ k.repeat_interleave(heads // kv, dim=1).transpose(-2, -1) / hd**0.5
    if causal:
        scores = scores.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return torch.softmax(scores, -1)[0], (x @ w_q)[0], (out.transpose(1, 2).reshape(1, 6, 8)
                                                     @ w_o)[0]


def head_tables(at) -> list[list[list[str]]]:
    return [f.values.tolist() for f in tables(at)
            if list(f.index) == TOKENS and list(f.columns) == TOKENS]


def table_with(at, columns: list[str]) -> list[list[str]]:
    (frame,) = [f for f in tables(at) if list(f.index) == TOKENS and list(f.columns) == columns]
    return frame.values.tolist()


def shapes(at) -> list[str]:
    (frame,) = [f for f in tables(at) if f.shape == (7, 4)]  # step, shape, shape now, what
    return frame.iloc[:, 2].tolist()


Q_COLUMNS = [f"h{c // 4}·{c % 4}" for c in range(8)]


def test_renders_in_both_languages_with_the_worked_numbers(lang: str) -> None:
    at = page(lang=lang)
    assert_clean(at)
    assert at.title[0].value.startswith("6 · ")
    text = page_text(at)
    assert "multi_head." not in text
    assert catalogue(lang)["kit.random_weights"] in text
    assert shapes(at) == ["[1, 6, 8]", "[1, 6, 8]", "[1, 2, 6, 4]", "[1, 2, 6, 6]",
                          "[1, 2, 6, 4]", "[1, 6, 8]", "[1, 6, 8]"]
    assert r"d_{head} = \frac{8}{2} = 4" in text
    assert catalogue(lang)["multi_head.split_note"].format(heads=2, hd=4, n=6) in text
    assert "苹果放进冰箱，它会保鲜" in text
    closing = said(lang, "gqa_32", g=4, ratio="1/4", mqa="1/32")
    assert closing in text and "10.3" in closing  # the K/V cache: a later stage
    assert said(lang, "tokens") in text
    assert ("apple" in text and "fridge" in text) == (lang == "en")  # glosses, English only


def test_default_numbers_match_pytorch() -> None:
    at = page()
    weights, q, output = expected(0, 2)
    gqa, _, _ = expected(0, 4, kv=2)
    assert head_tables(at) == [grid(w) for w in (*weights, *gqa)]  # 2 heads, then 4 GQA heads
    assert head_tables(at)[0][0] == ["1.000"] + ["0.000"] * 5  # the first row reads itself
    assert table_with(at, Q_COLUMNS) == grid(q)
    assert table_with(at, [str(c) for c in range(8)]) == grid(output)


@pytest.mark.parametrize(("heads", "split"), [(1, "[1, 1, 6, 8]"), (4, "[1, 4, 6, 2]"),
                                              (8, "[1, 8, 6, 1]")])
def test_changing_heads_splits_the_width_not_the_sentence(heads: int, split: str) -> None:
    at = page()
    at.radio("multi_head.heads").set_value(heads).run()
    assert_clean(at)
    assert shapes(at)[2:4] == [split, f"[1, {heads}, 6, 6]"]
    assert shapes(at)[5] == shapes(at)[6] == "[1, 6, 8]"
    weights, _, output = expected(0, heads)
    assert head_tables(at)[:heads] == [grid(w) for w in weights]
    assert table_with(at, [str(c) for c in range(8)]) == grid(output)
    assert at.query_params["multi_head.heads"] == str(heads)


@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_link_to_a_step_shows_the_steps_up_to_it(step: int) -> None:
    at = page(params={"multi_head.hand.step": str(step)})
    assert_clean(at)
    weights, q, output = expected(0, 2)
    gqa, _, _ = expected(0, 4, kv=2)
    assert table_with(at, Q_COLUMNS) == grid(q)  # step 1: the split
    assert head_tables(at) == [grid(w) for w in (*weights, *gqa)][(0 if step > 1 else 2):]
    width = [str(c) for c in range(8)]
    outputs = [f.values.tolist() for f in tables(at) if list(f.columns) == width]
    assert outputs == ([grid(output)] if step == 3 else [])
    assert len(shapes(at)) == 7  # the summary of shapes is not a step


def test_three_heads_is_one_clear_error_and_gqa_still_runs(lang: str) -> None:
    at = page(lang=lang, params={"multi_head.heads": "3"})
    assert_clean(at)
    message = catalogue(lang)["errors.width_not_divisible"].format(width=8, heads=3)
    assert [e.value for e in at.error] == [message]
    gqa, _, _ = expected(0, 4, kv=2)
    assert head_tables(at) == [grid(w) for w in gqa]  # only the GQA section's tables


@pytest.mark.parametrize("kv", [1, 2, 4])
def test_gqa_runs_and_shared_heads_keep_different_tables(kv: int) -> None:
    at = page()
    at.radio("multi_head.kv").set_value(kv).run()
    assert_clean(at)
    weights, _, _ = expected(0, 4, kv=kv)
    gqa = head_tables(at)[2:]
    assert gqa == [grid(w) for w in weights]
    group = 4 // kv
    for g in range(kv):
        members = gqa[g * group:(g + 1) * group]
        assert all(m != members[0] for m in members[1:])  # shared K/V, different tables
    text = page_text(at)
    if kv < 4:
        gap = max(float((weights[a] - weights[b]).abs().max())
                  for a in range(group) for b in range(group))
        names = ", ".join(f"Q{h}" for h in range(group))
        assert catalogue("en")["multi_head.group_shared"].format(
            heads=names, g=0, gap=num(gap)) in text
    shape = f"[8, {kv * 2}]"
    assert shape in text


def test_a_shared_link_reproduces_every_table() -> None:
    params = {"multi_head.seed": "7", "multi_head.causal": "false", "multi_head.heads": "4",
              "multi_head.kv": "1"}
    at = page(params=params)
    assert_clean(at)
    weights, _, output = expected(7, 4, causal=False)
    mqa, _, _ = expected(7, 4, kv=1, causal=False)
    assert head_tables(at) == [grid(w) for w in (*weights, *mqa)]
    assert table_with(at, [str(c) for c in range(8)]) == grid(output)


def test_bad_link_values_give_one_note_each_and_the_defaults() -> None:
    """The page's own inputs (the codecs themselves are tested in tests/app/test_kit.py)."""
    bad = {"multi_head.seed": "2.5", "multi_head.heads": "5", "multi_head.causal": "maybe",
           "multi_head.kv": "all"}
    at = page(params=bad)
    assert_clean(at)
    assert len(at.error) == len(bad)
    weights, _, _ = expected(0, 2)
    gqa, _, _ = expected(0, 4, kv=2)
    assert head_tables(at) == [grid(w) for w in (*weights, *gqa)]


def test_exercises_come_before_what_answers_them(lang: str) -> None:
    at = open_page(PAGE, lang)
    weights, _, _ = expected(0, 2)
    gqa, _, _ = expected(0, 4, kv=2)
    steps = catalogue(lang)["multi_head.ex2_steps"].format(g=4)
    closing = said(lang, "gqa_32", g=4, ratio="1/4", mqa="1/32")
    assert head_tables(at) == [grid(w) for w in weights]  # the split, for 2 heads only
    assert not [f for f in tables(at) if f.shape == (7, 4)]  # no symbolic shapes yet
    assert steps not in page_text(at) and closing not in page_text(at)
    assert [c.value for c in at.caption].count(catalogue(lang)["kit.after_answer"]) == 3
    right = catalogue(lang)["kit.right"]
    reveal(at, "multi_head.shapes", 0)
    assert len(shapes(at)) == 7 and head_tables(at) == [grid(w) for w in weights]
    reveal(at, "multi_head.shared", 1)
    assert head_tables(at) == [grid(w) for w in (*weights, *gqa)]
    answer(at, "multi_head.groups", 4)
    assert steps in explanations(at) and closing not in page_text(at)
    reveal(at, "multi_head.why", 0)
    assert closing in page_text(at)
    assert sum(s.value.startswith(right) for s in at.success) == 3  # each choice's verdict


def test_clicked_cells_explain_their_numbers() -> None:
    at = page(state=click(("multi_head.q", 2, 5), ("multi_head.head1", 3, 1),
                                     ("multi_head.out", 0, 0), ("multi_head.gqa1", 2, 0)))
    assert_clean(at)
    text = explanations(at)
    weights, q, output = expected(0, 2)
    gqa, _, _ = expected(0, 4, kv=2)
    # A head's Q column comes from all 8 numbers of the token: 8 products.
    q_cell = next(part for part in text.split("$$") if "q_{2,5}" in part)
    assert q_cell.count(r"\cdot") == 8 + 1  # x_2 · W_q[:, 5], then its 8 products
    assert q_cell.rstrip().endswith(f"&= {num(q[2, 5])}\\end{{aligned}}")
    assert "a_{3,1}" in text and f"= {num(weights[1, 3, 1])}" in text
    assert num(output[0, 0]) in text
    assert "K/V head 0" in text and num(gqa[1, 2, 0]) in text


def test_a_blocked_cell_explains_itself() -> None:
    at = page(params={"multi_head.head0": "0,3"})
    assert r"a_{0,3} = e^{-\infty}" in explanations(at)
