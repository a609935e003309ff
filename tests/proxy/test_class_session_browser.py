"""A class session in real browsers through the class server (nginx, two Streamlit
processes sharing the test run's SQLite class store): a teacher and three learners, each
in a browser context of its own. The teacher starts a class and moves; the learners,
who joined by the class link on another page, follow; their three answers appear in the
teacher's tally; the teacher's "Show the class" reaches them."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from e2e.conftest import _require_chromium  # noqa: F401  (autouse: Chromium or skip)
from e2e.test_browser import page_url, title, wait_ready
from playwright.sync_api import expect

from ui.i18n import catalogue
from ui.stages import by_id

pytestmark = pytest.mark.e2e
EN = catalogue("en")
FOLLOW_MS = 15_000  # a follower checks every 2 s; a busy 2-core machine is slower


def test_a_teacher_leads_three_learners_who_follow_answer_and_see_the_answer(
        class_server, new_tab) -> None:
    softmax, scaling, ngrams = by_id("softmax"), by_id("scaling"), by_id("ngrams")
    teacher = new_tab()
    teacher.page.goto(page_url(class_server, softmax, "en"))
    wait_ready(teacher, title(softmax, "en"))
    teacher.page.get_by_text(EN["class.box_title"], exact=True).click()
    teacher.page.get_by_role("button", name=EN["class.start"]).click()
    lead = EN["class.leading"].split("{code}")[0].replace("**", "")
    expect(teacher.page.get_by_text(lead).first).to_be_visible()
    teacher.page.wait_for_function("() => location.search.includes('class=')")
    code = parse_qs(urlsplit(teacher.page.evaluate("location.href")).query)["class"][0]

    learners = []
    for _ in range(3):  # each joins by the class link, on another page than the teacher's
        tab = new_tab()
        tab.page.goto(f"{page_url(class_server, ngrams, 'en')}&class={code}")
        learners.append(tab)
    for tab in learners:
        expect(tab.page.locator("h1").get_by_text(title(softmax, "en"))).to_be_visible(
            timeout=FOLLOW_MS)
        wait_ready(tab, title(softmax, "en"))
        exercise = tab.page.locator('[data-testid="stRadio"]').first
        exercise.get_by_role("radio").first.check(force=True)
        tab.page.get_by_role("button", name=EN["kit.reveal"]).first.click()

    tally = EN["class.tally"].format(n=3, right=0).split(",")[0]
    expect(teacher.page.get_by_text(tally).first).to_be_visible(timeout=FOLLOW_MS)
    teacher.page.get_by_role("button", name=EN["class.reveal"]).first.click()
    shown = EN["kit.class_answer"].split("{")[0].strip()
    for tab in learners:
        expect(tab.page.get_by_text(shown).first).to_be_visible(timeout=FOLLOW_MS)

    teacher.page.locator('.tf-page-nav a[rel="next"]').click()  # the teacher moves on
    wait_ready(teacher, title(scaling, "en"))
    for tab in learners:
        expect(tab.page.locator("h1").get_by_text(title(scaling, "en"))).to_be_visible(
            timeout=FOLLOW_MS)
    for tab in (teacher, *learners):
        assert tab.page.locator('[data-testid="stException"]').count() == 0
