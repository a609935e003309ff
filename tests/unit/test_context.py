"""tinyformer.context: one word read in two sentences, checked against PyTorch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyformer.context import MAX_WIDTH, MAX_WORDS, compare_in_context
from tinyformer.errors import ParameterError
from tinyformer.projection import random_setup

# The running example's word tokens (ui.example.Q1_WORDS / Q2_WORDS; tinyformer must
# not import ui, so they are written out here).
Q1 = ("商品", "有", "质量", "问题", "，", "运费", "谁", "承担", "？")
Q2 = ("无理由", "退货", "，", "运费", "谁", "承担", "？")


@pytest.fixture(scope="module", params=[(4, 0), (1, 3), (8, 42)])
def setting(request) -> tuple[int, int]:
    return request.param  # (width, seed)


@pytest.fixture(scope="module")
def cmp(setting):
    return compare_in_context(Q1, Q2, "运费", *setting)


def test_the_table_and_weights_are_the_seeded_random_setup(setting, cmp) -> None:
    width, seed = setting
    setup = random_setup(11, width, width, torch.Generator().manual_seed(seed))
    assert cmp.vocab == tuple(dict.fromkeys(Q1 + Q2)) and len(cmp.vocab) == 11
    for mine, theirs in ((cmp.table, setup.x), (cmp.w_q, setup.w_q), (cmp.w_k, setup.w_k),
                         (cmp.w_v, setup.w_v)):
        assert torch.equal(mine, theirs)


def test_each_sentence_is_a_lookup_then_causal_attention_as_in_pytorch(cmp) -> None:
    for words, reading in ((Q1, cmp.a), (Q2, cmp.b)):
        x = cmp.table[[cmp.vocab.index(w) for w in words]]  # [N, d]
        assert torch.equal(reading.x, x)
        q, k, v = x @ cmp.w_q, x @ cmp.w_k, x @ cmp.w_v
        expected = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)[0]
        torch.testing.assert_close(reading.attention.output, expected)
        torch.testing.assert_close(reading.output, expected[reading.at])
        allowed = torch.arange(len(words)) <= reading.at
        ref_weights = torch.softmax((q[reading.at] @ k.T / x.shape[1] ** 0.5)
                                    .masked_fill(~allowed, float("-inf")), dim=-1)
        torch.testing.assert_close(reading.weights, ref_weights)
        assert torch.isinf(reading.scores[~allowed]).all()
        assert (reading.weights[~allowed] == 0).all()  # 谁 承担 ？: exactly 0
        assert reading.read == words[: words.index("运费") + 1]


def test_the_input_row_is_identical_and_the_output_rows_differ(cmp) -> None:
    assert torch.equal(cmp.a.x[cmp.a.at], cmp.b.x[cmp.b.at])
    assert cmp.inputs_differ == 0 and torch.equal(cmp.input_gap, torch.zeros_like(cmp.input_gap))
    assert cmp.difference.abs().max() > 1e-3  # different context, different output row
    torch.testing.assert_close(cmp.difference, cmp.a.output - cmp.b.output)


def test_contributions_are_weight_times_value_and_sum_to_the_output(cmp) -> None:
    for reading in (cmp.a, cmp.b):
        torch.testing.assert_close(reading.contributions,
                                   torch.einsum("j,jd->jd", reading.weights, reading.v))
        torch.testing.assert_close(reading.contributions.sum(0), reading.output)
        assert torch.equal(reading.contributions[reading.at + 1:],
                           torch.zeros_like(reading.contributions[reading.at + 1:]))


def test_shares_split_the_difference_by_word(cmp) -> None:
    assert cmp.share_words == ("商品", "有", "质量", "问题", "，", "运费", "无理由", "退货")
    torch.testing.assert_close(cmp.shares.sum(0), cmp.difference)
    for w, word in enumerate(cmp.share_words):
        in_a = cmp.a.weights[cmp.a.words.index(word)] if word in cmp.a.read else 0.0
        in_b = cmp.b.weights[cmp.b.words.index(word)] if word in cmp.b.read else 0.0
        torch.testing.assert_close(cmp.share_weights[w],
                                   torch.tensor([float(in_a), float(in_b)], dtype=torch.float64))
        row = cmp.table[cmp.vocab.index(word)] @ cmp.w_v  # the same v in both sentences
        torch.testing.assert_close(cmp.shares[w], (float(in_a) - float(in_b)) * row)


def test_shared_words_keep_their_exponential_only_the_sum_changes(cmp) -> None:
    """，and 运费 score the same in both sentences: their weights keep one ratio."""
    comma_a, comma_b = cmp.a.words.index("，"), cmp.b.words.index("，")
    torch.testing.assert_close(cmp.a.scores[comma_a], cmp.b.scores[comma_b])
    torch.testing.assert_close(cmp.a.scores[cmp.a.at], cmp.b.scores[cmp.b.at])
    ratio_a = cmp.a.weights[cmp.a.at] / cmp.a.weights[comma_a]
    ratio_b = cmp.b.weights[cmp.b.at] / cmp.b.weights[comma_b]
    torch.testing.assert_close(ratio_a, ratio_b)


def test_positions_and_a_two_decimal_input_row(cmp) -> None:
    """The page prints the input row with 2 decimals: the table is rounded to 2, so
    what it prints is the exact row."""
    assert (cmp.a.at, cmp.b.at) == (5, 3)
    row = cmp.a.x[cmp.a.at]
    torch.testing.assert_close(row, torch.round(row, decimals=2), rtol=0, atol=1e-12)
    for reading in (cmp.a, cmp.b):
        torch.testing.assert_close(reading.weights.sum(), torch.tensor(1.0, dtype=torch.float64))


def test_same_seed_same_numbers_other_seed_other_numbers() -> None:
    one, again = (compare_in_context(Q1, Q2, "运费", 4, 5) for _ in range(2))
    other = compare_in_context(Q1, Q2, "运费", 4, 6)
    assert torch.equal(one.difference, again.difference)
    assert not torch.equal(one.table, other.table)


def test_the_global_random_state_is_untouched() -> None:
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    compare_in_context(Q1, Q2, "运费", 4, 0)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"width": 0}, "context_width"),
    ({"width": MAX_WIDTH + 1}, "context_width"),
    ({"width": 2.5}, "context_width"),
    ({"width": True}, "context_width"),
    ({"seed": -1}, "context_seed"),
    ({"word": "商家"}, "context_word_missing"),
    ({"words_b": ()}, "context_length"),
    ({"words_a": ("运费",) * (MAX_WORDS + 1)}, "context_length"),
])
def test_bad_arguments_raise_a_keyed_error(kwargs, key) -> None:
    args = {"words_a": Q1, "words_b": Q2, "word": "运费", "width": 4, "seed": 0, **kwargs}
    with pytest.raises(ParameterError) as error:
        compare_in_context(**args)
    assert error.value.key == key
