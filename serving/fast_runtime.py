"""Three costs that Streamlit 1.67 pays per element, removed in the server process
(docs/deploy.md, "Full runs: Streamlit's per-element costs").

1. Every keyed input (slider, select box, number box, radio, text box) asks Streamlit's
   session state for `filtered_state`, a new dict of every key the session holds, only
   to look up its own key. A page with 24 inputs and 270 keys built 24 such dicts on
   every full run (15% of tokens' run). `install` makes `filtered_state` a read-only
   view that looks up one key when asked for one, and builds the dict only when
   iterated.
2. Each message a run sends is handed to the event loop, which then schedules a wake-up
   of the loop that flushes messages to the browser (`call_soon_threadsafe`, a write to
   the loop's self-pipe), even while an earlier wake-up is still pending. `install`
   skips the wake-up while one is pending: the pending flush sends this message too.

3. Before that, the script thread hands each event of a run (every message) to the
   event loop with `call_soon_threadsafe`: the callback joins the loop's queue, and a
   byte written to the loop's self-pipe wakes the loop, which then takes the
   interpreter lock from the script thread (148 writes on a full run of tokens).
   `install` writes the byte only when no earlier wake-up is still unanswered. Every
   callback still joins the same queue in the same order, so the loop runs exactly
   what it ran before, in the same order; only the redundant wake-ups are gone.

All are patches of Streamlit's private code, so `install` checks the version and the
shapes it relies on and otherwise leaves Streamlit as it is (logged); the tests in
tests/unit/test_fast_runtime.py show each patch gives the same answers as the code
it replaces.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import streamlit

_LOG = logging.getLogger("tinyformer.serving")
TESTED_ON = "1.67."  # the Streamlit release line whose private code these patches read


class FilteredStateView(Mapping):
    """What `SafeSessionState.filtered_state` returns once installed: the same keys and
    values as Streamlit's dict, looked up one at a time. Widgets only ask
    `key in view` and `view[key]`; iteration builds Streamlit's own dict."""

    def __init__(self, safe_state: Any) -> None:
        self._safe = safe_state

    def __getitem__(self, key: str) -> Any:
        if _left_out(key):
            raise KeyError(key)
        with self._safe._lock:
            return self._safe._state[key]

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or _left_out(key):
            return False
        with self._safe._lock:
            return key in self._safe._state

    def __iter__(self) -> Iterator[str]:
        return iter(self._full())

    def __len__(self) -> int:
        return len(self._full())

    def __repr__(self) -> str:  # st.session_state's str() shows this
        return repr(self._full())

    def _full(self) -> dict[str, Any]:
        with self._safe._lock:
            return self._safe._state.filtered_state


def enqueue_forward_msg(self: Any, msg: Any) -> None:
    """AppSession._enqueue_forward_msg, waking the sending loop only when no wake-up is
    pending. Runs on the event loop's thread, as the loop that clears the flag does, so
    a set flag means a flush that has not yet taken this session's queue."""
    self._browser_queue.enqueue(msg)
    callback = self._message_enqueued_callback
    if callback is None:
        return
    objects = getattr(getattr(callback, "__self__", None), "_async_objs", None)
    if objects is not None and objects.need_send_data.is_set():
        return
    callback()


class LoopWakes:
    """One event loop's wake-up state. `pending` holds while a wake-up written to the
    self-pipe has not yet been answered: the loop has not yet run `answered`, which
    joined its queue before the callback that came with the wake-up."""

    def __init__(self, loop: Any) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.pending = False

    def call_soon(self, callback: Any) -> None:
        """loop.call_soon_threadsafe(callback), writing to the self-pipe only when no
        wake-up is pending. Under the lock, `answered` cannot run between the check and
        the append: a callback appended without a wake-up is in the queue before the
        loop runs `answered`, so the loop reaches it without blocking (it never waits
        in select while its queue holds a callback)."""
        loop = self.loop
        loop._check_closed()
        with self.lock:
            wake = not self.pending
            if wake:
                self.pending = True
                loop._call_soon(self.answered, (), None)
            loop._call_soon(callback, (), None)
        if wake:
            loop._write_to_self()

    def answered(self) -> None:  # on the loop's thread
        with self.lock:
            self.pending = False


