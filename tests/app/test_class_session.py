"""A class session through the real app (ui/class_session.py): the teacher starts a class,
a learner joins by its link and follows, explores and comes back, answers; the teacher
sees the tally and shows the answer; a forged teacher link and an ended class are refused.
The store is the test run's own SQLite file (tests/conftest.py)."""

from __future__ import annotations

from functools import partial
from urllib.parse import parse_qs, urlparse

from tests.app import helpers
from tests.app.helpers import DRAWERS, page_text
from ui.i18n import catalogue
from ui.stages import by_id

EN = catalogue("en")
# Every page opened with the sidebar's class and lesson drawers open, as a teacher and
# the learners open them to start, join or build (ui/drawer.py).
open_page = partial(helpers.open_page, state=DRAWERS)


def _title(at) -> str:
    return at.title[0].value if at.title else ""


def _here(at):
    """AppTest forgets a page change the script made (st.switch_page), which a browser
    keeps in its address: say it again before the learner's next run."""
    return at.switch_page(by_id(at.session_state["_stage"]).path)


def _rerun(at):
    """The follower's next check (every 2 s in a browser)."""
    return _here(at).run()


def _exercise(at) -> str:
    """The first multiple-choice exercise on the page: its kit key."""
    radio = next(r for r in at.radio if (r.key or "").endswith(".choice"))
    return radio.key.removesuffix(".choice")


def test_a_class_follows_its_teacher_answers_and_sees_the_answer_shown():
    teacher = open_page("pages/03_softmax.py")
    teacher.button("_class_start").click().run()
    code = teacher.query_params["class"]
    assert "teacher" not in teacher.query_params  # the key never reaches the address
    assert f"Class {code}" in page_text(teacher)

    learner = open_page("pages/00_ngrams.py", params={"class": code})
    # The follower's check (every 2 s in a browser; also on every whole run) moved it.
    assert _title(learner).startswith("3 ·")
    assert EN["class.following"].format(code=code) in page_text(learner)

    _here(learner).button("_class_explore").click().run()
    teacher.switch_page("pages/05_masks.py").run()
    _rerun(learner)
    assert _title(learner).startswith("3 ·")  # exploring: it stays
    _here(learner).button("_class_back").click().run()
    _rerun(learner)
    assert _title(learner).startswith("5.1 ·")

    key = _exercise(learner)
    _here(learner).radio(f"{key}.choice").set_value(0).run()
    learner.button(f"{key}.reveal").click().run()
    teacher.run()
    name = key.split(".ex.", 1)[1]
    tallies = [c.value for c in teacher.caption if c.value.startswith("Class: ")]
    assert tallies[0] in (EN["class.tally"].format(n=1, right=0),
                          EN["class.tally"].format(n=1, right=1))
    teacher.button(f"_class_reveal.masks.{name}").click().run()
    _rerun(learner)
    assert any(i.value.startswith(EN["kit.class_answer"].split("{")[0]) for i in learner.info)


def test_a_forged_teacher_link_and_an_ended_class_are_refused():
    teacher = open_page("pages/03_softmax.py")
    teacher.button("_class_start").click().run()
    code = teacher.query_params["class"]
    forged = open_page("pages/03_softmax.py", params={"class": code, "teacher": "guess"})
    assert EN["class.not_teacher"] in [w.value for w in forged.warning]
    assert "_class_reveal" not in str([b.key for b in forged.button])
    ended = open_page("pages/03_softmax.py", params={"class": "ZZZZZZ", "lesson": "%%x"})
    assert EN["class.gone"] in [w.value for w in ended.warning]
    assert EN["class.lesson_bad"] in [e.value for e in ended.error]  # a broken lesson link
    assert "class" not in ended.query_params
    bad = open_page("pages/03_softmax.py", params={"class": "<b>x"})
    assert EN["class.bad_code"] in [e.value for e in bad.error]


