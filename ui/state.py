"""Where every input's value lives: session state while the learner works, the URL
so that a shared link reproduces the page.

One naming rule for keys: the kit prefixes every key with the current stage's id
("softmax.kB", "masks.causal"), because Streamlit keeps ONE session state for all the
pages of a tab and two pages that reuse a short key ("V", "Q") crash each other. A
name that already holds a dot ("hand.q") is deliberately shared by several stages and
must mean the same thing, with the same shape, on each of them.

The URL is the source of truth when a page is entered: every value starts from its URL
parameter (or its default), never from what another visit left in session state;
shared values keep the session's value when the URL does not name them. A value the
kit cannot use (from a link or a stale session) falls back to its default with a note.
The kit writes the URL itself rather than through Streamlit's bind="query-params",
which stores a radio's translated label (a link would then depend on the language) and
drops a bad value without a word.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui.i18n import t

_STAGE = "_stage"  # the stage this run draws
_ENTERED = "_entered"  # keys read since the stage was entered
PRIVATE = "~"  # widget keys that mirror a value: "softmax.kB~0"


_RUN = "_run"  # counts script runs, for things drawn once per run


_URL = "_url_now"  # the page's URL parameters as last written, see url_now()


def enter(stage_id: str) -> None:
    """Called once per run by the page set-up: a new stage starts from its URL."""
    new_run()
    now = st.session_state.setdefault(_URL, {})
    now.clear()
    now.update({key: st.query_params[key] for key in st.query_params})
    if st.session_state.get(_STAGE) != stage_id:
        st.session_state[_STAGE] = stage_id
        st.session_state[_ENTERED] = set()


def new_run() -> None:
    """A page run, or a section's own rerun: things drawn once per run start again."""
    st.session_state[_RUN] = st.session_state.get(_RUN, 0) + 1


def url_now() -> dict[str, str]:
    """The page's URL parameters, kept up to date by every write, in a plain dict that
    stays the same object for the session: a download made later, outside any run,
    reads the URL of the moment it is asked for."""
    return st.session_state.setdefault(_URL, {})


def current_stage() -> str:
    return st.session_state.get(_STAGE, "home")


def qualify(name: str) -> str:
    """'kB' -> 'softmax.kB' on the softmax stage; 'hand.q' stays (shared on purpose)."""
    return name if "." in name else f"{current_stage()}.{name}"


def private(name: str, part: str = "") -> str:
    """A widget key that is not a URL parameter: '_softmax.kB~0'."""
    return f"_{qualify(name)}{PRIVATE}{part}"


def is_shared(key: str) -> bool:
    return key.split(".", 1)[0] != current_stage()


@dataclass(frozen=True)
class Codec:
    """How a value is written in the URL, and what counts as a valid value."""

    encode: Callable[[Any], str]
    decode: Callable[[str], Any]  # raises ValueError on a bad text
    valid: Callable[[Any], bool]


_BOOL = {"true": True, "false": False}
BOOL_CODEC = Codec(encode=lambda v: "true" if v else "false",
                   decode=lambda raw: _BOOL.get(raw.lower()),
                   valid=lambda v: isinstance(v, bool))


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


def _from_url(key: str, default: Any, codec: Codec, label: str) -> Any:
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
    """Keep the URL in step: the value when it differs from its default, else nothing."""
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
