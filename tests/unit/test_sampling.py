"""Temperature, top-k, top-p and sampling."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tinyformer.errors import ParameterError
from tinyformer.sampling import (
    ARTICLE_TAIL,
    MAX_DRAWS,
    draw_counts,
    long_tail,
    next_token_probs,
    sample,
)

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
        # values of the wrong kind: the same keyed errors, never a TypeError
        ([1.0, 2.0], {"temperature": "0.5"}, "temperature_negative"),
        ([1.0, 2.0], {"temperature": True}, "temperature_negative"),
        ([1.0, 2.0], {"top_k": 2.5}, "top_k_invalid"),
        ([1.0, 2.0], {"top_k": math.inf}, "top_k_invalid"),
        ([1.0, 2.0], {"top_k": "2"}, "top_k_invalid"),
        ([1.0, 2.0], {"top_p": math.nan}, "top_p_invalid"),
        ([1.0, 2.0], {"top_p": "0.5"}, "top_p_invalid"),
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


@pytest.mark.parametrize("probs", [[0.5, math.nan, 0.5], [0.5, math.inf, 0.5], [1.1, -0.1, 0.0],
                                   [0.0, 0.0, 0.0]])
def test_sample_refuses_what_torch_multinomial_would_crash_on(probs: list[float]) -> None:
    """torch raises 'probability tensor contains either inf, nan or element < 0' (or
    a RuntimeError for all zeros); a page gets a keyed, translated message instead."""
    with pytest.raises(ParameterError) as err:
        sample(torch.tensor(probs), torch.Generator().manual_seed(0))
    assert err.value.key == "probs_invalid"


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


# --- CURRICULUM section 10: the worked numbers on the teaching logits [2, 1, 0] ---------
PAYER_LOGITS = torch.tensor([2.0, 1.0, 0.0], dtype=torch.float64)  # 商家, 买家, 未知


def _reference(logits: torch.Tensor, temperature: float = 1.0, keep: list[int] | None = None):
    """Temperature, then keep the listed ids, then renormalise: with PyTorch's softmax."""
    probs = torch.softmax(logits / temperature, dim=-1)
    if keep is None:
        return probs
    mask = torch.zeros_like(probs, dtype=torch.bool)
    mask[keep] = True
    return torch.softmax(logits.masked_fill(~mask, -math.inf) / temperature, dim=-1)


@pytest.mark.parametrize(
    ("settings", "worked", "keep"),
    [
        ({}, [0.665, 0.245, 0.090], None),
        ({"temperature": 0.5}, [0.867, 0.117, 0.016], None),
        ({"temperature": 2.0}, [0.506, 0.307, 0.186], None),
        ({"top_k": 2}, [0.731, 0.269, 0.0], [0, 1]),
        ({"top_p": 0.8}, [0.731, 0.269, 0.0], [0, 1]),
        ({"top_p": 0.6}, [1.0, 0.0, 0.0], [0]),
    ],
)
def test_worked_numbers_of_section_10(settings: dict, worked: list[float], keep) -> None:
    trace = next_token_probs(PAYER_LOGITS, **settings)
    reference = _reference(PAYER_LOGITS, settings.get("temperature", 1.0), keep)
    torch.testing.assert_close(trace.probs, reference)
    assert [round(p, 3) for p in trace.probs.tolist()] == worked
    kept = [True] * 3 if keep is None else [i in keep for i in range(3)]
    assert trace.kept.tolist() == kept


def test_temperature_zero_on_the_teaching_logits_is_greedy() -> None:
    trace = next_token_probs(PAYER_LOGITS, temperature=0)
    assert trace.probs.tolist() == [1.0, 0.0, 0.0]
    assert not torch.isnan(trace.scaled_logits).any()  # nothing divided by zero


def test_top_p_counts_on_what_top_k_left() -> None:
    # top-k = 2 leaves [0.731, 0.269]; 0.731 alone reaches 0.6, so top-p keeps one
    trace = next_token_probs(PAYER_LOGITS, top_k=2, top_p=0.6)
    assert trace.kept_top_k.tolist() == [True, True, False]
    torch.testing.assert_close(trace.after_top_k, _reference(PAYER_LOGITS, keep=[0, 1]))
    assert trace.kept.tolist() == [True, False, False]
    # what was kept before renormalising: p(商家) after temperature
    torch.testing.assert_close(trace.kept_mass, torch.softmax(PAYER_LOGITS, -1)[:1])


def test_the_cut_stages_without_a_filter() -> None:
    trace = next_token_probs(PAYER_LOGITS)
    assert trace.kept_top_k.all()
    torch.testing.assert_close(trace.after_top_k, trace.probs_before_filter)
    torch.testing.assert_close(trace.kept_mass, torch.ones(1, dtype=torch.float64))


@pytest.mark.parametrize(("k", "kept"), [(1, [True, False, False]), (2, [True, True, False])])
def test_equal_probabilities_go_to_the_lower_id(k: int, kept: list[bool]) -> None:
    logits = torch.tensor([1.0, 1.0, 1.0])
    assert next_token_probs(logits, top_k=k).kept.tolist() == kept
    assert next_token_probs(logits, temperature=0).kept.tolist() == [True, False, False]
    assert next_token_probs(logits, top_p=0.3).kept.tolist() == [True, False, False]


