"""The kit's colours and type for every reader (WCAG 2.1 AA): numbers in heatmap cells
readable on any colour of the scales the pages use, those scales still ordered (or their
two sides still apart) for protanopia, deuteranopia and tritanopia, the line / bar
palette visible against white and apart for colour-blind readers; and the charts' type
large enough: cell numbers never below 11 px on a phone, every text 18 px or more in
presenter view.

Colour-vision deficiency is simulated with Machado, Oliveira and Fernandes (2009), at
full severity; distances are CIE76 ΔE in CIELAB (D65)."""

from __future__ import annotations

import re
from itertools import combinations, pairwise
from pathlib import Path

import numpy as np
import pytest

from ui.charts import PALETTE
from ui.figures import (
    CHECKED_SCALES,
    DARK_TEXT,
    LIGHT_TEXT,
    SEQUENTIAL_SCALES,
    _rgb,
    contrast,
    heatmap_figure,
    readable,
    scale_colour,
    text_colour,
)
from ui.i18n import catalogue

ROOT = Path(__file__).resolve().parents[2]
MACHADO = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}
VISIONS = (None, *MACHADO)
STEPS = np.linspace(0, 1, 41)


def _linear(rgb) -> np.ndarray:
    c = np.asarray(rgb, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _seen(colour: str, vision: str | None) -> np.ndarray:
    """Linear RGB of the colour as seen with this vision (None: typical)."""
    linear = _linear(_rgb(colour))
    return linear if vision is None else np.clip(np.asarray(MACHADO[vision]) @ linear, 0, 1)


def _lab(linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ linear / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _delta_e(a: str, b: str, vision: str | None) -> float:
    return float(np.linalg.norm(_lab(_seen(a, vision)) - _lab(_seen(b, vision))))


def _pages_scales() -> set[str]:
    """Every colour scale a page names."""
    found = set()
    for page in (ROOT / "pages").glob("*.py"):
        found |= set(re.findall(r"""["']?colorscale["']?\s*[=:]\s*["'](\w+)["']""",
                                page.read_text(encoding="utf-8")))
    return found


def test_pages_use_only_checked_scales():
    assert _pages_scales(), "no page names a colour scale: the pattern is stale"
    assert _pages_scales() <= set(CHECKED_SCALES), _pages_scales() - set(CHECKED_SCALES)


@pytest.mark.parametrize("scale", CHECKED_SCALES)
def test_numbers_on_every_colour_of_the_scale_stand_out(scale):
    """Black or white text, whichever contrasts more: at least 4.5:1 on every colour
    (Plotly's own choice, #444 or white, gives 3.12:1 on mid-tones)."""
    worst = min(contrast(scale_colour(scale, s), text_colour(scale_colour(scale, s)))
                for s in STEPS)
    assert worst >= 4.5, worst


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("scale", SEQUENTIAL_SCALES)
def test_sequential_scales_keep_their_order_for_colour_blind_readers(scale, vision):
    """Lightness falls with every step, also as seen with each deficiency: larger values
    are darker for everyone."""
    lightness = [_lab(_seen(scale_colour(scale, s), vision))[0] for s in STEPS]
    assert all(b < a for a, b in pairwise(lightness)), lightness


@pytest.mark.parametrize("vision", VISIONS)
def test_a_diverging_scales_two_sides_stay_apart(vision):
    """-v and +v (away from the white middle) are told apart with each deficiency."""
    apart = min(_delta_e(scale_colour("RdBu", 0.5 - x), scale_colour("RdBu", 0.5 + x), vision)
                for x in np.linspace(0.15, 0.5, 8))
    assert apart >= 15, apart


@pytest.mark.parametrize("vision", VISIONS)
def test_a_cyclic_scales_two_halves_stay_apart(vision):
    """Twilight (angles): an angle and its mirror image are told apart."""
    apart = min(_delta_e(scale_colour("Twilight", x), scale_colour("Twilight", 1 - x), vision)
                for x in np.linspace(0.1, 0.4, 7))
    assert apart >= 10, apart


def test_palette_stands_against_white_and_labels_are_darkened_for_text():
    assert min(contrast(c, "#ffffff") for c in PALETTE) >= 3  # graphics (1.4.11)
    assert min(contrast(readable(c), "#ffffff") for c in PALETTE) >= 4.5  # text (1.4.3)
    assert readable(PALETTE[0]) == PALETTE[0]  # already dark enough: unchanged


@pytest.mark.parametrize("vision", VISIONS)
def test_the_palettes_first_four_stay_apart(vision):
    """Pages show up to four series; the pairs stay at least ΔE 20 apart."""
    closest = min(_delta_e(a, b, vision) for a, b in combinations(PALETTE[:4], 2))
    assert closest >= 20, closest


def test_each_cell_number_is_written_once_in_the_ink_that_contrasts():
    matrix = [[0.0, 0.5], [1.0, float("-inf")]]
    fig = heatmap_figure(matrix, ["a", "b"], ["r", "s"], colorscale="Blues", zmin=0, zmax=1)
    colours, dark, light = fig.data[0], fig.data[1], fig.data[2]
    # The whole table stays on the coloured layer (the tests read it back from there).
    assert [list(r) for r in colours.text] == [["0.000", "0.500"], ["1.000", "−∞"]]
    assert "texttemplate" not in colours.to_plotly_json()  # written by the two inks only
    assert dark.textfont.color == DARK_TEXT and light.textfont.color == LIGHT_TEXT
    written = {(i, j): (dark.text[i][j], light.text[i][j]) for i in range(2) for j in range(2)}
    assert written[(0, 0)] == ("0.000", "")  # the palest blue: black
    assert written[(1, 0)] == ("", "1.000")  # the darkest blue: white
    assert written[(1, 1)] == ("−∞", "")  # a blocked cell, on the light grey background
    assert all((d == "") != (w == "") for d, w in written.values())  # exactly one ink


# Pages that still type a colour of their own: none.
TYPED_COLOURS_LEFT: set[str] = set()


def test_pages_take_their_colours_from_the_checked_palette():
    """A colour typed in a page escapes the checks above: pages name PALETTE's colours
    (1.2 marked its partial tokens #e8590c; now PALETTE[1])."""
    typing = {page.name for page in (ROOT / "pages").glob("*.py")
              if re.search(r"""["']#[0-9a-fA-F]{3,8}["']""", page.read_text(encoding="utf-8"))}
    assert typing <= TYPED_COLOURS_LEFT, typing - TYPED_COLOURS_LEFT


# --- Type sizes ----------------------------------------------------------------------------
def _font_sizes(node, inside_font: bool = False) -> list[float]:
    """Every font size a figure (as JSON) sets, in any font, tickfont, textfont ..."""
    if isinstance(node, dict):
        found = [float(node["size"])] if inside_font and isinstance(
            node.get("size"), int | float) else []
        return found + [size for key, value in node.items()
                        for size in _font_sizes(value, key.endswith("font"))]
    if isinstance(node, list | tuple):
        return [size for value in node for size in _font_sizes(value, inside_font)]
    return []


def test_cell_numbers_start_readable_and_tell_the_browser_their_floor():
    """The browser shrinks a number to fit its cell down to cell_min_px (11 px) and no
    further (ui/classroom.py's fitHeatmap leaves them out below it, or turns a single
    row's numbers upright); it reads the grid from the figure's meta."""
    from ui.figures import MIN_CELL_PX

    fig = heatmap_figure([[0.25] * 15], [str(j) for j in range(15)], ["q"])
    assert fig.layout.meta == {"rows": 1, "cols": 15, "cell_min_px": MIN_CELL_PX,
                               "cells_note": catalogue("zh")["kit.cells_hidden"]}
    assert MIN_CELL_PX >= 11
    assert min(fig.data[1].textfont.size, fig.data[2].textfont.size) >= MIN_CELL_PX


def test_presenter_view_writes_every_chart_text_at_18_px_or_more(monkeypatch):
    """Cell numbers, tick labels (10 px for a strip of 20 columns), bar values, a line's
    marks, arrow labels and a diagram's boxes: nothing under 18 px on the projector."""
    import ui.charts as charts
    import ui.figures as figures
    from ui.presenter import MIN_PX

    drawn = []
    monkeypatch.setattr(figures, "presenting", lambda: True)
    monkeypatch.setattr(charts, "presenting", lambda: True)
    monkeypatch.setattr(charts, "_show", lambda fig, key: drawn.append(fig))
    heat = heatmap_figure([[0.5] * 20] * 2, [str(j) for j in range(20)], ["a", "b"])
    charts.bars(["a", "b"], {"p": [0.25, 0.75]}, key="b")
    charts.vectors({"q": [1, 0]}, key="v")
    charts.boxes_and_arrows([(0, "x", "#000", False), (1, "y", "#000", True)], [(0, 1)],
                            key="d")
    charts.point_clouds([[(0, 0), (1, 1)], [(0, 1)]], key="p")
    line = charts.lines_figure([1, 2], {"a": [1, 2]}, marks={"T": 1.5})
    figs = [heat, line, *drawn]
    sizes = [size for fig in figs for size in _font_sizes(fig.to_plotly_json())]
    assert len(sizes) >= 10 and min(sizes) >= MIN_PX, sorted(sizes)
    # Streamlit's theme would write ticks at 12 px where an axis names no size (the
    # presenter stylesheet reaches only the first axes): each axis of a kit chart does.
    axes = [(name, axis) for fig in [line, *drawn]
            for name, axis in fig.to_plotly_json()["layout"].items() if name[1:5] == "axis"]
    assert len(axes) >= 8 and all(axis["tickfont"]["size"] >= MIN_PX for _, axis in axes)
    assert heat.layout.meta["cell_min_px"] == MIN_PX  # the browser's floor there too
    assert drawn[0].layout.uniformtext.minsize == MIN_PX  # Plotly's fitting of bar values
