"""A table of exact values, drawn and recorded for the downloads: in the printable
handout and as a CSV file of its own (ui/handout.py). A page that calls st.table
itself draws a table the downloads never see.

    table(rows, columns=[...], index=[...])       # rows: what pd.DataFrame takes
    table({"a": [...], "b": [...]}, name=t("kv_cache.col_bytes"), where=column)
    table(frame, name=t("bpe.merges_title"), height=320)   # too long: a scrolling frame

A full run of a page draws its tables again, mostly unchanged. Given plain data (lists,
tuples, dicts, strings and numbers) rather than a DataFrame, an unchanged table costs
neither building the DataFrame nor converting it: both are kept per distinct content.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import streamlit as st
from streamlit import dataframe_util

from ui import handout

MAX_KEPT = 512  # distinct tables kept converted, per process
_PLAIN = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class _Converted:
    """A table as Streamlit draws it and as the downloads hold it."""

    frame: pd.DataFrame
    arrow: pa.Table
    cells: list[list[str]]
    plain_index: bool  # 0, 1, 2 ...: st.table hides it
    arrow_bytes: bytes  # what Streamlit sends for `arrow`


def table(data: pd.DataFrame | Mapping[str, Sequence] | Sequence[Sequence], *,
          columns: Sequence | None = None, index: Sequence | None = None,
          index_name: str | None = None, name: str = "", where=None,
          height: int | None = None) -> None:
    """st.table of `data` (a DataFrame, or what pd.DataFrame takes with `columns`,
    `index` and the index's `index_name`), also in the downloads, its rows labelled by
    the index as on screen. name: the table's name in the downloads (its CSV file and
    caption row), not drawn: by default the heading it sits under. height: a table too
    long for the page (hundreds of rows) scrolls inside an st.dataframe of that height
    instead; presenter view cannot enlarge its canvas, so only such tables use it. The
    downloads hold every row either way."""
    if isinstance(data, pd.DataFrame):
        if columns is not None or index is not None or index_name is not None:
            raise TypeError("columns, index and index_name go with plain data, not a frame")
        done = _from_frame(_Content(data))
    else:
        spec = (_freeze(data), _freeze(columns), _freeze(index), index_name)
        done = (_from_plain(_Plain(repr(spec), (data, columns, index, index_name)))
                if all(part is not _NOT_PLAIN for part in spec[:3]) else
                _from_frame(_Content(_frame(data, columns, index, index_name))))
    if height is None:
        # hide_index given: else Streamlit turns the Arrow table back into a frame to decide
        (where or st).table(done.arrow, hide_index=done.plain_index)
    else:
        (where or st).dataframe(done.frame, height=height, width="stretch")
    handout.add_table(name, done.frame.columns, done.frame.index, done.cells)


def _frame(data, columns, index, index_name) -> pd.DataFrame:
    frame = pd.DataFrame(data, columns=columns, index=index)
    if index_name is not None:
        frame = frame.rename_axis(index_name)
    return frame


_NOT_PLAIN = object()


def _freeze(value):
    """`value` as a key that repr writes to the last digit, or _NOT_PLAIN for anything
    but plain data (a tensor's repr, for one, leaves numbers out)."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, (list, tuple, range)):
        items = tuple(_freeze(v) for v in value)
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else (type(value).__name__,
                                                                        items)
    if isinstance(value, Mapping):
        items = tuple((_freeze(k), _freeze(v)) for k, v in value.items())
        return _NOT_PLAIN if any(_NOT_PLAIN in pair for pair in items) else ("dict", items)
    return _NOT_PLAIN


class _Plain:
    """Plain data for a table, equal to other data of the same repr: its frame is built
    only the first time."""

    def __init__(self, key: str, args: tuple):
        self.key = key
        self.args = args  # data, columns, index, index_name

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Plain) and other.key == self.key


@functools.lru_cache(maxsize=MAX_KEPT)
def _from_plain(plain: _Plain) -> _Converted:
    return _from_frame(_Content(_frame(*plain.args)))


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
def _from_frame(content: _Content) -> _Converted:
    """The frame as Arrow, as the downloads' text, and whether its index is 0, 1, 2 ...
    (which st.table hides), once per distinct table (0.8-3 ms each to convert; a column
    of mixed types takes Streamlit's slower second try). Streamlit's own conversion, so a
    table looks as st.table(frame) draws it."""
    frame = content.frame
    arrow = dataframe_util.convert_pandas_df_to_arrow_table(frame)
    done = _Converted(frame, arrow, frame.astype(str).values.tolist(),
                      dataframe_util.has_range_index(frame),
                      _arrow_bytes_of_streamlit(arrow))
    _KEPT_BY_ID[id(arrow)] = done
    return done


# st.table and st.dataframe turn the Arrow table into bytes on every call (0.3 ms for a
# small table, more for the whole vocabulary): a kept table's bytes are made
# once. Streamlit looks the function up on dataframe_util at every call, so it is
# replaced for every caller; it answers as Streamlit's own for anything but a kept table.
_KEPT_BY_ID: weakref.WeakValueDictionary[int, _Converted] = weakref.WeakValueDictionary()
_anything_to_bytes_of_streamlit = dataframe_util.convert_anything_to_arrow_bytes
_arrow_bytes_of_streamlit = dataframe_util.convert_arrow_table_to_arrow_bytes


def _anything_to_arrow_bytes(data, *args, **kwargs) -> bytes:
    done = _KEPT_BY_ID.get(id(data)) if isinstance(data, pa.Table) else None
    if done is not None and done.arrow is data and not args and not kwargs:
        return done.arrow_bytes
    return _anything_to_bytes_of_streamlit(data, *args, **kwargs)


dataframe_util.convert_anything_to_arrow_bytes = _anything_to_arrow_bytes


def matrix_table(matrix, col_labels: Sequence[str], row_labels: Sequence[str],
                 decimals: int = 3, **options) -> None:
    """table() of a matrix (a tensor or nested lists) as exact numbers written as the
    page writes them; repeated labels (two 「运」) numbered apart. `options` as table's."""
    from ui.figures import matrix_rows, unique_labels

    table(matrix_rows(matrix, decimals), columns=unique_labels(col_labels),
          index=unique_labels(row_labels), **options)
