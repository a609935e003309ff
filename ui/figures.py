"""Heatmaps (Plotly graph_objects, not express: ~2 ms against ~60 ms a figure) that
label cells with tokens, show exact values, and report a clicked cell.

A Plotly heatmap sends no click to Streamlit (measured on 1.67), so a nearly
transparent scatter of square markers sits on the cell centres; a click on it
arrives as the cell's x and y. A select box under the figure picks the same cell from
the keyboard (or a screen reader), since a click is the figure's only way in.

Colour and contrast (WCAG 2.1 AA): each number is written in black or white, whichever
stands out more from its cell's colour (at least 4.58:1 on any colour; Plotly's own
choice, #444 or white, falls to 3.12:1 on mid-tones). The scales pages use
(CHECKED_SCALES) are checked in tests/unit/test_colour_access.py: the sequential ones
change monotonically in lightness, also as seen with protanopia, deuteranopia or
tritanopia, and the numbers are always written too, so colour never carries a value alone.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from itertools import pairwise

import pandas as pd
import plotly.colors
import plotly.graph_objects as go
import streamlit as st

from ui import drawn, handout, state
from ui.classroom import presenting
from ui.fmt import num
from ui.i18n import t
from ui.presenter import MIN_PX

MAX_CELL_TEXT = 144  # up to 12 x 12 the values are written in the cells
# The smallest number written in a cell (a phone's narrow cells shrink them down to it);
# where even that does not fit, the browser leaves the numbers out and shows a note
# (ui/classroom.py's fitHeatmap). Presenter view's smallest is presenter.MIN_PX (18).
MIN_CELL_PX = 11
_BLOCKED_COLOUR = "#e9ecef"
CLICK_OPACITY = 0  # invisible, and Plotly still reports a click on it (checked in Chromium)
# The colour scales the pages use, checked for contrast and colour-blind readers
# (tests/unit/test_colour_access.py): ColorBrewer's single-hue sequential scales, its
# red-white-blue diverging one, and a cyclic one for angles.
SEQUENTIAL_SCALES = ("Blues", "Oranges", "Greens", "Purples")
CHECKED_SCALES = (*SEQUENTIAL_SCALES, "RdBu", "Twilight")
DARK_TEXT, LIGHT_TEXT = "#000000", "#ffffff"
_CLEAR = [[0, "rgba(0,0,0,0)"], [1, "rgba(0,0,0,0)"]]  # a layer that only writes numbers


def _rows(matrix) -> list[list[float]]:
    data = matrix.tolist() if hasattr(matrix, "tolist") else matrix
    return [[float(v) for v in row] for row in data]


def cell_text(value: float, decimals: int = 3) -> str:
    """A cell's number as shown; NaN marks a cell that has no value (a model that cannot
    predict there, a cosine with a zero vector) and is left blank, not written 0 or NaN."""
    return "" if math.isnan(value) else num(value, decimals)


@functools.lru_cache(maxsize=drawn.MAX_KEPT)
def _cell_texts(rows: tuple[tuple[float, ...], ...], decimals: int) -> list[list[str]]:
    """Every cell as written, once per distinct matrix: the downloads record each map on
    every run (shared: read it, never change it)."""
    return [[cell_text(v, decimals) for v in row] for row in rows]


def heatmap_figure(
    matrix,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    *,
    decimals: int = 3,
    colorscale: str = "Blues",
    zmin: float | None = None,
    zmax: float | None = None,
    x_title: str = "",
    y_title: str = "",
    height: int | None = None,
    selected: tuple[int, int] | None = None,
) -> go.Figure:
    """The heatmap's figure. Built once per distinct input and kept (a page's full run
    draws the same maps again: building one costs 10-20 ms, most of it Plotly's
    validation); the figure is only read afterwards (st.plotly_chart copies it)."""
    colours = colorscale if isinstance(colorscale, str) else tuple(map(tuple, colorscale))
    return _heatmap_figure(
        tuple(map(tuple, _rows(matrix))), tuple(map(str, x_labels)), tuple(map(str, y_labels)),
        decimals, colours, zmin, zmax, x_title, y_title, height, selected, presenting(),
        t("kit.cells_hidden"))


@functools.lru_cache(maxsize=drawn.MAX_KEPT)  # ~18 KiB each: see ui/drawn.py
def _heatmap_figure(rows, x_labels, y_labels, decimals, colorscale, zmin, zmax, x_title,
                    y_title, height, selected, presenting_now: bool,
                    cells_note: str) -> go.Figure:
    # presenting_now: the view the sizes below read (font_px, _cell_font), in the key;
    # cells_note: the session's language's, in the key (a cached figure is shared)
    if not isinstance(colorscale, str):
        colorscale = [list(stop) for stop in colorscale]
    n_rows, n_cols = len(rows), len(rows[0])
    # -inf (a blocked score) is drawn as a grey gap with its symbol in the cell.
    z = [[v if math.isfinite(v) else None for v in row] for row in rows]
    text = [[cell_text(v, decimals) for v in row] for row in rows]
    show_text = writes_numbers(n_rows, n_cols)
    cells = [(i, j) for i in range(n_rows) for j in range(n_cols)]
    height = height or min(520, 90 + 46 * n_rows)
    # A click square as tall as a cell (the plot area is height minus the margins):
    # larger squares overlap and tint their neighbours.
    marker = max(6, min(60, int(0.9 * (height - 36) / n_rows)))
    heat = {
        "type": "heatmap", "z": z, "x": list(range(n_cols)), "y": list(range(n_rows)),
        "colorscale": colorscale, "zmin": zmin, "zmax": zmax, "text": text,
        "hoverinfo": "skip", "showscale": False, "xgap": 1, "ygap": 1,
    }
    # The numbers are written by two clear layers above the colours, one in black and
    # one in white, each cell's number in the layer that contrasts with its colour
    # (Plotly takes one text colour per trace).
    layers = []
    if show_text:
        colours = cell_colours(z, colorscale, zmin, zmax)
        for ink in (DARK_TEXT, LIGHT_TEXT):
            layers.append({
                "type": "heatmap", "z": [[0] * n_cols for _ in range(n_rows)],
                "x": list(range(n_cols)), "y": list(range(n_rows)), "colorscale": _CLEAR,
                "zmin": 0, "zmax": 1, "showscale": False, "hoverinfo": "skip",
                "text": [[text[i][j] if text_colour(colours[i][j]) == ink else ""
                          for j in range(n_cols)] for i in range(n_rows)],
                "texttemplate": "%{text}",
                # Plotly shrinks cell text to fit by default: too small on a projector.
                "textfont": {"size": _cell_font(n_cols), "color": ink},
            })
    clicks = {
        "type": "scatter", "x": [j for _, j in cells], "y": [i for i, _ in cells],
        "mode": "markers", "showlegend": False,
        "marker": {"symbol": "square", "size": marker, "opacity": CLICK_OPACITY,
                   "color": "#000"},
        "customdata": [[y_labels[i], x_labels[j], text[i][j]] for i, j in cells],
        "hovertemplate": "%{customdata[0]} → %{customdata[1]}: %{customdata[2]}<extra></extra>",
    }
    axis = {"tickmode": "array", "showgrid": False, "zeroline": False}
    # Many columns (a strip of 32 query heads): upright labels would overlap.
    x_ticks = {"tickangle": -90, "tickfont": {"size": font_px(10)}} if n_cols > 16 else {}
    layout = {
        "xaxis": {**axis, **x_ticks, "tickvals": list(range(n_cols)), "ticktext": list(x_labels),
                  "side": "top", "title": {"text": x_title}, "range": [-0.5, n_cols - 0.5]},
        "yaxis": {**axis, "tickvals": list(range(n_rows)), "ticktext": list(y_labels),
                  "range": [n_rows - 0.5, -0.5], "title": {"text": y_title}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 6},
        "plot_bgcolor": _BLOCKED_COLOUR, "dragmode": False, "clickmode": "event+select",
        "font": {"size": font_px(14)},
        "shapes": [] if selected is None else [_outline(*selected)],
        # Read by the browser's fitHeatmap (ui/classroom.py): the grid, and the smallest
        # size a cell's number may shrink to before the numbers are left out.
        # cells_note: the note written under the chart when its numbers are left out.
        "meta": {"rows": n_rows, "cols": n_cols,
                 "cell_min_px": MIN_PX if presenting() else MIN_CELL_PX,
                 "cells_note": cells_note},
    }
    # Kept as its JSON text: st.plotly_chart sends that on every draw (ui/drawn.py).
    return drawn.DrawnFigure(data=[heat, *layers, clicks], layout=layout)


# --- Colour ----------------------------------------------------------------------------------
def _rgb(colour: str) -> tuple[float, float, float]:
    """'#3b5bdb' or 'rgb(59, 91, 219)' as three channels in 0..1."""
    colour = colour.strip()
    if colour.startswith("#"):
        digits = colour[1:]
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return tuple(int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4))
    inside = colour[colour.index("(") + 1:colour.rindex(")")]
    return tuple(float(v) / 255 for v in inside.split(",")[:3])


def luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio, 1 to 21."""
    low, high = sorted((luminance(a), luminance(b)))
    return (high + 0.05) / (low + 0.05)


