"""Feed-forward networks against F.linear, nn.Linear and PyTorch's activations."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.ffn import (
    SILU_ARGMIN,
    SILU_MIN,
    activate,
    activation_curves,
    compare_activations,
    feed_forward,
    gate_example,
    position_wise,
    silu_inverse,
    swiglu,
    without_activation,
)
from tinyformer.lessons.ffn_width import swiglu_width

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


# --- The hand example, the collapse without an activation, position-wise rows ----------
X_HAND = torch.tensor([1.0, -1.0], dtype=torch.float64)
W1_HAND = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]], dtype=torch.float64)
W2_HAND = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], dtype=torch.float64)


def rand(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def linear(w: torch.Tensor, b: torch.Tensor | None) -> nn.Linear:
    """An nn.Linear computing x @ w + b (PyTorch stores the weight as [out, in])."""
    layer = nn.Linear(w.shape[0], w.shape[1], bias=b is not None, dtype=w.dtype)
    with torch.no_grad():
        layer.weight.copy_(w.T)
        if b is not None:
            layer.bias.copy_(b)
    return layer


def test_hand_example_against_nn_linear() -> None:
    trace = feed_forward(X_HAND, W1_HAND, None, W2_HAND, None)
    reference = nn.Sequential(linear(W1_HAND, None), nn.ReLU(), linear(W2_HAND, None))
    assert trace.hidden_pre.tolist() == [1.0, -1.0, 2.0]
    assert trace.hidden.tolist() == [1.0, 0.0, 2.0]
    assert trace.output.tolist() == [1.0, 2.0]
    torch.testing.assert_close(trace.output, reference(X_HAND).detach())


def test_without_activation_collapses_to_one_matrix() -> None:
    flat = without_activation(X_HAND, W1_HAND, None, W2_HAND, None)
    assert flat.hidden.tolist() == [1.0, -1.0, 2.0]
    assert flat.merged_w.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert flat.merged_b.tolist() == [0.0, 0.0]
    assert flat.two_step.tolist() == flat.one_step.tolist() == [1.0, 1.0]
    assert flat.gap == 0.0


def test_without_activation_matches_two_nn_linear_layers(gen: torch.Generator) -> None:
    x, w1, b1, w2, b2 = (rand(gen, *s) for s in ((5, 3), (3, 7), (7,), (7, 3), (3,)))
    flat = without_activation(x, w1, b1, w2, b2)
    two_layers = nn.Sequential(linear(w1, b1), linear(w2, b2))(x).detach()
    one_layer = linear(flat.merged_w, flat.merged_b)(x).detach()
    torch.testing.assert_close(flat.two_step, two_layers)
    torch.testing.assert_close(flat.one_step, one_layer)
    torch.testing.assert_close(flat.merged_w, w1 @ w2)
    assert flat.gap < 1e-12  # rounding only, never a real difference
    assert flat.gap == float((flat.two_step - flat.one_step).abs().max())


@pytest.mark.parametrize("name", sorted(TORCH_ACTIVATIONS))
def test_position_wise_rows_one_by_one(gen: torch.Generator, name: str) -> None:
    x, w1, b1, w2, b2 = (rand(gen, *s) for s in ((4, 2), (2, 3), (3,), (3, 2), (2,)))
    run = position_wise(x, w1, b1, w2, b2, name)
    expected = F.linear(TORCH_ACTIVATIONS[name](F.linear(x, w1.T, b1)), w2.T, b2)
    torch.testing.assert_close(run.together.output, expected)
    for i in range(4):
        torch.testing.assert_close(run.one_by_one[i], F.linear(
            TORCH_ACTIVATIONS[name](F.linear(x[i], w1.T, b1)), w2.T, b2))
    assert run.gap < 1e-12
    changed = x.clone()
    changed[2] += 1.0  # one row edited: only that row of the output moves
    moved = position_wise(changed, w1, b1, w2, b2, name).together.output
    assert torch.equal(moved[[0, 1, 3]], run.together.output[[0, 1, 3]])
    assert not torch.equal(moved[2], run.together.output[2])


def test_position_wise_needs_a_table() -> None:
    with pytest.raises(ShapeError) as err:
        position_wise(X_HAND, W1_HAND, None, W2_HAND, None)
    assert err.value.key == "ffn_shape"


# --- Activations compared and drawn -----------------------------------------------------
def test_compare_activations_at_the_hidden_values() -> None:
    h = torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64)
    values = compare_activations(h)
    assert list(values) == ["relu", "gelu", "silu"]
    for name, fn in TORCH_ACTIVATIONS.items():
        torch.testing.assert_close(values[name], fn(h))
    # The numbers the page's exercise states: GELU(-1) = -0.159, SiLU(-1) = -0.269.
    assert round(float(values["gelu"][1]), 3) == -0.159
    assert round(float(values["silu"][1]), 3) == -0.269


def test_activation_curves_match_torch() -> None:
    curves = activation_curves(-4.0, 4.0, 161)
    torch.testing.assert_close(curves.x, torch.linspace(-4, 4, 161, dtype=torch.float64))
    for name, fn in TORCH_ACTIVATIONS.items():
        torch.testing.assert_close(curves.values[name], fn(curves.x))


@pytest.mark.parametrize(("lo", "hi", "points"), [(1.0, 1.0, 10), (2.0, 1.0, 10),
                                                  (-4.0, 4.0, 1), (-4.0, 4.0, 10**6),
                                                  (float("nan"), 1.0, 10), (-1e300, 1.0, 10)])
def test_activation_curves_bad_range(lo: float, hi: float, points: int) -> None:
    with pytest.raises(ParameterError) as err:
        activation_curves(lo, hi, points)
    assert err.value.key == "ffn_curve_range"


# --- Shapes -------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "name"), [
    ((torch.ones(3, 3), None, W2_HAND, None), "W_1"),  # 3 rows for a width-2 x
    ((W1_HAND, torch.ones(2), W2_HAND, None), "b_1"),
    ((W1_HAND, None, torch.ones(2, 2), None), "W_2"),  # 2 rows for 3 hidden units
    ((W1_HAND, None, W2_HAND, torch.ones(3)), "b_2"),
    ((torch.ones(2), None, W2_HAND, None), "W_1"),  # a vector is no weight matrix
])
def test_feed_forward_shapes_are_checked(args, name: str) -> None:
    for fn in (feed_forward, without_activation):
        with pytest.raises(ShapeError) as err:
            fn(X_HAND, *args)
        assert err.value.key == "ffn_shape"
        assert err.value.values["name"] == name


def test_swiglu_shapes_are_checked() -> None:
    with pytest.raises(ShapeError) as err:
        swiglu(X_HAND, W1_HAND, torch.ones(2, 4, dtype=torch.float64), W2_HAND)
    assert err.value.values["name"] == "W_up"
    with pytest.raises(ShapeError) as err:
        swiglu(X_HAND, W1_HAND, W1_HAND, torch.ones(4, 2, dtype=torch.float64))
    assert err.value.values["name"] == "W_2"


# --- SwiGLU against an nn.Linear module, and its gate -----------------------------------
class SwiGLU(nn.Module):
    """The usual PyTorch formulation (Llama's MLP): three bias-free linear layers."""

    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False, dtype=torch.float64)
        self.up_proj = nn.Linear(d, hidden, bias=False, dtype=torch.float64)
        self.down_proj = nn.Linear(hidden, d, bias=False, dtype=torch.float64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def test_swiglu_matches_an_nn_linear_module() -> None:
    torch.manual_seed(3)
    module = SwiGLU(4, 6)
    x = torch.randn(3, 5, 4, dtype=torch.float64)
    trace = swiglu(x, module.gate_proj.weight.T, module.up_proj.weight.T,
                   module.down_proj.weight.T)
    torch.testing.assert_close(trace.output, module(x).detach())


def test_page_swiglu_example() -> None:
    w_up = torch.tensor([[3.0, 1.0, 0.5], [0.0, -1.0, 0.0]], dtype=torch.float64)
    trace = swiglu(X_HAND, W1_HAND, w_up, W2_HAND)
    torch.testing.assert_close(trace.gate, F.silu(torch.tensor([1.0, -1.0, 2.0],
                                                                dtype=torch.float64)))
    assert trace.up.tolist() == [3.0, 2.0, 0.5]
    assert [round(v, 3) for v in trace.output.tolist()] == [2.193, 0.343]


def test_gate_example_three_times_point_two() -> None:
    ex = gate_example(3.0, 0.2)
    assert ex.passed == pytest.approx(0.6)
    gate = F.silu(torch.tensor(ex.gate_pre, dtype=torch.float64))
    assert float(gate) == pytest.approx(0.2, abs=1e-12)  # the SiLU input giving this gate
    assert ex.gate_pre >= SILU_ARGMIN  # on the rising branch


def test_silu_minimum_and_inverse() -> None:
    g = torch.linspace(-3, 0, 300_001, dtype=torch.float64)
    assert float(F.silu(g).min()) == pytest.approx(SILU_MIN, abs=1e-9)
    for gate in (SILU_MIN + 1e-6, -0.2, 0.0, 0.5, 1.0, 7.0, 1e5):
        back = F.silu(torch.tensor(silu_inverse(gate), dtype=torch.float64))
        assert float(back) == pytest.approx(gate, abs=1e-9, rel=1e-12)


@pytest.mark.parametrize(("value", "gate"), [(3.0, -0.3), (3.0, float("nan")),
                                             (float("inf"), 0.2), (1e300, 0.2), (3.0, 1e300)])
def test_gate_example_refuses_impossible_gates(value: float, gate: float) -> None:
    with pytest.raises(ParameterError) as err:
        gate_example(value, gate)
    assert err.value.key == "gate_out_of_range"


def _weights(*layers: nn.Module) -> int:
    return sum(p.numel() for layer in layers for p in layer.parameters())


@pytest.mark.parametrize("d", [3, 6, 96])
def test_swiglu_at_eight_thirds_has_the_weights_of_a_4d_ffn(d: int) -> None:
    """Three bias-free d x 8d/3 matrices hold as many weights as two d x 4d ones: counted
    on nn.Linear layers (d divisible by 3 so that 8d/3 is a whole width)."""
    c = swiglu_width(d)
    h = 8 * d // 3
    assert c.exact_hidden == h and c.dense_hidden == 4 * d
    dense = _weights(nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False))
    swiglu_layers = _weights(nn.Linear(d, h, bias=False), nn.Linear(d, h, bias=False),
                             nn.Linear(h, d, bias=False))
    assert c.dense_params == dense == c.exact_params == swiglu_layers == 8 * d * d


@pytest.mark.parametrize(("d", "hidden"), [(4096, 11008), (5120, 13824)])
def test_llama_rounds_the_width_up_to_a_multiple_of_256(d: int, hidden: int) -> None:
    """Llama 2 7B and 13B (model width, intermediate size of their published configs)."""
    c = swiglu_width(d)
    assert c.llama_hidden == hidden and c.llama_params == 3 * d * hidden > c.exact_params


@pytest.mark.parametrize(("d", "key"), [(0, "kv_not_positive"), (2.5, "kv_not_integer"),
                                        (True, "kv_not_integer")])
def test_swiglu_width_refuses_a_bad_width(d, key: str) -> None:
    with pytest.raises(ParameterError) as raised:
        swiglu_width(d)
    assert raised.value.key == key
