"""A session forgets the widgets it no longer draws (issue 18: memory during a class).

Streamlit 1.67 keeps, for every session, the metadata of every widget id the session has
ever drawn (`WStates.widget_metadata`: the widget's serializer, deserializer, callback
and, for a select box, its options). When a run ends it drops the values of the widgets
it did not draw, but never their metadata. A keyed chart's id includes its figure, so
each edit that changes a heatmap gives the chart a new id: a learner who moves sliders
on tokens for a lesson leaves one stale entry per heatmap per move (measured in-process:
45 entries after the first run, 111 after 30 slider moves), kept until the learner
closes the tab. In a class soak it was one of the two things that grew (docs/deploy.md,
"What grows, found").

`install` makes the end of a run also drop the metadata of exactly the widgets whose
values Streamlit just dropped (its own staleness rule: not drawn in this run; in a
section's run, only the section's own widgets can be stale). Widgets a later run draws
again register their metadata anew, as on their first run.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

import streamlit

_LOG = logging.getLogger("tinyformer.serving")
TESTED_ON = "1.67."  # the Streamlit release line whose private code this patch reads
ORIGINALS: dict[str, Any] = {}  # Streamlit's own method, kept alive while it may run


def forget_stale_metadata(session_state: Any, active_widget_ids: frozenset[str],
                          fragment_ids_this_run: list[str] | None) -> None:
    """Drop the metadata of the widgets Streamlit's rule calls stale."""
    from streamlit.runtime.state.session_state import _is_stale_widget

    metadata = session_state._new_widget_state.widget_metadata
    stale = [widget_id for widget_id, meta in metadata.items()
             if _is_stale_widget(meta, active_widget_ids, fragment_ids_this_run)]
    for widget_id in stale:
        del metadata[widget_id]


def remove_stale_widgets(self: Any, active_widget_ids: frozenset[str]) -> None:
    """SessionState._remove_stale_widgets, then the stale widgets' metadata as well."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ORIGINALS["_remove_stale_widgets"](self, active_widget_ids)
    ctx = get_script_run_ctx()
    if ctx is not None:  # outside a run Streamlit's own cleanup does nothing either
        forget_stale_metadata(self, active_widget_ids, ctx.fragment_ids_this_run)


@cache
def install() -> bool:
    """Apply the patch once per process; False (and nothing changed) when this Streamlit
    is not the one it was written against."""
    from streamlit.runtime.state import session_state

    expected = (
        streamlit.__version__.startswith(TESTED_ON),
        hasattr(session_state, "_is_stale_widget"),
        hasattr(session_state.SessionState, "_remove_stale_widgets"),
        "widget_metadata" in getattr(session_state.WStates, "__dataclass_fields__", {}),
    )
    if not all(expected):
        _LOG.warning("Streamlit %s: stale widget metadata kept (patch written for %sx)",
                     streamlit.__version__, TESTED_ON)
        return False
    ORIGINALS.setdefault("_remove_stale_widgets",
                         session_state.SessionState._remove_stale_widgets)
    session_state.SessionState._remove_stale_widgets = remove_stale_widgets
    return True


__all__ = ["forget_stale_metadata", "install", "remove_stale_widgets"]
