"""Translated text: `t(key, **values)` for the session's language.

Each language's catalogue is a folder, assets/i18n/zh/ and assets/i18n/en/, with one
file per top-level table (kit.toml, softmax.toml ...: a stage's texts sit in the file
named after its id). Both languages hold the same keys; a test checks.
The frame (ui/frame.py) resolves the session's language once per run: `?lang=` in the
URL, else the session's, else the browser locale, else Chinese; it is always written
back to the URL so that a shared link keeps it.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from ui.stages import by_id

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
    flat: dict[str, str] = {}
    for path in sorted((_I18N_DIR / lang).glob("*.toml")):
        with open(path, "rb") as handle:
            flat.update(_flatten(tomllib.load(handle)))
    return flat


def lang_from_locale(locale: str | None) -> str:
    """'en-GB' -> 'en'; anything not English (or unknown) -> Chinese."""
    if locale and locale.lower().startswith("en"):
        return "en"
    return DEFAULT_LANG


# The language is asked for about 120-250 times a run (every text); each look-up in
# session state takes Streamlit's lock and its checks. `set_lang` also keeps the value on
# the session's run context, which belongs to this one session, and `current_lang`
# reads it from there.
_ON_CONTEXT = "_tinyformer_lang"


def current_lang() -> str:
    """The session's language (the frame resolves it at the start of every run).
    Outside a script run there is no session: the default language. (The kit draws
    every option label during the run, so nothing translates from another thread.)"""
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is None:
        return DEFAULT_LANG
    kept = ctx.__dict__.get(_ON_CONTEXT)
    return kept if kept is not None else st.session_state.get(LANG_PARAM, DEFAULT_LANG)


def set_lang(lang: str) -> None:
    """Make `lang` the session's language (the frame's only way to change it)."""
    st.session_state[LANG_PARAM] = lang
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None:
        setattr(ctx, _ON_CONTEXT, lang)


def t(key: str, **values: object) -> str:
    """Translated text; `{name}` placeholders are filled from values.

    A missing key shows the key itself (tests catch that) rather than breaking a page.
    """
    text = _with_stage_numbers(current_lang()).get(key)
    if text is None:
        text = _STAGE_REF.sub(_stage_number, key)
    return text.format(**values) if values else text


@cache
def _with_stage_numbers(lang: str) -> dict[str, str]:
    """The catalogue with every "{stage.<id>}" written as that stage's number, once per
    language: a page asks for 100-250 texts a run."""
    return {key: _STAGE_REF.sub(_stage_number, text) for key, text in catalogue(lang).items()}


# "{stage.softmax}" in a text is that stage's number in the lesson's order, so a text that
# points to another stage follows when the order changes.
_STAGE_REF = re.compile(r"\{stage\.([a-z_]+)\}")


def _stage_number(match: re.Match) -> str:
    return by_id(match.group(1)).number
