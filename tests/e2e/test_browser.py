"""The real app in headless Chromium: a deep link after a fresh start, stage 3's worked
numbers in each language, an edit that lands in the URL and reproduces from it, the
language switch, and presenter view from the keyboard. Every page in turn, in each
language, is test_every_page.py's walk (which uses this module's helpers).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from ui.i18n import LANG_NAMES, LANGS, catalogue
from ui.stages import NAV_SECTIONS, STAGES, Stage, all_pages

from .conftest import TIMEOUT_MS, Server, Tab, url_name

pytestmark = pytest.mark.e2e
expect.set_options(timeout=TIMEOUT_MS)

PAGES = all_pages()
APP = '[data-testid="stApp"]'
MAIN = '[data-testid="stMain"]'
IDLE = f'{APP}[data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'
# An untranslated string shows its key ("softmax.title"): any top-level table name of
# either catalogue followed by a dotted name.
_TABLES = sorted({key.split(".")[0] for lang in LANGS for key in catalogue(lang)})
KEY_LIKE = re.compile(r"\b(?:" + "|".join(map(re.escape, _TABLES)) + r")\.[a-z][a-z0-9_.]*")


def title(stage: Stage, lang: str) -> str:
    """The page's heading as ui.page.header writes it: '5 · Softmax and ...'."""
    key = f"{stage.id}.title"
    assert key in catalogue(lang), f"{key} is missing from the {lang} catalogue"
    prefix = f"{stage.number} · " if stage.number else ""
    return prefix + catalogue(lang)[key]


def page_url(server: Server, stage: Stage, lang: str) -> str:
    return f"{server.url}/{url_name(stage)}?lang={lang}"


def heading(tab: Tab, text: str):
    return tab.page.locator("h1").get_by_text(text, exact=True)


