"""The classroom kit: Streamlit and Plotly helpers shared by every page (no maths)."""
