"""Short notices shared by pages, and the one error flow for a bad setting.

    with shown_errors():
        trace = multi_head_attention(...)   # may raise TinyformerError
        draw(trace)                         # skipped when it does
    ...the rest of the page still renders

A TinyformerError carries a stable key; its translation is errors.<key>. A key
without a translation shows a translated generic message and is logged, never shown.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from tinyformer.errors import TinyformerError
from ui.i18n import catalogue, current_lang, t

_LOG = logging.getLogger("tinyformer.errors")


def random_weights_note() -> None:
    """Random weights are teaching data: say so wherever a random model is shown."""
    st.info(t("kit.random_weights"), icon=":material/casino:")


def error_text(error: Exception) -> str:
    """The translated message for a tinyformer error (generic for anything else)."""
    key = getattr(error, "key", None)
    if key and f"errors.{key}" in catalogue(current_lang()):
        values = getattr(error, "values", None) or {}
        try:
            return t(f"errors.{key}", **values)
        except (KeyError, IndexError, ValueError):
            _LOG.warning("translation of errors.%s does not fit its values %s", key, values)
    else:
        _LOG.warning("no translation for error %r: %s", key, error)
    return t("errors.generic")


def model_error(error: Exception) -> None:
    st.error(error_text(error), icon=":material/error:")


@contextmanager
def shown_errors() -> Iterator[None]:
    """Run a section; a bad setting ends it with one translated message."""
    try:
        yield
    except TinyformerError as error:
        model_error(error)