def wait_ready(tab: Tab, text: str | None = None) -> None:
    """Wait until the app has connected, finished its run and drawn its figures.

    `text`, when given, is a heading that must be on screen first (the run that matters
    has rendered, not a previous one).
    """
    page = tab.page
    page.wait_for_selector(APP, state="attached")
    if text is not None:
        heading(tab, text).wait_for(state="visible")
    page.wait_for_selector(IDLE, state="attached")
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden")
    # The frontend loads each element's code lazily and shows a skeleton meanwhile: the
    # numbers can be on screen seconds before the inputs and charts beside them.
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stSkeleton"]')
                 && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                    .every(chart => chart.querySelector('.main-svg'))""",
        timeout=TIMEOUT_MS,
    )
    # Fonts (KaTeX, CJK) loaded; lazy chunks are covered by the skeleton check above.
    page.wait_for_function("() => document.fonts.status === 'loaded'", timeout=TIMEOUT_MS)
    page.wait_for_selector(IDLE, state="attached")


def open_ready(server: Server, new_tab, stage: Stage, lang: str) -> Tab:
    """A new tab on `stage` in `lang`, waited until the page has fully drawn."""
    tab = new_tab()
    tab.page.goto(page_url(server, stage, lang))
    wait_ready(tab, title(stage, lang))
    return tab


def wait_for_text(tab: Tab, text: str) -> None:
    tab.page.get_by_text(text).first.wait_for(state="visible")


def app_text(tab: Tab) -> str:
    return tab.page.locator(APP).inner_text()


# --- Helpers of the walk over every page (test_every_page.py) ----------------------------
def continue_to_the_rest(tab: Tab, stage: Stage, lang: str) -> None:
    """Press the stage's "Continue" button (ui/fold.py), when it has one, after checking
    the first part: the rest is drawn and the URL keeps it open."""
    prefix = catalogue(lang)["kit.fold_continue"].split("{title}")[0]
    button = tab.page.get_by_role("button", name=re.compile("^" + re.escape(prefix)))
    if button.count() == 0:
        return
    assert tab.page.locator('[data-testid="stException"]').count() == 0
    button.click()
    tab.page.wait_for_url(re.compile(rf"[?&]{re.escape(stage.id)}\.more=true(&|$)"))
    wait_ready(tab)
    expect(button).to_have_count(0)


def drag_first_slider(tab: Tab) -> None:
    """Drag the page's first slider by the mouse: the page reruns cleanly and the new
    value reaches the URL (so a shared link would keep it)."""
    page = tab.page
    thumbs = page.locator(f'{MAIN} [role="slider"]')
    if thumbs.count() == 0:
        return
    before = page.url
    thumb = thumbs.first
    thumb.scroll_into_view_if_needed()
    box = thumb.bounding_box()
    track = thumb.locator("xpath=ancestor::*[@data-testid='stSlider'][1]").bounding_box()
    # Drag towards whichever end is farther away, so the value surely changes.
    target = track["x"] + (track["width"] * 0.15 if box["x"] > track["x"] + track["width"] / 2
                           else track["width"] * 0.85)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(target, box["y"] + box["height"] / 2, steps=8)
    page.mouse.up()
    page.wait_for_function("url => location.href !== url", arg=before, timeout=TIMEOUT_MS)
    wait_ready(tab)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert tab.console_errors() == [], tab.console_errors()


# --- a shared link to a stage is the first request after a restart -------------
def _softmax() -> Stage:
    stage = next((s for s in STAGES if s.id == "softmax"), None)
    if stage is None:
        pytest.skip("the softmax page is not built")
    return stage


def test_deep_link_first_request_after_fresh_start(fresh_server: Server, new_tab) -> None:
    stage = _softmax()
    tab = open_ready(fresh_server, new_tab, stage, "en")
    wait_for_text(tab, "[0.670, 0.330]")
    wait_for_text(tab, "[1.340, 1.321]")
    assert tab.page.locator('[data-testid="stException"]').count() == 0
    # The frame ran around it: its navigation (st.navigation, in the sidebar) and the
    # language switch in the title row.
    nav = tab.page.locator('[data-testid="stSidebarNav"]')
    expect(nav.get_by_text(title(PAGES[0], "en"), exact=True)).to_have_count(1)
    expect(tab.page.locator(".st-key-page_title").get_by_role(
        "radio", name=LANG_NAMES["zh"])).to_have_count(1)
    assert tab.console_errors() == [], tab.console_errors()


@pytest.mark.parametrize("lang", LANGS)
def test_softmax_worked_numbers_in_each_language(server: Server, new_tab, lang: str) -> None:
    """docs/curriculum.md, stage 5's defaults, on screen in a real browser."""
    stage = _softmax()
    tab = open_ready(server, new_tab, stage, lang)
    for number in ("[1.000, 0.000]", "[0.707, 0.000]", "[0.670, 0.330]", "[1.340, 1.321]"):
        wait_for_text(tab, number)
    # A bad cell shows the translated message; the numbers stay those of the last value.
    q = tab.page.get_by_label("q", exact=True)
    q.fill("nan, 1")
    q.press("Enter")
    message = catalogue(lang)["input.not_finite"].split("{token}")[-1][:12]
    tab.page.locator('[data-testid="stAlert"]').get_by_text(message).wait_for()
    wait_for_text(tab, "[1.340, 1.321]")
    assert tab.page.locator('[data-testid="stException"]').count() == 0


# --- edit a value; the URL carries it; the link reproduces the view ------------
def test_edit_lands_in_url_and_link_reproduces(server: Server, new_tab) -> None:
    stage = _softmax()
    tab = open_ready(server, new_tab, stage, "en")
    wait_for_text(tab, "[1.340, 1.321]")

    k_b = tab.page.get_by_label("k_B", exact=True)
    assert k_b.input_value() == "0, 1"  # drawn: wait_ready waited for every element
    k_b.fill("2, 0")
    k_b.press("Enter")  # a text input commits on Enter (or blur)
    wait_for_text(tab, "[0.660, 2.679]")
    wait_for_text(tab, "[0.330, 0.670]")
    tab.page.get_by_text("[1.340, 1.321]").wait_for(state="detached")
    tab.page.wait_for_url(re.compile(r"[?&]hand.kB="))
    shared = tab.page.url
    assert parse_qs(urlsplit(shared).query)["hand.kB"] == ["2, 0"]
    assert tab.console_errors() == [], tab.console_errors()

    other = new_tab()  # a new context: no cookies, no session, only the link
    other.page.goto(shared)
    wait_ready(other, title(stage, "en"))
    wait_for_text(other, "[0.660, 2.679]")
    wait_for_text(other, "[0.330, 0.670]")
    expect(other.page.get_by_label("k_B", exact=True)).to_have_value("2, 0")
    expect(other.page.get_by_text("[1.340, 1.321]")).to_have_count(0)
    assert other.console_errors() == [], other.console_errors()


