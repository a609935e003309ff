"""Headings inside a section: a table's, a column's or a step's title, drawn one way
and recorded in the printable handout (ui/handout.py) like a section's title.

    subsection(t("softmax.weights_table"))            # in the current container
    subsection(question, where=column)                # in a given one

A section's own title is ui.page.section; no page writes a heading as bold Markdown
(tests/unit/test_page_size.py checks it).
"""

from __future__ import annotations

import streamlit as st

from ui import handout


def subsection(title: str, *, where=None) -> None:
    """A small heading (h4) below the section's, also the handout's (h3)."""
    (where or st).markdown(f"#### {title}")
    handout.add("subsection", title)