def text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with the background (at least 4.58:1)."""
    if contrast(background, DARK_TEXT) >= contrast(background, LIGHT_TEXT):
        return DARK_TEXT
    return LIGHT_TEXT


def readable(colour: str, background: str = "#ffffff") -> str:
    """The colour darkened just enough for text on `background` (4.5:1): a label keeps
    the hue of what it names."""
    r, g, b = _rgb(colour)
    for step in range(21):
        keep = 1 - step / 20
        shade = "#" + "".join(f"{round(v * keep * 255):02x}" for v in (r, g, b))
        if contrast(shade, background) >= 4.5:
            return shade
    return DARK_TEXT


def scale_colour(colorscale, where: float) -> str:
    """The colour at `where` (0..1) of a Plotly colour scale (a name or a list of
    stops), interpolated in RGB as Plotly does."""
    stops = _stops(colorscale)
    where = min(1.0, max(0.0, where))
    for (left, c0), (right, c1) in pairwise(stops):
        if where <= right:
            share = 0.0 if right == left else (where - left) / (right - left)
            mixed = [a + (b - a) * share for a, b in zip(_rgb(c0), _rgb(c1), strict=True)]
            return "#" + "".join(f"{round(v * 255):02x}" for v in mixed)
    return stops[-1][1]


def _stops(colorscale) -> list[tuple[float, str]]:
    if isinstance(colorscale, str):
        return _named_stops(colorscale)
    return [(float(at), str(colour)) for at, colour in colorscale]


@functools.lru_cache(maxsize=64)
def _named_stops(name: str) -> list[tuple[float, str]]:
    """A named scale's stops, looked up once: Plotly's get_colorscale rebuilds its table
    of every named scale by introspection on each call (about 3 ms), and a heatmap asks
    once per cell (benchmarks/frame_profile.py --page tokens: 2.3 s of 2.4 s per run)."""
    return [(float(at), str(colour)) for at, colour in plotly.colors.get_colorscale(name)]


def cell_colours(z: list[list[float | None]], colorscale, zmin: float | None,
                 zmax: float | None) -> list[list[str]]:
    """Each cell's colour as Plotly paints it: the scale between zmin and zmax (each,
    when not given, the smallest or largest value); a cell without a value shows the
    plot's background."""
    values = [v for row in z for v in row if v is not None and math.isfinite(v)]
    low = zmin if zmin is not None else min(values, default=0.0)
    high = zmax if zmax is not None else max(values, default=1.0)
    span = high - low
    return [[_BLOCKED_COLOUR if v is None or not math.isfinite(v) else
             scale_colour(colorscale, 0.5 if span == 0 else (v - low) / span)
             for v in row] for row in z]


