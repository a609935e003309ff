"""The yardstick for benchmarks/rerun_cost.py: one slider and one 8x8 heatmap.

A stage page should cost at most twice this page's rerun. It is served on its own
(`streamlit run benchmarks/reference_page.py` from the repository root, so the
project's .streamlit/config.toml applies) and is never part of the app's navigation.
"""

import math

import plotly.graph_objects as go
import streamlit as st

SIZE = 8

scale = st.slider("scale", 0.0, 2.0, 1.0, step=0.1, key="scale", bind="query-params")
z = [[math.sin(scale * (i + 1) * (j + 1) / SIZE) for j in range(SIZE)] for i in range(SIZE)]
labels = [f"t{i}" for i in range(SIZE)]
figure = go.Figure(go.Heatmap(z=z, x=labels, y=labels, colorscale="Blues",
                              texttemplate="%{z:.3f}", showscale=False))
figure.update_yaxes(autorange="reversed")
figure.update_layout(height=420, margin={"l": 10, "r": 10, "t": 10, "b": 10})
st.plotly_chart(figure, key="heat", config={"displayModeBar": False})
