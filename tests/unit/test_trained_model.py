"""The shipped model (package data: tinyformer/lessons/data/model/): its held-out accuracy,
and the inspection probe."""

from __future__ import annotations

import pytest
import torch

from tinyformer.errors import ParameterError
from tinyformer.lessons.corpus import RUNNING_EXAMPLE, TWIN, find_question, split_corpus, vocabulary
from tinyformer.lessons.probe import Shares, max_question_length, probe
from tinyformer.lessons.train import (
    CONFIG_FILE,
    DEFAULT_SETTINGS,
    MODEL_DIR,
    WEIGHTS_FILE,
    evaluate,
    load_model,
)


@pytest.fixture(scope="module")
def shipped():
    return load_model()


@pytest.fixture(scope="module")
def running(shipped):
    return probe(shipped, RUNNING_EXAMPLE)


@pytest.fixture(scope="module")
def twin(shipped):
    return probe(shipped, TWIN)


def test_shipped_files_are_small_and_safetensors() -> None:
    weights = MODEL_DIR / WEIGHTS_FILE
    assert weights.stat().st_size + (MODEL_DIR / CONFIG_FILE).stat().st_size < 2 * 1024**2
    header_length = int.from_bytes(weights.read_bytes()[:8], "little")
    assert weights.read_bytes()[8 : 8 + header_length].startswith(b"{")  # JSON, not a pickle


def test_shipped_model_is_the_default_training(shipped) -> None:
    """So that `python -m tinyformer.lessons.train` (the defaults) reproduces it."""
    assert shipped.settings == DEFAULT_SETTINGS
    assert shipped.vocab == vocabulary()
    assert shipped.model.layers >= 2  # several blocks


def test_shipped_model_answers_heldout_questions(shipped) -> None:
    """Right = the greedy continuation after the question starts with the right payer."""
    heldout = split_corpus().heldout
    ev = evaluate(shipped.model, shipped.vocab, heldout)
    assert ev.n == len(heldout) > 400
    assert ev.accuracy >= 0.95, ev.wrong[:10]
    # The config tells the truth (within 1 %: another CPU's float rounding may flip a
    # borderline argmax).
    assert abs(ev.correct - shipped.config["heldout"]["correct"]) <= 0.01 * ev.n


def test_running_example_and_twin_get_different_payers(running, twin) -> None:
    assert (running.expected, running.predicted) == ("merchant", "merchant")
    assert (twin.expected, twin.predicted) == ("buyer", "buyer")
    assert running.greedy_answer == "商家承担。" and twin.greedy_answer == "买家承担。"
    assert running.word.merchant > running.word.buyer
    assert twin.word.buyer > twin.word.merchant


def test_payer_probabilities_come_from_the_models_logits(shipped, running) -> None:
    vocab, model = shipped.vocab, shipped.model
    ids = list(running.ids)
    logits, _ = model(torch.tensor(ids))
    probs = torch.softmax(logits[0, -1], -1)
    shang, mai, jia = (vocab.id_of(c) for c in "商买家")
    assert running.first_token.merchant == pytest.approx(float(probs[shang]), abs=1e-6)
    assert running.first_token.buyer == pytest.approx(float(probs[mai]), abs=1e-6)
    after_shang = torch.softmax(model(torch.tensor([*ids, shang]))[0][0, -1], -1)
    expected = float(probs[shang] * after_shang[jia])
    assert running.word.merchant == pytest.approx(expected, abs=1e-6)
    assert running.word.merchant <= running.first_token.merchant


def test_attention_covers_every_block_and_head(shipped, running) -> None:
    n = len(RUNNING_EXAMPLE)
    layers, heads = shipped.model.layers, shipped.model.heads
    assert running.attention.shape == (layers, heads, n, n)
    assert torch.allclose(running.attention.sum(-1), torch.ones(layers, heads, n), atol=1e-5)
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    assert (running.attention[..., future] == 0).all()  # causal: nothing read ahead
    _, last_block = shipped.model(torch.tensor(running.ids))  # forward's own attention
    assert torch.allclose(running.attention[-1], last_block[0], atol=1e-6)


def test_shares_are_sums_of_the_answering_row(running, twin) -> None:
    example = find_question(RUNNING_EXAMPLE)
    assert running.reason_positions == (2, 3, 4, 5, 6) and running.item_positions == (0, 1)
    assert "".join(running.tokens[i] for i in running.reason_positions) == example.reason
    assert running.answer_position == len(RUNNING_EXAMPLE) - 1
    layers, heads = running.attention.shape[:2]
    assert [(h.block, h.head) for h in running.heads] == [
        (b, h) for b in range(layers) for h in range(heads)
    ]
    for head in running.heads:
        row = running.attention[head.block, head.head, -1]
        assert head.shares.reason == pytest.approx(float(row[2:7].sum()), abs=1e-6)
        assert head.shares.item == pytest.approx(float(row[:2].sum()), abs=1e-6)
        assert sum(head.shares) == pytest.approx(1.0, abs=1e-5)
    assert twin.item_positions == () and all(h.shares.item == 0 for h in twin.heads)
    n = len(RUNNING_EXAMPLE)
    assert running.uniform == pytest.approx(Shares(5 / n, 2 / n, (n - 7) / n))


@pytest.mark.parametrize(
    ("question", "key"),
    [
        ("", "trained_question_empty"),
        ("   ", "trained_question_empty"),
        ("商品有质量问题，运费谁承担？" * 3, "trained_question_too_long"),
        ("商品有质量问题，邮费谁承担？", "trained_question_unknown"),
        ("商品有质量问题?", "trained_question_unknown"),
        ("商品质量问题，运费谁承担？", "trained_question_pattern"),
        ("运费谁承担？", "trained_question_pattern"),
        (None, "trained_question_type"),
    ],
)
def test_questions_outside_the_pattern_are_refused(shipped, question, key) -> None:
    with pytest.raises(ParameterError) as err:
        probe(shipped, question)
    assert err.value.key == key


def test_unknown_characters_and_limits_are_named(shipped) -> None:
    with pytest.raises(ParameterError) as err:
        probe(shipped, "商品有质量问题，邮费谁承担？")
    assert err.value.values == {"chars": "邮"}
    limit = max_question_length(shipped)
    with pytest.raises(ParameterError) as err:
        probe(shipped, "商" * (limit + 1))
    assert err.value.values == {"length": limit + 1, "limit": limit}


def test_surrounding_spaces_are_ignored(shipped, running) -> None:
    again = probe(shipped, f"  {RUNNING_EXAMPLE}\n")
    assert again.question == RUNNING_EXAMPLE and again.word == running.word
