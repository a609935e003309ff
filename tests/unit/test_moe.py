"""Mixture-of-experts routing and parameter counts."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from torch import nn

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.moe import (
    MAX_EXPERTS,
    Experts,
    expert_budget,
    mixture_of_experts,
    param_counts,
    random_moe,
    renormalise,
    route,
)


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


# --- The whole layer against a reference loop over tokens and experts ------------------
def reference_moe(x: torch.Tensor, w_router: torch.Tensor, experts: Experts, k: int):
    """Written independently: nn.Linear experts, torch.topk, one token at a time."""
    modules = []
    for e in range(experts.count):
        first = nn.Linear(x.shape[1], experts.w1.shape[2], dtype=x.dtype)
        second = nn.Linear(experts.w1.shape[2], x.shape[1], dtype=x.dtype)
        with torch.no_grad():
            first.weight.copy_(experts.w1[e].T)
            first.bias.copy_(experts.b1[e])
            second.weight.copy_(experts.w2[e].T)
            second.bias.copy_(experts.b2[e])
        modules.append(nn.Sequential(first, nn.ReLU(), second))
    outputs, load = [], Counter()
    for token in x:
        probs = torch.softmax(token @ w_router, dim=-1)
        top = torch.topk(probs, k)
        weights = top.values / top.values.sum()
        y = torch.zeros_like(token)
        for w, e in zip(weights, top.indices.tolist(), strict=True):
            y = y + w * modules[e](token).detach()
            load[e] += 1
        outputs.append(y)
    return torch.stack(outputs), [load[e] for e in range(experts.count)]


@pytest.mark.parametrize(("n_experts", "k", "seed"), [(8, 2, 0), (8, 1, 1), (4, 4, 2),
                                                      (16, 3, 7)])
def test_moe_matches_the_reference_loop(n_experts: int, k: int, seed: int) -> None:
    setup = random_moe(6, 4, 8, n_experts, seed)
    trace = mixture_of_experts(setup.x, setup.w_router, setup.experts, k)
    output, load = reference_moe(setup.x, setup.w_router, setup.experts, k)
    torch.testing.assert_close(trace.output, output)
    assert trace.load.tolist() == load
    assert int(trace.load.sum()) == 6 * k
    assert trace.even_load == 6 * k / n_experts
    # The dense weights: the renormalised weights at the chosen experts, 0 elsewhere.
    for t in range(6):
        chosen = trace.route.indices[t].tolist()
        torch.testing.assert_close(trace.gates[t, chosen], trace.route.weights[t])
        others = [e for e in range(n_experts) if e not in chosen]
        assert trace.gates[t, others].abs().sum() == 0
        torch.testing.assert_close(trace.weighted[t].sum(0), trace.output[t])
        for j, e in enumerate(chosen):
            torch.testing.assert_close(trace.expert_outputs[t, j],
                                       setup.experts.run(e, setup.x[t]))


def test_renormalise_the_worked_example() -> None:
    torch.testing.assert_close(renormalise(torch.tensor([0.3, 0.2])), torch.tensor([0.6, 0.4]))


def test_random_moe_is_seeded_rounded_and_leaves_the_global_state() -> None:
    before = torch.random.get_rng_state()
    a, b = random_moe(6, 4, 8, 8, 5), random_moe(6, 4, 8, 8, 5)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.equal(a.x, b.x) and torch.equal(a.w_router, b.w_router)
    assert torch.equal(a.experts.w2, b.experts.w2)
    assert not torch.equal(a.x, random_moe(6, 4, 8, 8, 6).x)
    assert a.x.shape == (6, 4) and a.w_router.shape == (4, 8)
    assert a.experts.w1.shape == (8, 4, 8) and a.experts.b2.shape == (8, 4)
    assert torch.equal(a.w_router, torch.round(a.w_router, decimals=2))


@pytest.mark.parametrize(("args", "name"), [((0, 4, 8, 8), "tokens"), ((6, 17, 8, 8), "d"),
                                            ((6, 4, 0, 8), "hidden"),
                                            ((6, 4, 8, MAX_EXPERTS + 1), "experts"),
                                            ((6, 4, 8, 2.5), "experts")])
def test_random_moe_bounds_its_sizes(args, name: str) -> None:
    with pytest.raises(ParameterError) as err:
        random_moe(*args, seed=0)
    assert err.value.key == "moe_size" and err.value.values["name"] == name


def test_moe_refuses_k_and_shapes_that_do_not_fit() -> None:
    setup = random_moe(3, 4, 8, 8, 0)
    with pytest.raises(ParameterError) as err:
        mixture_of_experts(setup.x, setup.w_router, setup.experts, 9)
    assert err.value.key == "top_k_out_of_range"
    with pytest.raises(ShapeError) as err:
        mixture_of_experts(setup.x, setup.w_router[:, :4], setup.experts, 2)
    assert err.value.key == "ffn_shape"
    with pytest.raises(ShapeError) as err:
        route(setup.x, torch.ones(3, 8, dtype=torch.float64), 2)  # 3 rows for width 4
    assert err.value.key == "ffn_shape"


# --- Total and active parameters ----------------------------------------------------------
def test_expert_budget_worked_case() -> None:
    budget = expert_budget(8, 10.0, 2)
    assert budget.per_expert == 10_000_000
    assert budget.total == 80_000_000 and budget.active == 20_000_000
    assert budget.active_share == 0.25
    assert budget.total == param_counts(8, 10_000_000, 2).total


@pytest.mark.parametrize(("args", "key"), [((8, 10.0, 9), "top_k_out_of_range"),
                                           ((8, 10.0, 0), "top_k_out_of_range"),
                                           ((0, 10.0, 1), "moe_size"),
                                           ((8, 0.0, 2), "moe_size"),
                                           ((8, math.nan, 2), "moe_size"),
                                           ((8, math.inf, 2), "moe_size"),
                                           ((8, 1e300, 2), "moe_size")])
def test_expert_budget_refuses_bad_sizes(args, key: str) -> None:
    with pytest.raises(ParameterError) as err:
        expert_budget(*args)
    assert err.value.key == key
