"""Plotly's browser code, loaded while the learner reads the first part of a page.

Streamlit's browser app fetches its Plotly component (4.7 MB of JavaScript on 1.67) the
first time a page draws a chart. Where a page's first part has no chart, that cost fell
on the "Continue" button (ui/fold.py): 1.2-2.0 s between the click and the rest of the
page on this machine (benchmarks/open_time.py). The frame's script element carries this
script: once the browser is idle after the first draw, it imports the same module,
by the same address Streamlit's own code imports it from, so a later chart finds it
loaded. Without Streamlit's file (another version's name) it does nothing.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import streamlit

_STATIC_JS = Path(streamlit.__file__).parent / "static" / "static" / "js"

_JS = """<script>
(() => {
  if (window.__tinyformerChartsWarm) return;
  window.__tinyformerChartsWarm = true;
  const index = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!index) return;
  const load = () => import(new URL(__CHUNK__, index.src).href).catch(() => {});
  if (window.requestIdleCallback) requestIdleCallback(load, {timeout: 4000});
  else setTimeout(load, 1500);
})();
</script>"""


@functools.cache
def script() -> str:
    """The script, or "" where Streamlit's Plotly file is not where 1.67 keeps it."""
    found = sorted(_STATIC_JS.glob("PlotlyChart.*.js"))
    return _JS.replace("__CHUNK__", json.dumps(found[0].name)) if len(found) == 1 else ""
