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
from dataclasses import dataclass
from typing import Any

import streamlit as st
import torch

from ui import state
from ui.i18n import t
from ui.parse import MAX_TEXT, ParseError, format_matrix, parse_matrix
from ui.state import choice_codec, number_codec, text_codec

MAX_SLIDERS = 8  # more sliders than this stop being a gesture and become a form
SLIDERS_PER_LINE = 4  # at most, side by side: more are too narrow to drag on a phone
SLIDER_GRID_KEY = "sliders-"  # + sliders per line + "-" + the matrix's key
# A line of n sliders: each 1/n of it, less its share of the gaps, so the n+1st starts
# the next line and a short last line keeps the widths of the others.
SLIDER_GRID_CSS = f'div[class*="st-key-{SLIDER_GRID_KEY}"] {{ gap: 1rem; }}\n' + "".join(
    f'div[class*="st-key-{SLIDER_GRID_KEY}{n}-"] > div '
    f"{{ flex: 0 0 calc((100% - {n - 1}rem) / {n}); min-width: 0; }}\n"
    for n in range(1, SLIDERS_PER_LINE + 1))


# --- Plain inputs -----------------------------------------------------------------------
def number(name: str, label: str, lo: float, hi: float, default: float, *,
           step: float | None = None, gesture: str = "box", fmt: str | None = None,
           help: str | None = None) -> Any:
    """A number in [lo, hi]: whole when lo, hi and default are ints.

    gesture: "box" (typed), "slider", or "both" (a slider with an exact box beside it;
    both share one range, so neither can silently change what the other shows).

    A typed number outside [lo, hi] is clamped to it, a fraction in a box of whole
    numbers rounded; an empty box, or one the browser could not read as a number
    (letters, 1e309), keeps the last value. Each time a translated note under the box
    says which value the page uses. (Measured in Chromium, Streamlit's own box, given a
    range, kept showing an out-of-range number while the page used the old one,
    explained only by its English tooltip, and turned an unreadable entry into its
    minimum without a word; a box of whole numbers read "1e5" as 1 and ignored
    99999999999999999999. So the box gets no range and holds decimals: we check.)
    """
    whole = all(isinstance(v, int) for v in (lo, hi, default)) and \
        (step is None or isinstance(step, int))
    step = step if step is not None else (1 if whole else 0.1)
    key = state.qualify(name)
    codec = number_codec(lo, hi, whole)
    sent = st.session_state.get(key)
    if whole and isinstance(sent, float) and sent.is_integer():
        st.session_state[key] = int(sent)  # the box holds decimals: 4.0 is the 4 it shows
    value = state.initial(key, default, codec, label)
    limits = _Limits(lo, hi, whole, label)
    slider = {"min_value": lo, "max_value": hi, "step": step, "help": help,
              **({"format": fmt} if fmt else {})}
    box = {"value": None, "step": float(step), "help": help,
           "format": fmt or ("%.0f" if whole else None)}
    if gesture == "both":
        value = _slider_and_box(key, label, value, limits, slider, box)
    elif gesture == "slider":
        value = st.slider(label, key=key, **slider)
    else:
        st.number_input(label, key=key, on_change=_box_changed, args=(key, key, limits),
                        **box)
        value = st.session_state[key]
    _number_note(key)
    st.session_state[_last_key(key)] = value
    state.write_url(key, value, default, codec)
    return value


@dataclass(frozen=True)
class _Limits:
    lo: float
    hi: float
    whole: bool
    label: str


def _last_key(key: str) -> str:
    return f"_{key}{state.PRIVATE}last"  # the value the page drew with last


def _note_key(key: str) -> str:
    return f"_{key}{state.PRIVATE}note"  # what the last edit's check found


def row():
    """Inputs side by side, aligned at the bottom, on a phone too: one block, where
    st.columns sends three (every message costs a full run about 0.1 ms)."""
    return st.container(horizontal=True, vertical_alignment="bottom", gap="small")


BOX_WIDTH = 130  # px: the exact box beside a slider holds "-0.05" and its - / + buttons


def _slider_and_box(key: str, label: str, value: Any, limits: _Limits, slider: dict,
                    box: dict) -> Any:
    """A slider and an exact box, both views of session_state[key]."""
    slider_key, box_key = f"_{key}{state.PRIVATE}s", f"_{key}{state.PRIVATE}n"
    st.session_state[slider_key] = st.session_state[box_key] = value
    with row():
        st.slider(label, key=slider_key, on_change=_copy, args=(slider_key, key), **slider)
        st.number_input(label, key=box_key, on_change=_box_changed,
                        args=(box_key, key, limits), label_visibility="collapsed",
                        width=BOX_WIDTH, **box)
    return st.session_state[key]


def _copy(source: str, target: str) -> None:
    st.session_state[target] = st.session_state[source]


def _box_changed(box_key: str, key: str, limits: _Limits) -> None:
    """A typed number, checked before the run that uses it: clamped into its range, or,
    when the box holds none, the last value again; the box then shows what is used."""
    typed = st.session_state.get(box_key)
    last = st.session_state.get(_last_key(key), st.session_state.get(key))
    if typed is None or not math.isfinite(typed):
        used, note = last, ("input.number_missing", None)
    elif not limits.lo <= typed <= limits.hi:
        used = min(max(typed, limits.lo), limits.hi)
        note = ("input.number_clamped", typed)
    elif limits.whole and not float(typed).is_integer():
        # Half away from zero, as taught (2.5 -> 3, -2.5 -> -3); Python's round would
        # give 2.
        used = math.copysign(math.floor(abs(typed) + 0.5), typed)
        note = ("input.number_whole", typed)
    else:
        used, note = typed, None
    if limits.whole:
        used = int(used)
    st.session_state[box_key] = st.session_state[key] = used
    if note is not None:
        st.session_state[_note_key(key)] = (*note, used, limits)


