"""Where the shipped model's rule stops: the cases stage 13.2 shows, and the facts its
texts state about the corpus, checked here."""

from __future__ import annotations

import pytest

from tinyformer.errors import ParameterError
from tinyformer.lessons.checkpoint import TrainedModel, load_model
from tinyformer.lessons.corpus import all_examples, vocabulary
from tinyformer.lessons.interventions import word_probs
from tinyformer.lessons.rule_limits import (
    LONGER,
    NEGATED,
    REORDERED,
    UNKNOWN,
    cases,
    free_answer,
    heldout_misses,
    longest_question,
)


@pytest.fixture(scope="module")
def trained() -> TrainedModel:
    return load_model()


def test_the_held_out_misses_are_the_configs_three(trained) -> None:
    misses = heldout_misses(trained)
    assert len(misses) == trained.config["heldout"]["n"] - trained.config["heldout"]["correct"]
    assert len(misses) == 3
    for miss in misses:
        assert miss.answer[:2] != miss.expected[:2]  # it named the other payer
        assert (miss.probs.merchant > miss.probs.buyer) == (miss.answer[:2] == "商家")


def test_the_cases_are_outside_the_corpus_as_the_page_says(trained) -> None:
    texts = [ex.question for ex in all_examples()]
    assert longest_question() == 19 and len(LONGER) == 22 > longest_question()
    for question in (LONGER, REORDERED, NEGATED, UNKNOWN):
        assert question not in texts
    assert sorted(REORDERED[2:7]) == sorted("有质量问题")
    for char in "有质量":  # only in reasons the merchant pays for
        assert {ex.payer for ex in all_examples() if char in ex.question} == {"merchant"}
    # 无 appears in the corpus only inside 无理由退货 (a buyer's reason)
    assert all(t.count("无") == t.count("无理由退货") for t in texts)
    assert any("无" in t for t in texts)
    assert "脑" not in vocabulary().tokens and free_answer(trained, UNKNOWN).unknown == ("脑",)


def test_what_the_shipped_model_answers(trained) -> None:
    found = dict(cases(trained))
    assert found["longer"].answer[:2] != "商家"  # it breaks down past the longest question
    assert found["reordered"].answer == "商家承担。"
    assert found["negated"].answer == "商家承担。"  # 无 does not negate 质量问题 for it
    assert found["unknown"].answer == "商家承担。"
    for answer in found.values():
        assert answer.probs == word_probs(trained, answer.question)


@pytest.mark.parametrize(("typed", "key"), [("", "trained_question_empty"),
                                            ("  ", "trained_question_empty"),
                                            ("问" * 29, "trained_question_too_long"),
                                            (7, "trained_question_type")])
def test_what_it_cannot_read(trained, typed, key) -> None:
    with pytest.raises(ParameterError) as error:
        free_answer(trained, typed)
    assert error.value.key == key
    assert free_answer(trained, "问" * 28).answer  # the longest it can still answer
