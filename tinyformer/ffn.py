"""Position-wise feed-forward networks: classic FFN and SwiGLU, traced.

Weights are [d_in, d_out] and applied as ``x @ W``; every position (row of x) goes
through the same weights independently (``position_wise`` shows it). Without an
activation the two layers collapse into one linear map (``without_activation``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

from tinyformer.errors import ParameterError, ShapeError

# Exact GELU (erf form), PyTorch's default, so numbers match F.gelu.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "silu": F.silu,
}
MAX_CURVE_POINTS = 2001  # a curve drawn on screen needs no more
SILU_ARGMIN = -1.2784645427610738  # SiLU falls to its minimum here, then rises for ever
SILU_MIN = SILU_ARGMIN / (1 + math.exp(-SILU_ARGMIN))  # about -0.278
MAX_GATE = 1e6


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


@dataclass(frozen=True)
class NoActivationTrace:
    """(x W1 + b1) W2 + b2 computed in two steps, and as one merged linear map."""

    hidden: torch.Tensor  # [..., H] x W1 + b1, passed on unchanged
    two_step: torch.Tensor  # [..., d] hidden W2 + b2
    merged_w: torch.Tensor  # [d_in, d] W1 W2: the one matrix the two layers amount to
    merged_b: torch.Tensor  # [d] b1 W2 + b2
    one_step: torch.Tensor  # [..., d] x merged_w + merged_b
    gap: float  # largest |two_step - one_step|: floating-point rounding only


@dataclass(frozen=True)
class PositionWiseTrace:
    """Every row through the FFN at once, and each row through it on its own."""

    together: FeedForwardTrace  # [N, H], [N, H], [N, d]: one matrix product for all rows
    one_by_one: torch.Tensor  # [N, d] row i computed from x[i] alone
    gap: float  # largest |together.output - one_by_one|


class GateExample(NamedTuple):
    """One hidden unit of SwiGLU: the up branch's value scaled by its gate."""

    value: float  # u = x · w_up: what the unit carries
    gate: float  # s = silu(g): how much of it passes
    gate_pre: float  # g = x · w_gate on SiLU's rising branch with silu(g) = s
    passed: float  # s * u


class ActivationCurves(NamedTuple):
    x: torch.Tensor  # [P] evenly spaced inputs
    values: dict[str, torch.Tensor]  # activation name -> [P] its outputs


def activate(name: str, x: torch.Tensor) -> torch.Tensor:
    """Apply the named activation ("relu", "gelu" or "silu"); e.g. to draw its curve."""
    return _activation_fn(name)(x)


