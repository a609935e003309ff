"""The page kit: what a page file calls besides the inputs and figures (sections,
parts that rerun alone, the fold, links to other stages, the chosen device). The frame
around every page is ui/frame.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

import streamlit as st
from streamlit.errors import StreamlitAPIException
from streamlit.navigation.page import StreamlitPage
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from ui import class_session, classroom, exercise, handout, state
from ui.fold import Folded, opened_between
from ui.fold import fold as fold  # re-exported: a page imports its kit from ui.page
from ui.i18n import current_lang, t
from ui.stages import HOME, Stage, by_id

_LOG = logging.getLogger("tinyformer.pages")
DEVICE = state.DEVICE


_PAGES = "_st_pages"  # this session's Streamlit pages, in the language they are titled in


def st_page(stage: Stage) -> StreamlitPage:
    """The stage as a Streamlit page (st.navigation's and st.page_link's), titled in the
    session's language. Built once per session and language, not on every run: 25 pages
    cost about 8 ms a run (docs/deploy.md). Per session, not per process: st.navigation
    marks the page a run draws, so sessions must not share them."""
    lang = current_lang()
    kept = st.session_state.get(_PAGES)
    if kept is None or kept[0] != lang:
        kept = st.session_state[_PAGES] = (lang, {})
    pages = kept[1]
    if stage.id not in pages:
        # No icon: a page's icon becomes the browser tab's, fetched from the internet,
        # which a classroom network may not reach; the tab keeps the app's own icon.
        pages[stage.id] = st.Page(stage.path, title=stage_label(stage),
                                  url_path=stage.id if stage != HOME else None,
                                  default=stage == HOME)
    return pages[stage.id]


def link_to(page: Stage, label: str, *, icon: str | None = None, disabled: bool = False) -> None:
    """A link to one of our pages, in the current language (and presenter view).

    A page file that appeared after the server started is unknown to Streamlit (it
    scans pages/ once); its link is left out and logged rather than breaking the page.
    """
    try:
        # The page object, not its path: Streamlit then need not resolve the file again.
        st.page_link(st_page(page), label=label, icon=icon, disabled=disabled,
                     query_params=state.link_params())
    except StreamlitAPIException:
        _LOG.warning("no link to %s: Streamlit does not know the page", page.path)


def stage_link(stage_id: str) -> None:
    """A link to another stage, labelled with its number and title."""
    stage = by_id(stage_id)
    link_to(stage, stage_label(stage), icon=stage.icon)


def stage_label(page: Stage) -> str:
    prefix = f"{page.number} · " if page.number else ""
    return prefix + t(f"{page.id}.title")


def device_name() -> str:
    import torch

    wanted = st.session_state.get(DEVICE, "cpu")
    return "cuda" if wanted == "cuda" and torch.cuda.is_available() else "cpu"


def _section_rerun() -> bool:
    """Whether this run is a section's own rerun (st.fragment), not a whole run."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return bool(ctx is not None and ctx.fragment_ids_this_run)


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
        if state.frame_changed():
            # The learner switched the language (or presenter view) in the same moment
            # as an edit here, and only this section was asked to rerun: redraw it all.
            st.rerun(scope="app")
        state.new_run()  # a matrix box's format note shows in this rerun too
        url_before = dict(state.url_now())
        folded = False
        with handout.part(name):
            try:
                func(*args, **kwargs)
            except Folded:  # an exception must not leave a fragment: Streamlit shows it
                folded = True
            except Exception:  # a bug: the frame's own message, not Streamlit's box
                _LOG.exception("a section of stage %r failed", state.current_stage())
                st.error(t("kit.page_failed"), icon=":material/sentiment_dissatisfied:")
        if st.session_state.get(classroom.SHARE_ON) and state.url_now() != url_before:
            st.rerun(scope="app")  # the QR code on show must carry this edit
        class_session.sync(state.current_stage())  # a step walked here moves the class
        if st.session_state.pop(exercise.FIRST_ANSWER, False):
            st.rerun(scope="app")  # content gated on this answer may sit outside the section
        if _section_rerun() and opened_between(url_before, state.url_now()):
            st.rerun(scope="app")  # Continue, pressed here: the rest of the page, not only this
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
