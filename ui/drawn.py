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

# Distinct figures kept per process. A kept figure holds its dict and, once drawn, its
# JSON text: about 70 KiB for an 8 x 14 heatmap (tracemalloc; 212 KiB while it also held
# Plotly's validated objects). The bound is what a class's memory reaches after a few
# minutes of learners changing inputs, and then keeps.
MAX_KEPT = 128


class DrawnFigure(go.Figure):
    """A figure kept for drawing: Plotly validates it once, and it keeps only its dict
    (st.plotly_chart asks for that on every draw) and that dict's JSON text.

    Plotly's validated objects are 164 of the 212 KiB an 8 x 14 heatmap took, and drawing
    never reads them. Reading `.data` or `.layout` (tests do) builds a plain figure
    from the dict."""

    def __init__(self, data: Any = None, layout: Any = None) -> None:
        # Not go.Figure's own initialiser: its object tree is what is left out.
        validated = go.Figure(data=data, layout=layout)
        self.__dict__["_kept_dict"] = _KeptDict(validated.to_dict())

    def to_dict(self) -> dict:
        return self.__dict__["_kept_dict"]

    def to_plotly_json(self) -> dict:
        return self.to_dict()

    @property
    def data(self) -> tuple:
        return go.Figure(self.to_dict()).data

    @property
    def layout(self) -> go.Layout:
        return go.Figure(self.to_dict()).layout

    def __repr__(self) -> str:
        return f"DrawnFigure({self.to_dict()!r})"


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
