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

import base64
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from serving import fast_runtime, run_finish, widget_memory
from ui import (
    a11y,
    chain,
    chart_warmup,
    class_session,
    classroom,
    exercise,
    formula,
    handout,
    html_links,
    presenter,
    sentence,
    state,
)
from ui.drawer import drawer, is_open
from ui.fold import NAME as FOLD_NAME
from ui.fold import Folded
from ui.i18n import LANG_NAMES, LANGS, current_lang, lang_from_locale, set_lang, t
from ui.inputs import SLIDER_GRID_CSS, choice
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
_RESET = "_reset_page"
# The sidebar's drawers (ui/drawer.py): open, they draw the share panel, the downloads.
SHARE_BOX = "_share_box"
DOWNLOADS_BOX = "_dl_box"
ICON = Path(__file__).resolve().parent.parent / "assets" / "icon.png"


@cache
def icon_url() -> str:
    """The tab's icon as a data URL, read once. Given a file's path, Streamlit reads the
    file, opens it as an image and files it with its media store on every full run."""
    return "data:image/png;base64," + base64.b64encode(ICON.read_bytes()).decode("ascii")


_CSS = """<style>
/* No empty band above the title. */
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; }
/* A formula wider than its column scrolls inside it instead of being cut off. */
.katex-display { overflow-x: auto; overflow-y: hidden; padding: 2px 0; }
/* The kit's number boxes (ui/inputs.py) hold no empty value: no "clear" button. An
   exercise's answer box (keys "_stage.ex.name...") keeps its own. */
[data-testid="stElementContainer"]:not([class*="-ex-"])
  [data-testid="stNumberInputClearButton"] { display: none; }
""" + formula.ROW_CSS + SLIDER_GRID_CSS + "</style>"


def navigation() -> StreamlitPage:
    """Every stage as a Streamlit page, grouped as the lesson is, titled in the session's
    language; returns the page this run draws. The URL paths are the stage ids."""
    _one_torch_thread()
    fast_runtime.install()  # Streamlit's per-element costs, once per process
    widget_memory.install()  # a session forgets the widgets it no longer draws
    run_finish.install()  # a section's run waits for the end of the run before it
    resolve_lang()
    a11y.claim_unknown_page()  # an unknown path: the overview with our note, not Streamlit's
    sections = {
        t(f"nav.{name}") if name else "": [st_page(by_id(s)) for s in stage_ids]
        for name, stage_ids in NAV_SECTIONS
    }
    sections[""].append(class_session.overview_page())  # the teacher's (issue 18)
    return st.navigation(sections, position="sidebar", expanded=True)


def resolve_lang(resend: bool = True) -> str:
    """The session's language: the URL's, else the session's (a link from Streamlit's
    own navigation carries none), else the browser locale's. Always in the URL; resend:
    written again even when the URL holds it (once a run is enough)."""
    asked = st.query_params.get(state.LANG)
    kept = st.session_state.get(state.LANG)
    lang = asked if asked in LANGS else kept if kept in LANGS else \
        lang_from_locale(st.context.locale)
    _set_language(lang)
    # Sent on every whole run, even unchanged: the browser's address then holds every
    # value, also those written in a section's rerun that a whole run replaced.
    if resend or st.query_params.get(state.LANG) != lang:
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
    bar = _header(stage)
    chain.strip(stage.id)  # where the running example's hand model is (issue 16)
    share_box, downloads_box = _sidebar(stage, bar)
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
    class_session.sync(stage.id)
    _footer_nav(stage)
    if is_open(share_box):
        with share_box:  # filled last, so its address has every input of this run
            classroom.share_panel()
    handout.settle(handout.current())  # the whole page has drawn: see Record.resolve
    if is_open(downloads_box):
        with downloads_box:
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
    resolve_lang(resend=False)  # again: a test may draw the frame without the navigation
    state.enter(stage.id)
    presenting = classroom.resolve_presenting()
    st.set_page_config(
        page_title=f"tinyformer · {t(f'{stage.id}.title')}",
        page_icon=icon_url(),
        layout="wide",
        # "auto": open on a wide screen, closed on a phone, where it would cover the page.
        initial_sidebar_state="collapsed" if presenting else "auto",
    )
    # One element for every style and one for every script: each element is one more
    # message on every full run of every page.
    st.html(_CSS + a11y.STYLES + classroom.page_styles() + html_links.STYLES)
    st.html(classroom.page_script() + presenter.page_script(presenting)
            + a11y.page_script(current_lang()) + chart_warmup.script() + html_links.SCRIPT,
            unsafe_allow_javascript=True)
    a11y.unknown_page_note()
    class_session.enter()
    state.frame_drawn()


def _language_switch() -> None:
    st.session_state[_LANG_WIDGET] = st.session_state.get(state.LANG)
    st.segmented_control(t("kit.language"), LANGS, format_func=LANG_NAMES.__getitem__,
                         key=_LANG_WIDGET, on_change=_switch_language, required=True,
                         label_visibility="collapsed", width="content")


def _switch_language() -> None:
    _set_language(st.session_state[_LANG_WIDGET])


def _set_language(lang: str) -> None:
    set_lang(lang)  # the session's, and kept where every text of this run reads it
    state.write_url(state.LANG, lang, None, _LANG_CODEC)


def _switch_presenter() -> None:
    classroom.set_presenting(bool(st.session_state[_PRESENT_WIDGET]))