def compare_activations(h: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every activation applied to the same values h (e.g. one row of hidden units)."""
    return {name: fn(h) for name, fn in ACTIVATIONS.items()}


def activation_curves(lo: float = -4.0, hi: float = 4.0, points: int = 161) -> ActivationCurves:
    """Each activation sampled at `points` evenly spaced inputs from lo to hi."""
    if not (-1e6 <= lo < hi <= 1e6) or not 2 <= points <= MAX_CURVE_POINTS:
        raise ParameterError(
            "ffn_curve_range",
            f"need -1e6 <= lo < hi <= 1e6 and 2 <= points <= {MAX_CURVE_POINTS}",
            lo=lo,
            hi=hi,
            points=points,
            limit=MAX_CURVE_POINTS,
        )
    x = torch.linspace(lo, hi, points, dtype=torch.float64)
    return ActivationCurves(x, compare_activations(x))


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
    _check_two_layers(x, w1, b1, w2, b2)
    hidden_pre = _affine(x, w1, b1)  # [..., H]
    hidden = act(hidden_pre)
    return FeedForwardTrace(hidden_pre, hidden, _affine(hidden, w2, b2))  # output [..., d]


def without_activation(
    x: torch.Tensor,
    w1: torch.Tensor,
    b1: torch.Tensor | None,
    w2: torch.Tensor,
    b2: torch.Tensor | None,
) -> NoActivationTrace:
    """The FFN with its activation removed, and the single map it collapses into:
    (x W1 + b1) W2 + b2 = x (W1 W2) + (b1 W2 + b2)."""
    _check_two_layers(x, w1, b1, w2, b2)
    hidden = _affine(x, w1, b1)  # [..., H]
    two_step = _affine(hidden, w2, b2)  # [..., d]
    merged_w = w1 @ w2  # [d_in, d]
    b1_ = torch.zeros(w1.shape[1], dtype=w1.dtype) if b1 is None else b1
    b2_ = torch.zeros(w2.shape[1], dtype=w2.dtype) if b2 is None else b2
    merged_b = b1_ @ w2 + b2_  # [d]
    one_step = x @ merged_w + merged_b  # [..., d]
    gap = float((two_step - one_step).abs().max()) if two_step.numel() else 0.0
    return NoActivationTrace(hidden, two_step, merged_w, merged_b, one_step, gap)


def position_wise(
    x: torch.Tensor,
    w1: torch.Tensor,
    b1: torch.Tensor | None,
    w2: torch.Tensor,
    b2: torch.Tensor | None,
    activation: str = "relu",
) -> PositionWiseTrace:
    """x [N, d]: the whole table in one go, then row by row with the same weights;
    the two agree because no row reads another (that was attention's job)."""
    if x.ndim != 2:
        raise ShapeError("ffn_shape", f"x must be [N, d], got {list(x.shape)}",
                         name="X", expected="N × d", got=_dims(x))
    together = feed_forward(x, w1, b1, w2, b2, activation)
    rows = [feed_forward(row, w1, b1, w2, b2, activation).output for row in x]
    one_by_one = torch.stack(rows) if rows else together.output  # [N, d]
    gap = float((together.output - one_by_one).abs().max()) if rows else 0.0
    return PositionWiseTrace(together, one_by_one, gap)


def swiglu(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor
) -> SwiGLUTrace:
    """SwiGLU(x) = (silu(x W_gate) * (x W_up)) W_down."""
    _check_two_layers(x, w_gate, None, w_down, None)
    _expect("W_up", w_up, tuple(w_gate.shape))
    gate_pre = x @ w_gate  # [..., H]
    gate = F.silu(gate_pre)
    up = x @ w_up  # [..., H]
    gated = gate * up  # elementwise: each hidden unit scaled by its own gate
    return SwiGLUTrace(gate_pre, gate, up, gated, gated @ w_down)


def gate_example(value: float, gate: float) -> GateExample:
    """value 3 with gate 0.2 passes 0.6; also the SiLU input g that gives this gate.

    A gate can be any number SiLU takes (about -0.278 upwards): it scales the value by
    a continuous amount, it does not switch it on or off.
    """
    if not (math.isfinite(value) and abs(value) <= MAX_GATE and math.isfinite(gate)
            and SILU_MIN <= gate <= MAX_GATE):
        raise ParameterError("gate_out_of_range",
                             f"need |value| <= {MAX_GATE} and {SILU_MIN:.3f} <= gate <= {MAX_GATE}",
                             value=value, gate=gate, lo=round(SILU_MIN, 3), hi=MAX_GATE)
    return GateExample(value, gate, silu_inverse(gate), value * gate)


def silu_inverse(gate: float) -> float:
    """The g >= SILU_ARGMIN with silu(g) = gate (bisection to float precision)."""
    lo, hi = SILU_ARGMIN, max(gate, 0.0) + 1.0  # silu(g) > g - 0.28, so silu(hi) > gate
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid / (1 + math.exp(-mid)) < gate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _affine(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    out = x @ w
    return out if b is None else out + b


def _check_two_layers(
    x: torch.Tensor,
    w1: torch.Tensor,
    b1: torch.Tensor | None,
    w2: torch.Tensor,
    b2: torch.Tensor | None,
) -> None:
    """x [..., d] -> W1 [d, H] -> W2 [H, d_out], biases [H] and [d_out]."""
    if x.ndim < 1:
        raise ShapeError("ffn_shape", "x needs at least one dimension",
                         name="x", expected="d", got=_dims(x))
    d = x.shape[-1]
    hidden = w1.shape[1] if w1.ndim == 2 else None
    _expect("W_1", w1, (d, hidden))
    _expect("b_1", b1, (hidden,))
    out = w2.shape[1] if w2.ndim == 2 else None
    _expect("W_2", w2, (hidden, out))
    _expect("b_2", b2, (out,))


def _expect(name: str, tensor: torch.Tensor | None, shape: tuple[int | None, ...]) -> None:
    """None in `shape` means any size there (it is then read from this tensor)."""
    if tensor is None:
        return
    fits = tensor.ndim == len(shape) and all(
        want is None or got == want for got, want in zip(tensor.shape, shape, strict=True))
    if not fits:
        expected = " × ".join("?" if s is None else str(s) for s in shape)
        raise ShapeError("ffn_shape", f"{name} must be [{expected}], got {list(tensor.shape)}",
                         name=name, expected=expected, got=_dims(tensor))


def _dims(tensor: torch.Tensor) -> str:
    return " × ".join(str(s) for s in tensor.shape) or "()"


def _activation_fn(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    if name not in ACTIVATIONS:
        raise ParameterError(
            "unknown_activation",
            f"unknown activation {name!r}; choose one of {sorted(ACTIVATIONS)}",
            name=name,
            choices=sorted(ACTIVATIONS),
        )
    return ACTIVATIONS[name]
