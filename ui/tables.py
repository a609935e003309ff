"""A table of exact values, drawn and recorded for the downloads: in the printable
handout and as a CSV file of its own (ui/handout.py). A page that calls st.table
itself draws a table the downloads never see.

    table(frame)                            # named after the heading above it
    table(frame, name=t("kv_cache.col_bytes"), where=column)
    table(frame, name=t("bpe.merges_title"), height=320)   # too long: a scrolling frame
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from ui import handout


def table(data: pd.DataFrame | Mapping[str, Sequence] | Sequence[Sequence], *,
          name: str = "", where=None, height: int | None = None) -> None:
    """st.table of `data` (a DataFrame, or what pd.DataFrame accepts), also in the
    downloads, its rows labelled by the frame's index as on screen. name: the table's
    name in the downloads (its CSV file and caption row), not drawn: by default the
    heading it sits under. height: a table too long for the page (hundreds of rows)
    scrolls inside an st.dataframe of that height instead; presenter view cannot enlarge
    its canvas, so only such tables use it. The downloads hold every row either way."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    if height is None:
        (where or st).table(frame)
    else:
        (where or st).dataframe(frame, height=height, width="stretch")
    handout.add_table(name, frame.columns, frame.index, frame.astype(str).values.tolist())
