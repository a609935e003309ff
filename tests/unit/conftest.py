"""Shared fixtures for the tinyformer unit tests."""

from __future__ import annotations

import pytest
import torch
from hypothesis import settings

# Property tests stay quick: ~50 examples each, no per-example deadline (CPU timing
# varies between machines and a deadline would make the suite flaky, not stricter).
PROPERTY = settings(max_examples=50, deadline=None)

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
    ),
]


@pytest.fixture
def gen() -> torch.Generator:
    """A seeded CPU generator so every example tensor is reproducible."""
    return torch.Generator().manual_seed(1234)
