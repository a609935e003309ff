"""Fixtures for the AppTests; the helpers are a plain module, tests/app/helpers.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.app.helpers import LANGS, ONE_LANG


@pytest.fixture
def missing_model(monkeypatch) -> Iterator[str]:
    """No shipped model (a fresh checkout without assets/model): loading it raises the
    keyed error the pages translate. Yields the path the message names."""
    import streamlit as st

    from tinyformer.errors import ParameterError

    def missing(*_, **__):
        raise ParameterError("trained_model_missing", "no model", path="assets/model")

    monkeypatch.setattr("ui.models.load_model", missing)
    st.cache_resource.clear()  # a model or run cached by an earlier test would hide it
    yield "assets/model"
    st.cache_resource.clear()  # the next test loads the real model again


@pytest.fixture(params=ONE_LANG)
def lang(request) -> str:
    """The language of a test whose behaviour does not depend on it (helpers.ONE_LANG)."""
    return request.param


@pytest.fixture(params=LANGS)
def each_lang(request) -> str:
    """Both languages, for what the language changes."""
    return request.param
