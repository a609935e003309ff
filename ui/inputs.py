"""Inputs that validate, explain bad values and reproduce from a shared link.

Every helper takes a short name (namespaced by ui.state: 'kB' on the softmax stage is
the URL parameter 'softmax.kB'), draws its widget, keeps the URL in step and returns a
value the maths can use. A bad value, typed or arriving by link, never reaches the
maths: the widget shows one translated message and the page goes on with the last
valid value or the default.

- number: a whole or decimal number, as a box, a slider, or a slider with an exact
  box beside it (the classroom's gesture, with the precise worked numbers typable);
- choice: one of a few stable, language-neutral values, shown translated;
- toggle, text;
- matrix_input: a typed matrix or vector ("1, 0; 0, 1"), with optional named sliders.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
import torch

from ui import state
from ui.i18n import t
from ui.parse import ParseError, format_matrix, parse_matrix
from ui.state import choice_codec, number_codec, text_codec

MAX_SLIDERS = 8  # more sliders than this stop being a gesture and become a form


# --- Plain inputs -----------------------------------------------------------------------
def number(name: str, label: str, lo: float, hi: float, default: float, *,
           step: float | None = None, gesture: str = "box", fmt: str | None = None,
           help: str | None = None) -> Any:
    """A number in [lo, hi]: whole when lo, hi and default are ints.

    gesture: "box" (typed), "slider", or "both" (a slider with an exact box beside it;
    both share one range, so neither can silently change what the other shows).
    """
    whole = all(isinstance(v, int) for v in (lo, hi, default)) and \
        (step is None or isinstance(step, int))
    step = step if step is not None else (1 if whole else 0.1)
    key = state.qualify(name)
    codec = number_codec(lo, hi, whole)
    value = state.initial(key, default, codec, label)
    common = {"min_value": lo, "max_value": hi, "step": step, "help": help}
    if fmt:
        common["format"] = fmt
    if gesture == "both":
        value = _slider_and_box(key, label, value, common)
    else:
        widget = st.slider if gesture == "slider" else st.number_input
        value = widget(label, key=key, **common)
    state.write_url(key, value, default, codec)
    return value


def _slider_and_box(key: str, label: str, value: Any, common: dict) -> Any:
    """A slider and an exact box, both views of session_state[key]."""
    slider_key, box_key = f"_{key}{state.PRIVATE}s", f"_{key}{state.PRIVATE}n"
    st.session_state[slider_key] = st.session_state[box_key] = value
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        st.slider(label, key=slider_key, on_change=_copy, args=(slider_key, key), **common)
    with right:
        st.number_input(label, key=box_key, on_change=_copy, args=(box_key, key),
                        label_visibility="collapsed", **common)
    return st.session_state[key]


def _copy(source: str, target: str) -> None:
    st.session_state[target] = st.session_state[source]


def choice(name: str, label: str, options: Sequence[Any], default: Any, *,
           format_func: Callable[[Any], str] = str, widget: str = "radio",
           help: str | None = None, options_shrink: bool = False) -> Any:
    """One of `options` (stable values: the URL holds str(value) in every language).

    widget: "radio" (horizontal), "segmented", "select" or "slider" (select_slider).
    options_shrink: the options depend on another setting (steps of fewer blocks), so a
    chosen value that has just gone falls back to the default without a note (a link
    naming an impossible value still gets one).
    """
    key = state.qualify(name)
    codec = choice_codec(options)
    state.initial(key, default, codec, label, quiet_stale=options_shrink)
    options = list(options)
    # Labels translated now, in this run: Streamlit may format them again outside it.
    labels = {option: format_func(option) for option in options}
    format_func = labels.__getitem__
    if widget == "radio":
        value = st.radio(label, options, key=key, format_func=format_func, horizontal=True,
                         help=help)
    elif widget == "segmented":
        value = st.segmented_control(label, options, key=key, format_func=format_func,
                                     required=True, help=help)
    elif widget == "select":
        value = st.selectbox(label, options, key=key, format_func=format_func, help=help)
    else:
        value = st.select_slider(label, options, key=key, format_func=format_func, help=help)
    state.write_url(key, value, default, codec)
    return value


def toggle(name: str, label: str, default: bool, *, help: str | None = None) -> bool:
    key = state.qualify(name)
    state.initial(key, default, state.BOOL_CODEC, label)
    value = st.toggle(label, key=key, help=help)
    state.write_url(key, value, default, state.BOOL_CODEC)
    return value


def text(name: str, label: str, default: str, max_chars: int, *,
         help: str | None = None) -> str:
    """Free text, at most max_chars (the box's counter shows the same limit)."""
    key = state.qualify(name)
    codec = text_codec(max_chars)
    state.initial(key, default, codec, label)
    value = st.text_input(label, key=key, max_chars=max_chars, help=help) or ""
    state.write_url(key, value, default, codec)
    return value.strip()[:max_chars]


# --- Matrices and vectors ----------------------------------------------------------------
def matrix_input(
    name: str,
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
    allows a variable number of rows. With sliders, slider_labels names each component
    (row by row), e.g. ["q₁", "q₂"] or ["苹果 · edible", ...]: a learner and a screen
    reader need to know what each slider moves.
    """
    vector = rows is None
    grid = [list(map(float, default))] if vector else [list(map(float, r)) for r in default]
    cols = len(grid[0])
    key = state.qualify(name)
    default_text = format_matrix(grid, vector=vector)
    max_chars = 2000
    state.initial(key, default_text, text_codec(max_chars), label)
    text_value = st.text_input(label, key=key, help=help or t("input.format_help"),
                               max_chars=max_chars)
    if not vector:
        _format_note_once()  # below the box, so boxes side by side stay aligned
    state.write_url(key, text_value, default_text, text_codec(max_chars))
    valid_key = f"_{key}{state.PRIVATE}valid"
    try:
        grid = parse_matrix(text_value or "", rows, cols, bound)
        st.session_state[valid_key] = grid
    except ParseError as error:
        kept = st.session_state.get(valid_key)
        st.error(t(f"input.{error.key}", **error.values) + " "
                 + t("input.kept_last" if kept else "input.kept_default"),
                 icon=":material/error:")
        grid = kept or grid
    if sliders and len(grid) * cols <= MAX_SLIDERS:
        _component_sliders(key, grid, vector, slider_range, slider_labels)
    values = torch.tensor(grid, dtype=torch.float64)
    return values[0] if vector else values


def _format_note_once() -> None:
    """The matrix format, written once per run under the first matrix box."""
    if state.once_per_run("matrix_format_note"):
        st.caption(t("input.format_note"))


def _component_sliders(key: str, grid: list[list[float]], vector: bool,
                       slider_range: tuple[float, float], labels: Sequence[str] | None) -> None:
    flat = [v for row in grid for v in row]
    # One range for the slider and the box: it grows to include a typed value, so a
    # slider never shows (or later writes back) a clamped number the learner did not type.
    lo = min(slider_range[0], math.floor(min(flat)))
    hi = max(slider_range[1], math.ceil(max(flat)))
    cols = len(grid[0])
    for row in range(len(grid)):
        # One row of columns per matrix row: on a phone the columns stack, and the sliders
        # then still read row by row (W[1,1], W[1,2], W[2,1] ...).
        for col, column in enumerate(st.columns(cols)):
            index = row * cols + col
            slider_key = f"_{key}{state.PRIVATE}{index}"
            st.session_state[slider_key] = flat[index]
            label = labels[index] if labels else _component_label(index, cols, vector)
            with column:
                st.slider(label, float(lo), float(hi), step=0.1, key=slider_key,
                          on_change=_slider_moved, args=(key, index, cols, vector),
                          format="%.2f")


def _component_label(index: int, cols: int, vector: bool) -> str:
    """Fallback names: component 1, 2 ... or (row, column), counted from 1."""
    if vector:
        return t("input.component", i=index + 1)
    return t("input.cell", r=index // cols + 1, c=index % cols + 1)


def _slider_moved(key: str, index: int, cols: int, vector: bool) -> None:
    """Only the moved component changes; every other keeps exactly what was typed."""
    grid = st.session_state.get(f"_{key}{state.PRIVATE}valid")
    if grid is None:
        return
    flat = [v for row in grid for v in row]
    flat[index] = round(float(st.session_state[f"_{key}{state.PRIVATE}{index}"]), 4)
    st.session_state[key] = format_matrix([flat[r:r + cols] for r in range(0, len(flat), cols)],
                                          vector=vector)
