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

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st
import torch

from tinyformer.lessons.chain import (
    DEFAULTS,
    SHAPES,
    ChainParams,
    ChainRun,
    run_chain,
    unmasked_weights,
)
from ui import classroom, state
from ui.fmt import DECIMALS, num
from ui.i18n import current_lang, t
from ui.inputs import matrix_input
from ui.page import link_to
from ui.parse import MAX_TEXT, ParseError, format_matrix, parse_matrix
from ui.stages import by_id
from ui.state import text_codec

# How each value is named on screen (a formula's symbol: the same in both languages).
SYMBOLS = {"X": "X", "Wq": "W_q", "Wk": "W_k", "Wv": "W_v", "W1": "W_1", "W2": "W_2",
           "U": "U"}
# The stages that draw each value's box (edit): a bad value there is the box's message.
EDITED_ON = {"X": ("tokens", "qkv"), "Wq": ("qkv",), "Wk": ("qkv",), "Wv": ("qkv",),
             "W1": ("ffn",), "W2": ("ffn",), "U": ("logits",)}
_CODEC = text_codec(MAX_TEXT)
_RUN_VALUES = "_chain.~run"  # (run number, {name: tensor}) of the values drawn or read this run


def key(name: str) -> str:
    return f"chain.{name}"


def _kept(name: str) -> str:
    return f"_{key(name)}{state.PRIVATE}kept"


@functools.cache
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
    try:
        grid = _parsed(text or "", name)
    except ParseError:  # a bad link: the box says why on the stage that draws it, else a note
        grid = st.session_state.get(f"_{key(name)}{state.PRIVATE}valid") or DEFAULTS[name]
        if state.current_stage() not in EDITED_ON.get(name, ()):
            rows, cols = SHAPES[name]
            state.bad_value_note(f"{SYMBOLS[name]} [{rows} × {cols}]")
            text = format_matrix([list(map(float, row)) for row in grid])
            st.session_state[key(name)] = text  # the note once, and a link that works
    st.session_state[_kept(name)] = text
    state.write_url(key(name), text, default, _CODEC)
    drawn[name] = torch.tensor(grid, dtype=torch.float64)  # the strip and the page both ask
    return drawn[name]


@functools.lru_cache(maxsize=256)
def _parsed(text: str, name: str) -> tuple[tuple[float, ...], ...]:
    """A value's text as numbers, once per distinct text (nearly always the default)."""
    rows, cols = SHAPES[name]
    return tuple(map(tuple, parse_matrix(text, rows, cols, 100.0)))


def params() -> ChainParams:
    return ChainParams(**{name: value(name) for name in DEFAULTS})


def run() -> ChainRun:
    """The chain with the learner's values: call it after the page's own `edit` boxes.
    The run is shared by every session with the same values: read it, never change it."""
    values = params()
    return _run_of(tuple((name, _exact(getattr(values, name))) for name in DEFAULTS))


@functools.lru_cache(maxsize=256)
def _run_of(values: tuple[tuple[str, tuple], ...]) -> ChainRun:
    """A page and its strip both read the chain, on every full run, mostly unchanged:
    computed once per distinct set of values (the defaults for nearly every learner)."""
    return run_chain(ChainParams(**{name: torch.tensor(grid, dtype=torch.float64)
                                    for name, grid in values}))


def _exact(tensor: torch.Tensor) -> tuple:
    return tuple(map(tuple, tensor.tolist()))


# --- The strip: where this stage sits in the chain (issue 16, part 2) -----------------
@dataclass(frozen=True)
class End:
    """One side of a stage's strip: a tensor of the chain (or a few of the same shape,
    by symbol), named, with the stage it comes from (entering) or goes to (leaving)."""

    name: str  # text key chain.t_<name>: what the tensor is
    tensor: Callable[[ChainRun], torch.Tensor | dict[str, torch.Tensor]]
    link: str | None  # the stage it comes from or goes to; None: none
    gate: str | None = None  # an exercise of the stage whose answer the numbers would give


def _qkv(r: ChainRun) -> dict[str, torch.Tensor]:
    return {"Q": r.Q, "K": r.K, "V": r.V}


