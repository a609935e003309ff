"""AppTest helpers, imported as `tests.app.helpers` (fixtures are in conftest.py). A page
opens as in a browser: app.py (the frame and st.navigation) with the page picked by
switch_page before the first run, one run per open.

The kit writes and reads the URL itself (ui/state.py), so a shared link is simulated
exactly: open_page(..., params={"softmax.kB": "2, 0"}) puts them in the query string
before the first run. Keys follow the kit's rule: "<stage id>.<name>" for inputs (the
widget key and the URL parameter are the same), "_<stage id>.<name>~chart" for a
heatmap's chart, "_<stage id>.ex.<name>.*" for exercises."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from ui.fold import NAME as FOLD_NAME
from ui.fold import OPEN as FOLD_OPEN
from ui.i18n import catalogue
from ui.stages import STAGES, Stage

LANGS = ("zh", "en")
# Behaviour that does not depend on the language is tested in one: Chinese, the class's
# language (the `lang` fixture; the English default of open_page covers the other).
# Both languages where the language matters: translated messages, the catalogue, the
# switch, and every page rendering in each (tests/app/test_home.py).
ONE_LANG = ("zh",)
WHOLE = {"training"}  # stages short enough to open whole: no fold (ui/fold.py)
APP = str(Path(__file__).resolve().parents[2] / "app.py")


# The sidebar's drawers (ui/drawer.py) open: their tools are drawn only while open.
DRAWERS = {"_share_box": True, "_dl_box": True, "_class_box": True, "_lesson_box": True}


def open_page(page: str | None, lang: str = "en", state: Mapping | None = None,
              timeout: float = 60, params: Mapping[str, str] | None = None,
              folded: bool = False) -> AppTest:
    """Run app.py once on `page` (e.g. "pages/03_softmax.py"; None: the overview) in
    `lang`: st.navigation lets AppTest pick the page before the first run.

    params: URL parameters, as a shared link carries them; state: session state set
    before the run (clicks, see click()). The whole page is drawn, as after its
    "Continue" button ("<stage>.more=true" in the link); folded=True: as first opened."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params["lang"] = lang
    if page is not None and not folded and (stage := stage_of(page)) is not None:
        at.query_params[f"{stage.id}.{FOLD_NAME}"] = FOLD_OPEN
    for key, value in (params or {}).items():
        at.query_params[key] = value
    if page is not None:
        at.switch_page(page)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    return at


def stage_of(page: str) -> Stage | None:
    """The stage drawn by a page file ("pages/03_softmax.py"); None for the overview."""
    return next((stage for stage in STAGES if stage.path == page), None)


def fold_button(stage_id: str) -> str:
    """The key of a stage's "Continue" button (ui/fold.py)."""
    return f"_{stage_id}.{FOLD_NAME}~open"


def open_rest(at: AppTest) -> AppTest:
    """Press the current page's "Continue" button, if it has one."""
    key = fold_button(at.session_state["_stage"])
    for button in at.button:
        if button.key == key:
            button.click().run()
            assert not at.exception, [e.value for e in at.exception]
            break
    return at


def page_text(at: AppTest) -> str:
    """Everything a learner reads on the page, as one string, for number checks."""
    parts = []
    for kind in ("markdown", "caption", "latex", "info", "success", "warning", "error",
                 "title", "subheader", "header", "code", "metric", "dataframe"):
        for element in getattr(at, kind, []):
            value = getattr(element, "value", None)
            if kind == "metric":
                value = f"{element.label} {element.value}"
            elif kind == "dataframe":
                value = value.to_string() if value is not None else ""
            parts.append(str(value))
    parts.extend(frame.to_string() for frame in tables(at) if frame is not None)
    return _TAG.sub("", "\n".join(parts))


# An HTML tag in a markdown element (a glossary word's <span lang="zh-CN">): not read.
# Named tags only: LaTeX such as x_{<t} holds a "<" too.
_TAG = re.compile(r"</?(?:span|abbr|b|i|em|strong|code|sub|sup|br|div|p|a)\b[^<>]*>")


