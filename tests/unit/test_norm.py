"""LayerNorm and RMSNorm against F.layer_norm and F.rms_norm."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.norm import layer_norm, rms_norm

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
