"""LayerNorm and RMSNorm against F.layer_norm and F.rms_norm."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.norm import MAX_EPS, compare_norms, layer_norm, rms_norm

PROPERTY = settings(max_examples=50, deadline=None)


def test_layer_norm_matches_torch(gen: torch.Generator) -> None:
    x = torch.randn(3, 4, 6, generator=gen) * 5 + 2
    weight, bias = torch.randn(6, generator=gen), torch.randn(6, generator=gen)
    trace = layer_norm(x, weight, bias)
    torch.testing.assert_close(trace.output, F.layer_norm(x, (6,), weight, bias, eps=1e-5))
    torch.testing.assert_close(trace.normalized, F.layer_norm(x, (6,), eps=1e-5))


def test_layer_norm_trace_uses_population_variance(gen: torch.Generator) -> None:
    x = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    trace = layer_norm(x, eps=0.0)
    torch.testing.assert_close(trace.mean[:, 0], x.mean(-1))
    torch.testing.assert_close(trace.var[:, 0], ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1))
    torch.testing.assert_close(trace.std, trace.var.sqrt())
    torch.testing.assert_close(trace.normalized.mean(-1), torch.zeros(4, dtype=torch.float64))


def test_layer_norm_constant_row_is_finite() -> None:
    trace = layer_norm(torch.full((1, 4), 3.0))
    assert torch.equal(trace.output, torch.zeros(1, 4))


def test_rms_norm_matches_torch(gen: torch.Generator) -> None:
    x = torch.randn(2, 3, 8, generator=gen) * 3
    weight = torch.randn(8, generator=gen)
    trace = rms_norm(x, weight, eps=1e-6)
    torch.testing.assert_close(trace.output, F.rms_norm(x, (8,), weight, eps=1e-6))
    torch.testing.assert_close(trace.normalized, F.rms_norm(x, (8,), eps=1e-6))
    torch.testing.assert_close(trace.rms[..., 0], x.pow(2).mean(-1).add(1e-6).sqrt())


rows = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=8).filter(
    lambda r: max(abs(v) for v in r) > 1e-2
)


@PROPERTY
@given(row=rows, c=st.floats(1e-2, 1e3))
def test_rms_norm_is_scale_invariant(row: list[float], c: float) -> None:
    x = torch.tensor(row, dtype=torch.float64)
    torch.testing.assert_close(rms_norm(c * x, eps=0.0).output, rms_norm(x, eps=0.0).output)


@PROPERTY
@given(row=rows)
def test_rms_norm_output_has_unit_root_mean_square(row: list[float]) -> None:
    out = rms_norm(torch.tensor(row, dtype=torch.float64), eps=0.0).output
    torch.testing.assert_close(out.pow(2).mean().sqrt(), torch.tensor(1.0, dtype=torch.float64))


@PROPERTY
@given(row=rows.filter(lambda r: max(r) - min(r) > 1e-2), shift=st.floats(-1e3, 1e3),
       c=st.floats(1e-2, 1e3))
def test_layer_norm_is_shift_and_scale_invariant(row: list[float], shift: float,
                                                 c: float) -> None:
    x = torch.tensor(row, dtype=torch.float64)
    torch.testing.assert_close(layer_norm(c * x + shift, eps=0.0).output,
                               layer_norm(x, eps=0.0).output)


@PROPERTY
@given(row=rows, shift=st.floats(1.0, 1e3))
def test_rms_norm_is_not_shift_invariant(row: list[float], shift: float) -> None:
    """The contrast with LayerNorm: RMSNorm keeps the mean, so a shift shows."""
    x = torch.tensor(row, dtype=torch.float64)
    x = x - x.mean()  # centred, so adding a constant changes the direction of x
    if float(x.abs().max()) < 1e-2:
        return
    assert not torch.allclose(rms_norm(x + shift, eps=0.0).output, rms_norm(x, eps=0.0).output)


# --- compare_norms: the stage 9.1 side-by-side ------------------------------------------
def f64(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def test_compare_norms_curriculum_numbers() -> None:
    cmp = compare_norms(f64(1, 3))
    assert float(cmp.layer.mean) == 2.0 and float(cmp.layer.var) == 1.0
    torch.testing.assert_close(cmp.centered, f64(-1, 1))
    torch.testing.assert_close(cmp.layer.output, f64(-1, 1), atol=1e-5, rtol=0)
    assert float(cmp.mean_square) == 5.0
    torch.testing.assert_close(cmp.rms.rms, f64(math.sqrt(5 + 1e-5)))
    assert round(float(cmp.rms.rms), 3) == 2.236
    torch.testing.assert_close(cmp.rms.output, f64(1, 3) / math.sqrt(5), atol=1e-5, rtol=0)
    assert [round(v, 3) for v in cmp.rms.output.tolist()] == [0.447, 1.342]
    # Epsilon's effect at the default 1e-5: 1 - 1/sqrt(1 + 1e-5), about 5.0e-6.
    assert cmp.layer_eps_effect == pytest.approx(1 - 1 / math.sqrt(1 + 1e-5), rel=1e-9)
    assert cmp.rms_eps_effect == pytest.approx(3 / math.sqrt(5) - 3 / math.sqrt(5 + 1e-5),
                                               rel=1e-9)


def test_compare_norms_matches_torch(gen: torch.Generator) -> None:
    x = torch.randn(6, generator=gen, dtype=torch.float64) * 3 + 1
    gamma, beta = (torch.randn(6, generator=gen, dtype=torch.float64) for _ in range(2))
    cmp = compare_norms(x, gamma, beta, eps=1e-3)
    torch.testing.assert_close(cmp.layer.output, F.layer_norm(x, (6,), gamma, beta, eps=1e-3))
    torch.testing.assert_close(cmp.rms.output, F.rms_norm(x, (6,), gamma, eps=1e-3))
    torch.testing.assert_close(cmp.layer_no_eps.output, F.layer_norm(x, (6,), gamma, beta,
                                                                     eps=0.0))
    torch.testing.assert_close(cmp.rms_no_eps.output, F.rms_norm(x, (6,), gamma, eps=0.0))


def test_constant_vector_needs_epsilon() -> None:
    """LayerNorm of [2, 2]: the variance is 0, so without eps it is 0/0; with eps the
    normalized vector is 0 and the output is beta."""
    cmp = compare_norms(f64(2, 2), beta=f64(0.5, -1), eps=1e-5)
    torch.testing.assert_close(cmp.layer.std, f64(math.sqrt(1e-5)))
    torch.testing.assert_close(cmp.layer.output, f64(0.5, -1))
    torch.testing.assert_close(cmp.layer.output, F.layer_norm(f64(2, 2), (2,), None,
                                                              f64(0.5, -1), eps=1e-5))
    assert torch.isnan(cmp.layer_no_eps.normalized).all()
    assert math.isnan(cmp.layer_eps_effect)
    assert torch.isfinite(cmp.rms_no_eps.output).all()  # RMSNorm only fails at all zeros
    assert torch.isnan(compare_norms(f64(0, 0)).rms_no_eps.output).all()


def test_default_gamma_and_beta_are_ones_and_zeros(gen: torch.Generator) -> None:
    x = torch.randn(4, generator=gen, dtype=torch.float64)
    cmp = compare_norms(x)
    assert torch.equal(cmp.gamma, torch.ones(4, dtype=torch.float64))
    assert torch.equal(cmp.beta, torch.zeros(4, dtype=torch.float64))
    torch.testing.assert_close(cmp.layer.output, cmp.layer.normalized)


@pytest.mark.parametrize("eps", [0.0, -1e-5, float("nan"), float("inf"), 1e300, MAX_EPS * 2,
                                 True, "1e-5"])
def test_bad_epsilon_is_refused(eps) -> None:
    with pytest.raises(ParameterError) as info:
        compare_norms(f64(1, 3), eps=eps)
    assert info.value.key == "norm_eps_invalid"


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"x": f64(1, 3)[None]}, "norm_not_vector"),
    ({"x": torch.zeros(0, dtype=torch.float64)}, "norm_not_vector"),
    ({"x": f64(1, float("nan"))}, "norm_not_finite"),
    ({"x": f64(1, float("inf"))}, "norm_not_finite"),
    ({"gamma": f64(1, 1, 1)}, "norm_param_shape"),
    ({"beta": f64(1)}, "norm_param_shape"),
    ({"gamma": f64(1, float("nan"))}, "norm_param_not_finite"),
])
def test_bad_inputs_raise_keyed_errors(kwargs, key) -> None:
    with pytest.raises((ParameterError, ShapeError)) as info:
        compare_norms(**({"x": f64(1, 3)} | kwargs))
    assert info.value.key == key
