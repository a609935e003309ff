"""tinyformer.lessons.projection: Q = X W_q, K = X W_k, V = X W_v, and the X-itself variant."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.lessons.projection import (
    identity_qkv,
    in_context,
    most_asymmetric_pair,
    prefix_average,
    prefix_weights,
    project_qkv,
    random_setup,
    two_contexts,
    word_rows,
)

PROPERTY = settings(max_examples=50, deadline=None)

# The page's hand example: four tokens 运费 / 谁 / 承担 / ？ with d = 3, d_k = 2.
X = torch.tensor([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, -1, 0]], dtype=torch.float64)
W_Q = torch.tensor([[-1, 0], [0, 1], [0, 0]], dtype=torch.float64)
W_K = torch.tensor([[0, 1], [1, 0], [0, 2]], dtype=torch.float64)
W_V = torch.tensor([[1, 0], [0, 2], [1, 1]], dtype=torch.float64)


def randn(gen: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def test_hand_example_numbers() -> None:
    trace = project_qkv(X, W_Q, W_K, W_V)
    assert trace.q.tolist() == [[-1, 0], [0, 1], [-1, 1], [-1, -1]]
    assert trace.k.tolist() == [[0, 3], [1, 2], [1, 1], [-1, 1]]
    assert trace.v.tolist() == [[2, 1], [1, 3], [1, 2], [1, -2]]
    assert trace.scores.tolist() == [[0, -1, -1, 1], [3, 2, 1, 1], [3, 1, 0, 2],
                                     [-3, -3, -2, 0]]
    assert not trace.symmetric
    assert trace.best_key.tolist() == [3, 0, 0, 3]
    assert trace.self_best.tolist() == [False, False, False, True]
    assert trace.projected


def test_hand_example_without_projections() -> None:
    trace = identity_qkv(X)
    assert trace.scores.tolist() == [[2, 1, 1, 1], [1, 2, 1, -1], [1, 1, 2, 0], [1, -1, 0, 2]]
    assert trace.symmetric
    assert trace.self_best.all()
    assert trace.q is X and trace.k is X and trace.v is X
    assert not trace.projected and trace.w_q is None


def test_matches_numpy_and_torch_linear(gen: torch.Generator) -> None:
    x, w_q, w_k, w_v = randn(gen, 2, 5, 6), randn(gen, 6, 4), randn(gen, 6, 4), randn(gen, 6, 3)
    trace = project_qkv(x, w_q, w_k, w_v)
    # nn.Linear stores [out, in] and computes x W^T: the same map as x @ W with W = weight^T.
    torch.testing.assert_close(trace.q, F.linear(x, w_q.T))
    torch.testing.assert_close(trace.v, F.linear(x, w_v.T))
    q, k = x.numpy() @ w_q.numpy(), x.numpy() @ w_k.numpy()
    np.testing.assert_allclose(trace.k.numpy(), k)
    np.testing.assert_allclose(trace.scores.numpy(), q @ k.transpose(0, 2, 1))
    assert trace.scores.shape == (2, 5, 5)


def test_changing_w_v_leaves_the_scores_alone(gen: torch.Generator) -> None:
    x, w_q, w_k = randn(gen, 4, 3), randn(gen, 3, 2), randn(gen, 3, 2)
    first = project_qkv(x, w_q, w_k, randn(gen, 3, 2))
    second = project_qkv(x, w_q, w_k, randn(gen, 3, 5))
    torch.testing.assert_close(first.scores, second.scores)
    assert not torch.allclose(first.v, second.v[..., :2])


@PROPERTY
@given(n=st.integers(1, 6), d=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_without_projections_the_table_is_symmetric(n: int, d: int, seed: int) -> None:
    x = randn(torch.Generator().manual_seed(seed), n, d)
    trace = identity_qkv(x)
    assert trace.symmetric
    torch.testing.assert_close(trace.scores.diagonal(), (x * x).sum(-1))


@PROPERTY
@given(n=st.integers(2, 6), d=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_equal_length_rows_match_themselves_most(n: int, d: int, seed: int) -> None:
    x = randn(torch.Generator().manual_seed(seed), n, d)
    x = x / x.norm(dim=-1, keepdim=True)  # Cauchy-Schwarz: x_i · x_j <= |x_i| |x_j| = 1
    assert identity_qkv(x).self_best.all()


@PROPERTY
@given(d=st.integers(1, 5), d_k=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_w_q_equal_to_w_k_gives_a_symmetric_table(d: int, d_k: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    x, w = randn(gen, 4, d), randn(gen, d, d_k)
    assert project_qkv(x, w, w, w).symmetric


def test_self_best_counts_ties_as_best() -> None:
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    assert identity_qkv(x).self_best.tolist() == [True, True]


def test_shape_errors_carry_keys() -> None:
    with pytest.raises(ShapeError) as err:
        project_qkv(X, W_Q[:2], W_K, W_V)
    assert err.value.key == "projection_weight_rows" and err.value.values["name"] == "W_q"
    with pytest.raises(ShapeError) as err:
        project_qkv(X, W_Q, W_K[:, :1], W_V)
    assert err.value.key == "projection_qk_width"
    assert err.value.values == {"q_width": 2, "k_width": 1}
    with pytest.raises(ShapeError) as err:
        project_qkv(X[0], W_Q, W_K, W_V)
    assert err.value.key == "projection_x_not_2d"
    with pytest.raises(ShapeError):
        identity_qkv(X[0])


def test_most_asymmetric_pair_against_brute_force(gen: torch.Generator) -> None:
    for _ in range(20):
        scores = randn(gen, 5, 5)
        i, j = most_asymmetric_pair(scores)
        gaps = {(a, b): float(scores[a, b] - scores[b, a]) for a in range(5) for b in range(5)
                if a != b}
        assert gaps[(i, j)] == pytest.approx(max(gaps.values()))
        assert scores[i, j] >= scores[j, i]
    assert most_asymmetric_pair(identity_qkv(X).scores) == (0, 1)
    assert most_asymmetric_pair(project_qkv(X, W_Q, W_K, W_V).scores) == (0, 3)
    assert most_asymmetric_pair(torch.ones(1, 1)) == (0, 0)
    with pytest.raises(ShapeError):
        most_asymmetric_pair(torch.ones(2, 3))


def test_random_setup_is_reproducible_rounded_and_bounded() -> None:
    a = random_setup(4, 5, 3, torch.Generator().manual_seed(7))
    b = random_setup(4, 5, 3, torch.Generator().manual_seed(7))
    c = random_setup(4, 5, 3, torch.Generator().manual_seed(8))
    assert a.x.shape == (4, 5) and a.w_q.shape == a.w_k.shape == a.w_v.shape == (5, 3)
    for name in ("x", "w_q", "w_k", "w_v"):
        assert torch.equal(getattr(a, name), getattr(b, name))
        value = getattr(a, name)
        torch.testing.assert_close(value, torch.round(value, decimals=2))
    assert not torch.equal(a.x, c.x)
    assert not torch.equal(a.w_q, a.w_k)  # three different matrices
    with pytest.raises(ParameterError) as err:
        random_setup(4, 0, 3, torch.Generator())
    assert err.value.key == "projection_size"
    with pytest.raises(ParameterError):
        random_setup(4, 5, 65, torch.Generator())


def test_random_weights_keep_projections_near_unit_size() -> None:
    setup = random_setup(64, 64, 64, torch.Generator().manual_seed(0))
    q = project_qkv(setup.x, setup.w_q, setup.w_k, setup.w_v).q
    assert 0.7 < float(q.std()) < 1.3  # N(0, 1/d) weights: entries of q have variance ~1


def test_random_mha_setup_is_seeded_and_scaled():
    from tinyformer.lessons.projection import random_mha_setup

    first = random_mha_setup(6, 8, torch.Generator().manual_seed(7))
    again = random_mha_setup(6, 8, torch.Generator().manual_seed(7))
    assert [t.shape for t in first] == [(1, 6, 8)] + [(8, 8)] * 4
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    big = random_mha_setup(6, 64, torch.Generator().manual_seed(0))[1]
    assert abs(float(big.var()) - 1 / 64) < 0.005  # N(0, 1/width) keeps q·k near unit size
    with pytest.raises(ParameterError):
        random_mha_setup(0, 8, torch.Generator())


# --- Why mix rows at all ---------------------------------------------------------------------
Q1_WORDS = ("商品", "有", "质量", "问题", "，", "运费", "谁", "承担", "？")
Q2_WORDS = ("无理由", "退货", "，", "运费", "谁", "承担", "？")
TAIL4 = ("运费", "谁", "承担", "？")


def test_random_setup_unpacks_in_order() -> None:
    setup = random_setup(4, 3, 2, torch.Generator().manual_seed(0))
    x, w_q, w_k, w_v = setup
    assert x is setup.x and w_q is setup.w_q and w_k is setup.w_k and w_v is setup.w_v


def test_prefix_average_is_the_cumulative_mean_and_causal_attention_with_equal_scores(
        gen: torch.Generator) -> None:
    v = randn(gen, 2, 5, 3)
    average = prefix_average(v)
    counts = torch.arange(1, 6, dtype=torch.float64)[:, None]  # [N, 1]: i + 1 rows read
    torch.testing.assert_close(average, torch.cumsum(v, dim=-2) / counts)
    # Equal scores (a zero query) under the causal mask: weight 1/(i + 1) on keys 0..i.
    expected = F.scaled_dot_product_attention(torch.zeros(2, 5, 4, dtype=torch.float64),
                                              randn(gen, 2, 5, 4), v, is_causal=True)
    torch.testing.assert_close(average, expected)
    torch.testing.assert_close(average[:, 0], v[:, 0])  # position 0 reads only itself
    assert prefix_weights(3).tolist() == [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]]
    with pytest.raises(ShapeError):
        prefix_average(torch.ones(0, 3))


def test_word_rows_keep_known_rows_and_draw_the_others_in_order() -> None:
    known = dict(zip(TAIL4, X, strict=True))
    rows = word_rows(Q1_WORDS + Q2_WORDS, known, 3, torch.Generator().manual_seed(0))
    assert list(rows) == [*Q1_WORDS, "无理由", "退货"]  # first appearance, each once
    assert all(torch.equal(rows[w], known[w]) for w in TAIL4)
    again = word_rows(Q1_WORDS + Q2_WORDS, known, 3, torch.Generator().manual_seed(0))
    assert all(torch.equal(rows[w], again[w]) for w in rows)
    drawn = torch.randn(3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(rows["商品"], torch.round(drawn, decimals=1))  # the first drawn row
    with pytest.raises(ShapeError) as err:
        word_rows(["运费"], {"运费": torch.ones(2)}, 3, torch.Generator())
    assert err.value.key == "projection_word_width"
    with pytest.raises(ParameterError):
        word_rows(["运费"], {}, 0, torch.Generator())


def test_a_per_row_projection_cannot_see_context() -> None:
    cmp = two_contexts("运费", Q1_WORDS, Q2_WORDS, dict(zip(TAIL4, X, strict=True)),
                       torch.Generator().manual_seed(0), W_Q, W_K, W_V)
    assert (cmp.a.at("运费"), cmp.b.at("运费")) == (5, 3)
    assert cmp.gap == 0.0
    for name, expected in (("q", [-1, 0]), ("k", [0, 3]), ("v", [2, 1])):  # the hand rows
        in_a, in_b = cmp.rows_of(name)
        assert in_a.tolist() == in_b.tolist() == expected
    # The same rows as projecting each question on its own.
    alone = project_qkv(torch.stack([cmp.rows[w] for w in Q1_WORDS]), W_Q, W_K, W_V)
    torch.testing.assert_close(cmp.a.qkv.q, alone.q)


def test_a_prefix_average_sees_its_prefix_but_not_the_query() -> None:
    cmp = two_contexts("运费", Q1_WORDS, Q2_WORDS, dict(zip(TAIL4, X, strict=True)),
                       torch.Generator().manual_seed(0), W_Q, W_K, W_V)
    a, b = cmp.a, cmp.b
    assert a.prefix("运费") == Q1_WORDS[:6] and b.prefix("谁") == Q2_WORDS[:5]
    torch.testing.assert_close(a.average[a.at("运费")], a.qkv.v[:6].mean(0))
    # 谁 reads one row more than 运费 (its own), so the two differ within a question ...
    torch.testing.assert_close(a.average[a.at("谁")], (6 * a.average[5] + a.qkv.v[6]) / 7)
    assert not torch.allclose(a.average[a.at("运费")], a.average[a.at("谁")])
    assert not torch.allclose(a.average[a.at("运费")], b.average[b.at("运费")])  # context
    # ... but no query enters: other W_q and W_k leave every average as it was.
    other = two_contexts("运费", Q1_WORDS, Q2_WORDS, dict(zip(TAIL4, X, strict=True)),
                         torch.Generator().manual_seed(0), W_K, W_Q, W_V)
    assert torch.equal(other.a.average, a.average)


def test_in_context_errors_carry_keys() -> None:
    rows = dict(zip(TAIL4, X, strict=True))
    with pytest.raises(ParameterError) as err:
        in_context(["运费", "退货"], rows, W_Q, W_K, W_V)
    assert err.value.key == "projection_word_missing" and err.value.values == {"word": "退货"}
    with pytest.raises(ParameterError) as err:
        in_context([], rows, W_Q, W_K, W_V)
    assert err.value.key == "projection_size"
    with pytest.raises(ParameterError) as err:
        two_contexts("买家", TAIL4, TAIL4, rows, torch.Generator(), W_Q, W_K, W_V)
    assert err.value.key == "projection_word_missing"