def loop_wakes(loop: Any) -> LoopWakes | None:
    """The loop's LoopWakes, made once; None for a loop without asyncio's self-pipe
    (those keep `call_soon_threadsafe`)."""
    wakes = getattr(loop, "_tf_wakes", None)
    if wakes is None and all(hasattr(loop, name) for name in _LOOP_PARTS):
        with _WAKES_MADE:
            wakes = getattr(loop, "_tf_wakes", None) or LoopWakes(loop)
            loop._tf_wakes = wakes
    return wakes


# asyncio's selector loops: besides what call_soon uses, `_ready`, the queue whose being
# non-empty keeps the loop from waiting in select (what a callback without a wake-up
# relies on).
_LOOP_PARTS = ("_call_soon", "_write_to_self", "_check_closed", "_ready")
_WAKES_MADE = threading.Lock()


def call_soon_on_event_loop(self: Any, callback: Any) -> None:
    """AppSession._call_soon_on_event_loop with fewer wake-ups; a closed loop drops the
    callback, as Streamlit's does."""
    wakes = loop_wakes(self._event_loop)
    try:
        if wakes is None:
            self._event_loop.call_soon_threadsafe(callback)
        else:
            wakes.call_soon(callback)
    except RuntimeError:
        if not self._event_loop.is_closed():
            raise
        _LOG.debug("Dropped event-loop callback", exc_info=True)


def to_dict(self: Any) -> dict[str, Any]:
    """SessionStateProxy.to_dict: a dict, as its callers expect, not the view."""
    from streamlit.runtime.state.session_state_proxy import get_session_state

    return dict(get_session_state().filtered_state)


def _left_out(key: str) -> bool:
    """Keys Streamlit's dict never holds: its own, and element ids (a keyed input is
    there under its key, a keyless one not at all)."""
    from streamlit.runtime.state.common import is_element_id
    from streamlit.runtime.state.session_state import _is_internal_key

    return _is_internal_key(key) or is_element_id(key)


@cache
def install() -> bool:
    """Apply the patches once per process; False (and nothing changed) when this
    Streamlit is not the one they were written against."""
    from streamlit.runtime import app_session, runtime
    from streamlit.runtime.state import (
        common,
        safe_session_state,
        session_state,
        session_state_proxy,
    )

    expected = (
        streamlit.__version__.startswith(TESTED_ON),
        hasattr(session_state, "_is_internal_key"),
        hasattr(common, "is_element_id"),
        isinstance(getattr(safe_session_state.SafeSessionState, "filtered_state", None),
                   property),
        hasattr(session_state_proxy.SessionStateProxy, "to_dict"),
        hasattr(app_session.AppSession, "_enqueue_forward_msg"),
        hasattr(app_session.AppSession, "_call_soon_on_event_loop"),
        hasattr(runtime.Runtime, "_enqueued_some_message"),
    )
    if not all(expected):
        _LOG.warning("Streamlit %s: per-element speed-ups not installed (written for %sx)",
                     streamlit.__version__, TESTED_ON)
        return False
    # The run that installs is under way and may still call what is replaced: keep
    # Streamlit's own functions alive (a weak reference to one was collected once).
    for name in ("_enqueue_forward_msg", "_call_soon_on_event_loop"):
        ORIGINALS.setdefault(name, getattr(app_session.AppSession, name))
    safe_session_state.SafeSessionState.filtered_state = property(FilteredStateView)
    session_state_proxy.SessionStateProxy.to_dict = to_dict
    app_session.AppSession._enqueue_forward_msg = enqueue_forward_msg
    app_session.AppSession._call_soon_on_event_loop = call_soon_on_event_loop
    return True


ORIGINALS: dict[str, Any] = {}  # AppSession's own methods, kept alive (see install)


__all__ = ["FilteredStateView", "LoopWakes", "call_soon_on_event_loop", "enqueue_forward_msg",
           "install", "loop_wakes", "to_dict"]
