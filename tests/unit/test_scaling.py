"""tinyformer.lessons.scaling: the hand example and the d_k experiment, against NumPy/PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.attention import scaled_dot_product_attention
from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.scaling import (
    SATURATED,
    hand_scores,
    histogram,
    saturation_sweep,
    scaling_experiment,
    softmax_jacobian_norm,
    softmax_sensitivity,
    spread,
)

PROPERTY = settings(max_examples=30, deadline=None)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- The hand example of docs/curriculum.md, stage 3 --------------------------------------


def test_hand_example_worked_numbers() -> None:
    q = torch.tensor([1.0, 0.0], dtype=torch.float64)
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    hand = hand_scores(q, keys)
    assert hand.scores.tolist() == [1.0, 0.0]
    assert hand.d_k == 2 and hand.sqrt_d_k == pytest.approx(1.41421356)
    assert [round(v, 3) for v in hand.scaled.tolist()] == [0.707, 0.0]
    assert [round(v, 3) for v in hand.weights_scaled.tolist()] == [0.670, 0.330]
    assert [round(v, 3) for v in hand.weights_raw.tolist()] == [0.731, 0.269]


def test_hand_example_lengths_and_cosines() -> None:
    """q·k = |q| |k| cos θ: the score grows with length, the cosine does not."""
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    unit = hand_scores(torch.tensor([1.0, 0.0], dtype=torch.float64), keys)
    long = hand_scores(torch.tensor([3.0, 0.0], dtype=torch.float64), keys)
    assert unit.q_norm == 1.0 and long.q_norm == 3.0
    assert unit.key_norms.tolist() == [1.0, 1.0]
    assert unit.cosines.tolist() == long.cosines.tolist() == [1.0, 0.0]
    assert long.scores.tolist() == [3.0, 0.0]  # three times the score, the same cosine
    g = gen(8)
    q, k = torch.randn(3, generator=g, dtype=torch.float64), torch.randn(
        4, 3, generator=g, dtype=torch.float64)
    hand = hand_scores(q, k)
    expected = torch.nn.functional.cosine_similarity(q[None], k, dim=-1)
    torch.testing.assert_close(hand.cosines, expected)
    torch.testing.assert_close(hand.q_norm * hand.key_norms * hand.cosines, hand.scores)


def test_cosine_of_a_zero_vector_is_undefined() -> None:
    hand = hand_scores(torch.zeros(2, dtype=torch.float64),
                       torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64))
    assert hand.scores.tolist() == [0.0, 0.0]
    assert all(math.isnan(c) for c in hand.cosines.tolist())


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


# --- Saturation: the share of nearly one-hot rows -------------------------------------


def test_saturated_share_counts_rows_whose_largest_weight_exceeds_the_threshold() -> None:
    exp = scaling_experiment(64, 4000, gen(6))
    g = gen(6)  # the same draws, recomputed independently
    q = torch.randn(500, 64, generator=g).double()
    k = torch.randn(500, 8, 64, generator=g).double()
    rows = torch.einsum("qd,qkd->qk", q, k)  # [500, 8]
    for rows_, share, count in ((rows, exp.saturated_raw, exp.n_saturated_raw),
                                (rows / 8.0, exp.saturated_scaled, exp.n_saturated_scaled)):
        top = torch.softmax(rows_, dim=-1).amax(-1)
        assert count == int((top > SATURATED).sum())
        assert share == pytest.approx(float((top > SATURATED).double().mean()))


def test_about_a_third_of_rows_saturate_at_d_k_64_unscaled_and_none_scaled() -> None:
    """CURRICULUM 3: measured, not assumed (seed 0, 2,000 rows of 8 keys: 785 rows)."""
    for seed in (0, 1, 2):
        exp = scaling_experiment(64, 16_000, gen(seed))
        assert 0.3 < exp.saturated_raw < 0.45, exp.saturated_raw
        assert exp.n_saturated_scaled == 0
    assert scaling_experiment(64, 16_000, gen(0)).n_saturated_raw == 785


def test_sweep_points_are_the_single_experiments() -> None:
    d_ks = [1, 16, 64, 512]
    sweep = saturation_sweep(d_ks, 8000, seed=3)
    for d_k, raw, scaled in zip(d_ks, sweep.saturated_raw, sweep.saturated_scaled, strict=True):
        single = scaling_experiment(d_k, 8000, gen(3))
        assert (raw, scaled) == (single.saturated_raw, single.saturated_scaled)
        assert torch.equal(sweep.at(d_k).raw, single.raw)
    # Without scaling the share climbs with d_k; with scaling it stays near 0.
    assert sweep.saturated_raw == sorted(sweep.saturated_raw) and sweep.saturated_raw[-1] > 0.6
    assert max(sweep.saturated_scaled) < 0.01
    # At d_k = 1 dividing by sqrt(1) changes nothing: both shares are the same.
    assert sweep.saturated_raw[0] == sweep.saturated_scaled[0]


def test_sweep_bounds() -> None:
    with pytest.raises(ParameterError) as err:
        saturation_sweep([], 100, 0)
    assert err.value.key == "scaling_sweep"
    with pytest.raises(ParameterError):
        saturation_sweep(list(range(1, 18)), 100, 0)


# --- Softmax of one row and its Jacobian ----------------------------------------------


def test_scores_30_and_20_give_a_nearly_one_hot_row() -> None:
    row = softmax_sensitivity(torch.tensor([30.0, 20.0]))
    assert round(float(row.weights[0]), 5) == 0.99995
    assert float(row.weights[1]) == pytest.approx(4.54e-5, rel=1e-3)
    a1, a2 = row.weights.tolist()
    assert row.jacobian_norm == pytest.approx(2 * a1 * a2)  # 0.0000908
    assert row.jacobian_norm == pytest.approx(9.08e-5, rel=1e-3)
    assert softmax_sensitivity(torch.zeros(2)).jacobian_norm == pytest.approx(0.5)


def test_softmax_sensitivity_against_autograd() -> None:
    scores = torch.randn(5, generator=gen(2), dtype=torch.float64) * 2
    row = softmax_sensitivity(scores)
    jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
    torch.testing.assert_close(row.jacobian, jac)
    torch.testing.assert_close(row.weights, torch.softmax(scores, -1))
    assert row.jacobian_norm == pytest.approx(float(softmax_jacobian_norm(row.weights)))


@pytest.mark.parametrize("scores", [torch.ones(1), torch.ones(2, 2),
                                    torch.tensor([1.0, float("inf")])])
def test_softmax_sensitivity_rejects_bad_rows(scores: torch.Tensor) -> None:
    with pytest.raises(ShapeError) as err:
        softmax_sensitivity(scores)
    assert err.value.key == "scaling_row"


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
