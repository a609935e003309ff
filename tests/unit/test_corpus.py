"""The customer-service corpus: every combination once, a seeded split, exact spans."""

from __future__ import annotations

import random

import pytest

from tinyformer.errors import ParameterError
from tinyformer.lessons import corpus
from tinyformer.lessons.corpus import (
    ALWAYS_HELD_OUT,
    BUYER_REASONS,
    ITEMS,
    MERCHANT_REASONS,
    PHRASINGS,
    RUNNING_EXAMPLE,
    TWIN,
    all_examples,
    find_question,
    make_example,
    payer_of,
    split_corpus,
    vocabulary,
)


def fresh(seed: int = 0, fraction: float = 0.2) -> corpus.Corpus:
    """Bypass the cache: build the split again from scratch."""
    return split_corpus.__wrapped__(seed, fraction)


def test_same_seed_same_split_and_other_seed_another() -> None:
    a, b = fresh(3), fresh(3)
    assert a == b
    assert [ex.question for ex in a.heldout] == [ex.question for ex in b.heldout]
    assert {ex.question for ex in fresh(4).heldout} != {ex.question for ex in a.heldout}


def test_split_corpus_leaves_the_global_random_state_alone() -> None:
    state = random.getstate()
    fresh(11)
    assert random.getstate() == state


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_heldout_combinations_never_appear_in_training(seed: int) -> None:
    split = fresh(seed)
    train = {ex.combination for ex in split.train}
    heldout = {ex.combination for ex in split.heldout}
    assert train.isdisjoint(heldout)
    assert {ex.question for ex in split.train}.isdisjoint(ex.question for ex in split.heldout)
    assert len(train) + len(heldout) == len(all_examples())
    assert len(heldout) == round(0.2 * len(all_examples()))


def test_training_still_sees_every_word_and_phrasing() -> None:
    """Held-out questions recombine known words: they test the rule, not new vocabulary."""
    train = split_corpus().train
    assert {ex.item for ex in train} == {*ITEMS, None}
    assert {ex.reason for ex in train} == {*MERCHANT_REASONS, *BUYER_REASONS}
    assert {ex.phrasing for ex in train} == set(range(len(PHRASINGS)))


def test_running_example_and_twin_are_generated_and_held_out() -> None:
    split = split_corpus()
    heldout = {ex.question for ex in split.heldout}
    assert set(ALWAYS_HELD_OUT) == {RUNNING_EXAMPLE, TWIN} <= heldout
    example, twin = find_question(RUNNING_EXAMPLE), find_question(TWIN)
    assert (example.item, example.reason, example.payer) == ("商品", "有质量问题", "merchant")
    assert (twin.item, twin.reason, twin.payer) == (None, "无理由退货", "buyer")
    assert example.answer == "商家承担。" and twin.answer == "买家承担。"


def test_spans_point_at_the_reason_and_the_item() -> None:
    for ex in all_examples():
        assert ex.question[slice(*ex.reason_span)] == ex.reason
        if ex.item is None:
            assert ex.item_span is None
        else:
            assert ex.question[slice(*ex.item_span)] == ex.item
    example = find_question(RUNNING_EXAMPLE)
    assert example.item_span == (0, 2) and example.reason_span == (2, 7)


def test_every_question_is_unique_and_the_answer_follows_the_reason() -> None:
    examples = all_examples()
    assert len({ex.question for ex in examples}) == len(examples)
    n_with_item = sum("{item}" in p for p in PHRASINGS)
    n_reasons = len(MERCHANT_REASONS) + len(BUYER_REASONS)
    assert len(examples) == n_reasons * (n_with_item * len(ITEMS) + len(PHRASINGS) - n_with_item)
    for ex in examples:
        word = "商家" if ex.reason in MERCHANT_REASONS else "买家"
        assert ex.answer.startswith(word) and ex.text == ex.question + ex.answer
    assert set(MERCHANT_REASONS).isdisjoint(BUYER_REASONS)


def test_find_question_knows_only_the_corpus() -> None:
    assert find_question(RUNNING_EXAMPLE) == make_example("商品", "有质量问题", 0)
    assert find_question("商品有质量问题") is None
    assert find_question("") is None


def test_vocabulary_covers_every_character_in_a_fixed_order() -> None:
    vocab = vocabulary()
    assert all(not vocab.encode(ex.text).unknown for ex in all_examples())
    assert vocab.tokens[2:6] == ("商", "品", "有", "质")  # order of first appearance


@pytest.mark.parametrize(
    ("seed", "fraction", "name"),
    [(-1, 0.2, "seed"), (1.5, 0.2, "seed"), (True, 0.2, "seed"), (0, 0.9, "heldout_fraction"),
     (0, 0.0, "heldout_fraction"), (0, "0.2", "heldout_fraction")],
)  # fmt: skip
def test_bad_split_settings_raise_keyed_errors(seed: object, fraction: object, name: str) -> None:
    with pytest.raises(ParameterError) as err:
        split_corpus(seed, fraction)
    assert err.value.key == "corpus_setting_range" and err.value.values["name"] == name


def test_bad_combinations_raise_keyed_errors() -> None:
    with pytest.raises(ParameterError) as err:
        payer_of("太贵了")
    assert err.value.key == "corpus_unknown_reason"
    with pytest.raises(ParameterError) as err:
        make_example(None, "破损", 0)  # phrasing 0 has an item slot
    assert err.value.key == "corpus_item_slot"
    with pytest.raises(ParameterError):
        make_example("手机", "破损", 1)  # phrasing 1 has none
