"""serving/widget_memory.py: a session keeps the metadata of the widgets it draws, not of
every widget it ever drew, and its widgets answer as they do without the patch."""

from __future__ import annotations

import pytest
from streamlit.runtime.state.session_state import SessionState
from streamlit.testing.v1 import AppTest

from serving import widget_memory


def _chart_script() -> None:
    """A keyed chart whose figure (and so its id) follows a slider, a checkbox that hides
    a second slider, and a section (st.fragment) with its own slider."""
    import plotly.graph_objects as go
    import streamlit as st

    size = st.slider("size", 1, 40, 2, key="size")
    figure = go.Figure(go.Heatmap(z=[[size, 1], [2, 3]]))
    st.plotly_chart(figure, key="map", on_select="rerun", selection_mode="points")
    if st.checkbox("show", value=True, key="show"):
        st.session_state["seen"] = st.slider("hidden", 0, 10, 5, key="hidden")
    else:
        st.session_state["seen"] = None

    @st.fragment
    def section() -> None:
        st.session_state["inner_seen"] = st.slider("inner", 0, 10, 1, key="inner")

    section()


def _metadata(at: AppTest) -> dict:
    return at._session_state._state._new_widget_state.widget_metadata


def _walk(at: AppTest) -> list[tuple]:
    """Slider moves (each a new chart id), hiding and showing a widget, a section's own
    run; what the script saw after each step."""
    seen = []
    at.run()
    for size in range(3, 23):
        at.slider(key="size").set_value(size).run()
        seen.append((at.session_state["size"], at.session_state["seen"]))
    at.slider(key="hidden").set_value(9).run()
    seen.append(at.session_state["seen"])
    at.checkbox(key="show").uncheck().run()
    seen.append(at.session_state["seen"])
    at.checkbox(key="show").check().run()
    seen.append(at.session_state["seen"])  # drawn again: its default, as Streamlit does
    at.slider(key="inner").set_value(8).run()  # the fragment's run alone
    seen.append((at.session_state["inner_seen"], at.session_state["size"]))
    assert not at.exception
    return seen


def test_the_metadata_holds_the_widgets_drawn_and_no_more() -> None:
    assert widget_memory.install()
    at = AppTest.from_function(_chart_script)
    _walk(at)
    drawn = {"size", "map", "show", "hidden", "inner"}
    ids = list(_metadata(at))
    assert len(ids) == len(drawn), ids  # 20 figures drawn, one chart's id kept
    assert all(any(widget_id.endswith(f"-{key}") for widget_id in ids) for key in drawn), ids


def test_without_it_streamlit_keeps_every_chart_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leak the patch removes, measured on the same walk."""
    monkeypatch.setattr(SessionState, "_remove_stale_widgets",
                        widget_memory.ORIGINALS.get("_remove_stale_widgets",
                                                    SessionState._remove_stale_widgets))
    at = AppTest.from_function(_chart_script)
    _walk(at)
    charts = [widget_id for widget_id in _metadata(at) if widget_id.endswith("-map")]
    assert len(charts) > 20  # one per figure drawn


def test_widgets_answer_as_without_the_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert widget_memory.install()
    patched = _walk(AppTest.from_function(_chart_script))
    monkeypatch.setattr(SessionState, "_remove_stale_widgets",
                        widget_memory.ORIGINALS["_remove_stale_widgets"])
    assert _walk(AppTest.from_function(_chart_script)) == patched
    assert patched[-4:] == [9, None, 5, (8, 22)]


def test_a_section_s_run_keeps_what_lies_outside_it() -> None:
    assert widget_memory.install()
    at = AppTest.from_function(_chart_script)
    at.run()
    before = set(_metadata(at))
    at.slider(key="inner").set_value(4).run()
    assert set(_metadata(at)) == before
    assert at.session_state["inner_seen"] == 4 and at.session_state["size"] == 2
