"""tinyformer.lessons.cache_work: token-by-token generation with and without the K/V cache.

References: a plain full forward pass (model(ids)) over the prompt and the tokens
chosen so far, train.greedy_answers (its own loop) for the text, and the multiply-adds
of every matrix product written out from the model's sizes for the measured work."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.errors import ParameterError
from tinyformer.lessons.cache_work import (
    MAX_GREEDY_TOKENS,
    Work,
    compare_cache,
    greedy_run,
    question_prompt,
)
from tinyformer.lessons.corpus import RUNNING_EXAMPLE, TWIN
from tinyformer.lessons.train import greedy_answers, load_model
from tinyformer.model import TinyDecoder


@pytest.fixture(scope="module")
def trained():
    return load_model()


def multiply_adds(model: TinyDecoder, n: int, past: int) -> int:
    """Matrix products of one call on n new positions after `past` cached ones:
    per block Q, K, V and the output projection (4 n w^2), the FFN (8 n w^2), scores
    and the weighted sum (2 n (past + n) w over all heads); then the LM head (n w V)."""
    w = model.width
    block = 12 * n * w * w + 2 * n * (past + n) * w
    return model.layers * block + n * w * model.vocab


@pytest.mark.parametrize("question", [RUNNING_EXAMPLE, TWIN])
def test_cached_and_recomputed_give_the_same_logits_and_answer(trained, question):
    prompt = question_prompt(trained, question)
    cmp = compare_cache(trained.model, prompt, 8)
    assert cmp.same_tokens
    for a, b in zip(cmp.cached.steps, cmp.recomputed.steps, strict=True):
        torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
    assert max(cmp.logit_gaps) < 1e-4 and max(cmp.kv_gaps) < 1e-5
    assert cmp.logit_gaps[0] == 0.0  # step 1 is the same full pass both ways
    text = trained.vocab.decode(list(cmp.cached.new_ids))
    assert text == greedy_answers(trained.model, trained.vocab, [question], 8)[0]
    assert text.startswith("商家承担。" if question == RUNNING_EXAMPLE else "买家承担。")


def test_every_step_matches_a_plain_forward_pass(trained):
    prompt = question_prompt(trained, RUNNING_EXAMPLE)
    gen = greedy_run(trained.model, prompt, 5)
    sequence = list(prompt)
    for step in gen.steps:
        with torch.no_grad():
            logits, _ = trained.model(torch.tensor([sequence]))  # [1, N, V]
        torch.testing.assert_close(step.logits, logits[0, -1], atol=1e-5, rtol=1e-5)
        probs = torch.softmax(logits[0, -1], dim=-1)
        assert step.chosen == int(probs.argmax())
        assert step.probability == pytest.approx(float(probs.max()), abs=1e-6)
        sequence.append(step.chosen)


def test_the_cache_grows_by_one_row_a_step(trained):
    prompt = question_prompt(trained, TWIN)
    n = len(prompt)
    cached = greedy_run(trained.model, prompt, 4, use_cache=True)
    recomputed = greedy_run(trained.model, prompt, 4, use_cache=False)
    for k, (a, b) in enumerate(zip(cached.steps, recomputed.steps, strict=True)):
        length = n + k  # positions read at step k + 1
        for block in a.trace.blocks:
            att = block.attention
            assert att.q.shape[-2] == (n if k == 0 else 1)  # only the new token's query
            assert att.k.shape[-2] == att.v.shape[-2] == length
            assert att.past_length == a.past == (0 if k == 0 else length - 1)
        for block in b.trace.blocks:  # without the cache: every row again
            assert block.attention.q.shape[-2] == block.attention.k.shape[-2] == length
            assert block.attention.past_length == b.past == 0


def test_work_is_measured_from_the_matrix_products(trained):
    model = trained.model
    prompt = question_prompt(trained, RUNNING_EXAMPLE)
    n, steps = len(prompt), 6
    cmp = compare_cache(model, prompt, steps)
    for k, (a, b) in enumerate(zip(cmp.cached.steps, cmp.recomputed.steps, strict=True)):
        length = n + k
        fed = n if k == 0 else 1
        assert a.work == Work(fed, model.layers * fed, multiply_adds(model, fed, length - fed))
        assert b.work == Work(length, model.layers * length, multiply_adds(model, length, 0))
    with_cache, without = cmp.cached.cumulative[-1], cmp.recomputed.cumulative[-1]
    assert with_cache.positions == n + steps - 1  # 14 + 5 = 19
    assert without.positions == sum(range(n, n + steps))  # 14 + 15 + ... + 19 = 99
    assert with_cache.multiply_adds < without.multiply_adds


def test_cumulative_work_adds_up_step_by_step(trained):
    gen = greedy_run(trained.model, question_prompt(trained, TWIN), 3, use_cache=False)
    totals = gen.cumulative
    for field in range(3):
        running = 0
        for step, total in zip(gen.steps, totals, strict=True):
            running += step.work[field]
            assert total[field] == running


@settings(max_examples=15, deadline=None)
@given(ids=st.lists(st.integers(0, 19), min_size=1, max_size=6), n_new=st.integers(1, 5),
       layers=st.integers(1, 3), heads=st.sampled_from([1, 2, 4]), bias=st.booleans())
def test_any_causal_model_gives_the_same_logits_either_way(ids, n_new, layers, heads, bias):
    model = TinyDecoder.seeded(3, vocab=20, width=8, heads=heads, layers=layers,
                               max_length=12, attn_bias=bias)
    cmp = compare_cache(model, ids, n_new)
    for a, b in zip(cmp.cached.steps, cmp.recomputed.steps, strict=True):
        torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
    assert cmp.same_tokens


@pytest.mark.parametrize("n_new", [0, MAX_GREEDY_TOKENS + 1, True, 2.5, "3"])
def test_bad_numbers_of_new_tokens(n_new):
    with pytest.raises(ParameterError) as err:
        greedy_run(TinyDecoder.seeded(7), [1, 2], n_new)
    assert err.value.key == "generate_new_tokens"


def test_an_empty_prompt_and_one_too_long_are_refused():
    model = TinyDecoder.seeded(7)  # 16 positions
    with pytest.raises(ParameterError) as err:
        greedy_run(model, [], 3)
    assert err.value.key == "generate_prompt_empty"
    greedy_run(model, list(range(12)), 5)  # 12 + 5 - 1 = 16 positions: fits exactly
    with pytest.raises(ParameterError) as err:
        greedy_run(model, list(range(12)), 6)
    assert err.value.key == "generate_too_long" and err.value.values["most"] == 5


def test_a_model_without_the_causal_mask_cannot_cache():
    with pytest.raises(ParameterError) as err:
        greedy_run(TinyDecoder.seeded(7, causal=False), [1, 2], 2)
    assert err.value.key == "cache_needs_causal"


@pytest.mark.parametrize(("question", "key"), [
    ("", "trained_question_empty"),
    ("   ", "trained_question_empty"),
    ("商品有质量问题，运费谁承担？" * 3, "trained_question_too_long"),
    ("商品有质量问题，运费谁负责？", "trained_question_unknown"),
    ("运费谁承担？", "trained_question_pattern"),
    (None, "trained_question_type"),
])
def test_questions_outside_the_pattern_get_a_keyed_error(trained, question, key):
    with pytest.raises(ParameterError) as err:
        question_prompt(trained, question)
    assert err.value.key == key


def test_surrounding_spaces_are_ignored(trained):
    assert question_prompt(trained, f"  {TWIN} ") == question_prompt(trained, TWIN)