def heatmap(
    matrix,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    *,
    key: str,
    explain: Callable[[int, int], str] | None = None,
    table: bool | None = None,
    title: str = "",
    **style,
) -> tuple[int, int] | None:
    """Draw a heatmap; the clicked cell is outlined, explained by `explain`, and
    returned as (row, col).

    The clicked cell lives in the URL ("softmax.weights_map=1,0"), so a shared link
    opens with the same explanation, and it stays while that cell exists: an edit
    redraws the figure (Streamlit then forgets the chart's selection) but keeps it.
    With `explain`, a select box under the figure chooses the cell without a mouse.
    Up to MAX_CELL_TEXT cells the exact numbers are written in the cells (where the
    cells shown are too narrow for them at MIN_CELL_PX, the browser leaves them out and a
    note under the chart says how to read them); a larger matrix gets a table twin
    below, in an expander (table=True forces one). `title`,
    when given, is written above the chart and names the table in the downloads.
    """
    n_rows, n_cols = len(y_labels), len(x_labels)
    decimals = style.get("decimals", 3)
    if title:
        st.markdown(f"**{title}**")
    handout.add_table(title, x_labels, unique_labels(y_labels),
                      _cell_texts(tuple(map(tuple, _rows(matrix))), decimals))
    url_key, chart_key = state.qualify(key), state.private(key, "chart")
    cell = _current_cell(url_key, chart_key, state.private(key, "seen"), n_rows, n_cols)
    fig = heatmap_figure(matrix, x_labels, y_labels, selected=cell, **style)
    st.plotly_chart(fig, key=chart_key, on_select="rerun", selection_mode="points",
                    config=png_config(key), width="stretch")
    if explain is not None:
        _cell_picker(url_key, state.private(key, "pick"), cell, x_labels, y_labels)
        if cell is not None:
            st.markdown(explain(*cell))
    if table is None:
        table = n_cols * n_rows > MAX_CELL_TEXT
    if table:
        with st.expander(t("kit.as_table")):
            st.table(matrix_frame(matrix, x_labels, y_labels, decimals))
    return cell


