"""Every page in headless Chromium, one walk per language: one load of each page does
every check a page gets in a real browser.

- Opens clean: no exception, no traceback, no untranslated key, the language in the URL,
  no console error. Chinese: each page whole from a link that says so
  ("<stage>.more=true", as a shared link does): no Continue button left. English: each
  page folded, as first opened, then its Continue button pressed (the rest is drawn,
  the URL keeps it open), then its first slider dragged by the mouse (the page reruns
  cleanly, the value reaches the URL). Every stage's Continue button is also pressed in
  AppTest (tests/app/test_home.py), where each page also renders in each language.
- Accessibility: axe-core's WCAG 2.1 A and AA rules (tags wcag2a, wcag2aa, wcag21a,
  wcag21aa), no critical or serious violation, each page whole; the document's language
  is the one shown; in the Chinese view none of Streamlit's own English names is left
  (ui/a11y.py); the overview is quiet at rest (ui/a11y.py's script writes only what
  differs). Which pages: every page in Chinese, the class's language, and three in
  English. The same kit draws both languages (the same elements, styles and colours;
  only the texts differ), so a rule that fails in one fails in the other; the English
  three are those with English-only elements (the glossary caption of Chinese words,
  stage 2), the overview, and a page of charts and formulas (stage 9.1). Left out: the
  sidebar after the overview (the frame draws the same one on every page), and the
  inside of Plotly's SVG figures (axe-core finds nothing to check there: it does not
  judge the contrast of SVG text, which tests/unit/test_colour_access.py checks for
  the heatmaps' numbers).
- A phone (English walk): the window narrowed to 390 x 844 before the page is drawn,
  folded as first opened: the sidebar is closed (it would cover the page; Streamlit
  decides from the window's width, at the first draw and at every resize), and nothing
  scrolls sideways.

One tab per language goes from page to page as the browser's Back and Forward buttons
do (the address changes, the app draws the page it names in the same session, without
loading the app again: measured 34 s against 93 s for seven pages on a busy machine);
the first page of each language is loaded in full (a fresh session), and so is any page
after one that failed. A deep link into a fresh server is test_browser.py's.

Screenshots, for a person to look at (git-ignored): screenshots/<page>_<lang>.png
(1400 x 1000, whole page) and screenshots/phone_<page>.png (390 x 844, folded).

TINYFORMER_AXE=all checks every page in both languages and writes each view's
violations of any impact (minor and moderate too) to screenshots/axe.json, for a
person to read: the figures of the report.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ui.i18n import catalogue
from ui.stages import HOME, Stage, all_pages

from .conftest import SCREENSHOTS, TIMEOUT_MS, VIEWPORT, Server, Tab, screenshot, tab_in, url_name
from .test_browser import (
    KEY_LIKE,
    app_text,
    continue_to_the_rest,
    drag_first_slider,
    title,
    wait_ready,
)

pytestmark = pytest.mark.e2e

PAGES = all_pages()
WALK = ("zh", "en")  # the order of the walks; each is one session in one tab
LOCALE = {"zh": "zh-CN", "en": "en-US"}
HTML_LANG = {"zh": "zh-CN", "en": "en"}
PHONE = {"width": 390, "height": 844}

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("critical", "serious")
EVERY_VIEW = os.environ.get("TINYFORMER_AXE") == "all"
ENGLISH_TOO = ("home", "qkv", "residual_norm")
# Streamlit's English names that the Chinese view translates (kit.st_* in English),
# as whole-text patterns: none may be left in an aria-label or title.
_STREAMLIT_ENGLISH = [
    "^" + re.sub(r"\\\{\w+\\\}", ".+", re.escape(text)) + "$"
    for key, text in catalogue("en").items() if key.startswith("kit.st_")
]
_FOUND: dict[str, list[dict]] = {}  # TINYFORMER_AXE=all: every view's violations

# Streamlit's frontend draws the page a new address names when the browser moves in its
# history, as the Back button does.
_GO = """url => { history.pushState({}, '', url);
                  dispatchEvent(new PopStateEvent('popstate', {state: {}})); }"""
# How many times, in `ms` milliseconds, the attributes ui/a11y.py writes change.
_QUIET = """ms => new Promise(done => {
  let count = 0;
  const watch = new MutationObserver(records => { count += records.length; });
  watch.observe(document.documentElement, {subtree: true, attributes: true,
    attributeFilter: ["lang", "role", "aria-label", "tabindex", "title"]});
  setTimeout(() => { watch.disconnect(); done(count); }, ms);
})"""
# On a phone the closed sidebar sits off the left edge of the screen.
SIDEBAR_CLOSED = """() => document.querySelector('[data-testid="stSidebar"]')
                        .getBoundingClientRect().right <= 1"""
SIDEWAYS = """() => [document.documentElement.scrollWidth,
                     document.documentElement.clientWidth]"""


@dataclass
class Walk:
    tab: Tab
    fresh: bool = True  # the next page loads the app in full


@pytest.fixture(scope="module")
def walks(browser) -> Iterator[dict[str, Walk]]:
    """One tab per language, each in its own browser context, opened on first use."""
    contexts = []
    opened: dict[str, Walk] = {}

    class Walks(dict):
        def __missing__(self, lang: str) -> Walk:
            context = browser.new_context(viewport=VIEWPORT, locale=LOCALE[lang])
            contexts.append(context)
            opened[lang] = self[lang] = Walk(tab_in(context))
            return self[lang]

    yield Walks()
    for context in contexts:
        context.close()
    if EVERY_VIEW and _FOUND:
        SCREENSHOTS.mkdir(exist_ok=True)
        (SCREENSHOTS / "axe.json").write_text(json.dumps(_FOUND, ensure_ascii=False, indent=1))


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


def go(server: Server, walk: Walk, address: str) -> None:
    """Open `address` ("/softmax?lang=zh"): in full on a fresh walk, else as Back does."""
    walk.tab.errors.clear()  # each page answers for the errors logged since the last
    if walk.fresh:
        walk.tab.page.goto(server.url + address)
    else:
        walk.tab.page.evaluate(_GO, address)


def assert_clean(tab: Tab, stage: Stage, lang: str) -> None:
    assert tab.page.locator('[data-testid="stException"]').count() == 0
    text = app_text(tab)
    assert "Traceback" not in text
    assert not KEY_LIKE.findall(text), f"untranslated keys on the page: {KEY_LIKE.findall(text)}"
    assert f"lang={lang}" in tab.page.url
    assert tab.console_errors() == [], tab.console_errors()


def check_phone(tab: Tab, stage: Stage) -> None:
    """The page as drawn in a 390 px window: sidebar closed, nothing scrolls sideways."""
    # Closing slides the sidebar out (a CSS transition): wait for it, not for a frame.
    try:
        tab.page.wait_for_function(SIDEBAR_CLOSED, timeout=5_000)
    except PlaywrightTimeout:
        raise AssertionError(f"{stage.id}: the sidebar is still open at 390 px") from None
    scroll, client = tab.page.evaluate(SIDEWAYS)
    assert scroll <= client, f"wider than the phone: scrollWidth {scroll}, clientWidth {client}"
    screenshot(tab.page, SCREENSHOTS / f"phone_{url_name(stage) or 'home'}.png")
    assert tab.page.locator('[data-testid="stException"]').count() == 0, stage.id


def check_axe(tab: Tab, axe, stage: Stage, lang: str) -> None:
    page = tab.page
    # ui/a11y.py's script has run in this language (it sets the document's language).
    page.wait_for_function("lang => document.documentElement.lang === lang",
                           arg=HTML_LANG[lang], timeout=TIMEOUT_MS)
    if not (lang == "zh" or EVERY_VIEW or stage.id in ENGLISH_TOO):
        return
    page.wait_for_timeout(100)  # one more frame: wide formulas measured after fitting
    left_out = [[".js-plotly-plot .main-svg"]]
    if stage != HOME and not EVERY_VIEW:
        left_out.append(['[data-testid="stSidebar"]'])
    response = axe.run(page, context={"exclude": left_out},
                       options={"runOnly": {"type": "tag", "values": WCAG_21_AA},
                                "resultTypes": ["violations"]}).response
    violations = response["violations"]
    if EVERY_VIEW:
        _FOUND[f"{stage.id}/{lang}"] = [
            {"id": v["id"], "impact": v["impact"], "nodes": len(v["nodes"]),
             "html": [n["html"][:200] for n in v["nodes"][:5]]} for v in violations]
    blocking = [f'{v["id"]} ({v["impact"]}, {len(v["nodes"])}): {v["nodes"][0]["html"][:160]}'
                for v in violations if v["impact"] in BLOCKING]
    assert blocking == [], "\n".join(blocking)

    if stage == HOME:
        # The script writes only what differs: a write of an unchanged value is still a
        # change its observer sees, and once started a pass every frame (it did).
        written = page.evaluate(_QUIET, 300)
        assert written == 0, f"{written} attribute writes in 300 ms on a page at rest"
    if lang == "zh":
        left = page.evaluate(
            """patterns => [...document.querySelectorAll('[aria-label], [title]')]
                 .flatMap(el => [el.getAttribute('aria-label'), el.getAttribute('title')])
                 .filter(text => text && patterns.some(p => new RegExp(p).test(text.trim())))""",
            _STREAMLIT_ENGLISH)
        assert left == [], f"Streamlit's English in the Chinese view: {left}"


@pytest.mark.parametrize(("lang", "stage"), [(lang, p) for lang in WALK for p in PAGES],
                         ids=[f"{lang}-{url_name(p) or 'home'}" for lang in WALK for p in PAGES])
def test_every_page(server: Server, walks, axe, lang: str, stage: Stage) -> None:
    walk = walks[lang]
    tab, page = walk.tab, walk.tab.page
    ok = False
    try:
        if lang == "zh":
            go(server, walk, f"/{url_name(stage)}?lang={lang}&{stage.id}.more=true")
            wait_ready(tab, title(stage, lang))
            assert page.get_by_role("button", name=re.compile(
                "^" + re.escape(catalogue(lang)["kit.fold_continue"].split("{title}")[0]))
            ).count() == 0  # the whole page, no Continue left
        else:
            page.set_viewport_size(PHONE)
            go(server, walk, f"/{url_name(stage)}?lang={lang}")
            wait_ready(tab, title(stage, lang))
            check_phone(tab, stage)
            page.set_viewport_size(VIEWPORT)
            wait_ready(tab)  # the figures redrawn at the new width
            continue_to_the_rest(tab, stage, lang)
        check_axe(tab, axe, stage, lang)
        screenshot(page, SCREENSHOTS / f"{url_name(stage) or 'home'}_{lang}.png")
        assert_clean(tab, stage, lang)
        if lang == "en":
            drag_first_slider(tab)
        ok = True
    finally:
        walk.fresh = not ok
