"""Feed-forward networks against F.linear and PyTorch's activations."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError
from tinyformer.ffn import activate, feed_forward, swiglu

TORCH_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}


@pytest.mark.parametrize("name", sorted(TORCH_ACTIVATIONS))
def test_feed_forward_matches_torch(gen: torch.Generator, name: str) -> None:
    x = torch.randn(2, 5, 4, generator=gen)
    w1, b1 = torch.randn(4, 16, generator=gen), torch.randn(16, generator=gen)
    w2, b2 = torch.randn(16, 4, generator=gen), torch.randn(4, generator=gen)
    trace = feed_forward(x, w1, b1, w2, b2, activation=name)
    hidden_pre = F.linear(x, w1.T, b1)
    torch.testing.assert_close(trace.hidden_pre, hidden_pre)
    torch.testing.assert_close(trace.hidden, TORCH_ACTIVATIONS[name](hidden_pre))
    expected = F.linear(TORCH_ACTIVATIONS[name](hidden_pre), w2.T, b2)
    torch.testing.assert_close(trace.output, expected)


def test_feed_forward_without_biases(gen: torch.Generator) -> None:
    x = torch.randn(3, 2, generator=gen)
    w1, w2 = torch.randn(2, 6, generator=gen), torch.randn(6, 2, generator=gen)
    trace = feed_forward(x, w1, None, w2, None, activation="gelu")
    torch.testing.assert_close(trace.output, F.gelu(x @ w1) @ w2)


def test_feed_forward_is_position_wise(gen: torch.Generator) -> None:
    x = torch.randn(5, 3, generator=gen)
    w1, w2 = torch.randn(3, 7, generator=gen), torch.randn(7, 3, generator=gen)
    whole = feed_forward(x, w1, None, w2, None).output
    for i in range(5):
        torch.testing.assert_close(whole[i], feed_forward(x[i], w1, None, w2, None).output)


def test_unknown_activation_is_rejected() -> None:
    x = torch.ones(1, 2)
    with pytest.raises(ParameterError) as err:
        feed_forward(x, torch.ones(2, 2), None, torch.ones(2, 2), None, activation="tanh")
    assert err.value.key == "unknown_activation"
    assert err.value.values["name"] == "tanh"
    with pytest.raises(ValueError, match="tanh"):
        activate("tanh", x)


@pytest.mark.parametrize("name", sorted(TORCH_ACTIVATIONS))
def test_activate_matches_torch(name: str) -> None:
    x = torch.linspace(-4, 4, 41)
    torch.testing.assert_close(activate(name, x), TORCH_ACTIVATIONS[name](x))


def test_swiglu_matches_torch(gen: torch.Generator) -> None:
    x = torch.randn(2, 4, 6, generator=gen)
    w_gate, w_up = torch.randn(6, 10, generator=gen), torch.randn(6, 10, generator=gen)
    w_down = torch.randn(10, 6, generator=gen)
    trace = swiglu(x, w_gate, w_up, w_down)
    torch.testing.assert_close(trace.gate_pre, x @ w_gate)
    torch.testing.assert_close(trace.gate, F.silu(x @ w_gate))
    torch.testing.assert_close(trace.up, x @ w_up)
    torch.testing.assert_close(trace.gated, F.silu(x @ w_gate) * (x @ w_up))
    expected = F.linear(F.silu(F.linear(x, w_gate.T)) * F.linear(x, w_up.T), w_down.T)
    torch.testing.assert_close(trace.output, expected)
