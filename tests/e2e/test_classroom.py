"""The classroom in a real browser: presenter view at a projector's 1280 x 720 driven by
the arrow keys, and the share panel showing the page's current address with its
inputs. Every page on a phone (390 x 844) is test_every_page.py's English walk.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from ui.i18n import catalogue
from ui.stages import STAGES, Stage, by_id, neighbours

from .conftest import TIMEOUT_MS, Server, url_name
from .test_browser import open_ready, page_url, title, wait_for_text, wait_ready

pytestmark = pytest.mark.e2e
expect.set_options(timeout=TIMEOUT_MS)

PROJECTOR = {"width": 1280, "height": 720}


def stage(stage_id: str) -> Stage:
    if stage_id not in {s.id for s in STAGES}:
        pytest.skip(f"the {stage_id} page is not built")
    return by_id(stage_id)


def where(url: str) -> tuple[str, dict[str, list[str]]]:
    """A URL's page path and its parameters."""
    parts = urlsplit(url)
    return parts.path.strip("/"), parse_qs(parts.query)


# --- Presenter view: the arrow keys move between stages -----------------------------------
def test_presenter_view_arrow_keys_keep_presenting_and_the_language(server: Server,
                                                                    new_tab) -> None:
    here = stage("scaling")
    before, after = neighbours(here.id)
    tab = new_tab()
    page = tab.page
    page.set_viewport_size(PROJECTOR)
    page.goto(page_url(server, here, "zh") + "&present=true")
    wait_ready(tab, title(here, "zh"))
    expect(page.locator(".st-key-presenter_bar")).to_be_visible()
    expect(page.locator('[data-testid="stSidebar"]')).to_be_hidden()  # the projector's width
    # Scrolled down, the bar stays at the top of the screen (it once scrolled away).
    page.mouse.move(PROJECTOR["width"] / 2, PROJECTOR["height"] / 2)
    page.mouse.wheel(0, 1500)
    page.wait_for_function("""() => document.querySelector('[data-testid="stMain"]')
                                      .scrollTop > 0""")
    bar_top = page.evaluate("""() => document.querySelector('.st-key-presenter_bar')
                                      .getBoundingClientRect().top""")
    assert 0 <= bar_top < 5, bar_top
    # N starts the worked example's step-by-step walk from the keyboard.
    step_one = catalogue("zh")["kit.step_of"].format(k=1, n=9, label="").split("9")[0]
    page.keyboard.press("n")
    expect(page.get_by_text(step_one.replace("*", "").strip()).first).to_be_visible()

    for key, target in (("ArrowRight", after), ("ArrowLeft", here), ("ArrowLeft", before)):
        page.keyboard.press(key)
        wait_ready(tab, title(target, "zh"))
        path, params = where(page.url)
        assert path == url_name(target), (key, page.url)
        assert params.get("present") == ["true"] and params.get("lang") == ["zh"], page.url
        expect(page.locator(".st-key-presenter_bar")).to_be_visible()
    assert page.locator('[data-testid="stException"]').count() == 0
    assert tab.console_errors() == [], tab.console_errors()


# --- The share panel: the page's current address, inputs included --------------------------
def test_share_panel_shows_the_current_url_with_its_inputs(server: Server, new_tab) -> None:
    here = stage("scaling")
    tab = open_ready(server, new_tab, here, "en")
    page = tab.page
    k_b = page.get_by_label("k_B", exact=True)
    k_b.fill("2, 0")
    k_b.press("Enter")  # a text input commits on Enter
    wait_for_text(tab, "[1.000, 2.000]")  # the scores with k_B = [2, 0]
    page.wait_for_url(lambda url: "hand.kB=" in url)
    wait_ready(tab)  # that rerun has ended: a click during a run can be lost on a busy machine

    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text(catalogue("en")["kit.share"], exact=True).click()
    show = catalogue("en")["kit.share_show"]
    expect(sidebar.get_by_text(show, exact=True)).to_be_visible()
    wait_ready(tab)  # the drawer's rerun has ended: the switch is not redrawn under the click
    sidebar.get_by_text(show, exact=True).click()
    expect(sidebar.get_by_role("switch", name=show)).to_be_checked()
    code = sidebar.locator('[data-testid="stCode"]')
    expect(code).to_be_visible()
    expect(sidebar.locator('[data-testid="stImage"] img')).to_be_visible()  # the QR code
    shared = code.inner_text().strip()
    assert where(shared) == where(page.url), (shared, page.url)
    assert where(shared)[1]["hand.kB"] == ["2, 0"] and where(shared)[1]["lang"] == ["en"]
    assert urlsplit(shared).netloc == urlsplit(page.url).netloc
    assert tab.console_errors() == [], tab.console_errors()

    learner = new_tab()  # a learner's device: no cookies, no session, only the shared link
    learner.page.goto(shared)
    wait_ready(learner, title(here, "en"))
    wait_for_text(learner, "[1.000, 2.000]")
    expect(learner.page.get_by_label("k_B", exact=True)).to_have_value("2, 0")
    assert learner.console_errors() == [], learner.console_errors()
