"""ui/a11y.py without a browser: Streamlit's English that the Chinese view translates is
Streamlit's exactly, the script survives Streamlit's HTML sanitizer, and an unknown
address is claimed for the overview. (In a browser: tests/e2e/test_every_page.py.)"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pytest
import streamlit

from ui import a11y
from ui.i18n import catalogue
from ui.stages import STAGES


@cache
def _bundle() -> str:
    """Every script of Streamlit's frontend, as shipped in the installed package."""
    folder = Path(streamlit.__file__).parent / "static" / "static" / "js"
    return "".join(path.read_text(errors="replace") for path in folder.glob("*.js"))


def _in_bundle(piece: str) -> bool:
    """Found whole, or as two pieces Streamlit joins at run time ("Press Enter to " +
    "apply"), each of at least four characters."""
    bundle = _bundle()
    if piece in bundle:
        return True
    return any(piece[:i] in bundle and piece[i:] in bundle for i in range(4, len(piece) - 3))


@pytest.mark.parametrize("key", a11y.STREAMLIT_TEXTS)
def test_each_english_text_is_streamlits_own(key):
    """A text Streamlit does not write would never match: the translation would be
    silently dead. Fails when a Streamlit upgrade rewords one."""
    english = catalogue("en")[f"kit.{key}"]
    pieces = [p for p in re.split(r"\{\w+\}", english) if p.strip()]
    assert pieces and all(_in_bundle(p) for p in pieces), (key, english)


@pytest.mark.parametrize(("shown", "expected"), [
    ("Help for W₁ [2 × 3]", "W₁ [2 × 3]：说明"),
    ("Number is outside the allowed range. Please enter a value between 1 and 9.",
     "超出允许的范围：请输入 1 到 9 之间的数。"),
    ("Press ⌘+Enter to apply", "按 ⌘+回车键确认"),
    ("Increment", "增大"),
    ("Incremental", None),  # whole texts only
])
def test_patterns_match_streamlits_text_whole_and_fill_the_translation(shown, expected):
    """The script's regular expressions, run here by Python (the same syntax: plain
    groups and escapes)."""
    matches = [(re.match(pattern, shown), names, target)
               for pattern, names, target in a11y.streamlit_words("zh")]
    matches = [m for m in matches if m[0]]
    if expected is None:
        assert matches == []
        return
    [(found, names, target)] = matches
    groups = dict(zip(names, found.groups(), strict=True))
    assert re.sub(r"\{(\w+)\}", lambda m: groups[m[1]], target) == expected


def test_the_script_survives_the_html_sanitizer():
    """Streamlit passes st.html through DOMPurify, which drops a script whose text holds
    '<' before a letter, '/' or '!' (a named group '(?<x>' did): nothing would run."""
    for lang in ("zh", "en"):
        script = a11y._JS.replace("__LANG__", json.dumps(a11y.HTML_LANG[lang])).replace(
            "__WORDS__", json.dumps(a11y.streamlit_words(lang), ensure_ascii=False))
        inside = script.removeprefix("<script>").removesuffix("</script>")
        assert not re.search(r"<[/\w!]", inside)


class _Pages:
    def __init__(self, name: str, page_hash: str = "") -> None:
        self.intended_page_name, self.intended_page_script_hash = name, page_hash
        self.intent: tuple[str, str] | None = None

    def set_script_intent(self, page_hash: str, name: str) -> None:
        self.intent = (page_hash, name)


@pytest.mark.parametrize(("name", "page_hash", "claimed"), [
    ("nosuchpage", "", True),  # a mistyped or old link
    (STAGES[0].id, "", False),  # a stage
    ("", "", False),  # the overview
    ("nosuchpage", "abc123", False),  # chosen in the navigation, by its hash
])
def test_an_unknown_address_is_claimed_for_the_overview(monkeypatch, name, page_hash, claimed):
    pages = _Pages(name, page_hash)
    session: dict = {}
    monkeypatch.setattr(a11y, "get_script_run_ctx",
                        lambda **_: SimpleNamespace(pages_manager=pages))
    monkeypatch.setattr(a11y.st, "session_state", session)
    assert a11y.claim_unknown_page() == (name if claimed else None)
    assert pages.intent == (("", "") if claimed else None)
    assert (a11y._UNKNOWN_PAGE in session) == claimed
