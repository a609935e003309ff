"""The one call every page starts with: config, language, sidebar, navigation."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui.i18n import LANG_NAMES, LANG_PARAM, LANGS, resolve_lang, t
from ui.stages import Stage, all_pages, by_id, neighbours

_LANG_WIDGET = "_lang_switch"
ICON = Path(__file__).resolve().parent.parent / "assets" / "icon.png"
DEVICE_PARAM = "device"
# Long stage names wrap in the sidebar instead of ending in "…" (a projector is narrow).
_CSS = """<style>
[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"] span,
[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"] p {
  white-space: normal; overflow: visible; text-overflow: clip;
}
</style>"""


def setup_page(stage_id: str) -> Stage:
    """Set up a page: config, language, sidebar with our navigation, and the header."""
    stage = by_id(stage_id)
    lang = resolve_lang()
    st.set_page_config(
        page_title=f"tinyformer · {t(f'{stage_id}.title')}",
        page_icon=str(ICON),
        layout="wide",
        initial_sidebar_state="expanded",
    )
    _sidebar(stage, lang)
    return stage


def _switch_language() -> None:
    st.query_params[LANG_PARAM] = st.session_state[_LANG_WIDGET]


def _sidebar(current: Stage, lang: str) -> None:
    st.html(_CSS)
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
        _device_choice()
        st.markdown(f"**{t('kit.stages')}**")
        for page in all_pages():
            st.page_link(
                page.path,
                label=stage_label(page),
                icon=page.icon,
                query_params={LANG_PARAM: lang},
                disabled=page == current,
            )
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
    st.title(stage_label(stage))
    st.markdown(t(f"{stage.id}.lead"))


def footer_nav(stage: Stage) -> None:
    """Previous / next links in curriculum order."""
    previous, following = neighbours(stage.id)
    st.divider()
    left, right = st.columns(2)
    query = {LANG_PARAM: st.session_state.get("_lang", "zh")}
    if previous is not None:
        left.page_link(previous.path, label=f"← {stage_label(previous)}", query_params=query)
    if following is not None:
        with right:
            st.page_link(following.path, label=f"{stage_label(following)} →", query_params=query)
