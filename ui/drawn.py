"""Figures that a page draws again on every full run, built once.

A full run of a page (a page open, a link, Continue, the language switch) draws every
chart again, most of them unchanged. Two costs come with each chart: Plotly validates
the figure when it is built (milliseconds for a few traces), and st.plotly_chart calls
`plotly.io.to_json(figure)` on every call: the figure's `to_dict()`, a deep copy of
every trace, then its JSON text (0.23 ms for an 8 x 14 heatmap). Here a figure is built
once per distinct specification and keeps its JSON text, so an unchanged chart costs
none of it again (docs/deploy.md, "full runs").

    figure(traces, layout)      # a go.Figure to read or to pass to st.plotly_chart

The figure returned is shared by every session that draws the same specification.
Reading it gives a new copy each time, so nothing a caller does changes what is drawn.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import plotly.graph_objects as go
import plotly.io
import plotly.tools

# Distinct figures kept per process. A kept figure holds its JSON text: about 18 KiB for
# an 8 x 14 heatmap with its cache key (tracemalloc; 70 KiB while it also kept its dict,
# 212 KiB as a plain figure). A class of 50 changing inputs filled the bound in about ten
# minutes (docs/deploy.md, "What grows"); memory then stays where it is.
MAX_KEPT = 128


class DrawnFigure(go.Figure):
    """A figure kept for drawing: Plotly validates it once, and it keeps only its JSON
    text (what st.plotly_chart sends) and the sizes Streamlit reads from its layout.

    Of the 212 KiB an 8 x 14 heatmap took as a plain figure, Plotly's validated objects
    were 164 and its dict 35; drawing needs neither once the text is made. `to_dict()`,
    `.data` and `.layout` (tests read them) are built again from the text."""

    def __init__(self, data: Any = None, layout: Any = None) -> None:
        # Not go.Figure's own initialiser: its object tree is what is left out.
        whole = go.Figure(data=data, layout=layout).to_dict()
        sizes = {name: whole["layout"][name] for name in ("width", "height")
                 if name in whole["layout"]}
        self.__dict__["_drawing"] = _Drawing(
            {"layout": sizes}, json_text=_plotly_to_json(whole, validate=False))

    def to_dict(self) -> dict:
        """The figure's dict, a new one on each call (as Plotly's own)."""
        return json.loads(self.__dict__["_drawing"].json_text)

    def to_plotly_json(self) -> dict:
        return self.to_dict()

    @property
    def data(self) -> tuple:
        return go.Figure(self.to_dict()).data

    @property
    def layout(self) -> go.Layout:
        return go.Figure(self.to_dict()).layout

    def __repr__(self) -> str:
        return f"DrawnFigure({self.__dict__['_drawing'].json_text})"


class _Drawing(dict):
    """What st.plotly_chart takes from a kept figure: the layout's sizes (it reads
    width and height for its own layout) and the figure's JSON text."""

    def __init__(self, sizes: dict, json_text: str) -> None:
        super().__init__(sizes)
        self.json_text = json_text


_plotly_to_json = plotly.io.to_json
_plotly_figure_of = plotly.tools.return_figure_from_figure_or_data


def _figure_of(figure_or_data, validate_figure):
    """plotly.tools.return_figure_from_figure_or_data, which st.plotly_chart calls first
    (Plotly's own asks a figure for its whole dict): a kept figure gives its _Drawing."""
    if isinstance(figure_or_data, DrawnFigure):
        return figure_or_data.__dict__["_drawing"]
    return _plotly_figure_of(figure_or_data, validate_figure)


def _to_json(fig, validate=True, pretty=False, remove_uids=True, engine=None) -> str:
    """plotly.io.to_json. st.plotly_chart calls it with what _figure_of gave and
    validate=False: a kept figure's text, made once."""
    if not isinstance(fig, _Drawing) or validate or pretty or not remove_uids or engine:
        return _plotly_to_json(fig, validate, pretty, remove_uids, engine)
    return fig.json_text


# Streamlit looks both functions up on their modules at every call: replaced for every
# caller, and they answer as Plotly's own for anything but a kept figure.
plotly.tools.return_figure_from_figure_or_data = _figure_of
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