def png_config(name: str) -> dict:
    """Plotly's own toolbar with one button: save the figure as a PNG."""
    return {"displayModeBar": "hover", "modeBarButtons": [["toImage"]], "displaylogo": False,
            "scrollZoom": False,
            "toImageButtonOptions": {"format": "png", "scale": 2, "filename": name}}


def _current_cell(url_key: str, chart_key: str, seen_key: str, n_rows: int, n_cols: int
                  ) -> tuple[int, int] | None:
    """A new click wins; otherwise the cell chosen before (by a click, the select box
    or the link). The chart keeps its last click in session state: it counts only
    when it differs from the one seen in the run before, so a cell chosen later with
    the select box is not taken back by an old click."""
    event = _clicked_cell(st.session_state.get(chart_key), n_rows, n_cols)
    new_click = event is not None and event != st.session_state.get(seen_key)
    st.session_state[seen_key] = event
    if new_click:
        cell = event
    else:
        known = state.initial(url_key, None, state.CELL_CODEC, None)
        cell = known if known is not None and _inside(known, n_rows, n_cols) else None
    st.session_state[url_key] = cell
    state.write_url(url_key, cell, None, state.CELL_CODEC)
    return cell


def _cell_picker(url_key: str, pick_key: str, cell: tuple[int, int] | None,
                 x_labels: Sequence[str], y_labels: Sequence[str]) -> None:
    """The keyboard's way to a cell's explanation: every cell by its row and column."""
    # Every label written now, in this run's language (a format_func called later, from
    # another thread, would not know the session's language).
    labels = _cell_options(t("kit.cell_option"), tuple(map(str, x_labels)),
                           tuple(map(str, y_labels)))
    st.session_state[pick_key] = cell  # follows a click on the figure
    st.selectbox(t("kit.cell_pick"), list(labels), format_func=labels.__getitem__, key=pick_key,
                 index=None, placeholder=t("kit.cell_pick_placeholder"),
                 # Its label is the hint to click a cell: one element, not two.
                 on_change=_picked, args=(url_key, pick_key), width=420)