def _sidebar(stage: Stage, bar: _Bar | None):
    """The sidebar under the navigation; returns the places of the share panel and of
    the downloads (in presenter view, which hides the sidebar, the bar's popovers)."""
    with st.sidebar:
        st.session_state[_PRESENT_WIDGET] = classroom.presenting()
        st.toggle(t("kit.presenter"), key=_PRESENT_WIDGET, on_change=_switch_presenter,
                  help=_keys_help())
        if bar is None:
            _reset_button(stage)
        if stage != HOME:  # the overview has the box on the page, beside what it does
            sentence.box()  # the teacher's own sentence, the example of every stage
        if stage.uses_device:  # only pages that run a model read it
            _device_choice()
        class_session.sidebar()
        share_box = st.empty()
        st.caption(t("kit.share_hint"))
    if bar is not None:  # presenter view has them in its bar
        return bar.share, bar.downloads
    return (drawer(t("kit.share"), key=SHARE_BOX, icon=":material/qr_code_2:", where=share_box),
            drawer(t("kit.downloads"), key=DOWNLOADS_BOX, icon=":material/download:",
                   where=st.sidebar))


def _keys_help() -> str:
    gap = "" if current_lang() == "zh" else " "  # no space after a Chinese full stop
    return f"{t('kit.presenter_help')}{gap}{t('kit.presenter_key_continue')}"


def _reset_button(stage: Stage) -> None:
    st.button(t("kit.reset"), key=_RESET, icon=":material/restart_alt:",
              help=t("kit.reset_help"), on_click=reset_page, args=(stage.id,))


def reset_page(stage_id: str) -> None:
    """Every input of this stage back to its default: its URL parameters and session
    values, and the shared values it shows (the hand example of stages 2-5, which the
    other stages of that example then show at their defaults too). Nothing of another
    stage, nor the frame's language, presenter view or device. The rest of the page, if
    open, stays open (a view, not an input)."""
    own = f"{stage_id}."
    keep = {own + FOLD_NAME, f"_{own}{FOLD_NAME}{state.PRIVATE}open"}
    shared = [key for key in st.query_params
              if state.is_shared(key) and key not in state.GLOBAL_KEYS]
    for key in list(st.query_params):
        if key not in keep and (key.startswith(own) or key in shared):
            del st.query_params[key]
            state.url_now().pop(key, None)
    mirrors = tuple(f"_{key}{state.PRIVATE}" for key in shared)
    for key in list(st.session_state):
        if key in keep:
            continue
        if key.lstrip("_").startswith(own) or key in shared or key.startswith(mirrors):
            del st.session_state[key]


def _device_choice() -> None:
    """Offer CUDA only where it exists; a shared link asking for it falls back to CPU."""
    import torch  # heavy, but imported once per process

    if torch.cuda.is_available():
        choice(DEVICE, t("kit.device"), ("cpu", "cuda"), "cpu")
    elif st.query_params.get(DEVICE) == "cuda":
        st.info(t("kit.no_cuda"))


def _header(stage: Stage) -> _Bar | None:
    """The title, or in presenter view the bar (returns its popovers)."""
    handout.start(stage.id, stage_label(stage), t(f"{stage.id}.lead"))
    bar = None
    if classroom.presenting():
        bar = _presenter_bar(stage)
    else:
        with st.container(horizontal=True, vertical_alignment="center", key="page_title"):
            st.title(stage_label(stage), width="stretch")
            _language_switch()
    class_session.bar(stage.id, lambda stage_id: st_page(by_id(stage_id)))
    st.markdown(t(f"{stage.id}.lead"))
    return bar


@dataclass(frozen=True)
class _Bar:
    share: Any  # the presenter bar's popovers, filled after the page
    downloads: Any


def _presenter_bar(stage: Stage) -> _Bar:
    """Always visible in presenter view: previous, the stage, next, language, share,
    "more" (downloads, reset, the keys, also its help), exit."""
    previous, following = neighbours(stage.id)
    with st.container(key="presenter_bar", horizontal=True, vertical_alignment="center"):
        with st.container(key="bar_prev", width="content"):
            if previous is not None:
                link_to(previous, "←", icon=None)
        st.title(stage_label(stage), width="stretch")
        with st.container(key="bar_next", width="content"):
            if following is not None:
                link_to(following, "→", icon=None)
            elif stage in STAGES:  # the last stage; the teacher's class page has none
                st.markdown(t("kit.lesson_over"))
        if stage in STAGES:
            st.caption(t("kit.stage_of", k=STAGES.index(stage) + 1, n=len(STAGES)),
                       width="content")
        _language_switch()
        share = st.popover(t("kit.share_short"), icon=":material/qr_code_2:")
        # One more button fits the bar at 1280 px beside a long title, not three.
        with st.popover(t("kit.more"), icon=":material/more_horiz:", help=_keys_help()):
            st.caption(t("kit.downloads"))
            downloads = st.container()  # filled after the page, like the share panel
            _reset_button(stage)
            st.caption(_keys_help())
        st.button(t("kit.presenter_exit_short"), key="_present_exit", icon=":material/close:",
                  help=t("kit.presenter_exit"),
                  on_click=classroom.set_presenting, args=(False,))
    return _Bar(share, downloads)


def _footer_nav(stage: Stage) -> None:
    """Previous / next links in curriculum order: one element (ui/html_links.py)."""
    previous, following = neighbours(stage.id)
    html_links.page_nav(
        (previous, f"← {stage_label(previous)}") if previous is not None else None,
        (following, f"{stage_label(following)} →") if following is not None else None,
        state.link_params(), t("kit.page_nav"))


__all__ = ["all_pages", "around", "navigation"]
