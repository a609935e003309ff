"""axe-core's WCAG 2.1 A and AA rules (tags wcag2a, wcag2aa, wcag21a, wcag21aa) on the real
app in Chromium: no critical or serious violation, each page whole (opened from a link
with "<stage>.more=true", which draws what its Continue button draws: test_browser.py
checks both ways). Also, on every page: the document's language is the one shown, and
in the Chinese view none of Streamlit's own English names is left (ui/a11y.py).

Which pages: every page in Chinese, the class's language, and three in English. The
same kit draws both languages (the same elements, styles and colours; only the texts
differ), so a rule that fails in one fails in the other; the English three are those
with English-only elements (the glossary caption of Chinese words, stage 2), the
overview, and a page of charts and formulas (stage 9.1).

To keep the test short: one tab goes from page to page as the browser's Back and
Forward buttons do (the address changes, the app draws the page it names, without
loading the app again: measured 34 s against 93 s for seven pages on a busy machine);
the first page of each language is loaded in full. Left out: the sidebar after the
overview (the frame draws the same one on every page), and the inside of Plotly's SVG
figures (axe-core finds nothing to check there: it does not judge the contrast of SVG
text, which tests/unit/test_colour_access.py checks for the heatmaps' numbers).

TINYFORMER_AXE=all checks every page in both languages and writes each view's
violations of any impact (minor and moderate too) to screenshots/axe.json, for a
person to read: the figures of the report.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator

import pytest

from ui.i18n import LANGS, catalogue
from ui.stages import HOME, all_pages, by_id

from .conftest import SCREENSHOTS, TIMEOUT_MS, VIEWPORT, Server, tab_in, url_name
from .test_browser import title, wait_ready

pytestmark = pytest.mark.e2e

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("critical", "serious")
HTML_LANG = {"zh": "zh-CN", "en": "en"}
EVERY_VIEW = os.environ.get("TINYFORMER_AXE") == "all"
ENGLISH_TOO = ("home", "qkv", "residual_norm")
VIEWS = ([(p, lang) for lang in LANGS for p in all_pages()] if EVERY_VIEW else
         [(p, "zh") for p in all_pages()] + [(by_id(i), "en") for i in ENGLISH_TOO])
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


@pytest.fixture(scope="module")
def tab(browser) -> Iterator:
    """One tab for every page of this module."""
    context = browser.new_context(viewport=VIEWPORT, locale="zh-CN")
    yield tab_in(context)
    context.close()
    if EVERY_VIEW and _FOUND:
        SCREENSHOTS.mkdir(exist_ok=True)
        (SCREENSHOTS / "axe.json").write_text(json.dumps(_FOUND, ensure_ascii=False, indent=1))


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


@pytest.mark.parametrize(("stage", "lang"), VIEWS,
                         ids=[f"{url_name(p) or 'home'}-{lang}" for p, lang in VIEWS])
def test_no_serious_violations(server: Server, tab, axe, stage, lang: str) -> None:
    page = tab.page
    address = f"/{url_name(stage)}?lang={lang}&{stage.id}.more=true"
    if f"lang={lang}" in page.url:
        page.evaluate(_GO, address)
    else:
        page.goto(server.url + address)
    wait_ready(tab, title(stage, lang))
    # ui/a11y.py's script has run in this language (it sets the document's language).
    page.wait_for_function("lang => document.documentElement.lang === lang",
                           arg=HTML_LANG[lang], timeout=TIMEOUT_MS)
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