def _number_note(key: str) -> None:
    """The note of the edit just checked, under its box, in this run only."""
    found = st.session_state.pop(_note_key(key), None)
    if found is None:
        return
    message, typed, used, limits = found
    if message == "input.number_missing":
        refuse_number(limits.label, used)
        return
    st.warning(t(message, name=limits.label, typed=number_shown(typed),
                 lo=number_shown(limits.lo), hi=number_shown(limits.hi),
                 used=number_shown(used)), icon=":material/warning:")


def refuse_number(label: str, kept: float | None = None) -> None:
    """The note for a number box that holds no usable number: empty, or what the browser
    could not read as one (letters; 1e309, beyond a float), which arrives as no value or as
    infinity. Every number box of the app says it in these words (ui.exercise's answer
    boxes too); `kept`: the value the page goes on with, when there is one."""
    if kept is None:
        note = t("input.number_none", name=label)
    else:
        note = t("input.number_missing", name=label, used=number_shown(kept))
    st.warning(note, icon=":material/warning:")


def number_shown(value: float | None) -> str:
    """A number as a note shows it: 12, 0.25, 1e+20 (never 100000000000000000000.0)."""
    if value is None:
        return ""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


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
    """Free text, at most max_chars: a longer text (pasted) keeps its first max_chars
    characters, and a translated note says so. (Streamlit's own limit would drop the
    whole paste without a word, so the box gets none and the limit is ours.)"""
    key = state.qualify(name)
    codec = text_codec(max_chars)
    state.initial(key, default, codec, label)
    st.text_input(label, key=key, help=help, on_change=text_changed,
                  args=(key, max_chars, False))
    text_note(key)
    value = st.session_state[key] or ""
    state.write_url(key, value, default, codec)
    return value.strip()[:max_chars]


def text_changed(key: str, limit: int, refuse: bool = False) -> None:
    """A text box's on_change: a text longer than `limit` becomes its first `limit`
    characters, or (refuse) the text the box held before; text_note(key), drawn under the
    box, says which in the run that follows. (Any text box with a limit: Streamlit's own
    max_chars drops a longer paste without a word.)"""
    typed = st.session_state.get(key) or ""
    if len(typed) <= limit:
        return
    if refuse:
        st.session_state[key] = st.session_state.get(_last_key(key), "")
        st.session_state[_note_key(key)] = ("input.too_long", len(typed), limit)
    else:
        st.session_state[key] = typed[:limit]
        st.session_state[_note_key(key)] = ("input.text_cut", len(typed), limit)


def text_note(key: str) -> None:
    found = st.session_state.pop(_note_key(key), None)
    if found is not None:
        message, length, limit = found
        extra = " " + t("input.kept_last") if message == "input.too_long" else ""
        st.warning(t(message, n=length, limit=limit) + extra, icon=":material/warning:")


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
    (row by row), e.g. ["q[0]", "q[1]"] or ["苹果 · edible", ...]: a learner and a screen
    reader need to know what each slider moves.
    """
    vector = rows is None
    grid = [list(map(float, default))] if vector else [list(map(float, r)) for r in default]
    cols = len(grid[0])
    key = state.qualify(name)
    default_text = format_matrix(grid, vector=vector)
    max_chars = MAX_TEXT
    state.initial(key, default_text, text_codec(max_chars), label)
    text_value = st.text_input(label, key=key, help=help or t("input.format_help"),
                               on_change=text_changed, args=(key, max_chars, True))
    text_note(key)
    st.session_state[_last_key(key)] = text_value
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
    per_line = min(cols, SLIDERS_PER_LINE)
    # One line per matrix row (W[0,0] W[0,1] / W[1,0] ...), on a phone too: the frame's
    # CSS (SLIDER_GRID_CSS) sets the gap and gives each slider 1/per_line of the line.
    # One block for the whole matrix, not one per row: each block is one more message on
    # every full run (docs/deploy.md). Streamlit's columns would stack on a phone.
    with st.container(horizontal=True, wrap=True, key=f"{SLIDER_GRID_KEY}{per_line}-{key}"):
        for index, value in enumerate(flat):
            slider_key = f"_{key}{state.PRIVATE}{index}"
            st.session_state[slider_key] = value
            label = labels[index] if labels else _component_label(index, cols, vector)
            st.slider(label, float(lo), float(hi), step=0.1, key=slider_key,
                      on_change=_slider_moved, args=(key, index, cols, vector),
                      format="%.2f")


def _component_label(index: int, cols: int, vector: bool) -> str:
    """Fallback names: component 0, 1 ... or (row, column), counted from 0 as PyTorch
    counts."""
    if vector:
        return t("input.component", i=index)
    return t("input.cell", r=index // cols, c=index % cols)


def _slider_moved(key: str, index: int, cols: int, vector: bool) -> None:
    """Only the moved component changes; every other keeps exactly what was typed."""
    grid = st.session_state.get(f"_{key}{state.PRIVATE}valid")
    if grid is None:
        return
    flat = [v for row in grid for v in row]
    flat[index] = round(float(st.session_state[f"_{key}{state.PRIVATE}{index}"]), 4)
    st.session_state[key] = format_matrix([flat[r:r + cols] for r in range(0, len(flat), cols)],
                                          vector=vector)
