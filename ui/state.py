"""Where every input's value lives, and the one way it is kept in the URL.

Session state holds a value while the learner works; the URL holds it so that a shared
link reproduces the page. Every value that a link carries goes through this module:
`initial` (the value to draw with), `write_url` (keep the URL in step), and a `Codec`
(how the value is written in the URL, and what counts as valid). The codecs of every
kind of value live here too.

Key names, one rule (docs/architecture.md, "State and URLs"):
- a stage's own value is "<stage id>.<name>" ("softmax.kB"): Streamlit keeps ONE
  session state for all the pages of a tab, and two pages that reuse a short key
  ("V", "Q") would crash each other. The stage id is the page's URL path.
- a value shared on purpose by several stages lives in a listed namespace
  (SHARED_NAMESPACES: "hand.q") and means the same thing, with the same shape, on each;
- the frame's own values (GLOBAL_KEYS: language, presenter view, device, class, sentence) have no
  prefix.
Any other name, dotted or not, is the current stage's.

Booleans are spelled one way: "true" / "false" ("1" / "0" in old links still read).
Links made before the stage ids matched the page paths ("multihead.h") still open.

The URL is the source of truth when a page is entered: every value starts from its URL
parameter (or its default), never from what another visit left in session state;
shared and global values keep the session's value when the URL does not name them. A
value the kit cannot use (from a link or a stale session) falls back to its default
with a note.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from ui.i18n import LANG_PARAM as LANG
from ui.i18n import t

PRESENT, DEVICE, CLASS, SENTENCE = "present", "device", "class", "sentence"
# The frame's values: the same on every page (CLASS: the class session's code,
# ui/class_session.py; SENTENCE: the teacher's own sentence, ui/sentence.py)
GLOBAL_KEYS = (LANG, PRESENT, DEVICE, CLASS, SENTENCE)
# Values several stages share on purpose: stages 3-4's hand example (ui/hand_example.py)
# and the running example's hand model, the chain of stages 1-10 (ui/chain.py)
SHARED_NAMESPACES = ("hand", "chain")
# URL prefixes of old links -> today's stage ids (the ids now match the page paths).
OLD_PREFIXES = {"ngram": "ngrams", "multihead": "multi_head", "kvcache": "kv_cache",
                "moe": "swiglu_moe", "residual": "residual_norm",
                "prepost": "pre_post_norm"}

_STAGE = "_stage"  # the stage this run draws
# ...also on the session's run context (as ui.i18n keeps the language), which belongs to
# this one session; enter() is its only writer.
_STAGE_ON_CONTEXT = "_tinyformer_stage"
_ENTERED = "_entered"  # keys read since the stage was entered
PRIVATE = "~"  # widget keys that mirror a value: "softmax.kB~0"
_RUN = "_run"  # counts script runs, for things drawn once per run
_URL = "_url_now"  # the page's URL parameters as last written, see url_now()
_FRAME = "_frame_drawn"  # the global values of the last whole run


def enter(stage_id: str) -> None:
    """Called once per run by the frame: a new stage starts from its URL."""
    new_run()
    _rename_old_keys()
    now = st.session_state.setdefault(_URL, {})
    now.clear()
    now.update({key: st.query_params[key] for key in st.query_params})
    if st.session_state.get(_STAGE) != stage_id:
        st.session_state[_STAGE] = stage_id
        st.session_state[_ENTERED] = set()
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None:  # read 50-100 times a run: kept where no lookup costs
        setattr(ctx, _STAGE_ON_CONTEXT, stage_id)


def _rename_old_keys() -> None:
    for key in list(st.query_params):
        prefix, dot, rest = key.partition(".")
        if dot and prefix in OLD_PREFIXES:
            new_key = f"{OLD_PREFIXES[prefix]}.{rest}"
            value = st.query_params[key]
            del st.query_params[key]
            st.query_params.setdefault(new_key, value)


def new_run() -> None:
    """A page run, or a section's own rerun: things drawn once per run start again."""
    st.session_state[_RUN] = st.session_state.get(_RUN, 0) + 1


def url_now() -> dict[str, str]:
    """The page's URL parameters, kept up to date by every write, in a plain dict that
    stays the same object for the session: a download made later, outside any run,
    reads the URL of the moment it is asked for."""
    return st.session_state.setdefault(_URL, {})


def current_stage() -> str:
    ctx = get_script_run_ctx(suppress_warning=True)
    kept = ctx.__dict__.get(_STAGE_ON_CONTEXT) if ctx is not None else None
    return kept if kept is not None else st.session_state.get(_STAGE, "home")


def qualify(name: str) -> str:
    """'kB' -> 'softmax.kB' on the softmax stage; 'hand.q' and 'lang' stay as they are."""
    return name if is_shared(name) else f"{current_stage()}.{name}"


def private(name: str, part: str = "") -> str:
    """A widget key that is not a URL parameter: '_softmax.kB~0'."""
    return f"_{qualify(name)}{PRIVATE}{part}"


def is_shared(key: str) -> bool:
    """A global value, or one in a namespace that several stages share on purpose."""
    return key in GLOBAL_KEYS or key.split(".", 1)[0] in SHARED_NAMESPACES


# --- Codecs: how each kind of value is written in the URL ------------------------------
@dataclass(frozen=True)
class Codec:
    """How a value is written in the URL, and what counts as a valid value."""

    encode: Callable[[Any], str]
    decode: Callable[[str], Any]  # raises ValueError on a bad text
    valid: Callable[[Any], bool]


