"""tinyformer.scaling: the hand example and the d_k experiment, against NumPy/PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.attention import scaled_dot_product_attention
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.scaling import (
    hand_scores,
    histogram,
    scaling_experiment,
    softmax_jacobian_norm,
    spread,
)

PROPERTY = settings(max_examples=30, deadline=None)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- The hand example of CURRICULUM.md section 3 --------------------------------------


def test_hand_example_worked_numbers() -> None:
    q = torch.tensor([1.0, 0.0], dtype=torch.float64)
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    hand = hand_scores(q, keys)
    assert hand.scores.tolist() == [1.0, 0.0]
    assert hand.d_k == 2 and hand.sqrt_d_k == pytest.approx(1.41421356)
    assert [round(v, 3) for v in hand.scaled.tolist()] == [0.707, 0.0]
    assert [round(v, 3) for v in hand.weights_scaled.tolist()] == [0.670, 0.330]
    assert [round(v, 3) for v in hand.weights_raw.tolist()] == [0.731, 0.269]


def test_hand_scores_agree_with_attention() -> None:
    g = gen(3)
    q, keys = torch.randn(5, generator=g, dtype=torch.float64), torch.randn(
        4, 5, generator=g, dtype=torch.float64)
    hand = hand_scores(q, keys)
    trace = scaled_dot_product_attention(q[None], keys, keys)
    torch.testing.assert_close(hand.scores, trace.scores[0])
    torch.testing.assert_close(hand.scaled, trace.scaled[0])
    torch.testing.assert_close(hand.weights_scaled, trace.weights[0])


def test_hand_shape_error() -> None:
    with pytest.raises(ShapeError) as err:
        hand_scores(torch.ones(2), torch.ones(2, 3))
    assert err.value.key == "scaling_hand_shape"
    with pytest.raises(ShapeError):
        hand_scores(torch.ones(2, 2), torch.ones(2, 2))


# --- The experiment --------------------------------------------------------------------


def test_experiment_reproduces_numpy_from_the_same_draws() -> None:
    d_k, n_pairs, keys = 16, 800, 8
    exp = scaling_experiment(d_k, n_pairs, gen(5), keys)
    g = gen(5)  # the same draws, in the same order: queries, then keys
    q = torch.randn(n_pairs // keys, d_k, generator=g).double().numpy()
    k = torch.randn(n_pairs // keys, keys, d_k, generator=g).double().numpy()
    raw = np.einsum("qd,qkd->qk", q, k)
    np.testing.assert_allclose(exp.raw.numpy(), raw.reshape(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(exp.scaled.numpy(), raw.reshape(-1) / 4.0, rtol=1e-5, atol=1e-5)
    assert exp.raw_spread.variance == pytest.approx(np.var(raw, ddof=1), rel=1e-5)
    assert exp.scaled_spread.variance == pytest.approx(np.var(raw / 4.0, ddof=1), rel=1e-5)
    assert exp.raw_spread.min == pytest.approx(raw.min(), abs=1e-5)
    assert exp.raw_spread.max == pytest.approx(raw.max(), abs=1e-5)
    top = torch.softmax(torch.from_numpy(raw), dim=-1).amax(-1).numpy()
    np.testing.assert_allclose(exp.top_raw.numpy(), top, rtol=1e-4)
    assert exp.mean_top_raw == pytest.approx(top.mean(), rel=1e-4)
    assert exp.scaled_outside_unit == int((np.abs(raw / 4.0) > 1).sum())
    assert exp.n_pairs == n_pairs and exp.n_queries == n_pairs // keys


def test_same_seed_same_result_other_seed_other_result() -> None:
    a, b = scaling_experiment(32, 1000, gen(1)), scaling_experiment(32, 1000, gen(1))
    c = scaling_experiment(32, 1000, gen(2))
    assert torch.equal(a.raw, b.raw) and a.raw_spread == b.raw_spread
    assert not torch.equal(a.raw, c.raw)


@pytest.mark.parametrize("d_k", [1, 4, 64, 512])
def test_raw_variance_is_about_d_k_and_scaled_about_1(d_k: int) -> None:
    exp = scaling_experiment(d_k, 20_000, gen(0))
    # Var(q·k) = d_k; with 20,000 pairs the estimate is within a few percent.
    assert exp.raw_spread.variance == pytest.approx(d_k, rel=0.1)
    assert exp.scaled_spread.variance == pytest.approx(1.0, rel=0.1)
    assert exp.scaled_spread.std == pytest.approx(math.sqrt(exp.scaled_spread.variance))


def test_without_scaling_softmax_heads_for_one_hot() -> None:
    tops = [scaling_experiment(d_k, 8000, gen(0)).mean_top_raw for d_k in (1, 16, 512)]
    assert tops[0] < tops[1] < tops[2] and tops[2] > 0.9
    scaled = [scaling_experiment(d_k, 8000, gen(0)).mean_top_scaled for d_k in (1, 16, 512)]
    assert max(scaled) - min(scaled) < 0.1 and max(scaled) < 0.5
    big = scaling_experiment(512, 8000, gen(0))
    assert big.mean_grad_raw < big.mean_grad_scaled / 3  # saturated softmax: tiny gradients


def test_scaled_scores_are_not_bounded_to_a_fixed_range() -> None:
    exp = scaling_experiment(64, 5000, gen(0))
    assert exp.scaled_spread.max > 1 and exp.scaled_spread.min < -1
    assert exp.scaled_outside_unit > 0.2 * exp.n_pairs  # about 32% for a unit normal


def test_softmax_jacobian_norm_against_autograd() -> None:
    g = gen(4)
    for _ in range(5):
        scores = torch.randn(6, generator=g, dtype=torch.float64) * 3
        jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
        expected = torch.linalg.matrix_norm(jac)
        got = softmax_jacobian_norm(torch.softmax(scores, -1)[None])[0]
        torch.testing.assert_close(got, expected)
    assert float(softmax_jacobian_norm(torch.tensor([1.0, 0.0, 0.0]))) == 0.0


def test_spread_matches_numpy() -> None:
    values = torch.randn(100, generator=gen(9), dtype=torch.float64)
    s = spread(values)
    assert s.variance == pytest.approx(np.var(values.numpy(), ddof=1))
    assert s.mean == pytest.approx(values.numpy().mean())


@pytest.mark.parametrize(
    ("args", "key"),
    [((0, 1000), "scaling_dk"), ((4, 7), "scaling_pairs"), ((4000, 20_000), "scaling_too_large")],
)
def test_parameter_errors(args, key) -> None:
    with pytest.raises(ParameterError) as err:
        scaling_experiment(*args, gen(0))
    assert err.value.key == key


def test_keys_per_query_error() -> None:
    with pytest.raises(ParameterError) as err:
        scaling_experiment(4, 100, gen(0), keys_per_query=1)
    assert err.value.key == "scaling_keys"


# --- Histogram -------------------------------------------------------------------------


@PROPERTY
@given(n=st.integers(1, 300), bins=st.integers(1, 40), seed=st.integers(0, 1000))
def test_histogram_matches_numpy(n: int, bins: int, seed: int) -> None:
    g = gen(seed)
    a = torch.randn(n, generator=g, dtype=torch.float64) * 5
    b = torch.randn(n, generator=g, dtype=torch.float64)
    hist = histogram([a, b], bins=bins)
    edges = hist.edges.numpy()
    for series, counts in zip((a, b), hist.counts, strict=True):
        expected, _ = np.histogram(series.numpy(), bins=edges)
        np.testing.assert_array_equal(counts.numpy(), expected)
        assert int(counts.sum()) == n
    assert hist.centres.shape == (bins,)


def test_histogram_of_constant_values_and_errors() -> None:
    hist = histogram([torch.zeros(5)], bins=4)
    assert int(hist.counts[0].sum()) == 5
    with pytest.raises(ParameterError):
        histogram([torch.zeros(0)])
    with pytest.raises(ParameterError):
        histogram([torch.zeros(3)], bins=0)