@pytest.mark.parametrize("k", [3, 4, 100])
def test_top_k_at_or_past_the_vocabulary_keeps_all_three(k: int) -> None:
    trace = next_token_probs(PAYER_LOGITS, top_k=k)
    assert trace.kept.all()
    torch.testing.assert_close(trace.probs, torch.softmax(PAYER_LOGITS, -1))


def test_a_huge_temperature_is_the_uniform_limit() -> None:
    trace = next_token_probs(PAYER_LOGITS, temperature=1e300)
    torch.testing.assert_close(trace.probs, torch.full((3,), 1 / 3, dtype=torch.float64))


# --- draw_counts: many seeded draws -----------------------------------------------------
@pytest.mark.parametrize(("n", "seed"), [(100, 0), (1000, 7), (1, 123)])
def test_draw_counts_are_torch_multinomial_with_a_seeded_generator(n: int, seed: int) -> None:
    probs = torch.softmax(PAYER_LOGITS, -1)
    draws = draw_counts(probs, n, seed)
    reference = torch.multinomial(probs, n, replacement=True,
                                  generator=torch.Generator().manual_seed(seed))
    assert torch.equal(draws.draws, reference)
    assert torch.equal(draws.counts, torch.bincount(reference, minlength=3))
    assert int(draws.counts.sum()) == n
    torch.testing.assert_close(draws.expected, n * probs)
    torch.testing.assert_close(draws.spread, torch.sqrt(n * probs * (1 - probs)))


def test_draw_counts_expected_for_the_worked_example() -> None:
    draws = draw_counts(torch.softmax(PAYER_LOGITS, -1), 100, 0)
    assert [round(e, 1) for e in draws.expected.tolist()] == [66.5, 24.5, 9.0]
    again = draw_counts(torch.softmax(PAYER_LOGITS, -1), 100, 0)
    assert torch.equal(draws.draws, again.draws)  # same seed, same draws
    other = draw_counts(torch.softmax(PAYER_LOGITS, -1), 100, 1)
    assert not torch.equal(draws.draws, other.draws)


def test_draw_counts_never_draws_a_cut_token() -> None:
    probs = next_token_probs(PAYER_LOGITS, top_k=2).probs
    assert draw_counts(probs, 1000, 3).counts[2] == 0


def test_counts_stay_within_a_few_spreads_of_the_expected_ones() -> None:
    # binomial counts: over many seeds, the mean count is n p within sampling error
    probs = torch.softmax(PAYER_LOGITS, -1)
    counts = torch.stack([draw_counts(probs, 100, s).counts for s in range(200)]).double()
    spread = draw_counts(probs, 100, 0).spread
    torch.testing.assert_close(counts.mean(0), 100 * probs, atol=float(4 * spread.max() / 200**0.5),
                               rtol=0)
    torch.testing.assert_close(counts.std(0), spread, atol=0, rtol=0.2)


@pytest.mark.parametrize(
    ("probs", "n", "seed", "key"),
    [
        (torch.ones(2, 3) / 3, 10, 0, "probs_not_1d"),
        (torch.tensor([0.5, -0.1, 0.6]), 10, 0, "probs_invalid"),
        (torch.tensor([0.5, math.nan, 0.5]), 10, 0, "probs_invalid"),
        (torch.zeros(3), 10, 0, "probs_invalid"),
        (torch.ones(3) / 3, 0, 0, "draws_invalid"),
        (torch.ones(3) / 3, MAX_DRAWS + 1, 0, "draws_invalid"),
        (torch.ones(3) / 3, 2.5, 0, "draws_invalid"),
        (torch.ones(3) / 3, 10, -1, "seed_invalid"),
        (torch.ones(3) / 3, 10, 2**40, "seed_invalid"),
        (torch.ones(3) / 3, 10, 1.5, "seed_invalid"),
    ],
)
def test_bad_draw_settings_are_rejected(probs, n, seed, key: str) -> None:
    with pytest.raises(ParameterError) as err:
        draw_counts(probs, n, seed)
    assert err.value.key == key


# --- a real vocabulary's long tail ------------------------------------------------------
def test_the_articles_long_tail() -> None:
    tail = ARTICLE_TAIL
    assert tail.vocab == 100_000 and tail.rest_count == 99_997
    assert tail.top == (0.35, 0.20, 0.08)
    assert round(tail.top_mass, 2) == 0.63 and round(tail.rest_mass, 2) == 0.37
    assert math.isclose(tail.top_mass + tail.rest_mass, 1.0)


@pytest.mark.parametrize(("top", "vocab"), [((), 10), ((0.5, 0.6), 10), ((0.5,), 1),
                                            ((-0.1,), 10)])
def test_a_bad_long_tail_is_rejected(top, vocab) -> None:
    with pytest.raises(ParameterError) as err:
        long_tail(top, vocab)
    assert err.value.key == "long_tail_invalid"


@pytest.mark.parametrize("temperature", [1e-300, 5e-324, 1e-45])
def test_a_tiny_temperature_acts_like_greedy_without_nan(temperature):
    """A temperature too small for float32 (1e-300 is 0 there) still gives the limit of
    softmax(z / T): all the weight on the largest logit, never NaN, and sampling works."""
    trace = next_token_probs(torch.tensor([2.0, 1.0, 0.0]), temperature)
    assert torch.equal(trace.probs, torch.tensor([1.0, 0.0, 0.0]))
    generator = torch.Generator().manual_seed(0)
    assert int(sample(trace.probs, generator)) == 0
