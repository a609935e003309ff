"""The overview page, the language rules and the navigation."""

from streamlit.testing.v1 import AppTest

from tests.app.helpers import APP, assert_clean, open_page
from ui.stages import STAGES


def test_overview_renders_in_both_languages(lang):
    at = open_page(None, lang)
    assert_clean(at)
    title = at.title[0].value
    assert title == ("总览" if lang == "zh" else "Overview")


def test_language_follows_the_browser_locale_when_the_url_has_none():
    at = AppTest.from_file(APP, default_timeout=60)
    at.context["locale"] = "en-GB"
    at.run()
    assert at.title[0].value == "Overview"
    assert at.query_params["lang"] == "en"  # written back so a shared link keeps it
    at = AppTest.from_file(APP, default_timeout=60)
    at.context["locale"] = "fr-FR"
    at.run()
    assert at.title[0].value == "总览"


def test_sidebar_switch_changes_the_language():
    at = open_page(None, "zh")
    at.button_group[0].set_value("en").run()
    assert at.query_params["lang"] == "en"
    assert at.title[0].value == "Overview"


def test_navigation_lists_every_built_stage_in_order():
    at = open_page(None, "en")
    labels = [link.label for link in at.sidebar.get("page_link")]
    assert labels[0] == "Overview"
    assert [label.split(" · ")[0] for label in labels[1:]] == [s.number for s in STAGES]


def test_every_stage_renders_in_both_languages(lang):
    for stage in STAGES:
        at = open_page(stage.path, lang)
        assert_clean(at)
        assert at.title[0].value.startswith(stage.number)


def test_a_link_asking_for_a_gpu_falls_back_to_the_cpu_with_a_note():
    """The device choice is shown on the pages that run a model (the forward pass)."""
    import torch

    from ui.i18n import catalogue

    at = open_page("pages/11_forward.py", params={"device": "cuda"})
    assert not at.exception
    notes = [i.value for i in at.sidebar.info]
    if torch.cuda.is_available():
        assert at.sidebar.radio("device").value == "cuda"
    else:
        assert catalogue("en")["kit.no_cuda"] in notes


def test_device_name_never_asks_for_a_missing_gpu():
    """A page that computes on `device_name()` gets CUDA only where it exists."""

    def script():
        import streamlit as st

        from ui.page import device_name

        st.session_state["device"] = "cuda"
        st.markdown(device_name())

    import torch

    at = AppTest.from_function(script, default_timeout=60).run()
    assert at.markdown[0].value == ("cuda" if torch.cuda.is_available() else "cpu")
