"""Translated text: `t(key, **values)` for the session's language.

The two catalogues (assets/i18n/zh.toml, en.toml) hold the same keys; a test checks.
The language comes from `?lang=` in the URL, else from the browser locale, else
Chinese. It is always written back to the URL so a shared link keeps it.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

LANGS = ("zh", "en")
DEFAULT_LANG = "zh"
LANG_PARAM = "lang"
LANG_NAMES = {"zh": "中文", "en": "English"}
_I18N_DIR = Path(__file__).resolve().parent.parent / "assets" / "i18n"


def _flatten(table: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, key + "."))
        else:
            flat[key] = str(value)
    return flat


@cache
def catalogue(lang: str) -> dict[str, str]:
    """All keys of one language, flattened to dotted names ("softmax.title")."""
    with open(_I18N_DIR / f"{lang}.toml", "rb") as handle:
        return _flatten(tomllib.load(handle))


def lang_from_locale(locale: str | None) -> str:
    """'en-GB' -> 'en'; anything not English (or unknown) -> Chinese."""
    if locale and locale.lower().startswith("en"):
        return "en"
    return DEFAULT_LANG


def resolve_lang() -> str:
    """The session's language: URL first, then the browser locale. Writes it to the URL."""
    asked = st.query_params.get(LANG_PARAM)
    lang = asked if asked in LANGS else lang_from_locale(st.context.locale)
    if asked != lang:
        st.query_params[LANG_PARAM] = lang
    st.session_state["_lang"] = lang
    return lang


_last_lang = DEFAULT_LANG  # see current_lang


def current_lang() -> str:
    """The session's language. Outside a script run (AppTest rebuilds a widget's option
    labels from the test's own thread) there is no session: the language of the last
    run is used, which in a test is the one session's."""
    global _last_lang
    if get_script_run_ctx(suppress_warning=True) is None:
        return _last_lang
    _last_lang = st.session_state.get("_lang", DEFAULT_LANG)
    return _last_lang


def t(key: str, **values: object) -> str:
    """Translated text; `{name}` placeholders are filled from values.

    A missing key shows the key itself (tests catch that) rather than breaking a page.
    """
    text = catalogue(current_lang()).get(key, key)
    return text.format(**values) if values else text
