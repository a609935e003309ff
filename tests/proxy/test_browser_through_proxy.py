"""A real browser through the class server (nginx, two Streamlit processes): the page
opens over the proxied websocket, an edit survives reruns, and the browser stays on
one process, a reload included.

The edit is generic (the first number of the page's first text input, moved by one)
so that the test follows the stage pages as they change; the e2e tests check their
numbers.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from e2e.conftest import _require_chromium  # noqa: F401  (autouse: Chromium or skip)
from e2e.test_browser import APP, page_url, title, wait_ready
from playwright.sync_api import expect

from deploy import nginx
from ui.i18n import LANG_NAMES
from ui.stages import STAGES

pytestmark = pytest.mark.e2e
FIRST_INPUT = '[data-testid="stMain"] [data-testid="stTextInput"] input'
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def in_query(url: str) -> list[str]:
    return [value for values in parse_qs(urlsplit(url).query).values() for value in values]


def moved(text: str) -> str:
    match = NUMBER.search(text)
    assert match, f"no number in the first input: {text!r}"
    return f"{text[:match.start()]}{float(match.group()) + 1:g}{text[match.end():]}"


def test_a_page_opens_and_an_edit_survives_reruns_on_one_process(class_server,
                                                                 new_tab) -> None:
    stage = next((s for s in STAGES if s.id == "softmax"), STAGES[0] if STAGES else None)
    if stage is None:
        pytest.skip("no stage page is built")
    tab = new_tab()
    answered: list[str] = []  # the process behind each HTTP response, in order
    tab.page.on("response", lambda r: answered.append(r.headers.get(
        nginx.UPSTREAM_HEADER.lower(), "")))
    tab.page.goto(page_url(class_server, stage, "en"))
    wait_ready(tab, title(stage, "en"))

    field = tab.page.locator(FIRST_INPUT).first
    label = field.get_attribute("aria-label")
    before_text, before = tab.page.locator(APP).inner_text(), field.input_value()
    after = moved(before)
    field.fill(after)
    field.press("Enter")
    tab.page.wait_for_url(lambda url: after in in_query(url))  # the rerun wrote the URL
    wait_ready(tab, title(stage, "en"))
    expect(tab.page.get_by_label(label, exact=True)).to_have_value(after)
    assert tab.page.locator(APP).inner_text() != before_text  # the page used the edit

    # More reruns on the same session: the language there and back.
    switch = tab.page.locator(".st-key-page_title")  # the language, in the title row
    for lang in ("zh", "en"):
        switch.get_by_role("radio", name=LANG_NAMES[lang]).click()
        wait_ready(tab, title(stage, lang))
    expect(tab.page.get_by_label(label, exact=True)).to_have_value(after)

    # A reload: a new websocket session, the same cookie, the same process.
    tab.page.reload()
    wait_ready(tab, title(stage, "en"))
    expect(tab.page.get_by_label(label, exact=True)).to_have_value(after)

    assert tab.page.locator('[data-testid="stException"]').count() == 0
    assert tab.console_errors() == [], tab.console_errors()
    processes = {upstream for upstream in answered[1:] if upstream}
    # The first response set the cookie; every later one came from one process.
    assert len(processes) == 1, processes
