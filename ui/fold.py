"""The rest of a page waits for the learner.

A stage page draws its first part on opening; below `fold(title)` it shows one button,
"Continue: <title>", and draws the rest only once the learner asks for it. Opening a
stage then costs the browser its first screen, not four screens of figures (issue 10:
page-open time). The open state is part of the URL ("softmax.more=true"), so a shared
link shows the same part of the page, and it stays open through every rerun.

    ...the first part of pages/03_softmax.py...
    section(t("softmax.matrix_title"), folded=True)  # or fold(title)
    ...the rest...

While the rest is closed, fold() raises Folded, which the frame (ui/frame.py) catches:
the page's body ends there and the footer follows.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from ui import state
from ui.i18n import t

NAME = "more"  # the URL parameter: "<stage id>.more=true"
OPEN = state.BOOL_CODEC.encode(True)  # its value once the rest is open


class Folded(BaseException):
    """The rest of the page is closed: the page's body ends at fold().

    Control flow, not an error: a BaseException (like KeyboardInterrupt), so that no
    `except Exception` on its way up can swallow it; the frame catches it by name."""


def fold_key() -> str:
    return state.qualify(NAME)


def fold(next_title: str) -> None:
    """Go on if the rest of the page is open; else offer it and end the body."""
    key = fold_key()
    is_open = state.initial(key, False, state.BOOL_CODEC, t("kit.fold_label"))
    state.write_url(key, is_open, False, state.BOOL_CODEC)
    if is_open:
        return
    # Opened by the click's callback, before the next run: that run draws the rest at
    # once (no folded run first). From inside a section (st.fragment) only the section
    # would rerun: ui/page.py then makes it a whole run (see opened_between).
    st.button(t("kit.fold_continue", title=next_title), key=state.private(NAME, "open"),
              type="primary", icon=":material/expand_more:", on_click=_open, args=(key,))
    st.caption(t("kit.fold_note"))
    raise Folded


def _open(key: str) -> None:
    st.session_state[key] = True


def opened_between(before: Mapping[str, str], now: Mapping[str, str]) -> bool:
    """Did the rest of the page open between two URLs of the stage (its fold's
    parameter absent before, present now)?"""
    key = fold_key()
    return key not in before and key in now
