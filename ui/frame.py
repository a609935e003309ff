"""The frame around every page, drawn once by app.py (docs/architecture.md, "The frame").

    page = frame.navigation()      # st.navigation over every stage, titles translated
    with frame.around(page):       # config, language, sidebar, header, footer, guard
        page.run()                 # the page file: its lesson and nothing else

The frame owns everything that is the same on every page: the language, presenter view,
the sidebar (navigation, device, share, downloads), the stage's title and lead, the
previous / next links, and a guard so that nothing escapes a page as Streamlit's own
(English) crash screen.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from ui import a11y, classroom, exercise, handout, state
from ui.fold import Folded
from ui.i18n import LANG_NAMES, LANGS, lang_from_locale, t
from ui.inputs import choice
from ui.page import DEVICE, link_to, st_page, stage_label
from ui.stages import (
    HOME,
    NAV_SECTIONS,
    STAGES,
    Stage,
    all_pages,
    by_id,
    by_url,
    neighbours,
)

_LOG = logging.getLogger("tinyformer.pages")

_LANG_WIDGET = "_lang_switch"
_LANG_CODEC = state.choice_codec(LANGS)
_PRESENT_WIDGET = "_present_switch"
ICON = Path(__file__).resolve().parent.parent / "assets" / "icon.png"
_CSS = """<style>
/* No empty band above the title. */
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; }
/* A formula wider than its column scrolls inside it instead of being cut off. */
.katex-display { overflow-x: auto; overflow-y: hidden; padding: 2px 0; }
</style>"""


def navigation() -> StreamlitPage:
    """Every stage as a Streamlit page, grouped as the lesson is, titled in the session's
    language; returns the page this run draws. The URL paths are the stage ids."""
    _one_torch_thread()
    resolve_lang()
    sections = {
        t(f"nav.{name}") if name else "": [st_page(by_id(s)) for s in stage_ids]
        for name, stage_ids in NAV_SECTIONS
    }
    return st.navigation(sections, position="sidebar", expanded=True)


def resolve_lang() -> str:
    """The session's language: the URL's, else the session's (a link from Streamlit's
    own navigation carries none), else the browser locale's. Always in the URL."""
    asked = st.query_params.get(state.LANG)
    kept = st.session_state.get(state.LANG)
    lang = asked if asked in LANGS else kept if kept in LANGS else \
        lang_from_locale(st.context.locale)
    state.set_value(state.LANG, lang, None, _LANG_CODEC)
    # Sent on every whole run, even unchanged: the browser's address then holds every
    # value, also those written in a section's rerun that a whole run replaced.
    st.query_params[state.LANG] = lang
    return lang


@contextmanager
def around(page: StreamlitPage | str) -> Iterator[Stage]:
    """Draw the frame around the body run inside: set-up and header before, footer,
    share panel and downloads after.

    An exception that escapes the body (a bug: bad input has its own messages) is
    logged and shown as a translated message with a way back, never as Streamlit's
    crash screen. Streamlit's own control flow (st.rerun, st.stop) and the fold
    (ui/fold.py) are BaseExceptions: the fold ends the body, the others pass through.
    """
    stage = by_id(page) if isinstance(page, str) else by_url(page.url_path)
    _set_up(stage)
    bar_share = _header(stage)
    share_box = _sidebar(stage, bar_share)
    folded = False
    try:
        yield stage
    except Folded:
        folded = True  # the rest of the page waits for the learner (ui/fold.py)
    except Exception:
        _LOG.exception("stage %r failed", stage.id)
        st.error(t("kit.page_failed"), icon=":material/sentiment_dissatisfied:")
        link_to(HOME, t("kit.back_home"), icon=":material/home:")
    # This whole run drew every section after an answer given in it: no second run.
    st.session_state.pop(exercise.FIRST_ANSWER, None)
    _footer_nav(stage)
    with share_box:  # filled last, so its address has every input of this run
        classroom.share_panel()
    with st.sidebar.expander(t("kit.downloads"), icon=":material/download:"):
        classroom.downloads(stage.id, folded=folded)


@cache
def _one_torch_thread() -> None:
    """Many sessions share a few cores: each small tensor operation is faster on one
    thread than split across threads that wait for each other. Measured on this
    2-core machine under load: 300 softmaxes of 3 x 3 took 6.4 s with 2 threads and
    0.3 ms with one; 32 small blocks 1.5 s against 38 ms."""
    import torch

    torch.set_num_threads(1)