_BOOL = {"true": True, "false": False, "1": True, "0": False}  # "1": links before today
BOOL_CODEC = Codec(encode=lambda v: "true" if v else "false",
                   decode=lambda raw: _BOOL.get(raw.lower()),
                   valid=lambda v: isinstance(v, bool))


def number_codec(lo: float, hi: float, whole: bool) -> Codec:
    def valid(v: Any) -> bool:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        if whole and not isinstance(v, int):
            return False
        return math.isfinite(v) and lo <= v <= hi

    return Codec(encode=number_text, decode=int if whole else float, valid=valid)


def number_text(value: float) -> str:
    """Exact and short: 5, 0.5, 0.7071067811865476 (a link must reproduce the digits)."""
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def choice_codec(options: Sequence[Any]) -> Codec:
    """One of a few stable values; the URL holds str(value) in every language."""
    by_text = {str(o): o for o in options}

    def decode(raw: str) -> Any:
        if raw not in by_text:
            raise ValueError(raw)
        return by_text[raw]

    return Codec(encode=str, decode=decode,
                 valid=lambda v: not isinstance(v, bool) and v in options
                 and type(v) is type(by_text.get(str(v))))


def text_codec(max_chars: int) -> Codec:
    return Codec(encode=str, decode=str,
                 valid=lambda v: isinstance(v, str) and len(v) <= max_chars)


def _decode_cell(raw: str) -> tuple[int, int]:
    row, col = (int(part) for part in raw.split(","))
    return row, col


# A clicked heatmap cell "row,col" (None: no cell).
CELL_CODEC = Codec(
    encode=lambda cell: f"{cell[0]},{cell[1]}",
    decode=_decode_cell,
    valid=lambda cell: cell is None or (isinstance(cell, tuple) and len(cell) == 2
                                        and all(isinstance(v, int) for v in cell)),
)


def step_codec(total: int) -> Codec:
    """A worked example's step: 0 (every step) to total."""
    return Codec(encode=str, decode=int,
                 valid=lambda v: isinstance(v, int) and not isinstance(v, bool)
                 and 0 <= v <= total)


# --- Reading and writing values ----------------------------------------------------------
def initial(key: str, default: Any, codec: Codec, label: str | None, *,
            quiet_stale: bool = False) -> Any:
    """The value to draw with, before its widget: from the URL on entering the stage,
    else from session state; a value that is not valid falls back to the default
    (with a note naming `label`, unless label is None; quiet_stale: no note for a
    session value that another setting has just made impossible)."""
    entered = st.session_state.setdefault(_ENTERED, set())
    fresh = key not in entered or key not in st.session_state
    entered.add(key)
    if fresh:
        value = _from_url(key, default, codec, label)
    else:
        value = st.session_state[key]
        if not _ok(codec, value):
            bad_value_note(None if quiet_stale else label)
            value = default
    st.session_state[key] = value
    return value


def _from_url(key: str, default: Any, codec: Codec, label: str | None) -> Any:
    raw = st.query_params.get(key)
    if raw is None:
        kept = st.session_state.get(key)
        if is_shared(key) and kept is not None and _ok(codec, kept):
            return kept
        return default
    try:
        value = codec.decode(raw)
    except (ValueError, TypeError, OverflowError):
        value = None
    if value is None or not _ok(codec, value):
        bad_value_note(label)
        return default
    return value


def _ok(codec: Codec, value: Any) -> bool:
    try:
        return bool(codec.valid(value))
    except (TypeError, ValueError):
        return False


def bad_value_note(label: str | None) -> None:
    if label is not None:
        st.error(t("input.bad_link", name=label), icon=":material/error:")


def write_url(key: str, value: Any, default: Any, codec: Codec) -> None:
    """Keep the URL in step: the value when it differs from its default, else nothing.
    (default=None with a value: always written, as the language is.)"""
    now = url_now()
    if value == default:
        if key in st.query_params:
            del st.query_params[key]
        now.pop(key, None)
        return
    text = codec.encode(value)
    if st.query_params.get(key) != text:
        st.query_params[key] = text
    now[key] = text


def set_value(key: str, value: Any, default: Any, codec: Codec) -> None:
    """Change a value from a callback (a switch of the frame): session and URL."""
    st.session_state[key] = value
    write_url(key, value, default, codec)


def link_params() -> dict[str, str]:
    """What every link between our pages carries: the frame's values now in the URL."""
    now = url_now()
    return {key: now[key] for key in GLOBAL_KEYS if key in now}


def frame_drawn() -> None:
    """A whole run draws the page with the global values it has now."""
    st.session_state[_FRAME] = _frame_values()


def frame_changed() -> bool:
    """Has a global value (language, presenter view, device) changed since the page was
    last drawn whole? A section's own rerun must then become a whole run."""
    return st.session_state.get(_FRAME, _frame_values()) != _frame_values()


def _frame_values() -> tuple:
    return tuple(st.session_state.get(key) for key in GLOBAL_KEYS)


def once_per_run(name: str) -> bool:
    """True the first time it is asked in this run, then False until the next run."""
    flag = kit_key(name)
    if st.session_state.get(flag) == st.session_state.get(_RUN):
        return False
    st.session_state[flag] = st.session_state.get(_RUN)
    return True


def kit_key(name: str) -> str:
    """A key for kit state that is no input (a clicked cell, an exercise answer)."""
    return f"_{current_stage()}.{name}"
