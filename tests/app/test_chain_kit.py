"""ui/chain.py: a chain value edited on one stage is what every later stage computes
with, after pages that do not use the chain, and it is written into each chain stage's
URL."""

from streamlit.testing.v1 import AppTest


def _three_pages():
    """One script as three stages: "edit" draws the box of X, "other" does not use the
    chain (Streamlit drops an undrawn widget's value there), "read" computes with it."""
    import streamlit as st

    from ui import chain, state

    mode = st.session_state.get("_mode", "edit")
    state.enter({"edit": "qkv", "other": "rope", "read": "logits"}[mode])
    if mode == "edit":
        chain.edit("X")
    if mode != "other":
        st.session_state["_logits"] = chain.run().logits.tolist()


def test_an_edit_reaches_a_later_stage_and_its_url():
    at = AppTest.from_function(_three_pages, default_timeout=60)
    at.run()
    default = at.session_state["_logits"]
    at.text_input(key="chain.X").set_value("1, 0; 0, 1; 1, 1; -1, 1").run()
    edited = at.session_state["_logits"]
    assert edited != default
    for mode in ("other", "other", "read"):  # two runs elsewhere, then the later stage
        at.session_state["_mode"] = mode
        at.query_params.clear()  # each stage's own URL, as st.navigation gives it
        at.run()
    assert at.session_state["_logits"] == edited
    assert at.query_params["chain.X"] == "1, 0; 0, 1; 1, 1; -1, 1"
