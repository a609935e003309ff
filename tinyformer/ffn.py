"""Position-wise feed-forward networks: classic FFN and SwiGLU, traced.

Weights are [d_in, d_out] and applied as ``x @ W``; every position (row of x) goes
through the same weights independently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError

# Exact GELU (erf form), PyTorch's default, so numbers match F.gelu.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "silu": F.silu,
}


@dataclass(frozen=True)
class FeedForwardTrace:
    hidden_pre: torch.Tensor  # [..., H] x W1 + b1
    hidden: torch.Tensor  # [..., H] activation(hidden_pre)
    output: torch.Tensor  # [..., d] hidden W2 + b2


@dataclass(frozen=True)
class SwiGLUTrace:
    gate_pre: torch.Tensor  # [..., H] x W_gate
    gate: torch.Tensor  # [..., H] silu(gate_pre): a continuous gate, not a 0/1 switch
    up: torch.Tensor  # [..., H] x W_up: the values being gated
    gated: torch.Tensor  # [..., H] gate * up
    output: torch.Tensor  # [..., d] gated W_down


def activate(name: str, x: torch.Tensor) -> torch.Tensor:
    """Apply the named activation ("relu", "gelu" or "silu"); e.g. to draw its curve."""
    return _activation_fn(name)(x)


def feed_forward(
    x: torch.Tensor,
    w1: torch.Tensor,
    b1: torch.Tensor | None,
    w2: torch.Tensor,
    b2: torch.Tensor | None,
    activation: str = "relu",
) -> FeedForwardTrace:
    """FFN(x) = act(x W1 + b1) W2 + b2; biases may be None (treated as zero)."""
    act = _activation_fn(activation)  # fail before any maths on a bad name
    hidden_pre = x @ w1  # [..., H]
    if b1 is not None:
        hidden_pre = hidden_pre + b1
    hidden = act(hidden_pre)
    output = hidden @ w2  # [..., d]
    if b2 is not None:
        output = output + b2
    return FeedForwardTrace(hidden_pre, hidden, output)


def swiglu(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor
) -> SwiGLUTrace:
    """SwiGLU(x) = (silu(x W_gate) * (x W_up)) W_down."""
    gate_pre = x @ w_gate  # [..., H]
    gate = F.silu(gate_pre)
    up = x @ w_up  # [..., H]
    gated = gate * up  # elementwise: each hidden unit scaled by its own gate
    return SwiGLUTrace(gate_pre, gate, up, gated, gated @ w_down)


def _activation_fn(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    if name not in ACTIVATIONS:
        raise ParameterError(
            "unknown_activation",
            f"unknown activation {name!r}; choose one of {sorted(ACTIVATIONS)}",
            name=name,
            choices=sorted(ACTIVATIONS),
        )
    return ACTIVATIONS[name]
