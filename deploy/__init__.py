"""Serving tinyformer: the warmed Streamlit launcher, the class server behind nginx, and
its configuration. See docs/deploy.md."""