# Stage id -> (entering, leaving). The lesson's order decides the links: a tensor enters
# from the stage that computed it and leaves for the next stage that reads it. No strip
# shows a number that an exercise on its page asks for (stage 2's s₂,₁, stage 3's a₁,₀):
# 2 hands on Q, K, V, and 3 the weights of ？, the one row that no mask changes.
STRIP: dict[str, tuple[End, End]] = {
    "tokens": (End("ids", lambda r: r.ids, None), End("X", lambda r: r.X, "qkv")),
    "qkv": (End("X", lambda r: r.X, "tokens"), End("QKV", _qkv, "softmax")),
    "softmax": (End("QKV", _qkv, "qkv"), End("W3", lambda r: unmasked_weights(r)[-1], "masks")),
    "scaling": (End("S", lambda r: r.scores, "qkv"), End("S2", lambda r: r.scaled, "masks")),
    "masks": (End("S2", lambda r: r.scaled, "scaling"),
              End("A", lambda r: r.A, "residual_norm", gate="self")),  # A[0] = v_0: a₂,₂ = 1
    "multi_head": (End("A1", lambda r: r.A, "masks"), End("A", lambda r: r.A, "residual_norm")),
    "ffn": (End("H", lambda r: r.H, "masks"), End("F", lambda r: r.ffn.output, "residual_norm")),
    "residual_norm": (End("A", lambda r: r.A, "masks"), End("Y", lambda r: r.Y, "logits")),
    "logits": (End("Y3", lambda r: r.Y[-1], "residual_norm"), End("P", lambda r: r.probs, None)),
}
# Stages outside the chain say so in one line (chain.line_<id>); the overview says nothing.
LINES = ("ngrams", "embeddings", "bpe", "context", "positions", "rope", "swiglu_moe",
         "pre_post_norm", "decoding", "kv_cache", "forward", "backbones", "training",
         "inside", "generate")


def numbers(tensor: torch.Tensor) -> str:
    """A tensor in one line, as a matrix box takes it: rows separated by ';'. One number
    of decimals for the whole tensor: none when every number is whole, else 3."""
    flat = tensor.flatten().tolist()
    dec = 0 if all(float(v).is_integer() for v in flat) else DECIMALS
    rows = tensor.tolist() if tensor.dim() == 2 else [tensor.tolist()]
    return "[" + "; ".join(", ".join(num(v, dec) for v in row) for row in rows) + "]"


def shape_text(tensor: torch.Tensor) -> str:
    return "[" + " × ".join(str(n) for n in tensor.shape) + "]"


def strip(stage_id: str) -> None:
    """Under a stage's title: the running example's tensor entering this stage (with a
    link to where it was computed) and the one leaving it (with a link to where it is
    read next); a line for the stages outside the chain. In presenter view one line: the
    numbers are in each name's tooltip."""
    if stage_id in LINES:
        st.caption(t("chain.label") + " · " + t(f"chain.line_{stage_id}"),
                   help=t("chain.words"))
        return
    if stage_id not in STRIP:
        return
    r = run()
    presenting = classroom.presenting()
    with st.container(horizontal=True, vertical_alignment="center", gap="small",
                      key="chain_strip"):
        st.caption(t("chain.label"), help=t("chain.words"), width="content")
        for side, end in zip(("in", "out"), STRIP[stage_id], strict=True):
            value = end.tensor(r)
            parts = value if isinstance(value, dict) else {"": value}
            gap = "" if current_lang() == "zh" else " "  # no space after a full-width colon
            named = (f"{t(f'chain.{side}')}{gap}{t(f'chain.t_{end.name}')} "
                     f"{shape_text(next(iter(parts.values())))}")
            shown = ", ".join(f"{symbol} = {numbers(v)}" if symbol else numbers(v)
                              for symbol, v in parts.items())
            if end.gate is not None and \
                    st.session_state.get(state.kit_key(f"ex.{end.gate}.answered")) is None:
                wait = t("chain.after_answer")
                st.caption(f"{named}（{wait}）" if gap == "" else f"{named} ({wait})",
                           width="content")
            elif presenting:
                st.caption(named, help=shown, width="content")
            else:
                colon = ("：" if gap == "" else ": ") if len(parts) > 1 else " = "
                st.caption(f"{named}{colon}{shown}", width="content")
            if end.link is not None:
                target = by_id(end.link)
                link_to(target, t(f"chain.{side}_link", n=target.number),
                        icon=":material/arrow_back:" if side == "in"
                        else ":material/arrow_forward:")
            elif side == "out":
                st.caption(t("chain.end"), width="content")
