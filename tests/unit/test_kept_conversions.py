"""ui/tables.py and ui/drawn.py keep what a full run would convert again: each kept
conversion answers as the conversion it replaces."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io
import plotly.tools
import pytest
import torch
from streamlit.testing.v1 import AppTest

from ui import drawn, tables


def _tables_script() -> None:
    import pandas as pd
    import streamlit as st
    import torch

    from ui import handout, tables

    handout.start("home", "t", "")
    rows, columns, index = [["a", 1], ["b", 2.5]], ["word", "n"], ["r0", "r1"]
    tables.table(rows, columns=columns, index=index, name="plain")
    tables.table(pd.DataFrame(rows, columns=columns, index=index), name="frame")
    tables.table({"n": [1, 2]}, index_name="ID", name="dict")
    tables.table(torch.tensor([[1.0, 2.0]]).numpy(), columns=["x", "y"], name="array")
    st.session_state["kept"] = [(tb.columns, tb.rows, tb.cells)
                                for tb in handout.current().tables()]


@pytest.fixture(scope="module")
def drawn_tables() -> AppTest:
    at = AppTest.from_function(_tables_script)
    at.run()
    assert not at.exception
    return at


def test_plain_data_draws_and_records_what_its_dataframe_does(drawn_tables: AppTest) -> None:
    plain, frame, by_dict, array = drawn_tables.table
    assert plain.proto.arrow_data.data == frame.proto.arrow_data.data
    kept = drawn_tables.session_state["kept"]
    assert kept[0] == kept[1] == (["word", "n"], ["r0", "r1"], [["a", "1.0"], ["b", "2.5"]])
    assert kept[2] == (["n"], ["0", "1"], [["1"], ["2"]])
    assert kept[3] == (["x", "y"], ["0"], [["1.0", "2.0"]])  # not plain: built, not kept
    assert by_dict.proto.arrow_data.data and array.proto.arrow_data.data


def test_plain_data_is_kept_by_content_to_the_digit() -> None:
    tables._from_plain.cache_clear()
    first = tables._Plain(repr(tables._freeze([[0.1, 1]])), ([[0.1, 1]], None, None, None))
    again = tables._Plain(repr(tables._freeze([[0.1, 1]])), ([[0.1, 1]], None, None, None))
    other = tables._Plain(repr(tables._freeze([[0.1, 1.0]])), ([[0.1, 1.0]], None, None, None))
    assert tables._from_plain(first) is tables._from_plain(again)
    assert tables._from_plain(other) is not tables._from_plain(first)  # 1 is not 1.0
    assert tables._freeze([torch.tensor(1.0)]) is tables._NOT_PLAIN
    assert tables._freeze({"a": (1, "x")}) != tables._freeze({"a": [1, "x"]})


def test_a_frame_with_plain_options_is_refused() -> None:
    import pandas as pd

    with pytest.raises(TypeError):
        tables.table(pd.DataFrame([[1]]), columns=["a"])


def test_a_kept_figure_gives_plotlys_json_once_and_anything_else_plotlys_own() -> None:
    from streamlit.elements import plotly_chart

    fig = drawn.figure([{"type": "heatmap", "z": [[1, 2], [3, 4]]}], {"height": 200})
    # What st.plotly_chart does with it: asks Plotly for the figure's data, reads its
    # sizes from that, then asks for its JSON text.
    as_given = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
    assert plotly_chart._resolve_content_height("content", as_given) == 200
    assert plotly_chart._resolve_content_width("content", as_given) == 700  # none set
    text = plotly.io.to_json(as_given, validate=False)
    assert text == drawn._plotly_to_json(go.Figure(fig.to_dict()), validate=False)
    assert plotly.io.to_json(as_given, validate=False) is text  # kept, not made again
    assert fig.to_dict()["data"][0]["z"] == [[1, 2], [3, 4]]
    fig.to_dict()["data"][0]["z"][0][0] = 9  # a copy: what is drawn does not change
    assert plotly.io.to_json(as_given, validate=False) is text
    assert fig.to_dict()["data"][0]["z"][0][0] == 1
    plain = {"data": [{"type": "bar", "y": [1]}], "layout": {}}
    assert json.loads(plotly.io.to_json(plain, validate=False)) == json.loads(
        drawn._plotly_to_json(plain, validate=False))
    assert plotly.tools.return_figure_from_figure_or_data(plain, True) == \
        drawn._plotly_figure_of(plain, True)  # anything else: Plotly's own
    assert plotly.io.to_json(as_given, pretty=True) == drawn._plotly_to_json(
        as_given, pretty=True)  # other options: Plotly's own


def test_a_kept_tables_bytes_are_streamlits_and_anything_else_is_converted_as_before() -> None:
    from streamlit import dataframe_util

    done = tables._from_plain(tables._Plain("bytes test", ([["a", 1.5]], ["w", "n"], None, None)))
    sent = dataframe_util.convert_anything_to_arrow_bytes(done.arrow)
    assert sent is done.arrow_bytes
    assert sent == tables._arrow_bytes_of_streamlit(done.arrow)
    other = done.arrow.slice(0)  # equal content, not a kept object: converted again
    assert dataframe_util.convert_anything_to_arrow_bytes(other) == sent
    assert dataframe_util.convert_anything_to_arrow_bytes(other) is not done.arrow_bytes
