"""n-gram counts and probabilities."""

from __future__ import annotations

import pytest

from tinyformer.errors import ParameterError
from tinyformer.ngram import NGramModel

CORPUS = ["看动漫"] * 4 + ["看动物"] * 2 + ["动漫"] * 2 + ["动物"] * 2


def test_bigram_counts_one_token_of_context() -> None:
    model = NGramModel(2).fit(CORPUS)
    assert model.counts("动") == {"漫": 6, "物": 4}
    assert model.next_token_probs("看动") == pytest.approx({"漫": 0.6, "物": 0.4})


def test_trigram_counts_two_tokens_of_context() -> None:
    model = NGramModel(3).fit(CORPUS)
    assert model.counts("看动") == {"漫": 4, "物": 2}
    assert model.next_token_probs("我想看动") == pytest.approx({"漫": 2 / 3, "物": 1 / 3})


def test_unseen_or_too_short_context_has_no_prediction() -> None:
    model = NGramModel(3).fit(CORPUS)
    assert model.next_token_probs("吃梨") == {}
    assert model.next_token_probs("动") == {}  # a trigram needs two tokens of context
    assert model.counts("梨") == {}


def test_word_tokens_and_most_frequent_first() -> None:
    model = NGramModel(2).fit([["我", "吃", "苹果"], ["我", "吃", "梨"], ["他", "吃", "梨"]])
    assert list(model.counts(["吃"])) == ["梨", "苹果"]
    assert model.next_token_probs(["吃"]) == pytest.approx({"梨": 2 / 3, "苹果": 1 / 3})


def test_unigram_ignores_the_context() -> None:
    model = NGramModel(1).fit(["aab"])
    assert model.next_token_probs("anything") == pytest.approx({"a": 2 / 3, "b": 1 / 3})


def test_fit_replaces_earlier_counts() -> None:
    model = NGramModel(2).fit(["ab"]).fit(["ac"])
    assert model.counts("a") == {"c": 1}


def test_table_size_is_exact() -> None:
    assert NGramModel.table_size(100_000, 5) == 10**25
    assert isinstance(NGramModel.table_size(100_000, 5), int)


@pytest.mark.parametrize("n", [0, -2])
def test_order_below_one_is_rejected(n: int) -> None:
    with pytest.raises(ParameterError) as err:
        NGramModel(n)
    assert err.value.key == "ngram_order_invalid"
