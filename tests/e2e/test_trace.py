"""Stage 11's trace in headless Chromium: after both exercises, a clicked logit is traced
back click by click to its token ID, the trail lands in the URL, and the link shows the
same breadcrumb in a new browser context (tinyformer/lessons/trace.py; its numbers are
checked in tests/unit/test_trace.py)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from ui.i18n import catalogue

from .conftest import TIMEOUT_MS, Server, Tab

pytestmark = pytest.mark.e2e
expect.set_options(timeout=TIMEOUT_MS)

APP = '[data-testid="stApp"]'
IDLE = f'{APP}[data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'
EN = catalogue("en")
# The seeded article's run, its walk open at the logits, the logit of ID 40 at the last
# position (7) clicked: what a teacher's link to that cell opens.
START = "/forward?lang=en&forward.more=true&forward.step=logits&forward.map_logits_0=7,40"
END = "ids-0-7-0"  # the ID at position 7


def idle(tab: Tab) -> None:
    tab.page.wait_for_selector(APP, state="attached")
    tab.page.wait_for_selector(IDLE, state="attached")
    tab.page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden")


def answer_the_exercises(tab: Tab) -> None:
    """The walk (and so the trace) is drawn once both exercises are answered."""
    page = tab.page
    page.get_by_text("[1, 2, 8, 8]", exact=True).first.click()
    page.get_by_role("button", name=EN["kit.reveal"]).first.click()
    idle(tab)
    box = page.get_by_label(re.compile("^" + re.escape(EN["kit.your_answer"].split("{")[0])))
    box.first.fill("1")
    box.first.press("Enter")
    page.get_by_role("button", name=EN["kit.check"]).first.click()
    idle(tab)


def trail_in(url: str) -> list[str]:
    """The cells of the trail a page's URL carries (forward.trace, cells joined by ~)."""
    found = parse_qs(urlsplit(url).query).get("forward.trace", [""])[0]
    return [cell for cell in found.split("~") if cell]


def breadcrumb(tab: Tab):
    return tab.page.get_by_text(re.compile(r"^Logits .* ← .*"))


def test_a_logit_traced_back_to_its_id_and_shared(server: Server, new_tab) -> None:
    tab = new_tab()
    tab.page.goto(server.url + START)
    idle(tab)
    answer_the_exercises(tab)
    tab.page.get_by_role("button", name=EN["forward.trace_start"]).click()
    tab.page.wait_for_url(re.compile(r"[?&]forward\.trace=logits-0-7-40(&|$)"))
    idle(tab)
    done = EN["forward.trace_done"].split(":")[0]  # "The start"
    for _ in range(12):  # the first input each time: 7 cells from this logit to the ID
        if tab.page.get_by_text(done).count():
            break
        cells = len(trail_in(tab.page.url))
        main = tab.page.locator('[data-testid="stMain"]')  # the trail's inputs, nothing else
        main.get_by_role("button", name=re.compile("^←")).first.click()
        # The run the click starts may not have begun yet: wait for its longer trail, so
        # the next click never lands on this run's buttons as they are replaced.
        tab.page.wait_for_url(lambda url, n=cells: len(trail_in(url)) > n)
        idle(tab)
    expect(tab.page.get_by_text(done).first).to_be_visible()
    trail = parse_qs(urlsplit(tab.page.url).query)["forward.trace"][0]
    assert trail.startswith("logits-0-7-40~final-0-7-") and trail.endswith(END)
    expect(breadcrumb(tab).first).to_be_visible()
    assert tab.page.locator('[data-testid="stException"]').count() == 0
    assert tab.console_errors() == [], tab.console_errors()

    other = new_tab()  # a new context: only the link
    other.page.goto(tab.page.url)
    idle(other)
    answer_the_exercises(other)
    expect(other.page.get_by_text(done).first).to_be_visible()
    expect(breadcrumb(other).first).to_be_visible()
    assert other.console_errors() == [], other.console_errors()