def test_a_lesson_is_built_saved_as_a_link_walked_and_followed_with_its_inputs():
    Q = "0, 0; 1, 0; 0, 1; 1, 1"
    builder = open_page("pages/03_softmax.py", params={"softmax.Q": Q})
    builder.button("_lesson_add").click().run()
    builder.switch_page("pages/05_masks.py").run()
    builder.button("_lesson_add").click().run()
    link = next(c.value for c in builder.code if "lesson=" in c.value)
    value = parse_qs(urlparse(link).query)["lesson"][0]

    teacher = open_page("pages/00_ngrams.py", params={"lesson": value})
    assert EN["class.lesson_ready"].format(n=2) in page_text(teacher)
    assert "lesson" not in teacher.query_params
    teacher.button("_class_start").click().run()
    code = teacher.query_params["class"]
    learner = open_page("pages/00_ngrams.py", params={"class": code})
    assert not [b for b in learner.button if b.key == "_lesson_next"]  # a follower: no walk

    _here(teacher).button("_lesson_next").click().run()  # → : the lesson's first step
    assert _title(teacher).startswith("3 ·") and teacher.query_params["softmax.Q"] == Q
    assert EN["class.lesson_at"].format(k=1, n=2) in page_text(teacher)
    _rerun(learner)
    assert _title(learner).startswith("3 ·") and learner.query_params["softmax.Q"] == Q

    _here(teacher).button("_lesson_next").click().run()
    assert _title(teacher).startswith("5.1 ·")
    assert teacher.button(key="_lesson_next").disabled  # the lesson's end
    _rerun(learner)
    assert _title(learner).startswith("5.1 ·")


def test_the_next_token_poll_is_opened_voted_counted_and_shown():
    teacher = open_page("pages/10_logits.py", folded=True)
    teacher.button("_class_start").click().run()
    code = teacher.query_params["class"]
    learner = open_page("pages/10_logits.py", params={"class": code}, folded=True)
    assert not [r for r in learner.radio if r.key == "_class_poll.logits"]  # not open yet

    teacher.button("_class_poll_open").click().run()
    _rerun(learner)  # the follower's check sees the poll open
    learner.radio("_class_poll.logits").set_value(1).run()
    learner.button("_class_poll_send.logits").click().run()
    teacher.run()  # the teacher's live check (every 2 s in a browser)
    assert EN["class.poll_votes"].format(n=1) in [c.value for c in teacher.caption]
    bars = [p.text for p in teacher.get("progress")]
    assert "买家 (buyer) · 1" in bars and "商家 (merchant) · 0" in bars

    teacher.button("_class_poll_show").click().run()
    _rerun(learner)
    assert "买家 (buyer) · 1" in [p.text for p in learner.get("progress")]
    assert _here(learner).button("_class_poll_send.logits").disabled  # the vote is over


def test_the_overview_is_the_teachers_and_a_nickname_stays_text():
    teacher = open_page("pages/03_softmax.py")
    teacher.button("_class_start").click().run()
    code = teacher.query_params["class"]
    learner = open_page("pages/03_softmax.py", params={"class": code})
    nick = "<script>x</script>**"  # 20 characters: the most a nickname keeps
    learner.text_input("_class_nickname").input(nick)
    learner.button("_class_nickname_save").click().run()
    key = _exercise(learner)
    _here(learner).radio(f"{key}.choice").set_value(0).run()
    learner.button(f"{key}.reveal").click().run()
    wrong = bool(learner.warning)  # the kit says "not quite" under a wrong answer

    teacher.switch_page("pages/class_overview.py").run()
    rows = teacher.table[0].value
    row = rows[rows[EN["class.overview_answered"]] == 1].iloc[0]
    assert row[EN["class.overview_right"]] == (0 if wrong else 1)
    assert (row[EN["class.overview_wrong"]] != "–") == wrong  # an option's text, (1×)
    people = teacher.table[1].value
    assert list(people[EN["class.overview_name"]]) == [nick]  # as typed, a table cell
    assert not any("<script" in m.value for m in teacher.markdown)
    assert teacher.get("download_button")

    _here(learner).switch_page("pages/class_overview.py").run()
    assert EN["class.overview_teacher_only"] in [i.value for i in learner.info]
    assert not learner.table
