"""Shared fixtures for the tinyformer unit tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def gen() -> torch.Generator:
    """A seeded CPU generator so every example tensor is reproducible."""
    return torch.Generator().manual_seed(1234)
