"""The kit's last lines of defence: an exception that escapes a page, and an error key
without a translation, never reach the learner as a traceback or a raw key."""

import logging

from streamlit.testing.v1 import AppTest

from ui.i18n import catalogue


def _page_that_fails():
    import streamlit as st

    from ui.frame import around

    st.query_params["lang"] = st.query_params.get("lang", "en")
    with around("softmax"):
        st.markdown("before the bug")
        raise RuntimeError("a bug in a page")


def _section_that_fails():
    import streamlit as st

    from ui.frame import around
    from ui.page import part

    @part
    def broken() -> None:
        raise RuntimeError("a bug in a section")

    with around("softmax"):
        broken()
        st.markdown("after the section")


def _page_with_an_unknown_error_key():
    import streamlit as st

    from tinyformer.errors import ParameterError
    from ui.frame import around
    from ui.notes import shown_errors

    with around("softmax"):
        with shown_errors():
            raise ParameterError("no_such_key_anywhere", "raw text never shown", x=1)
        st.markdown("after the bad setting")


def _run(script, lang: str) -> AppTest:
    at = AppTest.from_function(script, default_timeout=60)
    at.query_params["lang"] = lang
    return at.run()


def test_an_escaping_exception_shows_a_translated_message_and_is_logged(each_lang, caplog):
    with caplog.at_level(logging.ERROR, logger="tinyformer.pages"):
        at = _run(_page_that_fails, each_lang)
    assert not at.exception  # not Streamlit's crash screen
    assert [e.value for e in at.error] == [catalogue(each_lang)["kit.page_failed"]]
    assert "before the bug" in [m.value for m in at.markdown]  # what rendered stays
    assert any("a bug in a page" in r.getMessage() or r.exc_info for r in caplog.records)


def test_a_section_that_fails_shows_the_same_message_and_the_page_goes_on(caplog):
    """A section reruns alone (st.fragment): its bug must not show Streamlit's box."""
    with caplog.at_level(logging.ERROR, logger="tinyformer.pages"):
        at = _run(_section_that_fails, "zh")
    assert not at.exception
    assert [e.value for e in at.error] == [catalogue("zh")["kit.page_failed"]]
    assert "after the section" in [m.value for m in at.markdown]
    assert any(r.exc_info for r in caplog.records)


def test_an_untranslated_error_key_shows_the_generic_message_and_is_logged(each_lang, caplog):
    with caplog.at_level(logging.WARNING, logger="tinyformer.errors"):
        at = _run(_page_with_an_unknown_error_key, each_lang)
    assert not at.exception
    assert [e.value for e in at.error] == [catalogue(each_lang)["errors.generic"]]
    assert "after the bad setting" in [m.value for m in at.markdown]  # the page goes on
    assert any("no_such_key_anywhere" in r.getMessage() for r in caplog.records)
    assert all("raw text never shown" not in e.value for e in at.error)
