"""The running example's hand model on the pages: its values, shared by stages 1-10.

tinyformer.lessons.chain computes the chain; this module keeps its editable values
(the chain's embedding rows and weights) in the shared namespace "chain" (URL keys
chain.X, chain.Wq ...: docs/architecture.md, "State and URLs"). A value is edited on the
stage that teaches it (`edit`) and read by every later stage (`run`), so an edit made
on stage 2 is what stage 10.1 computes with, and each chain stage writes the edited
values into its own URL: a shared link carries the edited chain.

Streamlit forgets a widget's value on a run that does not draw the widget, so each
value is also kept under a key that is no widget's, and restored from it.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st
import torch

from tinyformer.lessons.chain import DEFAULTS, SHAPES, ChainParams, ChainRun, run_chain
from ui import state
from ui.inputs import matrix_input
from ui.parse import MAX_TEXT, ParseError, format_matrix, parse_matrix
from ui.state import text_codec

# How each value is named on screen (a formula's symbol: the same in both languages).
SYMBOLS = {"X": "X", "Wq": "W_q", "Wk": "W_k", "Wv": "W_v", "W1": "W_1", "W2": "W_2",
           "U": "U"}
_CODEC = text_codec(MAX_TEXT)
_RUN_VALUES = "_chain~run"  # (run number, {name: tensor}) of the values drawn this run


def key(name: str) -> str:
    return f"chain.{name}"


def _kept(name: str) -> str:
    return f"_{key(name)}{state.PRIVATE}kept"


def _default_text(name: str) -> str:
    return format_matrix([list(map(float, row)) for row in DEFAULTS[name]])


def _restore(name: str) -> None:
    """Bring back a value that Streamlit dropped while a page without its box was shown."""
    if key(name) not in st.session_state and _kept(name) in st.session_state:
        st.session_state[key(name)] = st.session_state[_kept(name)]


def _drawn_this_run() -> dict[str, torch.Tensor]:
    run = st.session_state.get(state._RUN)
    found = st.session_state.get(_RUN_VALUES)
    if found is None or found[0] != run:
        found = (run, {})
        st.session_state[_RUN_VALUES] = found
    return found[1]


def edit(name: str, label: str | None = None, *, sliders: bool = True,
         slider_labels: Sequence[str] | None = None) -> torch.Tensor:
    """The box (and sliders) of one chain value, e.g. edit("X") on stage 2; returns it."""
    _restore(name)
    rows, cols = SHAPES[name]
    value = matrix_input(key(name), label or f"{SYMBOLS[name]} [{rows} × {cols}]",
                         DEFAULTS[name], rows=rows, sliders=sliders,
                         slider_labels=slider_labels)
    st.session_state[_kept(name)] = st.session_state[key(name)]
    _drawn_this_run()[name] = value
    return value


def value(name: str) -> torch.Tensor:
    """One chain value as the learner left it (default, URL, or an edit on any stage),
    without drawing its box; also written into this page's URL."""
    drawn = _drawn_this_run()
    if name in drawn:
        return drawn[name]
    _restore(name)
    default = _default_text(name)
    text = state.initial(key(name), default, _CODEC, SYMBOLS[name])
    st.session_state[_kept(name)] = text
    state.write_url(key(name), text, default, _CODEC)
    try:
        grid = parse_matrix(text or "", SHAPES[name][0], SHAPES[name][1], 100.0)
    except ParseError:  # the box that holds it says why, on the stage that draws it
        grid = st.session_state.get(f"_{key(name)}{state.PRIVATE}valid") or DEFAULTS[name]
    return torch.tensor(grid, dtype=torch.float64)


def params() -> ChainParams:
    return ChainParams(**{name: value(name) for name in DEFAULTS})


def run() -> ChainRun:
    """The chain with the learner's values: call it after the page's own `edit` boxes."""
    return run_chain(params())