def _set_up(stage: Stage) -> None:
    resolve_lang()  # again: a test may draw the frame without the navigation
    state.enter(stage.id)
    presenting = classroom.resolve_presenting()
    st.set_page_config(
        page_title=f"tinyformer · {t(f'{stage.id}.title')}",
        page_icon=str(ICON),
        layout="wide",
        # "auto": open on a wide screen, closed on a phone, where it would cover the page.
        initial_sidebar_state="collapsed" if presenting else "auto",
    )
    st.html(_CSS)
    classroom.page_chrome()
    a11y.page_chrome()
    state.frame_drawn()


def _language_switch() -> None:
    st.session_state[_LANG_WIDGET] = st.session_state.get(state.LANG)
    st.segmented_control(t("kit.language"), LANGS, format_func=LANG_NAMES.__getitem__,
                         key=_LANG_WIDGET, on_change=_switch_language, required=True,
                         label_visibility="collapsed", width="content")


def _switch_language() -> None:
    state.set_value(state.LANG, st.session_state[_LANG_WIDGET], None, _LANG_CODEC)


def _switch_presenter() -> None:
    classroom.set_presenting(bool(st.session_state[_PRESENT_WIDGET]))


def _sidebar(stage: Stage, bar_share):
    """The sidebar under the navigation; returns the share panel's place (in presenter
    view, bar_share: the bar's own popover)."""
    with st.sidebar:
        st.session_state[_PRESENT_WIDGET] = classroom.presenting()
        st.toggle(t("kit.presenter"), key=_PRESENT_WIDGET, on_change=_switch_presenter,
                  help=t("kit.presenter_help"))
        if stage.uses_device:  # only pages that run a model read it
            _device_choice()
        share_box = st.empty()
        st.caption(t("kit.share_hint"))
    if classroom.presenting():  # presenter view has it in its bar
        return bar_share
    return share_box.expander(t("kit.share"), icon=":material/qr_code_2:")


def _device_choice() -> None:
    """Offer CUDA only where it exists; a shared link asking for it falls back to CPU."""
    import torch  # heavy, but imported once per process

    if torch.cuda.is_available():
        choice(DEVICE, t("kit.device"), ("cpu", "cuda"), "cpu")
    elif st.query_params.get(DEVICE) == "cuda":
        st.info(t("kit.no_cuda"))


def _header(stage: Stage):
    """The title, or in presenter view the bar (returns its share popover)."""
    handout.start(stage.id, stage_label(stage), t(f"{stage.id}.lead"))
    bar_share = None
    if classroom.presenting():
        bar_share = _presenter_bar(stage)
    else:
        with st.container(horizontal=True, vertical_alignment="center", key="page_title"):
            st.title(stage_label(stage), width="stretch")
            _language_switch()
    st.markdown(t(f"{stage.id}.lead"))
    return bar_share


def _presenter_bar(stage: Stage):
    """Always visible in presenter view: previous, the stage, next, language, share, exit."""
    previous, following = neighbours(stage.id)
    with st.container(key="presenter_bar", horizontal=True, vertical_alignment="center"):
        with st.container(key="bar_prev", width="content"):
            if previous is not None:
                link_to(previous, "←", icon=None)
        st.title(stage_label(stage), width="stretch")
        with st.container(key="bar_next", width="content"):
            if following is not None:
                link_to(following, "→", icon=None)
            else:
                st.markdown(t("kit.lesson_over"))
        if stage != HOME:
            st.caption(t("kit.stage_of", k=STAGES.index(stage) + 1, n=len(STAGES)),
                       width="content")
        _language_switch()
        share = st.popover(t("kit.share_short"), icon=":material/qr_code_2:")
        st.button(t("kit.presenter_exit_short"), key="_present_exit", icon=":material/close:",
                  help=t("kit.presenter_exit"),
                  on_click=classroom.set_presenting, args=(False,))
    return share


def _footer_nav(stage: Stage) -> None:
    """Previous / next links in curriculum order."""
    previous, following = neighbours(stage.id)
    st.divider()
    left, right = st.columns(2)
    if previous is not None:
        with left.container(key="nav_prev"):
            link_to(previous, f"← {stage_label(previous)}")
    if following is not None:
        with right.container(key="nav_next"):
            link_to(following, f"{stage_label(following)} →")


__all__ = ["all_pages", "around", "navigation"]
