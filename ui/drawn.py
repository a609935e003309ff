"""Figures that a page draws again on every full run, built once.

A full run of a page (a page open, a link, Continue, the language switch) draws every
chart again, most of them unchanged. Two costs come with each chart: Plotly validates
the figure when it is built (milliseconds for a few traces), and st.plotly_chart calls
`plotly.io.to_json(figure)` on every call: the figure's `to_dict()`, a deep copy of
every trace, then its JSON text (0.23 ms for an 8 x 14 heatmap). Here a figure is built
once per distinct specification and keeps its dict and its JSON, so an unchanged chart
costs none of it again (docs/deploy.md, "full runs").

    figure(traces, layout)      # a go.Figure to read or to pass to st.plotly_chart

The figure returned is shared by every session that draws the same specification:
read it, never change it (a change would not reach its kept dict anyway).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import plotly.graph_objects as go
import plotly.io

# Distinct figures kept per process. A kept figure holds Plotly's validated objects and
# their dict: about 190 KiB for an 8 x 14 heatmap (tracemalloc). The bound is what a
# class's memory reaches after a few minutes of learners changing inputs, and then keeps.
MAX_KEPT = 128


class DrawnFigure(go.Figure):
    """A figure whose dict is computed once: Streamlit asks for it on every draw."""

    def to_dict(self) -> dict:
        kept = self.__dict__.get("_kept_dict")
        if kept is None:
            kept = _KeptDict(super().to_dict())
            self.__dict__["_kept_dict"] = kept
        return kept


class _KeptDict(dict):
    """A kept figure's dict, which also keeps its JSON text once asked for it."""

    json_text: str | None = None


_plotly_to_json = plotly.io.to_json


def _to_json(fig, validate=True, pretty=False, remove_uids=True, engine=None) -> str:
    """plotly.io.to_json. st.plotly_chart calls it with the figure's dict (our kept one
    for a kept figure) and validate=False: that text is computed once."""
    if not isinstance(fig, _KeptDict) or validate or pretty or not remove_uids or engine:
        return _plotly_to_json(fig, validate, pretty, remove_uids, engine)
    if fig.json_text is None:
        fig.json_text = _plotly_to_json(fig, validate=False)
    return fig.json_text


# Streamlit looks the function up on plotly.io at every call: replaced for every caller,
# and it answers as Plotly's own for anything but a kept figure.
plotly.io.to_json = _to_json


def figure(traces: list[dict], layout: dict) -> DrawnFigure:
    """The figure of `traces` and `layout` (plain dicts, lists, numbers and strings),
    built on the first call with this specification and kept."""
    return _built(json.dumps([traces, layout], sort_keys=True, default=_plain))


@functools.lru_cache(maxsize=MAX_KEPT)
def _built(spec: str) -> DrawnFigure:
    traces, layout = json.loads(spec)
    # One constructor call: Plotly validates once. The update_* methods re-walk the
    # property tree on every call and cost ~10x more.
    return DrawnFigure(data=traces, layout=layout)


def _plain(value: Any) -> Any:
    """A NumPy or torch number or array as JSON takes it; anything else is a bug."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"a figure's specification holds a {type(value).__name__}")
