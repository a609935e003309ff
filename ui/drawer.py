"""Drawers: expanders whose content is drawn only while they are open.

An expander's content runs on every full run even when it is closed (Streamlit sends
it along, hidden). The frame's sidebar tools (sharing, downloads, the class, the lesson)
are opened now and then but were drawn on every full run of every page: a dozen
elements, and the downloads' files built each time. A drawer reruns the page when it
is opened, and the content is drawn from then on, while it stays open.

    box = drawer(t("kit.share"), key="_share_box", icon=":material/qr_code_2:")
    if is_open(box):
        with box:
            ...
"""

from __future__ import annotations

import streamlit as st


def drawer(label: str, *, key: str, icon: str, where=None):
    """An expander that reruns the page when opened or closed; `where`: the container
    it goes in (the sidebar, a placeholder), else the current one."""
    return (where or st).expander(label, icon=icon, key=key, on_change="rerun")


def is_open(box) -> bool:
    """Whether `box`'s content should be drawn: a closed drawer's is not; any other
    container (an expander that is always drawn, a popover) is open as far as its
    content knows."""
    return getattr(box, "open", None) is not False
