"""Sinusoidal tables, 2-D rotation and RoPE, and attention without positions."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.word_order import compare_orders, shuffles
from tinyformer.positional import (
    compare_pairings,
    half_order,
    random_rope_example,
    rope,
    rope_angles,
    rope_frequencies,
    rope_rotate_half,
    rope_scores,
    rotate_2d,
    rotate_pair,
    shift_pair,
    sinusoidal,
    sinusoidal_row,
    within_turn,
)

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


# --- One row of the sinusoidal table, step by step ------------------------------------


def test_sinusoidal_row_check_value_and_table_agree() -> None:
    row = sinusoidal_row(1, 4)  # CURRICULUM 7: d = 4, pos = 1
    assert [round(v, 3) for v in row.values.tolist()] == [0.841, 0.540, 0.010, 1.000]
    torch.testing.assert_close(row.divisors, torch.tensor([1.0, 1.0, 100.0, 100.0],
                                                          dtype=torch.float64))
    torch.testing.assert_close(row.angles, torch.tensor([1.0, 1.0, 0.01, 0.01],
                                                        dtype=torch.float64))
    for pos, d in [(0, 1), (5, 4), (17, 7), (300, 32)]:
        torch.testing.assert_close(sinusoidal_row(pos, d).values.float(),
                                   sinusoidal(pos + 1, d)[pos])


def test_sinusoidal_row_rejects_negative_positions() -> None:
    with pytest.raises(ShapeError) as err:
        sinusoidal_row(-1, 4)
    assert err.value.key == "bad_table_size"


# --- One pair of q and k ---------------------------------------------------------------


def test_rotate_pair_hand_example() -> None:
    one = torch.tensor([1.0, 0.0])
    same = rotate_pair(one, one, 0.7, 0.7)
    assert same.dot == pytest.approx(1.0) and same.plain == 1.0
    sixty = rotate_pair(one, one, 0.0, math.radians(60))  # CURRICULUM 7: 0.5 = cos 60°
    assert sixty.dot == pytest.approx(0.5) and sixty.relative == pytest.approx(0.5)
    torch.testing.assert_close(sixty.k_rot, torch.tensor([0.5, math.sqrt(3) / 2],
                                                         dtype=torch.float64))


@PROPERTY
@given(q=st.lists(st.floats(-100, 100), min_size=2, max_size=2),
       k=st.lists(st.floats(-100, 100), min_size=2, max_size=2),
       a=st.floats(-100, 100), b=st.floats(-100, 100), shift=st.floats(-100, 100))
def test_rotate_pair_only_the_difference_matters(q, k, a, b, shift) -> None:
    qt, kt = torch.tensor(q, dtype=torch.float64), torch.tensor(k, dtype=torch.float64)
    pair, moved = rotate_pair(qt, kt, a, b), rotate_pair(qt, kt, a + shift, b + shift)
    scale = 1e-9 * (1 + float(qt.norm() * kt.norm()))
    assert moved.dot == pytest.approx(pair.dot, abs=scale)
    assert pair.relative == pytest.approx(pair.dot, abs=scale)
    torch.testing.assert_close(pair.q_rot.norm(), qt.norm())  # lengths unchanged
    torch.testing.assert_close(pair.k_rot.norm(), kt.norm())


@pytest.mark.parametrize("angle", [math.nan, math.inf, -math.inf, 1e300, -2e6])
def test_rotate_pair_rejects_bad_angles(angle: float) -> None:
    with pytest.raises(ParameterError) as err:
        rotate_pair(torch.ones(2), torch.ones(2), 0.0, angle)
    assert err.value.key == "rope_angle"


# --- Score tables with and without RoPE -------------------------------------------------


def test_rope_frequencies() -> None:
    torch.testing.assert_close(rope_frequencies(8), torch.tensor(
        [1.0, 0.1, 0.01, 0.001], dtype=torch.float64))
    torch.testing.assert_close(rope_frequencies(4), rope_angles([1.0], 4, dtype=torch.float64)[0])


def test_rope_scores_against_complex_numbers(gen: torch.Generator) -> None:
    """(R_i q)·(R_j k) = Re(sum_p z_q,p conj(z_k,p) e^{i(i - j) theta_p}) with z = pairs."""
    q, k = (torch.randn(5, 6, generator=gen, dtype=torch.float64) for _ in range(2))
    run = rope_scores(q, k)
    torch.testing.assert_close(run.plain, q @ k.T)
    zq, zk = (torch.view_as_complex(x.reshape(5, 3, 2).contiguous()) for x in (q, k))
    theta = 10000.0 ** (-torch.arange(0, 6, 2, dtype=torch.float64) / 6)  # [3]
    diff = torch.arange(5.0, dtype=torch.float64)[:, None] - torch.arange(5.0)[None, :]
    turn = torch.polar(torch.ones(5, 5, 3, dtype=torch.float64), diff[..., None] * theta)
    expected = (zq[:, None, :] * zk[None, :, :].conj() * turn).sum(-1).real  # [5, 5]
    torch.testing.assert_close(run.rotated, expected)
    torch.testing.assert_close(run.angles, rope_angles(5, 6, dtype=torch.float64))


def test_rope_scores_rejects_mismatched_shapes() -> None:
    with pytest.raises(ShapeError) as err:
        rope_scores(torch.ones(3, 4), torch.ones(2, 4))
    assert err.value.key == "rope_qk_shape"


def test_random_example_is_seeded_and_rounded() -> None:
    a, b = random_rope_example(4, 8, 3), random_rope_example(4, 8, 3)
    torch.testing.assert_close(a.rotated, b.rotated)
    assert not torch.equal(a.q, random_rope_example(4, 8, 4).q)
    torch.testing.assert_close(a.q, torch.round(a.q, decimals=2))


def test_same_rows_make_scores_depend_on_the_difference_only() -> None:
    run = random_rope_example(6, 8, 0, same_rows=True)
    # Without RoPE every score is equal (up to the last bits of the matrix product).
    torch.testing.assert_close(run.plain, run.plain[0, 0].expand(6, 6))
    for i in range(5):
        for j in range(5):  # constant along each diagonal j - i
            assert run.rotated[i + 1, j + 1].item() == pytest.approx(run.rotated[i, j].item())
    assert run.rotated[0, 1].item() != pytest.approx(run.rotated[0, 2].item())


@pytest.mark.parametrize(("n", "d", "seed", "key"), [
    (4, 5, 0, "rope_odd_width"), (4, 0, 0, "rope_odd_width"), (0, 4, 0, "rope_example_size"),
    (65, 4, 0, "rope_example_size"), (4, 66, 0, "rope_example_size"),
    (4, 4, -1, "rope_example_size"), (4, 4, 2**31, "rope_example_size"),
])
def test_random_example_bounds(n: int, d: int, seed: int, key: str) -> None:
    with pytest.raises((ParameterError, ShapeError)) as err:
        random_rope_example(n, d, seed)
    assert err.value.key == key


# --- Rotate half (Hugging Face's Llama code) --------------------------------------------


def test_rotate_half_against_complex_numbers(gen: torch.Generator) -> None:
    """Independent reference: component i and i + d/2 as one complex number."""
    x = torch.randn(2, 5, 8, generator=gen, dtype=torch.float64)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # [4]
    z = torch.complex(x[..., :4], x[..., 4:]) * torch.polar(
        torch.ones(5, 4, dtype=torch.float64), torch.arange(5.0)[:, None] * theta)
    torch.testing.assert_close(rope_rotate_half(x), torch.cat((z.real, z.imag), dim=-1))


def test_half_order() -> None:
    assert half_order(8).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert half_order(2).tolist() == [0, 1]  # one pair: both pairings are the same
    with pytest.raises(ShapeError):
        half_order(3)


@PROPERTY
@given(seed=st.integers(0, 10_000), n=st.integers(1, 8), pairs=st.integers(1, 8))
def test_pairings_give_the_same_scores_up_to_a_reordering(seed: int, n: int, pairs: int) -> None:
    run = random_rope_example(n, 2 * pairs, seed)
    cmp = compare_pairings(run.q, run.k)
    torch.testing.assert_close(cmp.adjacent, run.rotated)
    assert cmp.vectors_match and cmp.gap_reordered < 1e-9
    order = half_order(2 * pairs)
    torch.testing.assert_close(rope_rotate_half(run.q[:, order]), rope(run.q)[:, order])


def test_pairings_differ_on_the_same_components() -> None:
    cmp = compare_pairings(*random_rope_example(4, 8, 0)[:2])
    assert cmp.gap_same > 0.1  # the same q, k paired the other way: other scores
    assert cmp.gap_reordered < 1e-12


# --- Word order: attention without positions ---------------------------------------------

WORDS = ("我", "吃", "苹果")


def test_without_positions_rows_only_move() -> None:
    cmp = compare_orders(WORDS, (2, 1, 0), 4, 0)
    assert cmp.second.words == ("苹果", "吃", "我")
    assert cmp.rows_match and cmp.largest_gap < 1e-12
    torch.testing.assert_close(cmp.second.output, cmp.first.output[[2, 1, 0]])
    assert not torch.allclose(cmp.first.output[0], cmp.first.output[2])  # rows do differ


def test_with_positions_rows_change() -> None:
    cmp = compare_orders(WORDS, (2, 1, 0), 4, 0, with_positions=True)
    assert not cmp.rows_match and cmp.largest_gap > 0.1
    torch.testing.assert_close(cmp.first.positions, sinusoidal(3, 4, dtype=torch.float64))
    torch.testing.assert_close(cmp.first.x, cmp.first.embedded + cmp.first.positions)
    # The word in the middle keeps its place and its position row, yet its output changes:
    # the words it reads came with other position rows.
    assert torch.equal(cmp.first.x[1], cmp.second.x[1])
    assert cmp.gap[1].abs().max() > 0


def test_order_run_matches_pytorch(gen: torch.Generator) -> None:
    cmp = compare_orders(WORDS, (1, 2, 0), 6, 5, with_positions=True)
    for run in (cmp.first, cmp.second):
        q, k, v = run.x @ cmp.w_q, run.x @ cmp.w_k, run.x @ cmp.w_v
        torch.testing.assert_close(run.output, F.scaled_dot_product_attention(q, k, v))


@PROPERTY
@given(seed=st.integers(0, 10_000), width=st.integers(1, 16),
       order=st.permutations(range(5)))
def test_attention_without_positions_is_permutation_equivariant(seed, width, order) -> None:
    words = ("商品", "有", "质量", "问题", "运费")
    cmp = compare_orders(words, order, width, seed)
    assert cmp.rows_match
    torch.testing.assert_close(cmp.second.output, cmp.first.output[list(order)])


def test_shuffles_and_bounds() -> None:
    assert shuffles(3) == [(0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    assert len(shuffles(4)) == 23
    for args, key in [((WORDS, (0, 0, 1), 4, 0), "order_not_permutation"),
                      ((WORDS, (0, 1), 4, 0), "order_not_permutation"),
                      ((WORDS, (2, 1, 0), 0, 0), "order_width"),
                      ((WORDS, (2, 1, 0), 17, 0), "order_width"),
                      ((WORDS, (2, 1, 0), 4, -1), "order_seed"),
                      ((("我",), (0,), 4, 0), "order_words")]:
        with pytest.raises(ParameterError) as err:
            compare_orders(*args)
        assert err.value.key == key


def test_within_turn() -> None:
    angles = torch.tensor([0.0, math.pi / 3, 2 * math.pi + 0.5, -math.pi / 2], dtype=torch.float64)
    torch.testing.assert_close(within_turn(angles), torch.tensor(
        [0.0, 60.0, math.degrees(0.5), 270.0], dtype=torch.float64))


def test_shift_pair_keeps_the_dot_product() -> None:
    q, k = torch.tensor([3.0, 4.0]), torch.tensor([1.0, 2.0])
    moved = shift_pair(q, k, 0.3, 1.2, 2.5)
    assert moved.unchanged and abs(moved.change) < 1e-12
    assert moved.after.angle_q == pytest.approx(2.8) and moved.after.angle_k == pytest.approx(3.7)
    assert moved.before.q_length == pytest.approx(5.0)
    assert moved.after.q_rot_length == pytest.approx(5.0)
    # Turning only q by the same angle does change it: the property is not trivial.
    assert rotate_pair(q, k, 0.3 + 2.5, 1.2).dot != pytest.approx(moved.before.dot)
