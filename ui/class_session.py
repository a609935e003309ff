"""A class session, drawn by the frame: the teacher leads, the class follows and answers.

- The teacher starts a class (sidebar): the store (serving/class_store.py) gives a class
  code and a teacher key. The code is a global URL value (`class`), so the share panel's
  link and QR code carry it and nothing else; the key stays in the teacher's session. A
  teacher link (`?class=CODE&teacher=KEY`) reopens the lead after a reload: the key is read
  once and taken out of the address at once, so it never reaches the projector or a link.
- A learner who opens a link with `class=CODE` joins and follows: every POLL_SECONDS a
  small section asks the store where the teacher is and, when the teacher has moved, moves
  the page to the teacher's stage, worked-example step and open sections (never the
  teacher's inputs: a learner's own inputs on a stage are kept for when the class comes
  back to it). "Explore on my own" stops following; "Back to the teacher" resumes.
- While in a class, each exercise a learner answers is recorded under a pseudonym (a hash
  of the browser's own XSRF cookie, so a reload is the same learner). The teacher sees,
  under each exercise, how many answered, the distribution and the share right, and can
  show the answer to the class.

A store that cannot be reached gives a translated message; the page goes on alone.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from serving import class_store
from serving.class_store import ClassError, ClassStore, normal_code
from ui import classroom, handout, lesson_plan, state
from ui.drawer import drawer, is_open
from ui.fold import NAME as FOLD_NAME
from ui.i18n import t

_LOG = logging.getLogger(__name__)

CLASS = state.CLASS  # the URL value: a class code
TEACHER = "teacher"  # the teacher link's key; read once, then removed from the URL
POLL_SECONDS = 2.0  # a follower sees the teacher's move within about this long
_KEY = "_class_teacher_key"
_FOLLOW = "_class_follow"
_SEEN = "_class_seen"  # the position version a follower last applied
_POLLED = "_class_polled"  # the class's version a follower's poll last dealt with whole
_PUSHED = "_class_pushed"  # what the teacher last wrote: (stage, params)
_OWN = "_class_own"  # a follower's own inputs, per stage: kept for when the class returns
_JOINED = "_class_joined"
_ME = "_class_learner"
_TALLY = "_class_tally"  # what the teacher's tallies were drawn from
_REVEALED = "_class_revealed"  # the exercises whose answer the teacher has shown
_EXERCISES = "_class_exercises"  # the teacher's: (stage, name) -> (question, options, right)
_NICK = "_class_nickname"  # a learner's nickname box
CLASS_BOX = "_class_box"  # the sidebar's drawer (ui/drawer.py): start, join, leave
LESSON_BOX = "_lesson_box"  # the sidebar's drawer of the lesson's builder
OVERVIEW_ID = "class"  # the class overview page's URL path (pages/class_overview.py)
_CODE = state.text_codec(class_store.CODE_LENGTH)
# The lesson (ui/lesson_plan.py): the teacher's ordered steps, kept in the session
LESSON = "lesson"  # a lesson link's URL value; read once, then removed from the URL
_LESSON = "_lesson_plan"
_LESSON_AT = "_lesson_at"  # the step the teacher last opened (None: not started)
_LESSON_GO = "_lesson_go"  # counts the teacher's steps: each opening is a new token
_LESSON_SEEN = "_class_lesson_seen"  # the lesson token a follower last applied
_NOTES = "_class_notes"  # (stage, [(kind, message key)]): refusals met on arrival
_LESSON_MARK = "_lesson"  # in a move's params: the lesson step's token, never in a URL


def store() -> ClassStore:
    return class_store.store()


def code() -> str | None:
    return normal_code(st.session_state.get(CLASS) or "")


def teaching() -> bool:
    return code() is not None and bool(st.session_state.get(_KEY))


def following() -> bool:
    return code() is not None and not teaching() and st.session_state.get(_FOLLOW, True)


def learner_id() -> str:
    """A pseudonym for this browser: the same after a reload (Streamlit's XSRF cookie is
    the browser's), never its name; a session of its own where no cookie is sent."""
    if _ME not in st.session_state:
        cookie = (st.context.cookies or {}).get("_streamlit_xsrf") or secrets.token_hex(8)
        st.session_state[_ME] = hashlib.sha256(cookie.encode()).hexdigest()[:12]
    return st.session_state[_ME]


def _refused(error: ClassError) -> None:
    _LOG.info("class session: %s", error.__class__.__name__)
    st.warning(t(error.key), icon=":material/groups:")


def _safely(work: Callable[[], Any]) -> Any:
    try:
        return work()
    except ClassError as error:
        _refused(error)
        return None


# --- entering a page ---------------------------------------------------------------------
def enter() -> None:
    """Called by the frame on every whole run, before the page: read a class code or a
    teacher link from the URL, keep the code in the URL (Streamlit's own navigation drops
    query parameters), and join as a learner."""
    _lesson_from_link()
    typed = st.query_params.get(CLASS)
    if typed is not None and normal_code(typed) is None:
        del st.query_params[CLASS]
        _arrival_note("error", "class.bad_code")
        typed = None
    current = normal_code(typed) if typed else code()
    if current != st.session_state.get(CLASS):
        _forget()  # another class than this session's: start afresh
        st.session_state[CLASS] = current
    key = st.query_params.get(TEACHER)
    if key is not None:
        del st.query_params[TEACHER]  # never on the projector, never in a shared link
        if current and _safely(lambda: store().is_teacher(current, key)):
            st.session_state[_KEY] = key
        elif current:
            _arrival_note("warning", class_store.NotTeacher.key)
    if current is None:
        return
    state.write_url(CLASS, current, None, _CODE)
    if not teaching() and st.session_state.get(_JOINED) != current:
        try:
            store().join(current, learner_id())
            st.session_state[_JOINED] = current
        except class_store.ClassGone as error:
            _arrival_note("warning", error.key)
            leave()
        except ClassError as error:
            _arrival_note("warning", error.key)


def _arrival_note(kind: str, key: str) -> None:
    """A refusal met on arriving at a page, shown by the bar on every run of that stage
    (a page may run twice on arrival; the address that caused it is gone by then)."""
    _LOG.info("class session: %s", key)
    notes = st.session_state.get(_NOTES)
    if not notes or notes[0] != state.current_stage():
        notes = st.session_state[_NOTES] = (state.current_stage(), [])
    if (kind, key) not in notes[1]:
        notes[1].append((kind, key))


def _forget() -> None:
    for name in (_KEY, _JOINED, _SEEN, _POLLED, _PUSHED, _OWN, _FOLLOW, _TALLY, _REVEALED,
                 _LESSON_SEEN):
        st.session_state.pop(name, None)


def start() -> None:
    """The teacher's button: a new class, led from this session."""
    made = _safely(lambda: store().start())
    if made:
        new_code, key = made
        st.session_state[_KEY] = key
        state.set_value(CLASS, new_code, None, _CODE)
        st.session_state.pop(_PUSHED, None)


def leave() -> None:
    _forget()
    state.set_value(CLASS, None, None, _CODE)


def teacher_link() -> str:
    """This page at the class's address, with the class code and the teacher key."""
    params = {**state.link_params(), CLASS: code(), TEACHER: st.session_state.get(_KEY, "")}
    params.pop(state.PRESENT, None)
    return classroom.compose_url(st.context.url or "", classroom.share_address(), params)


# --- the teacher's position ------------------------------------------------------------------
def _position_params(stage_id: str) -> dict[str, str]:
    """What a follower takes from the teacher: the worked examples' steps and the open
    sections of the stage, never its inputs."""
    return {k: v for k, v in state.url_now().items() if _is_position(stage_id, k)}


def _is_position(stage_id: str, key: str) -> bool:
    return key.startswith(f"{stage_id}.") and (
        key.endswith(".step") or key == f"{stage_id}.{FOLD_NAME}")


def sync(stage_id: str) -> None:
    """After a whole run or a section's rerun: the teacher's move goes to the store; a
    follower's own inputs are remembered for when the class comes back here."""
    if teaching():
        where = (stage_id, {**_position_params(stage_id), **_lesson_params(stage_id)})
        moved = st.session_state.get(_PUSHED) != where and _safely(
            lambda: store().move(code(), st.session_state[_KEY], *where))
        if moved:
            st.session_state[_PUSHED] = where
    elif code():
        own = st.session_state.setdefault(_OWN, {})
        own[stage_id] = {k: v for k, v in state.url_now().items()
                         if k.startswith(f"{stage_id}.") and not _is_position(stage_id, k)}


def _follow(stage_id: str, page_of: Callable[[str], Any]) -> None:
    """A follower's check: move to the teacher's stage, step and open sections."""
    where = _safely(lambda: store().position(code()))
    if where is None or where.version == st.session_state.get(_SEEN):
        return
    st.session_state[_SEEN] = where.version
    moved = dict(where.params)
    token = moved.pop(_LESSON_MARK, None)
    # A lesson step the teacher has just opened brings its chosen inputs, once; after
    # that the learner's own inputs count again, as on any stage.
    new_step = token is not None and token != st.session_state.get(_LESSON_SEEN)
    if token is not None and not new_step:
        moved = {k: v for k, v in moved.items() if _is_position(where.stage, k)}
    st.session_state[_LESSON_SEEN] = token
    own = {} if new_step else st.session_state.get(_OWN, {}).get(where.stage, {})
    params = {**state.link_params(), **own, **moved}
    if where.stage != stage_id:
        st.switch_page(page_of(where.stage), query_params=params)
    stale = [k for k in state.url_now() if k not in params and (
        _is_position(stage_id, k) or (new_step and k.startswith(f"{stage_id}.")))]
    if not stale and all(state.url_now().get(k) == v for k, v in moved.items()):
        return
    entered = st.session_state.get("_entered", set())
    for key in stale:
        del st.query_params[key]
        entered.discard(key)
    for key, value in moved.items():
        st.query_params[key] = value
        entered.discard(key)  # read again from the URL: the teacher's step
    st.rerun(scope="app")


# --- the bar -----------------------------------------------------------------------------
def bar(stage_id: str, page_of: Callable[[str], Any]) -> None:
    """One line under the title while in a class: its code, the role, and for a learner
    the switch between following and exploring."""
    notes = st.session_state.get(_NOTES)
    if notes and notes[0] == stage_id:
        for kind, key in notes[1]:
            getattr(st, kind)(_plan_error(key), icon=":material/groups:")
    elif notes:
        del st.session_state[_NOTES]
    if not following():
        _lesson_line(stage_id, page_of)
    if code() is None:
        return
    with st.container(key="class_bar", horizontal=True, vertical_alignment="center"):
        if teaching():
            _teacher_line()
        else:
            _learner_line(stage_id, page_of)
    from ui import class_poll  # it draws with this module's verbs

    class_poll.draw(stage_id)


def _learner_line(stage_id: str, page_of: Callable[[str], Any]) -> None:
    if following():
        st.markdown(t("class.following", code=code()))
        st.button(t("class.explore"), key="_class_explore", on_click=_set_follow,
                  args=(False,))
        _poll(stage_id, page_of)
    else:
        st.markdown(t("class.exploring", code=code()))
        st.button(t("class.back"), key="_class_back", on_click=_set_follow, args=(True,),
                  type="primary")


def _set_follow(on: bool) -> None:
    st.session_state[_FOLLOW] = on
    st.session_state.pop(_SEEN, None)  # back to the teacher: go where the teacher is now
    st.session_state.pop(_POLLED, None)


@st.fragment(run_every=POLL_SECONDS)
def _poll(stage_id: str, page_of: Callable[[str], Any]) -> None:
    """Every POLL_SECONDS: one read of the class's version (a move or a reveal raises it);
    only when it changed, the position and the revealed answers. Draws nothing, writes
    nothing to the store: the cheapest run a fragment can have (docs/deploy.md)."""
    if not following():
        return
    version = _safely(lambda: store().version(code()))
    if version is None or version == st.session_state.get(_POLLED):
        return
    _follow(stage_id, page_of)  # may move the page: the next run reads the version again
    changed = _reveals_changed()
    st.session_state[_POLLED] = version
    if changed:
        st.rerun(scope="app")


def _reveals_changed() -> bool:
    shown = _safely(lambda: store().revealed(code())) or set()
    if shown != st.session_state.get(_REVEALED, set()):
        st.session_state[_REVEALED] = shown
        return True
    return False


def _teacher_line() -> None:
    @st.fragment(run_every=POLL_SECONDS)
    def live() -> None:
        joined, answered = _safely(lambda: store().counts(code(), state.current_stage())) or (
            None, None)
        st.markdown(t("class.leading", code=code(), n=joined or 0))
        now = (joined, answered)
        if st.session_state.setdefault(_TALLY, now) != now:
            st.session_state[_TALLY] = now
            st.rerun(scope="app")  # new answers: the tallies under the exercises follow

    live()


# --- the sidebar -------------------------------------------------------------------------
def sidebar() -> None:
    """Start or join a class; the teacher's own link; leave. The lesson's builder."""
    _class_box()
    if not following():
        lesson_sidebar(state.current_stage())


def _class_box() -> None:
    box = drawer(t("class.box_title"), key=CLASS_BOX, icon=":material/groups:")
    if not is_open(box):
        return
    with box:
        if code() is None:
            st.button(t("class.start"), key="_class_start", on_click=start)
            typed = st.text_input(t("class.join_label"), key="_class_join", max_chars=8,
                                  placeholder="ABC234")
            if st.button(t("class.join"), key="_class_join_go", disabled=not typed):
                if normal_code(typed) is None:
                    st.error(t("class.bad_code"))
                else:
                    state.set_value(CLASS, normal_code(typed), None, _CODE)
                    st.rerun()
            return
        if teaching():
            st.caption(t("class.teacher_link_note"))
            st.code(teacher_link(), language=None)
        else:
            _nickname_box()
        st.button(t("class.leave"), key="_class_leave", on_click=leave)


def _nickname_box() -> None:
    """A learner's optional nickname, shown to the teacher in the class overview."""
    st.text_input(t("class.nickname"), key=_NICK, max_chars=class_store.MAX_NICKNAME,
                  help=t("class.nickname_help"))
    if st.button(t("class.nickname_save"), key="_class_nickname_save"):
        name = nickname_text(st.session_state.get(_NICK) or "")
        if _safely(lambda: store().join(code(), learner_id(), name)) is None:
            st.caption(t("class.nickname_saved") if name else t("class.nickname_none"))


# --- the lesson --------------------------------------------------------------------------
def _stage_ids() -> set[str]:
    from ui.stages import all_pages  # no Streamlit pages here: plain data

    return {stage.id for stage in all_pages()}


def lesson() -> lesson_plan.Plan:
    return st.session_state.get(_LESSON, ())


def _set_lesson(plan: lesson_plan.Plan) -> None:
    st.session_state[_LESSON] = plan
    st.session_state[_LESSON_AT] = None


def _lesson_from_link() -> None:
    value = st.query_params.get(LESSON)
    if value is None:
        return
    del st.query_params[LESSON]
    try:
        plan = lesson_plan.from_link(value, _stage_ids(), state.SHARED_NAMESPACES)
    except lesson_plan.PlanError as error:
        _arrival_note("error", error.key)
        return
    _set_lesson(plan)  # the lesson bar now says so: "Lesson · steps: n"


def _lesson_params(stage_id: str) -> dict[str, str]:
    """On a lesson step: its chosen inputs and the token of this opening of it, which a
    follower takes once (see _follow)."""
    plan = lesson()
    at = lesson_plan.step_at(plan, st.session_state.get(_LESSON_AT), stage_id)
    if at is None:
        return {}
    token = f"{at}:{st.session_state.get(_LESSON_GO, 0)}"
    return {**plan[at].as_dict(), _LESSON_MARK: token}


def add_to_lesson(stage_id: str) -> None:
    """The sidebar's button: this page as it is now becomes the lesson's last step."""
    try:
        step = lesson_plan.step_from(stage_id, state.url_now(), state.SHARED_NAMESPACES)
        plan = lesson_plan.add(lesson(), step)
    except lesson_plan.PlanError as error:
        st.session_state["_lesson_note"] = error.key
        return
    st.session_state[_LESSON] = plan
    st.session_state[_LESSON_AT] = len(plan) - 1  # the teacher is on the step just added
    st.session_state["_lesson_note"] = None


def _go(index: int, page_of: Callable[[str], Any]) -> None:
    """Open a lesson step: its stage with its inputs (every value read again from the
    address: the step's, or its default)."""
    step = lesson()[index]
    st.session_state[_LESSON_AT] = index
    st.session_state[_LESSON_GO] = st.session_state.get(_LESSON_GO, 0) + 1
    st.session_state["_entered"] = set()
    st.switch_page(page_of(step.stage), query_params={**state.link_params(),
                                                      **step.as_dict()})


def _lesson_line(stage_id: str, page_of: Callable[[str], Any]) -> None:
    """The lesson's walk: where the teacher is in it, and ← → (the arrow keys in
    presenter view, ui/presenter.py) to the previous and next step."""
    plan = lesson()
    if not plan:
        return
    at = st.session_state.get(_LESSON_AT)
    here = lesson_plan.step_at(plan, at, stage_id)
    back, ahead = lesson_plan.target(plan, at, False), lesson_plan.target(plan, at, True)
    with st.container(key="lesson_bar", horizontal=True, vertical_alignment="center"):
        with st.container(key="lesson_prev", width="content"):
            if st.button("←", key="_lesson_prev", disabled=back is None,
                         help=t("class.lesson_prev")):
                _go(back, page_of)
        if here is not None:
            st.markdown(t("class.lesson_at", k=here + 1, n=len(plan)))
        elif at is None:
            st.markdown(t("class.lesson_ready", n=len(plan)))
        else:
            st.markdown(t("class.lesson_off", k=at + 1, n=len(plan)))
        with st.container(key="lesson_next", width="content"):
            if st.button("→", key="_lesson_next", disabled=ahead is None,
                         help=t("class.lesson_next")):
                _go(ahead, page_of)


def lesson_sidebar(stage_id: str) -> None:
    """Build the lesson, save it as a link or a file, load one."""
    from ui.page import stage_label
    from ui.stages import by_id

    plan = lesson()
    box = drawer(t("class.lesson_title"), key=LESSON_BOX, icon=":material/playlist_add:")
    if not is_open(box):
        return
    with box:
        st.button(t("class.lesson_add"), key="_lesson_add", on_click=add_to_lesson,
                  args=(stage_id,), icon=":material/add:")
        note = st.session_state.get("_lesson_note")
        if note:
            st.error(_plan_error(note))
        if plan:
            st.markdown("\n".join(
                f"{k}. {stage_label(by_id(step.stage))}" for k, step in enumerate(plan, 1)))
            link = lesson_link()
            if link is None:
                st.caption(t("class.lesson_link_long"))
            else:
                st.caption(t("class.lesson_link_note"))
                st.code(link, language=None)
            st.download_button(t("class.lesson_save"), data=lesson_plan.to_json(plan),
                               file_name="tinyformer-lesson.json", mime="application/json",
                               on_click="ignore", key="_lesson_save",
                               icon=":material/download:")
            left, right = st.columns(2)
            left.button(t("class.lesson_drop_last"), key="_lesson_drop",
                        on_click=_set_lesson, args=(plan[:-1],))
            right.button(t("class.lesson_clear"), key="_lesson_clear",
                         on_click=_set_lesson, args=((),))
        upload = st.file_uploader(t("class.lesson_load"), type=["json"], key="_lesson_file",
                                  max_upload_size=1)
        if upload is not None and st.session_state.get("_lesson_file_seen") != upload.file_id:
            st.session_state["_lesson_file_seen"] = upload.file_id
            try:
                loaded = lesson_plan.from_json(upload.getvalue()[:lesson_plan.MAX_BYTES + 1],
                                               _stage_ids(), state.SHARED_NAMESPACES)
            except lesson_plan.PlanError as error:
                st.error(_plan_error(error.key))
            else:
                _set_lesson(loaded)
                st.rerun()


def _plan_error(key: str) -> str:
    return t(key, steps=lesson_plan.MAX_STEPS, values=lesson_plan.MAX_PARAMS)


def lesson_link() -> str | None:
    """The lesson as a link to this app: opening it loads the lesson. None: too long for
    a link that loads (lesson_plan.MAX_LINK); the file holds it."""
    value = lesson_plan.to_link(lesson())
    if len(value) > lesson_plan.MAX_LINK:
        return None
    params = {**state.link_params(), LESSON: value}
    for name in (CLASS, state.PRESENT):
        params.pop(name, None)
    return classroom.compose_url(st.context.url or "", classroom.share_address(), params)


# --- exercises -----------------------------------------------------------------------------
def record(stage_id: str, exercise: str, answer: str, right: bool) -> None:
    """A learner's checked answer, for the teacher's tally (nothing outside a class)."""
    if code() and not teaching():
        _safely(lambda: store().answer(code(), learner_id(), stage_id, exercise, answer, right))


def revealed(stage_id: str, exercise: str) -> bool:
    """Has the teacher shown this exercise's answer to the class?"""
    if not code() or teaching():
        return False
    shown = st.session_state.get(_REVEALED)
    if shown is None:
        shown = st.session_state[_REVEALED] = (
            _safely(lambda: store().revealed(code())) or set())
    return (stage_id, exercise) in shown


def shown(stage_id: str, exercise: str) -> bool:
    """Has the teacher shown (or, for a poll, opened) this, for the teacher or a learner?"""
    if not code():
        return False
    if teaching():
        return (stage_id, exercise) in (_safely(lambda: store().revealed(code())) or set())
    return revealed(stage_id, exercise)


def reveal(stage_id: str, exercise: str) -> None:
    """The teacher shows this to the class (the store refuses anyone else)."""
    if teaching():
        key = st.session_state[_KEY]
        _safely(lambda: store().reveal(code(), key, stage_id, exercise))


def answers(stage_id: str) -> list[class_store.Answer]:
    return _safely(lambda: store().answers(code(), stage_id)) or [] if code() else []


def tally(stage_id: str, exercise: str, options: Sequence[str] | None,
          right: str | None = None) -> None:
    """Under an exercise, for the teacher: how many answered, the distribution, the share
    right, and the button that shows the answer to the class."""
    if not teaching():
        return
    _remember(stage_id, exercise)
    distribution(stage_id, exercise, options, right)
    key = st.session_state[_KEY]
    if st.button(t("class.reveal"), key=f"_class_reveal.{stage_id}.{exercise}"):
        _safely(lambda: store().reveal(code(), key, stage_id, exercise))
        st.success(t("class.revealed"))


def distribution(stage_id: str, exercise: str, options: Sequence[str] | None,
                 right: str | None = None) -> None:
    """The class's answers to one exercise: how many, how many right, and one bar per
    choice (or per distinct number typed, the right one marked)."""
    answers = [a for a in (_safely(lambda: store().answers(code(), stage_id)) or [])
               if a.exercise == exercise]
    st.caption(t("class.tally", n=len(answers), right=sum(a.right for a in answers)))
    if not answers:
        return
    counts = Counter(a.answer for a in answers)
    if options is not None:  # a choice: one bar per option, in the options' order
        bars = [(option, counts.get(str(i), 0)) for i, option in enumerate(options)]
    else:
        bars = [(f"{value} ✓" if value == right else value, counts[value])
                for value in sorted(counts, key=_as_number)]
    for label, count in bars:
        st.progress(count / len(answers), text=f"{label} · {count}")


def _as_number(text: str) -> tuple[int, float | str]:
    try:
        return (0, float(text))
    except ValueError:
        return (1, text)


# --- the class overview ------------------------------------------------------------------
def _remember(stage_id: str, exercise: str) -> None:
    """The teacher has this exercise on screen: keep its question, options and right
    answer (the handout's record of it) for the class overview."""
    record = handout.current()
    items = record.parts[record.active] if record.active else record.items
    for kind, item in reversed(items):
        if kind == "exercise":
            question, options, right = item[0], item[1], item[2]
            st.session_state.setdefault(_EXERCISES, {})[(stage_id, exercise)] = (
                str(question), tuple(map(str, options)) if options else None, str(right))
            return


@dataclass(frozen=True)
class Row:
    """One exercise in the class overview."""

    stage: str
    exercise: str
    question: str  # "" when the teacher has not had it on screen in this session
    answered: int
    right: int
    wrong: str  # the most common wrong answer, as the learners saw it ("" if none)
    wrong_count: int


def overview_rows(answers: Sequence[class_store.Answer],
                  known: Mapping[tuple[str, str], tuple[str, Sequence[str] | None, str]],
                  order: Sequence[str]) -> list[Row]:
    """Every exercise answered in the class or known to the teacher (the polls left
    out), in the stages' order: how many answered, how many right, and the most common
    wrong answer (a choice's option text where the options are known)."""
    from ui.class_poll import is_poll

    by_exercise: dict[tuple[str, str], list[class_store.Answer]] = {k: [] for k in known}
    for answer in answers:
        by_exercise.setdefault((answer.stage, answer.exercise), []).append(answer)
    rank = {stage: i for i, stage in enumerate(order)}
    rows = []
    for (stage, exercise), given in by_exercise.items():
        if is_poll(exercise):
            continue
        question, options, _ = known.get((stage, exercise), ("", None, ""))
        wrong = Counter(a.answer for a in given if not a.right).most_common(1)
        text, count = wrong[0] if wrong else ("", 0)
        if options and text.isdigit() and int(text) < len(options):
            text = options[int(text)]
        rows.append(Row(stage, exercise, question, len(given), sum(a.right for a in given),
                        text, count))
    rows.sort(key=lambda row: rank.get(row.stage, len(rank)))  # stable: first seen first
    return rows


def nickname_text(nickname: str) -> str:
    """A nickname as it may be shown and stored: no control or format characters, no
    spaces at its ends, at most MAX_NICKNAME characters. It is still shown as text only
    (a table cell, an input box), never as Markdown or HTML."""
    kept = "".join(c for c in nickname if unicodedata.category(c)[0] != "C")
    return kept.strip()[:class_store.MAX_NICKNAME]


def csv_safe(text: str) -> str:
    """A cell a spreadsheet would read as a formula is quoted as text."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@") else text


def learner_rows(answers: Sequence[class_store.Answer]) -> list[tuple[str, int, int]]:
    """(nickname, or the pseudonym's start; answers; right) per learner who answered."""
    from ui.class_poll import is_poll

    seen: dict[str, list[class_store.Answer]] = {}
    for answer in answers:
        if not is_poll(answer.exercise):
            seen.setdefault(answer.learner, []).append(answer)
    return [(given[0].nickname or f"#{learner[:6]}", len(given), sum(a.right for a in given))
            for learner, given in seen.items()]


def overview() -> None:
    """The class overview page: for the teacher only."""
    from ui.page import stage_label
    from ui.stages import STAGES, by_id
    from ui.tables import table

    if not teaching():
        st.info(t("class.overview_teacher_only"), icon=":material/lock:")
        return
    answers = _safely(lambda: store().answers(code()))
    if answers is None:
        return
    plan_order = [step.stage for step in lesson()]
    order = list(dict.fromkeys([*plan_order, *(s.id for s in STAGES)]))
    known = {k: v for k, v in st.session_state.get(_EXERCISES, {}).items()
             if not plan_order or k[0] in plan_order}
    rows = overview_rows(answers, known, order)
    joined = _safely(lambda: store().learners(code())) or 0
    st.markdown(t("class.overview_lead", n=joined))
    st.button(t("class.overview_refresh"), key="_class_overview_refresh",
              icon=":material/refresh:")  # a click reruns the page: the newest answers
    if not rows:
        st.caption(t("class.overview_empty"))
        return
    columns = [t(f"class.overview_{c}") for c in ("stage", "question", "answered", "right",
                                                  "share", "wrong")]
    cells = [[stage_label(by_id(r.stage)), r.question or r.exercise, r.answered, r.right,
              f"{100 * r.right / r.answered:.0f} %" if r.answered else "–",
              t("class.overview_wrong_n", answer=r.wrong, n=r.wrong_count) if r.wrong_count
              else "–"] for r in rows]
    title = t("class.overview_table")
    table({c: [row[i] for row in cells] for i, c in enumerate(columns)}, name=title)
    st.download_button(t("class.overview_csv"), file_name=f"tinyformer-class-{code()}.csv",
                       data=handout.table_csv(handout.Table(
                           title, columns, [str(i) for i in range(len(cells))],
                           [[csv_safe(str(v)) for v in row] for row in cells])),
                       mime="text/csv", on_click="ignore", icon=":material/download:",
                       key="_class_overview_csv")
    people = learner_rows(answers)
    if people:
        st.subheader(t("class.overview_learners"))
        names = [t(f"class.overview_{c}") for c in ("name", "answered", "right")]
        table({names[0]: [csv_safe(p[0]) for p in people], names[1]: [p[1] for p in people],
               names[2]: [p[2] for p in people]}, name=t("class.overview_learners"))


def overview_page() -> Any:
    """The overview as a Streamlit page for st.navigation: listed for the teacher only."""
    from ui.page import stage_label
    from ui.stages import by_id

    stage = by_id(OVERVIEW_ID)
    return st.Page(stage.path, title=stage_label(stage), url_path=OVERVIEW_ID,
                   visibility="visible" if teaching() else "hidden")
