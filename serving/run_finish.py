"""A section's run no longer swallows the end of the whole run before it (issue 18).

In Streamlit 1.67 a session's script runner ends once its run is over and no request is
waiting. Its last events (the run's last messages and "finished") are queued on the
event loop. If a section's rerun (an `st.fragment`: the class poll every 2 s, a
section's input) arrives in that moment, the old runner refuses it and AppSession
starts a new runner at once. From then on it ignores every event of the old runner,
including those already queued: the whole run's last messages and its "finished" never
reach the browser. The browser keeps the run's stale elements and the learner's change
seems unanswered. Measured in a class soak on qkv (`class_session_load.py --soak 4
--answer 0 --move 600 --stages softmax qkv`): 3 inputs never answered, and 3 ignored
"finished" events of whole runs, logged in the server (docs/deploy.md).

`install` makes that one case wait one turn of the event loop: the old runner's events,
queued before it refused the request, are delivered first, then the section's run
starts as before. A whole-page rerun is unchanged (it replaces the old run on purpose).
"""

from __future__ import annotations

import asyncio
import logging
from functools import cache
from typing import Any

import streamlit

_LOG = logging.getLogger("tinyformer.serving")
TESTED_ON = "1.67."  # the Streamlit release line whose private code this patch reads
ORIGINALS: dict[str, Any] = {}  # Streamlit's own method, kept alive while it may run


def create_scriptrunner(self: Any, rerun_data: Any) -> None:
    """AppSession._create_scriptrunner; a section's run that would replace a runner
    whose events may still be queued starts after them."""
    old = self._scriptrunner
    if old is None or not rerun_data.fragment_id or not _on_loop(self._event_loop):
        ORIGINALS["_create_scriptrunner"](self, rerun_data)
        return
    self._event_loop.call_soon(start_after, self, old, rerun_data)


def _on_loop(loop: Any) -> bool:
    """Whether this thread runs `loop` (call_soon is only safe there; requests from the
    browser are handled there)."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def start_after(session: Any, old: Any, rerun_data: Any) -> None:
    """On the event loop, after the events queued before it: hand the request to a
    runner started meanwhile, or start one (as Streamlit would have). A session closed
    meanwhile (the tab went) starts nothing, as Streamlit's request_rerun refuses then."""
    if getattr(getattr(session, "_state", None), "name", "") == "SHUTDOWN_REQUESTED":
        return
    current = session._scriptrunner
    if current is not None and current is not old:
        if current.request_rerun(rerun_data):
            return
        session._event_loop.call_soon(start_after, session, current, rerun_data)
        return
    ORIGINALS["_create_scriptrunner"](session, rerun_data)


@cache
def install() -> bool:
    """Apply the patch once per process; False (and nothing changed) when this Streamlit
    is not the one it was written against."""
    from streamlit.runtime import app_session

    session = app_session.AppSession
    expected = (
        streamlit.__version__.startswith(TESTED_ON),
        hasattr(session, "_create_scriptrunner"),
        hasattr(session, "_handle_scriptrunner_event_on_event_loop"),
    )
    if not all(expected):
        _LOG.warning("Streamlit %s: a section's run may drop a whole run's end (patch "
                     "written for %sx)", streamlit.__version__, TESTED_ON)
        return False
    ORIGINALS.setdefault("_create_scriptrunner", session._create_scriptrunner)
    session._create_scriptrunner = create_scriptrunner
    return True


__all__ = ["create_scriptrunner", "install", "start_after"]
