"""Figures other than heatmaps: bars, lines and 2-D vectors, each built in ONE Plotly
constructor call (the update_* methods re-validate the whole figure and cost ~10x
more) and each with its exact numbers on the figure or in a table twin.

Colour is never the only cue (WCAG 2.1, 1.4.1): lines differ by dash too, a bar cut by
top-k / top-p is hatched and outlined as well as grey, every value is written. The
palette's colours stand 3:1 or more against white (1.4.11), and its first four stay
apart for protanopia, deuteranopia and tritanopia (tests/unit/test_colour_access.py);
a label written in a palette colour is darkened to 4.5:1 (1.4.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

import plotly.graph_objects as go
import streamlit as st

from ui import drawn, state, tables
from ui.classroom import presenting
from ui.figures import font_px, matrix_frame, png_config, readable
from ui.fmt import num, short
from ui.i18n import t
from ui.presenter import MIN_PX

# Blue, vermilion, bluish green, reddish purple, teal, ochre, grey: after Okabe and Ito's
# colour-blind-safe set, darkened where needed to stand 3:1 against white.
PALETTE = ("#3b5bdb", "#d55e00", "#008061", "#b23c9a", "#0b7fab", "#a86d00", "#6c757d")
CUT_COLOUR = "#ced4da"  # a bar removed by top-k / top-p: light, hatched, outlined
CUT_OUTLINE = "#6c757d"  # 4.7:1 against white
DASHES = ("solid", "dash", "dashdot", "longdash", "longdashdot")  # "dot" marks a setting


def _layout(height: int, x_title: str, y_title: str, **extra) -> dict:
    layout = {
        "height": height, "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
        "xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": y_title}},
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        "font": {"size": font_px(14)}, "dragmode": False,
    }
    if presenting():
        # Plotly shrinks a bar's value to fit its bar: in presenter view never below 18 px.
        layout["uniformtext"] = {"minsize": MIN_PX, "mode": "show"}
    for name, value in extra.items():
        if isinstance(value, dict) and isinstance(layout.get(name), dict):
            layout[name] = {**layout[name], **value}
        else:
            layout[name] = value
    if presenting():
        # Streamlit's chart theme writes tick labels at 12 px; presenter view's stylesheet
        # enlarges those of the first axes only (.xtick), so every axis says it here.
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                layout[name] = {"tickfont": {"size": MIN_PX}, **axis}
    return layout


def _show(fig: go.Figure, key: str) -> None:
    st.plotly_chart(fig, key=state.private(key, "chart"), config=png_config(key),
                    width="stretch")


def bars(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    key: str,
    kept: Sequence[bool] | None = None,
    decimals: int | Mapping[str, int] = 3,
    x_title: str = "",
    y_title: str = "",
    y_range: tuple[float, float] | None = None,
    height: int = 320,
) -> None:
    """Grouped bars, one group per label, the exact value written on each bar.

    kept: for a distribution cut by top-k / top-p, the bars that survive; the others
    are drawn grey. decimals: one for every series, or one per series name (counts 0,
    expected counts 1).
    """
    traces = []
    for index, (name, values) in enumerate(series.items()):
        places = decimals.get(name, 3) if isinstance(decimals, Mapping) else decimals
        colour = PALETTE[index % len(PALETTE)]
        cut = [kept is not None and not kept[i] for i in range(len(values))]
        marker = {"color": [CUT_COLOUR if c else colour for c in cut]}
        if any(cut):
            marker["pattern"] = {"shape": ["/" if c else "" for c in cut],
                                 "fgcolor": CUT_OUTLINE, "solidity": 0.15}
            marker["line"] = {"color": [CUT_OUTLINE if c else colour for c in cut],
                              "width": [1.5 if c else 0 for c in cut]}
        traces.append({
            "type": "bar", "x": list(labels), "y": [float(v) for v in values], "name": name,
            "marker": marker, "text": [num(v, places) for v in values],
            "textposition": "outside", "cliponaxis": False,
            "hovertemplate": "%{x}: %{text}<extra>" + name + "</extra>",
        })
    top = max((float(v) for values in series.values() for v in values), default=1.0)
    y_axis = {"range": list(y_range) if y_range else [0, max(top, 1e-9) * 1.18]}
    layout = _layout(height, x_title, y_title, yaxis=y_axis, barmode="group",
                     showlegend=len(series) > 1, xaxis={"type": "category"})
    _show(drawn.figure(traces, layout), key)


def lines(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    key: str,
    table: bool = True,
    decimals: int = 3,
    **style,
) -> None:
    """Curves over a shared x (activation functions, loss, a sweep), drawn once; the
    exact numbers are in a table twin below (table=False when the page prints them).
    style: see lines_figure."""
    _show(lines_figure(x, series, decimals=decimals, **style), key)
    if table:
        with st.expander(t("kit.as_table")):
            columns = [short(v) for v in x]
            tables.table(matrix_frame([list(ys) for ys in series.values()], columns,
                                      list(series), decimals))


def lines_figure(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    x_title: str = "",
    y_title: str = "",
    log_x: bool = False,
    markers: bool = False,
    marks: Mapping[str, float] | None = None,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    height: int = 320,
    decimals: int = 3,
    whole_x: bool = False,
) -> go.Figure:
    """The figure of lines(), on its own: a page redrawing a curve in place while it grows
    (a live loss) puts it in a placeholder itself.

    marks: vertical dotted lines at named x values (the current setting, say); whole_x:
    x counts something (steps, blocks), so its ticks are whole numbers.
    """
    mode = "lines+markers" if markers else "lines"
    traces = [{"type": "scatter", "x": [float(v) for v in x], "y": [float(v) for v in ys],
               "mode": mode, "name": name,
               "line": {"color": PALETTE[i % len(PALETTE)], "width": 3,
                        "dash": DASHES[i % len(DASHES)]},
               "hovertemplate": f"%{{x}} → %{{y:.{decimals}f}}<extra>{name}</extra>"}
              for i, (name, ys) in enumerate(series.items())]
    shapes, notes = [], []
    for label, value in (marks or {}).items():
        # On a log axis Plotly places a shape at x itself but an annotation at log10(x).
        shapes.append({"type": "line", "x0": value, "x1": value, "yref": "paper", "y0": 0,
                       "y1": 1, "line": {"dash": "dot", "color": "#495057", "width": 2}})
        notes.append({"x": math.log10(value) if log_x else value, "yref": "paper", "y": 1,
                      "text": label, "showarrow": False, "yanchor": "bottom",
                      "font": {"size": font_px(12)}})
    x_axis = {"type": "log"} if log_x else \
        ({"tickformat": "d", "dtick": max(1, len(x) // 10)} if whole_x else {})
    if x_range:
        x_axis["range"] = list(x_range)
    extra = {"shapes": shapes, "annotations": notes, "xaxis": x_axis,
             "yaxis": {"range": list(y_range)} if y_range else {},
             "showlegend": len(series) > 1}
    return drawn.figure(traces, _layout(height, x_title, y_title, **extra))


def vectors(
    arrows: Mapping[str, Sequence[float]],
    *,
    key: str,
    colours: Mapping[str, str] | None = None,
    x_title: str = "",
    y_title: str = "",
    reach: float | None = None,
    height: int = 380,
    decimals: int = 3,
) -> None:
    """2-D vectors as arrows from the origin, each labelled with its exact coordinates;
    equal axis scales, so angles and lengths on screen are true."""
    reach = reach or 1.25 * max((math.hypot(*map(float, v)) for v in arrows.values()),
                                default=1.0) or 1.0
    notes, points = [], {"x": [], "y": [], "text": []}
    for index, (name, vec) in enumerate(arrows.items()):
        x, y = float(vec[0]), float(vec[1])
        colour = (colours or {}).get(name, PALETTE[index % len(PALETTE)])
        notes.append({"x": x, "y": y, "ax": 0, "ay": 0, "axref": "x", "ayref": "y",
                      "xref": "x", "yref": "y", "showarrow": True, "arrowhead": 3,
                      "arrowwidth": 3, "arrowcolor": colour, "text": ""})
        notes.append({"x": x, "y": y, "xref": "x", "yref": "y", "showarrow": False,
                      "text": f"{name} ({num(x, decimals)}, {num(y, decimals)})",
                      "font": {"color": readable(colour), "size": font_px(14)},
                      # The label sits on the inner side of the tip, so it is never cut
                      # off at the edge of a narrow (phone) figure.
                      "xanchor": ("right" if x > 0.3 * reach else
                                  "left" if x < -0.3 * reach else "center"),
                      "yanchor": "bottom" if y >= 0 else "top"})
        points["x"].append(x)
        points["y"].append(y)
        points["text"].append(name)
    trace = {"type": "scatter", "mode": "markers", **points, "marker": {"size": 6,
             "color": "#495057"}, "showlegend": False,
             "hovertemplate": "%{text}: (%{x:.3f}, %{y:.3f})<extra></extra>"}
    axis = {"range": [-reach, reach], "zeroline": True, "zerolinecolor": "#adb5bd"}
    layout = _layout(height, x_title, y_title, annotations=notes, xaxis=axis,
                     yaxis={**axis, "scaleanchor": "x", "scaleratio": 1}, showlegend=False)
    _show(drawn.figure([trace], layout), key)


def point_clouds(
    clouds: Sequence[Sequence[Sequence[float]]],
    *,
    key: str,
    colours: Sequence[str] = (PALETTE[1], PALETTE[0]),
    height: int = 380,
) -> None:
    """2-D point clouds side by side (each a list of (x, y) rows, or a tensor of
    them), all on the same equal axes, so spreads compare at a glance."""
    rows = [[(float(p[0]), float(p[1])) for p in cloud] for cloud in clouds]
    reach = 1.1 * max((abs(v) for cloud in rows for p in cloud for v in p), default=1.0)
    gap = 0.06
    width = (1 - gap * (len(rows) - 1)) / max(1, len(rows))
    traces, axes = [], {}
    for index, cloud in enumerate(rows):
        axis = "" if index == 0 else str(index + 1)
        traces.append({"type": "scatter", "mode": "markers", "x": [x for x, _ in cloud],
                       "y": [y for _, y in cloud], "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                       "marker": {"size": 5, "opacity": 0.7,
                                  "color": colours[index % len(colours)]},
                       "hovertemplate": "(%{x:.3f}, %{y:.3f})<extra></extra>"})
        start = index * (width + gap)
        axes[f"xaxis{axis}"] = {"range": [-reach, reach], "domain": [start, start + width]}
        axes[f"yaxis{axis}"] = {"range": [-reach, reach], "scaleanchor": f"x{axis}",
                                "anchor": f"x{axis}"}
    layout = _layout(height, "", "", margin={"t": 10}, showlegend=False, **axes)
    _show(drawn.figure(traces, layout), key)


def spans(
    rows: Sequence[tuple[str, Sequence[str], Sequence[tuple[int, int]], Sequence[bool], str]],
    *,
    key: str,
    length: int,
    x_title: str = "",
    marked_colour: str = PALETTE[1],
    height: int = 210,
) -> None:
    """Cuts of one line laid along it, one bar row per cut: a bar per piece from its
    start to its end, its label inside (lines split at "\\n"), marked pieces in
    `marked_colour`. Each row: (name, labels, (start, end) spans, marked, colour)."""
    traces = []
    for name, labels, places, marked, colour in rows:
        traces.append({
            "type": "bar", "orientation": "h", "y": [name] * len(places), "showlegend": False,
            "base": [a for a, _ in places], "x": [b - a for a, b in places],
            "text": ["<br>".join(escape(line) for line in label.split("\n"))
                     for label in labels],
            "textposition": "inside", "insidetextanchor": "middle", "textangle": 0,
            "marker": {"color": [marked_colour if m else colour for m in marked],
                       "line": {"color": "white", "width": 2}},
            "hovertemplate": "%{text}<extra></extra>",
        })
    layout = _layout(height, x_title, "", barmode="overlay", margin={"t": 10},
                     xaxis={"range": [0, length]}, yaxis={"autorange": "reversed"},
                     showlegend=False)
    _show(drawn.figure(traces, layout), key)


def boxes_and_arrows(
    boxes: Sequence[tuple[float, str, str, bool]],
    arrows: Sequence[tuple[int, int]],
    *,
    key: str,
    lanes: int = 2,
    rows: int | None = None,
    row_height: int = 70,
) -> None:
    """A small diagram: boxes one below the other, each in its lane (0 .. lanes - 1),
    with arrows between them. Each box: (lane, HTML text, border colour, bold border);
    each arrow: (from box, to box), by index. rows: the diagram's full length when only
    its first boxes are shown yet (its size stays put as the rest appear)."""
    where = [lane for lane, *_ in boxes]
    notes = [{"x": where[head], "y": -head, "ax": where[tail], "ay": -tail, "xref": "x",
              "yref": "y", "axref": "x", "ayref": "y", "text": "", "showarrow": True,
              "arrowhead": 2, "arrowwidth": 2, "arrowcolor": "#868e96", "standoff": 24,
              "startstandoff": 24}
             for tail, head in arrows]
    notes += [{"x": lane, "y": -index, "showarrow": False, "bgcolor": "#fff", "borderpad": 5,
               "bordercolor": colour, "borderwidth": 3 if bold else 1.5, "text": text,
               "font": {"size": font_px(13), "color": "#212529"}}
              for index, (lane, text, colour, bold) in enumerate(boxes)]
    n = rows or len(boxes)
    hidden = {"visible": False, "fixedrange": True}
    layout = _layout(row_height * n + 20, "", "", annotations=notes, showlegend=False,
                     margin={"l": 0, "r": 0, "t": 10},
                     xaxis={**hidden, "range": [-0.75, lanes - 0.25]},
                     yaxis={**hidden, "range": [-n + 0.5, 0.5]})
    _show(drawn.figure([], layout), key)
