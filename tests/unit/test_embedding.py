"""One-hot, cosine, whitening and the corpus helpers, against PyTorch and NumPy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyformer.embedding import (
    MAX_CLOUD_POINTS,
    MAX_ONE_HOT_CELLS,
    anisotropic_cloud,
    cosine_table,
    mean_pairwise_cosine,
    one_hot,
    whiten,
)
from tinyformer.errors import ParameterError, ShapeError

PROPERTY = settings(max_examples=40, deadline=None)


# --- one-hot and cosine -----------------------------------------------------------------
def test_one_hot_matches_torch_and_is_orthogonal() -> None:
    ids = [2, 0, 3, 1]
    hot = one_hot(ids, 5)
    assert hot.dtype == torch.float64
    torch.testing.assert_close(hot, F.one_hot(torch.tensor(ids), 5).to(torch.float64))
    torch.testing.assert_close(cosine_table(hot).dots, torch.eye(4, dtype=torch.float64))


@pytest.mark.parametrize(
    ("ids", "size", "key"),
    [
        ([0, 5], 5, "embedding_id_out_of_range"),
        ([-1], 3, "embedding_id_out_of_range"),
        ([0], 0, "embedding_vocab_invalid"),
        ([0, 1], MAX_ONE_HOT_CELLS // 2 + 1, "embedding_one_hot_too_large"),
    ],
)
def test_one_hot_rejects_bad_ids(ids: list[int], size: int, key: str) -> None:
    with pytest.raises(ParameterError) as info:
        one_hot(ids, size)
    assert info.value.key == key


def test_cosine_table_matches_torch(gen: torch.Generator) -> None:
    x = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    table = cosine_table(x)
    torch.testing.assert_close(table.dots, x @ x.T)
    torch.testing.assert_close(table.norms, x.norm(dim=-1))
    torch.testing.assert_close(table.denominators, torch.outer(x.norm(dim=-1), x.norm(dim=-1)))
    expected = F.cosine_similarity(x[:, None, :], x[None, :, :], dim=-1)
    torch.testing.assert_close(table.cosine, expected)


def test_cosine_worked_example() -> None:
    # 苹果, 梨, 动漫 on the axes (entertainment, edible): the embeddings page's defaults.
    # The fruits point the same way; 动漫 is unrelated to both: across (near 90°), not
    # opposite (180°).
    table = cosine_table(torch.tensor([[0.0, 0.9], [0.1, 0.7], [0.9, 0.0]]))
    assert round(float(table.cosine[0, 1]), 3) == 0.990
    assert round(float(table.cosine[0, 2]), 3) == 0.000
    assert round(float(table.cosine[1, 2]), 3) == 0.141
    assert [round(float(table.degrees[0, j]), 1) for j in range(3)] == [0.0, 8.1, 90.0]
    assert round(float(table.degrees[1, 2]), 1) == 81.9
    opposite = cosine_table(torch.tensor([[0.0, 0.9], [0.0, -0.9]]))
    assert float(opposite.cosine[0, 1]) == pytest.approx(-1.0)
    assert float(opposite.degrees[0, 1]) == pytest.approx(180.0)


def test_degrees_match_the_arccos_of_torch_cosine(gen: torch.Generator) -> None:
    x = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    expected = F.cosine_similarity(x[:, None, :], x[None, :, :], dim=-1).clamp(-1, 1)
    # arccos is steep at ±1, so rounding of a cosine of 1 moves the angle by ~1e-6 degrees
    torch.testing.assert_close(cosine_table(x).degrees, torch.rad2deg(torch.arccos(expected)),
                               atol=1e-5, rtol=0)
    assert torch.isfinite(cosine_table(x).degrees).all()


def test_cosine_ignores_length_and_zero_vector_is_nan() -> None:
    table = cosine_table(torch.tensor([[1.0, 1.0], [5.0, 5.0], [0.0, 0.0]]))
    assert float(table.cosine[0, 1]) == pytest.approx(1.0)
    assert torch.isnan(table.cosine[2]).all() and torch.isnan(table.cosine[:, 2]).all()
    assert torch.isnan(table.degrees[2]).all()
    assert torch.isfinite(table.cosine[:2, :2]).all()
    with pytest.raises(ShapeError):
        cosine_table(torch.ones(3))


def test_mean_pairwise_cosine_matches_a_loop(gen: torch.Generator) -> None:
    x = torch.randn(30, 3, generator=gen, dtype=torch.float64)
    x[4] = 0.0  # a zero row has no direction and is skipped
    rows = [r for r in x.numpy() if np.linalg.norm(r) > 0]
    pairs = [
        a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) for a, b in itertools.combinations(rows, 2)
    ]
    assert mean_pairwise_cosine(x) == pytest.approx(float(np.mean(pairs)), abs=1e-12)
    with pytest.raises(ParameterError):
        mean_pairwise_cosine(torch.tensor([[1.0, 0.0], [0.0, 0.0]]))


# --- anisotropy and whitening -----------------------------------------------------------
def test_cloud_is_reproducible_and_bounded() -> None:
    a = anisotropic_cloud(50, torch.Generator().manual_seed(3))
    b = anisotropic_cloud(50, torch.Generator().manual_seed(3))
    c = anisotropic_cloud(50, torch.Generator().manual_seed(4))
    assert a.shape == (50, 2) and a.dtype == torch.float64
    assert torch.equal(a, b) and not torch.equal(a, c)
    for n in (1, MAX_CLOUD_POINTS + 1):
        with pytest.raises(ParameterError) as info:
            anisotropic_cloud(n, torch.Generator().manual_seed(0))
        assert info.value.key == "embedding_points_invalid"


def test_cloud_is_a_narrow_cone_that_whitening_opens() -> None:
    cloud = anisotropic_cloud(500, torch.Generator().manual_seed(0))
    assert cloud.mean(0).tolist() == pytest.approx([3.0, 2.0], abs=0.15)
    assert mean_pairwise_cosine(cloud) > 0.9
    assert abs(mean_pairwise_cosine(whiten(cloud).whitened)) < 0.05


def test_whiten_matches_numpy(gen: torch.Generator) -> None:
    x = (
        torch.randn(40, 3, generator=gen, dtype=torch.float64)
        @ torch.tensor([[2.0, 0.3, 0.0], [0.0, 0.5, 0.1], [0.4, 0.0, 1.5]], dtype=torch.float64)
        + 1.0
    )
    trace = whiten(x)
    xn = x.numpy()
    cov = np.cov(xn, rowvar=False, bias=True)
    np.testing.assert_allclose(trace.mean.numpy(), xn.mean(0))
    np.testing.assert_allclose(trace.covariance.numpy(), cov)
    vals, vecs = np.linalg.eigh(cov)
    np.testing.assert_allclose(trace.inv_sqrt.numpy(), vecs @ np.diag(vals**-0.5) @ vecs.T)
    # Σ^(-1/2) Σ Σ^(-1/2) = I, and it is symmetric (ZCA whitening)
    eye = np.eye(3)
    np.testing.assert_allclose(
        trace.inv_sqrt.numpy() @ cov @ trace.inv_sqrt.numpy(), eye, atol=1e-10
    )
    np.testing.assert_allclose(trace.inv_sqrt.numpy(), trace.inv_sqrt.numpy().T)
    np.testing.assert_allclose(trace.whitened.numpy(), (xn - xn.mean(0)) @ trace.inv_sqrt.numpy())


@PROPERTY
@given(
    n=st.integers(5, 200),
    seed=st.integers(0, 10_000),
    sx=st.floats(0.05, 5.0),
    sy=st.floats(0.05, 5.0),
    angle=st.floats(0.0, 3.14),
)
def test_whitened_cloud_has_zero_mean_and_identity_covariance(
    n: int, seed: int, sx: float, sy: float, angle: float
) -> None:
    cloud = anisotropic_cloud(n, torch.Generator().manual_seed(seed), scales=(sx, sy), angle=angle)
    trace = whiten(cloud)
    white = trace.whitened
    torch.testing.assert_close(
        white.mean(0), torch.zeros(2, dtype=torch.float64), atol=1e-9, rtol=0
    )
    np.testing.assert_allclose(np.cov(white.numpy(), rowvar=False, bias=True), np.eye(2), atol=1e-8)
    torch.testing.assert_close(
        trace.whitened_covariance, torch.eye(2, dtype=torch.float64), atol=1e-8, rtol=0
    )


def test_whiten_rejects_points_on_a_line() -> None:
    line = torch.tensor([[0.0, 0.0], [1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    with pytest.raises(ParameterError) as info:
        whiten(line)
    assert info.value.key == "embedding_singular_covariance"
    with pytest.raises(ParameterError):
        whiten(torch.ones(1, 2))
    with pytest.raises(ShapeError):
        whiten(torch.ones(4))
