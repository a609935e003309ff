"""Inputs that validate, explain bad values, and reproduce from a shared link.

matrix_input: a typed matrix or vector (the URL keeps the text, the exact value),
with optional sliders for each component. Bad input never reaches the maths: the
page keeps the last valid value and shows a translated message. guard_state does
the same for a plain widget's value arriving by link.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st
import torch

from ui.i18n import t
from ui.parse import ParseError, format_matrix, parse_matrix

MAX_SLIDERS = 8  # more sliders than this stop being a gesture and become a form


def _valid_key(key: str) -> str:
    return f"_{key}__valid"


def _slider_key(key: str, index: int) -> str:
    return f"_{key}__s{index}"


def matrix_input(
    key: str,
    label: str,
    default: Sequence[float] | Sequence[Sequence[float]],
    *,
    rows: int | tuple[int, int] | None = None,
    bound: float = 100.0,
    sliders: bool = False,
    slider_range: tuple[float, float] = (-5.0, 5.0),
    slider_labels: Sequence[str] | None = None,
    help: str | None = None,
) -> torch.Tensor:
    """A matrix typed as '1, 0; 0, 1' (a vector as '1, 0'); returns float64.

    rows=None means a vector of len(default); an int fixes the row count; (lo, hi)
    allows a variable number of rows. `key` is also the URL parameter. slider_labels
    names each component's slider (row by row), e.g. ["苹果 · edible", ...].
    """
    vector = rows is None
    grid = [list(map(float, default))] if vector else [list(map(float, r)) for r in default]
    cols = len(grid[0])
    default_text = format_matrix(grid, vector=vector)
    text = st.text_input(
        label, value=default_text, key=key, bind="query-params",
        help=help or t("input.format_help"), max_chars=2000,
    )
    try:
        grid = parse_matrix(text or "", rows, cols, bound)
        st.session_state[_valid_key(key)] = grid
    except ParseError as error:
        st.error(t(f"input.{error.key}", **error.values) + " " + t("input.kept_last"),
                 icon=":material/error:")
        grid = st.session_state.get(_valid_key(key), grid)
    if sliders and len(grid) * cols <= MAX_SLIDERS:
        _component_sliders(key, grid, vector, slider_range, slider_labels)
    values = torch.tensor(grid, dtype=torch.float64)
    return values[0] if vector else values


def _component_sliders(key: str, grid: list[list[float]], vector: bool,
                       slider_range: tuple[float, float],
                       labels: Sequence[str] | None) -> None:
    lo, hi = slider_range
    cols = len(grid[0])
    flat = [v for row in grid for v in row]
    columns = st.columns(cols)
    for index, value in enumerate(flat):
        slider_key = _slider_key(key, index)
        # Mirror the text (the source of truth) into the slider before it is drawn.
        st.session_state[slider_key] = min(max(value, lo), hi)
        label = labels[index] if labels else _component_label(index, cols, vector)
        with columns[index % cols]:
            st.slider(
                label, lo, hi, step=0.1, key=slider_key,
                on_change=_slider_moved, args=(key, len(flat), cols, vector),
                format="%.2f",
            )


def _component_label(index: int, cols: int, vector: bool) -> str:
    return f"[{index}]" if vector else f"[{index // cols}, {index % cols}]"


def _slider_moved(key: str, count: int, cols: int, vector: bool) -> None:
    flat = [float(st.session_state[_slider_key(key, i)]) for i in range(count)]
    grid = [flat[r : r + cols] for r in range(0, count, cols)]
    st.session_state[key] = format_matrix(grid, vector=vector)


def guard_state(key: str, valid: Callable[[object], bool], default: object = None,
                label: str | None = None) -> None:
    """A shared link (or a stale session) holding a value this widget cannot take: say
    so and fall back to the default, before the widget is drawn. In a browser
    Streamlit drops such URL values itself; this also covers values set in session
    state, which would otherwise raise inside the widget."""
    if key in st.session_state and not valid(st.session_state[key]):
        st.error(t("input.bad_link", name=label or key), icon=":material/error:")
        if default is None:
            del st.session_state[key]
        else:
            st.session_state[key] = default


def whole(lo: int, hi: int) -> Callable[[object], bool]:
    """Validator: an int in [lo, hi] (a float would make an int widget raise)."""
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def one_of(options: Sequence[object]) -> Callable[[object], bool]:
    return lambda v: v in options and not isinstance(v, bool)


def is_bool(value: object) -> bool:
    return isinstance(value, bool)
