"""The one call every page starts with: config, language, sidebar, navigation, the
classroom tools, and a guard so that nothing escapes a page as Streamlit's own
(English) crash screen.

    with stage_page("softmax"):
        ...the page...
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, wraps
from pathlib import Path

import streamlit as st
from streamlit.errors import StreamlitAPIException

from ui import classroom, handout, state
from ui.fold import Folded
from ui.fold import fold as fold  # re-exported: a page imports its kit from ui.page
from ui.i18n import LANG_NAMES, LANG_PARAM, LANGS, resolve_lang, t
from ui.stages import HOME, Stage, all_pages, by_id, neighbours

_LOG = logging.getLogger("tinyformer.pages")

_LANG_WIDGET = "_lang_switch"
_PRESENT_WIDGET = "_present_switch"
_SHARE_BOX = "_share_box"  # the share panel's place, filled at the end of the run
ICON = Path(__file__).resolve().parent.parent / "assets" / "icon.png"
DEVICE_PARAM = "device"
_CSS = """<style>
/* Long stage names wrap in the sidebar instead of ending in "…". */
[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"] span,
[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"] p {
  white-space: normal; overflow: visible; text-overflow: clip;
}
/* No empty band above the title. */
[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; }
/* A formula wider than its column scrolls inside it instead of being cut off. */
.katex-display { overflow-x: auto; overflow-y: hidden; padding: 2px 0; }
</style>"""


@contextmanager
def stage_page(stage_id: str, *, uses_device: bool = False) -> Iterator[Stage]:
    """Set up the page, draw its header, run its body, end with previous / next.

    An exception that escapes the body (a bug: bad input has its own messages) is
    logged and shown as a translated message with a way back, never as Streamlit's
    crash screen. Streamlit's own control flow (st.rerun, st.stop) is a BaseException
    and passes through untouched.
    """
    stage = setup_page(stage_id, uses_device=uses_device)
    header(stage)
    share_box = st.session_state.pop(_SHARE_BOX, None)
    folded = False
    try:
        yield stage
    except Folded:
        folded = True  # the rest of the page waits for the learner (ui/fold.py)
    except Exception:
        _LOG.exception("stage %r failed", stage_id)
        st.error(t("kit.page_failed"), icon=":material/sentiment_dissatisfied:")
        link_to(HOME, t("kit.back_home"), icon=":material/home:")
    footer_nav(stage)
    if share_box is not None:  # filled last, so its address has every input of this run
        with share_box:
            classroom.share_panel()
    with st.sidebar.expander(t("kit.downloads"), icon=":material/download:"):
        classroom.downloads(stage_id, folded=folded)


def link_to(page: Stage, label: str, *, icon: str | None = None, disabled: bool = False) -> None:
    """A link to one of our pages, in the current language (and presenter view).

    A page file that appeared after the server started is unknown to Streamlit (it
    scans pages/ once); its link is left out and logged rather than breaking the page.
    """
    try:
        st.page_link(page.path, label=label, icon=icon, disabled=disabled,
                     query_params=classroom.link_params())
    except StreamlitAPIException:
        _LOG.warning("no link to %s: Streamlit does not know the page", page.path)


def stage_link(stage_id: str) -> None:
    """A link to another stage, labelled with its number and title."""
    stage = by_id(stage_id)
    link_to(stage, stage_label(stage), icon=stage.icon)


@cache
def _one_torch_thread() -> None:
    """Many sessions share a few cores: each small tensor operation is faster on one
    thread than split across threads that wait for each other. Measured on this
    2-core machine under load: 300 softmaxes of 3 x 3 took 6.4 s with 2 threads and
    0.3 ms with one; 32 small blocks 1.5 s against 38 ms."""
    import torch

    torch.set_num_threads(1)


def setup_page(stage_id: str, *, uses_device: bool = False) -> Stage:
    """Set up a page: config, language, presenter view, sidebar with our navigation."""
    _one_torch_thread()
    stage = by_id(stage_id)
    state.enter(stage_id)
    lang = resolve_lang()
    presenting = classroom.resolve_presenting()
    st.set_page_config(
        page_title=f"tinyformer · {t(f'{stage_id}.title')}",
        page_icon=str(ICON),
        layout="wide",
        # "auto": open on a wide screen, closed on a phone, where it would cover the page.
        initial_sidebar_state="collapsed" if presenting else "auto",
    )
    st.html(_CSS)
    classroom.page_chrome()
    _sidebar(stage, lang, uses_device)
    return stage


def _switch_language() -> None:
    st.query_params[LANG_PARAM] = st.session_state[_LANG_WIDGET]


def _switch_presenter() -> None:
    classroom.set_presenting(bool(st.session_state[_PRESENT_WIDGET]))


def _sidebar(current: Stage, lang: str, uses_device: bool) -> None:
    with st.sidebar:
        st.session_state[_LANG_WIDGET] = lang
        st.segmented_control(
            t("kit.language"),
            LANGS,
            format_func=LANG_NAMES.__getitem__,
            key=_LANG_WIDGET,
            on_change=_switch_language,
            required=True,
        )
        st.session_state[_PRESENT_WIDGET] = classroom.presenting()
        st.toggle(t("kit.presenter"), key=_PRESENT_WIDGET, on_change=_switch_presenter,
                  help=t("kit.presenter_help"))
        if uses_device:  # only pages that run a model read it
            _device_choice()
        st.markdown(f"**{t('kit.stages')}**")
        for page in all_pages():
            link_to(page, stage_label(page), icon=page.icon, disabled=page == current)
        if not classroom.presenting():  # presenter view has it in its bar
            st.session_state[_SHARE_BOX] = st.expander(t("kit.share"), icon=":material/qr_code_2:")
        st.caption(t("kit.share_hint"))


def stage_label(page: Stage) -> str:
    prefix = f"{page.number} · " if page.number else ""
    return prefix + t(f"{page.id}.title")


def _device_choice() -> None:
    """Offer CUDA only where it exists; a shared link asking for it falls back to CPU."""
    import torch  # heavy, but imported once per process

    asked = st.query_params.get(DEVICE_PARAM, "cpu")
    if torch.cuda.is_available():
        st.radio(t("kit.device"), ["cpu", "cuda"], key=DEVICE_PARAM, bind="query-params",
                 horizontal=True)
    elif asked == "cuda":
        st.info(t("kit.no_cuda"))


def device_name() -> str:
    import torch

    wanted = st.session_state.get(DEVICE_PARAM, "cpu")
    return "cuda" if wanted == "cuda" and torch.cuda.is_available() else "cpu"


def header(stage: Stage) -> None:
    handout.start(stage.id, stage_label(stage), t(f"{stage.id}.lead"))
    if classroom.presenting():
        _presenter_bar(stage)
    else:
        st.title(stage_label(stage))
    st.markdown(t(f"{stage.id}.lead"))


def _presenter_bar(stage: Stage) -> None:
    """Always visible in presenter view: previous, the stage, next, share, exit."""
    previous, following = neighbours(stage.id)
    with st.container(key="presenter_bar", horizontal=True, vertical_alignment="center"):
        with st.container(key="bar_prev", width="content"):
            if previous is not None:
                link_to(previous, "←", icon=None)
        st.title(stage_label(stage), width="stretch")
        with st.container(key="bar_next", width="content"):
            if following is not None:
                link_to(following, "→", icon=None)
        st.session_state[_SHARE_BOX] = st.popover(t("kit.share"), icon=":material/qr_code_2:")
        st.button(t("kit.presenter_exit"), key="_present_exit", icon=":material/close:",
                  on_click=classroom.set_presenting, args=(False,))


def part(func: Callable[..., None]) -> Callable[..., None]:
    """A section of a page that reruns alone when one of its own inputs changes
    (st.fragment): a slider there costs that section's work, not the whole page's.

    Use it only for a section whose inputs nothing outside it reads. What the section
    puts in the handout replaces what it put there on its last run. A fold() inside it
    ends the page there on a full run; on the section's own rerun, the section.
    """
    name = f"{func.__module__}.{func.__qualname__}"

    @st.fragment
    @wraps(func)
    def run(*args: object, **kwargs: object) -> bool:
        state.new_run()  # a matrix box's format note shows in this rerun too
        url_before = dict(state.url_now())
        folded = False
        with handout.part(name):
            try:
                func(*args, **kwargs)
            except Folded:  # an exception must not leave a fragment: Streamlit shows it
                folded = True
        if st.session_state.get(classroom.SHARE_ON) and state.url_now() != url_before:
            st.rerun(scope="app")  # the QR code on show must carry this edit
        return folded

    @wraps(func)
    def call(*args: object, **kwargs: object) -> None:
        if run(*args, **kwargs):  # a full run returns what run returned
            raise Folded

    return call


def section(title: str, *, folded: bool = False) -> None:
    """A section title (also the handout's). folded: the page's first part ends here;
    this section and the rest wait for the learner (ui/fold.py)."""
    if folded:
        fold(title)
    st.subheader(title)
    handout.add("section", title)


def footer_nav(stage: Stage) -> None:
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
