"""tinyformer.lessons.context: one word read in two sentences, checked against PyTorch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError
from tinyformer.lessons.context import MAX_WIDTH, MAX_WORDS, compare_in_context, compare_trained
from tinyformer.lessons.corpus import find_question
from tinyformer.lessons.example import RUNNING_EXAMPLE, RUNNING_WORDS, TWIN_SAME_PLACE, TWIN_WORDS
from tinyformer.lessons.example import TWIN as TWIN_QUESTION
from tinyformer.lessons.probe import probe
from tinyformer.lessons.projection import random_setup
from tinyformer.lessons.train import load_model

Q1, Q2 = RUNNING_WORDS, TWIN_WORDS  # the running example's word tokens


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
        torch.testing.assert_close(cmp.share_values[w], row)


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


# --- The trained model: 费 followed through the shipped model -------------------------

RUNNING, TWIN, SAME_PLACE = RUNNING_EXAMPLE, TWIN_QUESTION, TWIN_SAME_PLACE


@pytest.fixture(scope="module")
def trained():
    return load_model()


@pytest.fixture(scope="module", params=[TWIN, SAME_PLACE])
def tcmp(request, trained):
    return compare_trained(trained, RUNNING, request.param, "费")


def _block0_attention(trained, question: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Independent of the model's trace: x0, block 1's attention weights [H, N, N] and
    output [N, w], from the weights with PyTorch's own functions."""
    model = trained.model
    ids = torch.tensor(trained.vocab.encode(question).ids)
    n, w, h = len(ids), model.config.width, model.config.heads
    x0 = model.token.weight[ids] + model.position.weight[:n]  # [N, w]
    block = model.blocks[0]
    normed = F.layer_norm(x0, (w,), block.norm1.weight, block.norm1.bias, eps=block.norm1.eps)
    q, k, v = F.linear(normed, block.qkv.weight, block.qkv.bias).split(w, dim=-1)  # [N, w] each
    q, k, v = (t.view(n, h, w // h).transpose(0, 1) for t in (q, k, v))  # [H, N, hd]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    weights = torch.softmax((q @ k.transpose(-1, -2) / (w // h) ** 0.5)
                            .masked_fill(~causal, float("-inf")), dim=-1)  # [H, N, N]
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [H, N, hd]
    output = F.linear(heads.transpose(0, 1).reshape(n, w), block.proj.weight, block.proj.bias)
    return x0.detach(), weights.detach(), output.detach()


def test_the_trained_rows_are_the_models_own_numbers(trained, tcmp) -> None:
    model = trained.model
    for reading in (tcmp.a, tcmp.b):
        at, fei = reading.at, trained.vocab.id_of("费")
        assert reading.question[at] == "费" and reading.tokens == tuple(reading.question)
        x0, weights, output = _block0_attention(trained, reading.question)
        torch.testing.assert_close(reading.rows[0], model.token.weight[fei].detach())
        torch.testing.assert_close(reading.rows[1], model.position.weight[at].detach())
        torch.testing.assert_close(reading.rows[2], x0[at])
        torch.testing.assert_close(reading.rows[3], output[at], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(reading.weights[:2], weights[:, at], atol=1e-6, rtol=1e-5)
        trace = model.trace(torch.tensor(trained.vocab.encode(reading.question).ids))
        torch.testing.assert_close(reading.rows[-1], trace.blocks[-1].resid2[0, at])
        allowed = torch.arange(len(reading.tokens)) <= at
        assert (reading.weights[:, ~allowed] == 0).all() and torch.isinf(
            reading.scores[:, ~allowed]).all()
        torch.testing.assert_close(reading.weights, torch.softmax(reading.scores, -1))


def test_the_differences_are_counted_per_stage(tcmp) -> None:
    gaps = (tcmp.a.rows - tcmp.b.rows).abs()
    assert tcmp.stages == (("token", None), ("position", None), ("input", None),
                           ("attention", 0), ("block", 0), ("attention", 1), ("block", 1))
    assert tcmp.differ == tuple(int((g != 0).sum()) for g in gaps)
    assert tcmp.largest == tuple(float(g.max()) for g in gaps)
    assert tcmp.differ[0] == 0  # one lookup, the same row
    if tcmp.same_position:  # 费 at position 9 in both: the block input is identical too
        assert tcmp.differ[:3] == (0, 0, 0)
    else:
        assert (tcmp.a.at, tcmp.b.at) == (9, 7) and tcmp.differ[1] == 32
        assert tcmp.largest[2] == tcmp.largest[1]  # the input differs by the position row only
    assert all(n == 32 for n in tcmp.differ[3:])  # after attention every number differs


def test_shares_use_the_corpus_spans(trained, tcmp) -> None:
    for reading in (tcmp.a, tcmp.b):
        example = find_question(reading.question)
        assert reading.reason == tuple(range(*example.reason_span))
        assert reading.reason_text == example.reason
        item = tuple(range(*example.item_span)) if example.item_span else ()
        assert reading.item == item
        for row, shares in zip(reading.weights, reading.shares, strict=True):
            assert shares.reason == pytest.approx(float(row[list(reading.reason)].sum()))
            assert shares.item == pytest.approx(float(row[list(item)].sum()))
            assert sum(shares) == pytest.approx(1.0, abs=1e-5)
        assert reading.even.reason == pytest.approx(len(reading.reason) / (reading.at + 1))
        assert reading.answer_probs == probe(trained, reading.question).first_token
    assert tcmp.block_heads == ((0, 0), (0, 1), (1, 0), (1, 1))


def test_the_trained_model_answers_the_running_example_and_the_twin(tcmp) -> None:
    """商 (商家) for the running example, 买 (买家) for the buyer's reason."""
    assert tcmp.a.answer_probs.merchant > 0.5 > tcmp.a.answer_probs.buyer
    assert tcmp.b.answer_probs.buyer > 0.5 > tcmp.b.answer_probs.merchant


@pytest.mark.parametrize(("args", "key"), [
    ((RUNNING, TWIN, "商家"), "context_word_missing"),
    ((RUNNING, "谁承担？", "费"), "context_word_missing"),
    ((RUNNING, "商品有质量问题，运费谁付？", "费"), "trained_question_pattern"),
    ((RUNNING, "猫有质量问题，运费谁承担？", "费"), "trained_question_unknown"),
])
def test_the_trained_comparison_refuses_what_it_cannot_follow(trained, args, key) -> None:
    with pytest.raises(ParameterError) as error:
        compare_trained(trained, *args)
    assert error.value.key == key