@functools.lru_cache(maxsize=256)
def _cell_options(template: str, x_labels: tuple[str, ...], y_labels: tuple[str, ...]
                  ) -> dict[tuple[int, int], str]:
    """Every cell's name for the select box, made once per language and grid: a full run
    would otherwise translate every cell of every map again (a 4 x 8 map: 32 lookups)."""
    return {(i, j): template.format(row=i, y=y, col=j, x=x)
            for i, y in enumerate(y_labels) for j, x in enumerate(x_labels)}


def _picked(url_key: str, pick_key: str) -> None:
    cell = st.session_state.get(pick_key)
    st.session_state[url_key] = cell
    state.write_url(url_key, cell, None, state.CELL_CODEC)


def _inside(cell: tuple[int, int], n_rows: int, n_cols: int) -> bool:
    return 0 <= cell[0] < n_rows and 0 <= cell[1] < n_cols


def _cell_font(n_cols: int) -> int:
    """A cell number's size before the browser fits it to the cell's width."""
    if presenting():
        return MIN_PX
    return 13 if n_cols <= 8 else 12


def font_px(size: int) -> int:
    """A chart's type size: `size`, and in presenter view at least presenter.MIN_PX (cell
    numbers, bar values, tick labels, annotations: read from the back of the room)."""
    return max(size, MIN_PX) if presenting() else size


def writes_numbers(n_rows: int, n_cols: int) -> bool:
    """Whether the figure writes each cell's number in the cell."""
    return n_rows * n_cols <= MAX_CELL_TEXT


def _outline(row: int, col: int) -> dict:
    """A dark frame round the clicked cell, so the explanation below points somewhere."""
    return {"type": "rect", "x0": col - 0.5, "x1": col + 0.5, "y0": row - 0.5, "y1": row + 0.5,
            "line": {"color": "#212529", "width": 3}, "fillcolor": "rgba(0,0,0,0)"}


def _clicked_cell(event, n_rows: int, n_cols: int) -> tuple[int, int] | None:
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    if not points:
        return None
    row, col = round(points[0]["y"]), round(points[0]["x"])
    if 0 <= row < n_rows and 0 <= col < n_cols:
        return row, col
    return None


def matrix_frame(matrix, col_labels: Sequence[str], row_labels: Sequence[str],
                 decimals: int = 3) -> pd.DataFrame:
    """Exact numbers as strings, so the table shows exactly what the page states."""
    return pd.DataFrame(matrix_rows(matrix, decimals), index=unique_labels(row_labels),
                        columns=unique_labels(col_labels))


def matrix_rows(matrix, decimals: int = 3) -> list[list[str]]:
    """Each number as the page writes it; NaN stays visible: 0/0 teaches."""
    return [[num(v, decimals) for v in row] for row in _rows(matrix)]


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Repeated tokens (two 「运」) still need distinct table labels."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def diverging(*tables) -> dict:
    """Style for signed values: red below 0, blue above, white at 0, one scale for all
    the tables compared side by side."""
    top = max(_peak(table) for table in tables) or 1.0
    return {"colorscale": "RdBu", "zmin": -top, "zmax": top}


def _peak(table) -> float:
    """The largest finite |value| of a tensor or nested list of any depth."""
    flat = table.flatten().tolist() if hasattr(table, "flatten") else list(table)
    while flat and isinstance(flat[0], list):
        flat = [v for row in flat for v in row]
    return max((abs(float(v)) for v in flat if math.isfinite(float(v))), default=0.0)
