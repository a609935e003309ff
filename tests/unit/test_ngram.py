"""n-gram counts, probabilities with their counts, chains, V^n and the corpus helpers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tinyformer.errors import ParameterError
from tinyformer.ngram import (
    MAX_TABLE_ORDER,
    MAX_TABLE_VOCAB,
    NGramModel,
    char_sequences,
    coverage,
    phrase_count,
    table_size,
    vocabulary,
)

CORPUS = ["看动漫"] * 4 + ["看动物"] * 2 + ["动漫"] * 2 + ["动物"] * 2
CLASSROOM = Path(__file__).resolve().parents[2] / "assets" / "corpus" / "classroom.txt"


@pytest.fixture(scope="module")
def sequences() -> list[str]:
    return char_sequences(CLASSROOM.read_text("utf-8"))


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
    assert model.window("xyz") == ((), ("x", "y", "z"))


def test_fit_replaces_earlier_counts() -> None:
    model = NGramModel(2).fit(["ab"]).fit(["ac"])
    assert model.counts("a") == {"c": 1}


@pytest.mark.parametrize(("n", "read", "ignored"),
                         [(2, ("动",), ("我", "看")), (3, ("看", "动"), ("我",)),
                          (4, ("我", "看", "动"), ()), (5, ("我", "看", "动"), ())])
def test_window_reads_the_last_n_minus_1_tokens(n: int, read: tuple, ignored: tuple) -> None:
    assert NGramModel(n).window("我看动") == (read, ignored)


def test_explain_gives_numerator_and_denominator() -> None:
    bigram, trigram = NGramModel(2).fit(CORPUS), NGramModel(3).fit(CORPUS)
    step = bigram.explain("看动", "漫")
    assert (step.context, step.ignored, step.count, step.total) == (("动",), ("看",), 6, 10)
    assert step.probability == pytest.approx(0.6) and step.seen
    assert bigram.explain("动", "物").probability == pytest.approx(0.4)
    step = trigram.explain("看动", "漫")
    assert (step.count, step.total) == (4, 6)
    assert round(step.probability, 3) == 0.667
    assert round(trigram.explain("看动", "物").probability, 3) == 0.333
    # the same numbers as next_token_probs, for every token it knows
    for token, p in trigram.next_token_probs("看动").items():
        assert trigram.explain("看动", token).probability == pytest.approx(p)


def test_explain_unseen_context_and_unseen_token() -> None:
    trigram = NGramModel(3).fit(CORPUS)
    unseen = trigram.explain("吃梨", "漫")
    assert (unseen.count, unseen.total, unseen.probability, unseen.seen) == (0, 0, 0.0, False)
    short = trigram.explain("动", "漫")  # too short: no window of 3 ends here
    assert short.total == 0 and short.context == ("动",)
    assert NGramModel(2).fit(CORPUS).explain("动", "梨")[3:] == (0, 10, 0.0)


def test_chain_multiplies_the_steps() -> None:
    model = NGramModel(2).fit(["吃苹果", "吃苹果", "苹果很甜"])
    chain = model.chain("吃苹果")
    assert [(s.context, s.token, s.count, s.total) for s in chain.steps] == [
        (("吃",), "苹", 2, 2), (("苹",), "果", 3, 3)]
    assert chain.probability == pytest.approx(1.0)
    assert model.chain("吃梨").probability == 0.0  # one unseen step makes it impossible
    expected = math.prod(model.next_token_probs(a).get(b, 0.0)
                         for a, b in zip("苹果很", "果很甜", strict=True))
    assert model.chain("苹果很甜").probability == pytest.approx(expected)


def test_table_size_is_exact_and_bounded() -> None:
    assert NGramModel.table_size(100_000, 5) == 10**25
    size = table_size(100_000, 5)
    assert (size.entries, size.exponent, size.mantissa, size.power_of_ten) == (10**25, 25, 1.0,
                                                                              True)
    size = table_size(3, 4)
    assert (size.entries, size.exponent, size.power_of_ten) == (81, 1, False)
    assert size.mantissa == pytest.approx(8.1)
    top = table_size(MAX_TABLE_VOCAB, MAX_TABLE_ORDER)
    assert top.entries == 10**60 and isinstance(top.entries, int)
    assert table_size(70, 3).entries == 343_000


@pytest.mark.parametrize(("v", "n"), [(0, 2), (MAX_TABLE_VOCAB + 1, 2), (10, 0),
                                      (10, MAX_TABLE_ORDER + 1), (10.5, 2), (True, 2)])
def test_table_size_rejects_out_of_range(v, n) -> None:
    with pytest.raises(ParameterError) as err:
        table_size(v, n)
    assert err.value.key == "ngram_table_size_invalid"


@pytest.mark.parametrize("n", [0, -2, 1.5, True])
def test_order_below_one_is_rejected(n) -> None:
    with pytest.raises(ParameterError) as err:
        NGramModel(n)
    assert err.value.key == "ngram_order_invalid"


# --- the classroom corpus ----------------------------------------------------------------
def test_char_sequences_drop_blank_lines_and_edges() -> None:
    assert char_sequences("  看动漫。 \n\n吃梨\n") == ["看动漫。", "吃梨"]


@pytest.mark.parametrize(
    ("phrase", "count"),
    [("动漫", 6), ("动物", 4), ("看动漫", 4), ("看动物", 2), ("吃苹果", 2), ("吃梨", 0), ("", 0)],
)
def test_corpus_holds_the_curriculum_counts(sequences: list[str], phrase: str, count: int) -> None:
    assert phrase_count(sequences, phrase) == count


def test_phrase_count_counts_overlaps_but_not_across_lines() -> None:
    assert phrase_count(["aaa"], "aa") == 2
    assert phrase_count(["ab", "cd"], "bc") == 0


def test_worked_numbers_on_the_classroom_corpus(sequences: list[str]) -> None:
    bigram, trigram = NGramModel(2).fit(sequences), NGramModel(3).fit(sequences)
    assert bigram.counts("动") == {"漫": 6, "物": 4}
    assert bigram.next_token_probs("动") == pytest.approx({"漫": 0.6, "物": 0.4})
    assert trigram.next_token_probs("看动") == pytest.approx({"漫": 4 / 6, "物": 2 / 6})
    assert bigram.explain("吃", "梨")[3:] == (0, 2, 0.0)  # sparsity: 吃梨 never counted
    assert bigram.chain("吃苹果").probability == pytest.approx(1.0)


def test_coverage_matches_brute_force(sequences: list[str]) -> None:
    assert vocabulary(sequences) == sorted(set("".join(sequences)))
    v = len(vocabulary(sequences))
    for n in (1, 2, 3, 4):
        brute = {tuple(s[i : i + n]) for s in sequences for i in range(len(s) - n + 1)}
        result = coverage(sequences, n)
        assert (result.vocab_size, result.possible, result.seen) == (v, v**n, len(brute))
        assert result.share == pytest.approx(len(brute) / v**n)
    assert coverage(sequences, 1).seen == v
    for bad in (0, MAX_TABLE_ORDER + 1):
        with pytest.raises(ParameterError) as info:
            coverage(sequences, bad)
        assert info.value.key == "ngram_window_invalid"
