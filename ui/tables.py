"""A table of exact values, drawn and recorded for the downloads: in the printable
handout and as a CSV file of its own (ui/handout.py). A page that calls st.table
itself draws a table the downloads never see.

    table(frame)                            # named after the heading above it
    table(frame, name=t("kv_cache.col_bytes"), where=column)
    table(frame, name=t("bpe.merges_title"), height=320)   # too long: a scrolling frame
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import pandas as pd
import pyarrow as pa
import streamlit as st
from streamlit import dataframe_util

from ui import handout

MAX_KEPT = 512  # distinct tables kept converted, per process


def table(data: pd.DataFrame | Mapping[str, Sequence] | Sequence[Sequence], *,
          name: str = "", where=None, height: int | None = None) -> None:
    """st.table of `data` (a DataFrame, or what pd.DataFrame accepts), also in the
    downloads, its rows labelled by the frame's index as on screen. name: the table's
    name in the downloads (its CSV file and caption row), not drawn: by default the
    heading it sits under. height: a table too long for the page (hundreds of rows)
    scrolls inside an st.dataframe of that height instead; presenter view cannot enlarge
    its canvas, so only such tables use it. The downloads hold every row either way."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    arrow, cells, plain_index = _converted(_Content(frame))
    if height is None:
        # hide_index given: else Streamlit turns the Arrow table back into a frame to decide
        (where or st).table(arrow, hide_index=plain_index)
    else:
        (where or st).dataframe(frame, height=height, width="stretch")
    handout.add_table(name, frame.columns, frame.index, cells)


class _Content:
    """A frame, equal to another frame of the same labels, types and values (compared
    by repr, so to the last digit): the key under which its conversion is kept."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        self.key = (tuple(map(repr, frame.columns)), tuple(map(repr, frame.index)),
                    repr(frame.index.name), tuple(map(str, frame.dtypes)),
                    repr(frame.values.tolist()))

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Content) and other.key == self.key


@functools.lru_cache(maxsize=MAX_KEPT)
def _converted(content: _Content) -> tuple[pa.Table, list[list[str]], bool]:
    """The frame as Arrow, as the downloads' text, and whether its index is 0, 1, 2 ...
    (which st.table hides), once per distinct table: a full run
    of a page draws its tables again, unchanged (0.8-3 ms each to convert; a column of
    mixed types takes Streamlit's slower second try). Streamlit's own conversion, so a
    table looks as st.table(frame) draws it."""
    frame = content.frame
    return (dataframe_util.convert_pandas_df_to_arrow_table(frame),
            frame.astype(str).values.tolist(), dataframe_util.has_range_index(frame))