# --- the language switch in the page's title row --------------------------------
def test_language_switch(server: Server, new_tab) -> None:
    """The switch in the title row changes the page, the navigation's section names
    and the URL; a stage reached through the navigation keeps the language."""
    stage = STAGES[-1] if STAGES else PAGES[0]
    section = next(name for name, _ in NAV_SECTIONS if name)
    tab = open_ready(server, new_tab, stage, "en")
    nav = tab.page.locator('[data-testid="stSidebarNav"]')
    expect(nav.get_by_text(catalogue("en")[f"nav.{section}"], exact=True)).to_be_visible()
    switch = tab.page.locator(".st-key-page_title")

    for lang, other in (("zh", "en"), ("en", "zh")):
        switch.get_by_role("radio", name=LANG_NAMES[lang]).click()
        wait_ready(tab, title(stage, lang))
        expect(heading(tab, title(stage, other))).to_have_count(0)
        nav.get_by_text(catalogue(lang)[f"nav.{section}"], exact=True).wait_for()
        tab.page.wait_for_url(re.compile(rf"[?&]lang={lang}(&|$)"))
    switch.get_by_role("radio", name=LANG_NAMES["zh"]).click()
    wait_ready(tab, title(stage, "zh"))
    nav.get_by_text(title(STAGES[0], "zh"), exact=True).click()
    wait_ready(tab, title(STAGES[0], "zh"))  # Streamlit's own link carries no lang
    tab.page.wait_for_url(re.compile(r"[?&]lang=zh(&|$)"))
    assert tab.page.locator('[data-testid="stException"]').count() == 0
    assert tab.console_errors() == [], tab.console_errors()



# --- the overview's cards: one element of plain links (ui/html_links.py) -------------
def test_an_overview_card_opens_its_stage_in_the_same_session(server: Server, new_tab) -> None:
    """A plain click changes the page as st.page_link does: no reload (a value kept on
    the window survives), the frame's values in the address, the new page at its top."""
    stage = _softmax()
    tab = open_ready(server, new_tab, PAGES[0], "en")
    tab.page.evaluate("window.__sameDocument = true")
    link = tab.page.locator(f'.tf-cards a[href^="/{stage.id}?"]')
    expect(link).to_have_attribute("href", f"/{stage.id}?lang=en")
    link.click()
    wait_ready(tab, title(stage, "en"))
    tab.page.wait_for_url(re.compile(rf"/{stage.id}\?lang=en(&|$)"))
    assert tab.page.evaluate("window.__sameDocument") is True
    assert tab.page.evaluate(f"document.querySelector('{MAIN}').scrollTop") == 0
    tab.page.go_back()  # the browser's history has the overview
    wait_ready(tab, title(PAGES[0], "en"))
    assert tab.console_errors() == [], tab.console_errors()


