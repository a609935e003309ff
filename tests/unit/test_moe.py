"""Mixture-of-experts routing and parameter counts."""

from __future__ import annotations

import pytest
import torch

from tinyformer.errors import ParameterError
from tinyformer.moe import param_counts, route


@pytest.mark.parametrize("k", [1, 2, 4])
def test_route_picks_the_top_k_and_renormalises(gen: torch.Generator, k: int) -> None:
    x, w = torch.randn(6, 5, generator=gen), torch.randn(5, 4, generator=gen)
    trace = route(x, w, k)
    torch.testing.assert_close(trace.logits, x @ w)
    torch.testing.assert_close(trace.probs, torch.softmax(x @ w, dim=-1))
    top = torch.topk(trace.probs, k, dim=-1)
    assert torch.equal(trace.indices, top.indices)
    torch.testing.assert_close(trace.top_probs, top.values)
    torch.testing.assert_close(trace.weights, top.values / top.values.sum(-1, keepdim=True))
    torch.testing.assert_close(trace.weights.sum(-1), torch.ones(6))
    assert trace.indices.shape == trace.weights.shape == (6, k)


def test_route_ties_go_to_the_lower_expert() -> None:
    trace = route(torch.ones(1, 2), torch.zeros(2, 4), 2)  # all logits equal
    assert trace.indices.tolist() == [[0, 1]]
    torch.testing.assert_close(trace.weights, torch.tensor([[0.5, 0.5]]))


@pytest.mark.parametrize("k", [0, 5])
def test_route_rejects_k_out_of_range(k: int) -> None:
    with pytest.raises(ParameterError) as err:
        route(torch.ones(1, 2), torch.ones(2, 4), k)
    assert err.value.key == "top_k_out_of_range"
    assert err.value.values == {"k": k, "n_experts": 4}


def test_param_counts_total_and_active() -> None:
    counts = param_counts(8, 10_000_000, 2)
    assert counts.total == 80_000_000 and counts.active == 20_000_000
    with pytest.raises(ParameterError):
        param_counts(8, 10, 9)