# One bad cell for a page's own boxes: that matrix_input refuses every kind (text, NaN,
# inf, too large, empty) is tested once, in tests/app/test_kit.py; a page test types this
# one and the page's own wrong shapes.
BAD_CELL = "abc"


def display_math(at: AppTest) -> int:
    """Blocks of display math on the page: st.latex's, and those a formula's side writes
    in its markdown (ui/formula.py: a label, then "$$ ... $$")."""
    return len(at.latex) + sum(m.value.count("\n$$\n") for m in at.markdown)


def type_bad(page: str, key: str, text: str) -> AppTest:
    """Type `text` into the matrix input `key` ("softmax.Q"): exactly one message, no
    exception."""
    at = open_page(page)
    at.text_input(key).input(text).run()
    assert not at.exception
    assert len(at.error) == 1
    return at


def _exercise_key(exercise: str) -> str:
    stage, name = exercise.split(".", 1)
    return f"_{stage}.ex.{name}"


def reveal(at: AppTest, exercise: str, choice: int) -> AppTest:
    """Answer a multiple-choice exercise ("softmax.kb") and press Reveal."""
    key = _exercise_key(exercise)
    at.radio(f"{key}.choice").set_value(choice).run()
    at.button(f"{key}.reveal").click().run()
    assert not at.exception
    return at


def answer(at: AppTest, exercise: str, value: float) -> AppTest:
    """Type a number into a numeric exercise ("softmax.a10") and press Check."""
    key = _exercise_key(exercise)
    at.number_input(f"{key}.value").set_value(value).run()
    at.button(f"{key}.check").click().run()
    assert not at.exception
    return at


def assert_clean(at: AppTest) -> None:
    """No exception (not even one the frame caught and showed as its translated 'this
    stage failed' message), no Python error text."""
    assert not at.exception, [e.value for e in at.exception]
    failed = {catalogue(lang)["kit.page_failed"] for lang in LANGS}
    assert not [e.value for e in at.error if e.value in failed], "the page raised (see log)"
    text = page_text(at)
    for marker in ("Traceback", "Error:"):
        assert marker not in text


def _walk(node) -> Iterator:
    children = getattr(node, "children", None)
    if children is None:
        yield node
        return
    for child in children.values():
        yield from _walk(child)


def heatmap_frame(chart) -> pd.DataFrame:
    """A kit heatmap read back as the table of exact numbers written in its cells."""
    from ui.figures import unique_labels as _unique

    spec = json.loads(chart.proto.spec)
    layout = spec["layout"]
    return pd.DataFrame(spec["data"][0]["text"],
                        index=_unique(layout["yaxis"]["ticktext"]),
                        columns=_unique(layout["xaxis"]["ticktext"]))


def tables(at: AppTest) -> list[pd.DataFrame]:
    """Every table of exact numbers on the page, in page order: st.table elements and
    the kit's heatmaps (whose cells show their numbers in place of a table twin)."""
    frames = []
    for node in _walk(at.main):
        if node.type == "table":
            frames.append(node.value)
        elif node.type == "plotly_chart":
            spec = json.loads(node.proto.spec)
            if spec["data"] and spec["data"][0].get("type") == "heatmap" and \
                    spec["data"][0].get("text"):
                frames.append(heatmap_frame(node))
    return frames


def click(*cells: tuple[str, int, int]) -> dict:
    """Session state for clicks on heatmap cells ("softmax.weights_map", row, col), as
    Streamlit stores a Plotly selection (x = column): pass it as
    open_page(..., state=click(...))."""
    return {f"_{key}~chart": {"selection": {"points": [{"x": col, "y": row}]}}
            for key, row, col in cells}


def explanations(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def text_above(at, widget_key: str) -> str:
    """Everything the page shows before the widget with this key (predict first)."""
    parts = []
    for node in _walk(at.main):
        if getattr(node, "key", None) == widget_key:
            return "\n".join(parts)
        value = getattr(node, "value", None)
        if node.type == "plotly_chart":
            value = json.dumps(json.loads(node.proto.spec)["data"], ensure_ascii=False)
        parts.append(str(value))
    raise AssertionError(f"no widget {widget_key}")
