"""ui.chart_warmup: the script names Streamlit's own Plotly file, so a Streamlit release
that renames or moves it fails here instead of silently loading nothing."""

from __future__ import annotations

import re

from ui import chart_warmup


def test_the_warm_up_imports_streamlits_plotly_file_once_the_browser_is_idle() -> None:
    script = chart_warmup.script()
    (name,) = re.findall(r'"(PlotlyChart\.[\w-]+\.js)"', script)
    assert (chart_warmup._STATIC_JS / name).is_file()
    assert "requestIdleCallback" in script and "__tinyformerChartsWarm" in script