# --- a heatmap too narrow for its numbers says so (ui/classroom.py, fitHeatmap) ----
HEATMAP_NUMBERS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
  .map((chart) => {
    const labels = [...chart.querySelectorAll('.heatmap-label text')];
    const hidden = labels.length > 0 && labels.every((label) => label.style.display === 'none');
    const holder = chart.closest('[data-cells-note]');
    return [hidden, holder && holder.getAttribute('data-cells-note')];
  })"""


def test_a_heatmap_that_leaves_its_numbers_out_on_a_phone_says_how_to_read_them(
        server: Server, new_tab) -> None:
    stage = next(s for s in STAGES if s.id == "tokens")  # 4 rows x 8 columns in the rest
    tab = new_tab()
    tab.page.set_viewport_size({"width": 390, "height": 844})
    tab.page.goto(f"{page_url(server, stage, 'en')}&tokens.more=true")
    wait_ready(tab, title(stage, "en"))
    charts = tab.page.evaluate(HEATMAP_NUMBERS)
    assert any(hidden for hidden, _ in charts), charts  # the phone is narrow enough
    for hidden, note in charts:
        assert note == (catalogue("en")["kit.cells_hidden"] if hidden else None)


# --- presenter view at a projector's 1280 x 720, from the keyboard alone ------------
PROJECTOR = {"width": 1280, "height": 720}
# Below presenter view's bar, which itself is at the top of the screen, and above the
# screen's bottom edge.
ON_SCREEN = """el => {
  const bar = document.querySelector('.st-key-presenter_bar').getBoundingClientRect();
  const box = el.getBoundingClientRect();
  return Math.abs(bar.top) < 5 && box.top >= bar.bottom - 2 && box.bottom <= innerHeight;
}"""
# The numbers under discussion (inputs, slider values, a step's result, chart axes):
# the smallest computed font size of each kind present.
SMALLEST_TYPE = """() => Object.fromEntries(Object.entries({
  input: '[data-testid="stMain"] input',
  slider: '[data-testid="stSliderThumbValue"]',
  result: '[data-testid="stMain"] p code',
  axis: '[data-testid="stMain"] .xtick text, [data-testid="stMain"] .ytick text',
}).map(([kind, selector]) => [kind, Math.min(...[...document.querySelectorAll(selector)]
  .map(el => parseFloat(getComputedStyle(el).fontSize)))]))"""


def wait_on_screen(tab: Tab, locator) -> None:
    locator.wait_for()
    tab.page.wait_for_function(ON_SCREEN, arg=locator.element_handle(), timeout=TIMEOUT_MS)


def test_presenter_view_walks_a_stage_from_the_keyboard(server: Server, new_tab) -> None:
    """N starts and walks the worked example, B goes back, M presses Continue: each time
    the page scrolls so that what changed is on screen below the bar, which stays at
    the top. Edits replace the address, so Back leaves the page in one press. The
    numbers on screen are at least 18 px."""
    stage = next((s for s in STAGES if s.id == "scaling"), None)
    if stage is None:
        pytest.skip("the scaling page is not built")
    en = catalogue("en")
    tab = new_tab()
    page = tab.page
    page.set_viewport_size(PROJECTOR)
    page.goto(page_url(server, stage, "en") + "&present=true")
    wait_ready(tab, title(stage, "en"))
    entries = page.evaluate("history.length")
    sizes = page.evaluate(SMALLEST_TYPE)
    assert all(sizes[kind] >= 18 for kind in ("input", "slider", "result")), sizes
    assert not sizes["axis"] < 18, sizes  # Infinity: no chart on this screen

    labels = [en[f"scaling.step_{k}"] for k in ("scores", "scaled", "softmax")]
    for key, step in (("n", 1), ("n", 2), ("n", 3), ("b", 2)):
        page.keyboard.press(key)
        page.wait_for_url(re.compile(rf"[?&]scaling\.hand\.step={step}(&|$)"))
        wait_ready(tab)
        wait_on_screen(tab, page.locator(f"{MAIN} strong").get_by_text(
            f"{step} · {labels[step - 1]}", exact=True))

    page.keyboard.press("m")  # Continue
    page.wait_for_url(re.compile(r"[?&]scaling\.more=true(&|$)"))
    wait_ready(tab)
    wait_on_screen(tab, page.locator(f"{MAIN} h3").get_by_text(en["scaling.why_title"],
                                                                exact=True))
    assert page.evaluate("history.length") == entries  # 5 new addresses, no new entry
    assert page.locator('[data-testid="stException"]').count() == 0
    assert tab.console_errors() == [], tab.console_errors()
