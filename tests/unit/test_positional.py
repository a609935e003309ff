"""Sinusoidal tables, 2-D rotation and RoPE."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.errors import ShapeError
from tinyformer.positional import rope, rope_angles, rotate_2d, sinusoidal

PROPERTY = settings(max_examples=50, deadline=None)


@pytest.mark.parametrize("d", [1, 2, 5, 8])
def test_sinusoidal_follows_the_formula(d: int) -> None:
    pe = sinusoidal(6, d)
    assert pe.shape == (6, d) and pe.dtype == torch.float32
    for pos in range(6):
        for col in range(d):
            i2 = col - col % 2  # 2i, shared by the sine/cosine pair
            angle = pos / 10000 ** (i2 / d)
            expected = math.sin(angle) if col % 2 == 0 else math.cos(angle)
            assert pe[pos, col].item() == pytest.approx(expected, abs=1e-6)


def test_sinusoidal_position_zero_is_zeros_and_ones() -> None:
    assert torch.equal(sinusoidal(1, 4)[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))


def test_rotate_2d_hand_formula() -> None:
    out = rotate_2d(torch.tensor([2.0, 1.0]), math.pi / 6)
    c, s = math.cos(math.pi / 6), math.sin(math.pi / 6)
    torch.testing.assert_close(out, torch.tensor([2 * c - 1 * s, 2 * s + 1 * c]))


def test_rotate_2d_rejects_non_pairs() -> None:
    with pytest.raises(ShapeError) as err:
        rotate_2d(torch.ones(3), 0.1)
    assert err.value.key == "not_2d_vector"


def test_rope_angles_per_pair_frequency() -> None:
    angles = rope_angles(torch.tensor([0.0, 1.0, 3.0]), 6, base=100.0)
    expected = torch.tensor([[p * 100.0 ** (-2 * i / 6) for i in range(3)] for p in (0, 1, 3)])
    torch.testing.assert_close(angles, expected)
    assert rope_angles(4, 6).shape == (4, 3)  # an int means positions 0..3


def test_rope_matches_complex_multiplication(gen: torch.Generator) -> None:
    """Independent reference: pair (2i, 2i+1) as a complex number times e^{i angle}."""
    x = torch.randn(2, 5, 8, generator=gen, dtype=torch.float64)
    positions = torch.arange(5)
    out = rope(x, positions)
    freqs = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    angle = positions[:, None].double() * freqs  # [5, 4]
    z = torch.view_as_complex(x.reshape(2, 5, 4, 2).contiguous()) * torch.polar(
        torch.ones_like(angle), angle
    )
    torch.testing.assert_close(out, torch.view_as_real(z).reshape(2, 5, 8))


def test_rope_default_positions_and_position_zero_is_identity(gen: torch.Generator) -> None:
    x = torch.randn(4, 6, generator=gen)
    torch.testing.assert_close(rope(x), rope(x, torch.arange(4)))
    torch.testing.assert_close(rope(x)[0], x[0])
    assert not torch.allclose(rope(x)[1], x[1])


def test_rope_rejects_odd_width() -> None:
    with pytest.raises(ShapeError) as err:
        rope(torch.ones(3, 5))
    assert err.value.key == "rope_odd_width"


vectors = st.lists(
    st.floats(-10, 10, allow_nan=False, allow_infinity=False), min_size=2, max_size=2
).map(lambda v: v * 4)  # d = 8: four pairs


@PROPERTY
@given(
    q=vectors,
    k=vectors,
    i=st.integers(0, 2000),
    j=st.integers(0, 2000),
    shift=st.integers(-500, 500),
)
def test_rope_dot_depends_only_on_position_difference(
    q: list[float], k: list[float], i: int, j: int, shift: int
) -> None:
    qt, kt = torch.tensor(q, dtype=torch.float64), torch.tensor(k, dtype=torch.float64)

    def dot(pi: float, pj: float) -> torch.Tensor:
        rq = rope(qt[None], torch.tensor([pi], dtype=torch.float64))[0]
        rk = rope(kt[None], torch.tensor([pj], dtype=torch.float64))[0]
        return rq @ rk

    base = dot(i, j)
    torch.testing.assert_close(dot(i + shift, j + shift), base)
    # (R_i q)·(R_j k) = q·(R_{j-i} k)
    torch.testing.assert_close(qt @ rope(kt[None], torch.tensor([float(j - i)]))[0], base)


@PROPERTY
@given(
    x=st.lists(st.floats(-100, 100, allow_nan=False), min_size=6, max_size=6),
    pos=st.floats(-1e4, 1e4, allow_nan=False),
)
def test_rope_keeps_lengths_of_every_pair(x: list[float], pos: float) -> None:
    xt = torch.tensor([x], dtype=torch.float64)
    out = rope(xt, torch.tensor([pos], dtype=torch.float64))
    torch.testing.assert_close(out.norm(), xt.norm())
    torch.testing.assert_close(out.reshape(3, 2).norm(dim=-1), xt.reshape(3, 2).norm(dim=-1))
