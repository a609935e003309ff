"""Heatmaps (Plotly graph_objects, not express: ~2 ms against ~60 ms a figure) that
label cells with tokens, show exact values, and report a clicked cell.

A Plotly heatmap sends no click to Streamlit (measured on 1.67), so a nearly
transparent scatter of square markers sits on the cell centres; a click on it
arrives as the cell's x and y.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui import handout, state
from ui.classroom import presenting
from ui.fmt import num
from ui.i18n import t

MAX_CELL_TEXT = 144  # up to 12 x 12 the values are written in the cells
_BLOCKED_COLOUR = "#e9ecef"
CLICK_OPACITY = 0  # invisible, and Plotly still reports a click on it (checked in Chromium)


def _rows(matrix) -> list[list[float]]:
    data = matrix.tolist() if hasattr(matrix, "tolist") else matrix
    return [[float(v) for v in row] for row in data]


def cell_text(value: float, decimals: int = 3) -> str:
    """A cell's number as shown; NaN marks a cell that has no value (a model that cannot
    predict there, a cosine with a zero vector) and is left blank, not written 0 or NaN."""
    return "" if math.isnan(value) else num(value, decimals)


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
    rows = _rows(matrix)
    n_rows, n_cols = len(rows), len(rows[0])
    # -inf (a blocked score) is drawn as a grey gap with its symbol in the cell.
    z = [[v if math.isfinite(v) else None for v in row] for row in rows]
    text = [[cell_text(v, decimals) for v in row] for row in rows]
    show_text = n_rows * n_cols <= MAX_CELL_TEXT
    cells = [(i, j) for i in range(n_rows) for j in range(n_cols)]
    height = height or min(520, 90 + 46 * n_rows)
    # A click square as tall as a cell (the plot area is height minus the margins):
    # larger squares overlap and tint their neighbours.
    marker = max(6, min(60, int(0.9 * (height - 36) / n_rows)))
    heat = {
        "type": "heatmap", "z": z, "x": list(range(n_cols)), "y": list(range(n_rows)),
        "colorscale": colorscale, "zmin": zmin, "zmax": zmax, "text": text,
        "texttemplate": "%{text}" if show_text else None, "hoverinfo": "skip",
        "showscale": False, "xgap": 1, "ygap": 1,
        # Plotly shrinks cell text to fit by default: too small to read on a projector.
        "textfont": {"size": _cell_font(n_cols)},
    }
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
    x_ticks = {"tickangle": -90, "tickfont": {"size": 10}} if n_cols > 16 else {}
    layout = {
        "xaxis": {**axis, **x_ticks, "tickvals": list(range(n_cols)), "ticktext": list(x_labels),
                  "side": "top", "title": {"text": x_title}, "range": [-0.5, n_cols - 0.5]},
        "yaxis": {**axis, "tickvals": list(range(n_rows)), "ticktext": list(y_labels),
                  "range": [n_rows - 0.5, -0.5], "title": {"text": y_title}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 30, "b": 6},
        "plot_bgcolor": _BLOCKED_COLOUR, "dragmode": False, "clickmode": "event+select",
        "font": {"size": 14},
        "shapes": [] if selected is None else [_outline(*selected)],
    }
    # One constructor call: Plotly validates once. The update_* methods re-walk the
    # property tree on every call and cost ~10x more (measured: ~60 ms against ~7 ms).
    return go.Figure(data=[heat, clicks], layout=layout)


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
    Up to MAX_CELL_TEXT cells the exact numbers are written in the cells; a larger
    matrix gets a table twin below, in an expander (table=True forces one). `title`,
    when given, is written above the chart and names the table in the downloads.
    """
    n_rows, n_cols = len(y_labels), len(x_labels)
    decimals = style.get("decimals", 3)
    if title:
        st.markdown(f"**{title}**")
    handout.add_table(title, x_labels, _unique(y_labels),
                      [[cell_text(v, decimals) for v in row] for row in _rows(matrix)])
    url_key, chart_key = state.qualify(key), state.private(key, "chart")
    cell = _current_cell(url_key, chart_key, n_rows, n_cols)
    fig = heatmap_figure(matrix, x_labels, y_labels, selected=cell, **style)
    st.plotly_chart(fig, key=chart_key, on_select="rerun", selection_mode="points",
                    config=png_config(key), width="stretch")
    if explain is not None:
        if cell is None:
            st.caption(t("kit.click_cell"))
        else:
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


def _current_cell(url_key: str, chart_key: str, n_rows: int, n_cols: int
                  ) -> tuple[int, int] | None:
    """A new click wins; otherwise the cell clicked before (or named by the link)."""
    clicked = _clicked_cell(st.session_state.get(chart_key), n_rows, n_cols)
    if clicked is None:
        known = state.initial(url_key, None, state.CELL_CODEC, None)
        clicked = known if known is not None and _inside(known, n_rows, n_cols) else None
    st.session_state[url_key] = clicked
    state.write_url(url_key, clicked, None, state.CELL_CODEC)
    return clicked


def _inside(cell: tuple[int, int], n_rows: int, n_cols: int) -> bool:
    return 0 <= cell[0] < n_rows and 0 <= cell[1] < n_cols


def _cell_font(n_cols: int) -> int:
    if presenting():
        return 18 if n_cols <= 8 else 14
    return 13 if n_cols <= 8 else 11


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
    rows = _rows(matrix)
    return pd.DataFrame(
        [[num(v, decimals) for v in row] for row in rows],  # NaN stays visible: 0/0 teaches
        index=_unique(row_labels), columns=_unique(col_labels),
    )


def _unique(labels: Sequence[str]) -> list[str]:
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
