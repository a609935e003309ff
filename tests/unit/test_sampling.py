"""Temperature, top-k, top-p and sampling."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tinyformer.errors import ParameterError
from tinyformer.sampling import next_token_probs, sample

PROPERTY = settings(max_examples=50, deadline=None)


def test_temperature_one_is_softmax(gen: torch.Generator) -> None:
    logits = torch.randn(3, 10, generator=gen)
    trace = next_token_probs(logits)
    torch.testing.assert_close(trace.probs, F.softmax(logits, dim=-1))
    assert trace.kept.all()


@pytest.mark.parametrize("t", [0.25, 0.7, 2.0, 10.0])
def test_temperature_divides_the_logits(gen: torch.Generator, t: float) -> None:
    logits = torch.randn(10, generator=gen)
    trace = next_token_probs(logits, temperature=t)
    torch.testing.assert_close(trace.scaled_logits, logits / t)
    torch.testing.assert_close(trace.probs, F.softmax(logits / t, dim=-1))


def test_temperature_zero_is_greedy_with_ties_to_the_lowest_index() -> None:
    trace = next_token_probs(torch.tensor([0.5, 2.0, -1.0, 2.0]), temperature=0)
    assert trace.probs.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert trace.kept.tolist() == [False, True, False, False]
    assert torch.equal(trace.scaled_logits, torch.tensor([0.5, 2.0, -1.0, 2.0]))


def test_tiny_temperature_does_not_overflow() -> None:
    trace = next_token_probs(torch.tensor([1000.0, 999.0, -1000.0]), temperature=1e-30)
    assert not torch.isnan(trace.probs).any()
    assert trace.probs.tolist() == [1.0, 0.0, 0.0]


def test_top_k_keeps_the_k_most_probable() -> None:
    logits = torch.tensor([1.0, 3.0, 2.0, 0.0, 2.5])
    trace = next_token_probs(logits, top_k=2)
    assert trace.kept.tolist() == [False, True, False, False, True]
    expected = torch.softmax(torch.tensor([3.0, 2.5]), dim=-1)
    torch.testing.assert_close(trace.probs[[1, 4]], expected)
    assert trace.probs[[0, 2, 3]].eq(0).all()
    torch.testing.assert_close(trace.probs_before_filter, torch.softmax(logits, dim=-1))


def test_top_k_larger_than_vocabulary_keeps_everything() -> None:
    assert next_token_probs(torch.tensor([1.0, 2.0]), top_k=10).kept.all()


def test_top_p_keeps_the_smallest_set_reaching_p() -> None:
    logits = torch.tensor([0.5, 0.3, 0.2]).log()
    # 0.5 alone does not reach 0.6; 0.5 + 0.3 does.
    assert next_token_probs(logits, top_p=0.6).kept.tolist() == [True, True, False]
    # Reaching p exactly counts: 0.5 + 0.3 = 0.8, the 0.2 token is not needed.
    assert next_token_probs(logits, top_p=0.8).kept.tolist() == [True, True, False]
    assert next_token_probs(logits, top_p=0.5).kept.tolist() == [True, False, False]
    assert next_token_probs(logits, top_p=0.1).kept.tolist() == [True, False, False]
    assert next_token_probs(logits, top_p=1.0).kept.tolist() == [True, True, True]


def test_top_k_then_top_p_on_the_renormalised_rest() -> None:
    logits = torch.tensor([0.4, 0.3, 0.2, 0.1]).log()
    trace = next_token_probs(logits, top_k=2, top_p=0.5)
    # after top-2: [4/7, 3/7]; 4/7 >= 0.5, so top-p keeps one token
    assert trace.kept.tolist() == [True, False, False, False]
    assert trace.probs.tolist() == [1.0, 0.0, 0.0, 0.0]


def test_batched_logits_filter_each_row(gen: torch.Generator) -> None:
    logits = torch.randn(4, 7, generator=gen)
    trace = next_token_probs(logits, top_k=3)
    assert trace.kept.sum(-1).tolist() == [3, 3, 3, 3]
    torch.testing.assert_close(trace.probs.sum(-1), torch.ones(4))


@pytest.mark.parametrize(
    ("logits", "kwargs", "key"),
    [
        ([1.0, 2.0], {"temperature": -0.1}, "temperature_negative"),
        ([1.0, 2.0], {"temperature": math.nan}, "temperature_negative"),
        ([1.0, 2.0], {"top_k": 0}, "top_k_invalid"),
        ([1.0, 2.0], {"top_p": 0.0}, "top_p_invalid"),
        ([1.0, 2.0], {"top_p": 1.5}, "top_p_invalid"),
        ([1.0, math.nan], {}, "logits_not_finite"),
        ([1.0, math.inf], {}, "logits_not_finite"),
        ([], {}, "logits_empty"),
    ],
)
def test_bad_settings_are_rejected(logits: list[float], kwargs: dict, key: str) -> None:
    with pytest.raises(ParameterError) as err:
        next_token_probs(torch.tensor(logits), **kwargs)
    assert err.value.key == key
    assert isinstance(err.value, ValueError)


def test_sample_is_reproducible_with_a_seeded_generator() -> None:
    probs = torch.softmax(torch.arange(20.0) / 5, dim=-1)
    draws_a = [sample(probs, torch.Generator().manual_seed(3)) for _ in range(5)]
    g = torch.Generator().manual_seed(3)
    draws_b = [sample(probs, g) for _ in range(200)]
    assert len(set(draws_a)) == 1  # same seed, same first draw
    assert draws_a[0] == draws_b[0]
    assert len(set(draws_b)) > 1  # a real distribution, not a constant
    assert all(isinstance(i, int) and 0 <= i < 20 for i in draws_b)


def test_sample_never_draws_a_filtered_token() -> None:
    trace = next_token_probs(torch.tensor([1.0, 3.0, 2.0, 0.0]), top_k=2)
    g = torch.Generator().manual_seed(0)
    assert {sample(trace.probs, g) for _ in range(200)} == {1, 2}


def test_sample_rejects_a_batch() -> None:
    with pytest.raises(ParameterError) as err:
        sample(torch.ones(2, 3) / 3, None)
    assert err.value.key == "probs_not_1d"


logit_lists = st.lists(st.floats(-20, 20, allow_nan=False), min_size=2, max_size=12)


@PROPERTY
@given(logits=logit_lists)
def test_temperature_towards_zero_tends_to_greedy(logits: list[float]) -> None:
    x = torch.tensor(logits, dtype=torch.float64)
    top2 = torch.topk(x, 2).values
    assume(top2[0] - top2[1] > 1e-3)  # a unique maximum
    greedy = next_token_probs(x, temperature=0).probs
    best = int(greedy.argmax())
    maxima = [next_token_probs(x, temperature=t).probs[best].item() for t in (1, 0.1, 1e-2, 1e-5)]
    assert maxima == sorted(maxima)  # the best token only gains as T falls
    torch.testing.assert_close(next_token_probs(x, temperature=1e-5).probs, greedy)


@PROPERTY
@given(logits=logit_lists, p=st.floats(0.01, 1.0))
def test_top_p_keeps_the_smallest_sufficient_set(logits: list[float], p: float) -> None:
    x = torch.tensor(logits, dtype=torch.float64)
    trace = next_token_probs(x, top_p=p)
    before, kept = trace.probs_before_filter, trace.kept
    tol = 1e-6
    assert kept.any()
    assert before[kept].sum() >= p - tol  # sufficient
    # smallest: dropping the least probable kept token falls short of p
    assert before[kept].sum() - before[kept].min() < p + tol or kept.sum() == 1
    # and it is the most probable tokens that are kept
    if (~kept).any():
        assert before[kept].min() >= before[~kept].max()
    torch.testing.assert_close(trace.probs.sum(), torch.tensor(1.0, dtype=torch.float64))
    assert (trace.probs[~kept] == 0).all()
