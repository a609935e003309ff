"""The class store (serving/class_store.py), the same tests on SQLite and on a real Redis.

The Redis tests start Debian's redis-server on a free port (no persistence) for this
module. Without redis-server they skip, except under CI=true, where .ci/run installs it
and a missing one is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator

import pytest

from serving import class_store as cs

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if not os.path.exists(REDIS):
        reason = "redis-server is missing: install Debian's redis-server to run these tests"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: a missing redis-server is a failure)")
        pytest.skip(reason)
    port = _free_port()
    server = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path) -> cs.ClassStore:
    clock = Clock()
    if request.param == "sqlite":
        made = cs.SQLiteStore(tmp_path / "classes.sqlite", clock=clock)
    else:
        made = cs.RedisStore(request.getfixturevalue("redis_url"), clock=clock)
    made.clock = clock
    return made


def test_a_teacher_starts_moves_and_learners_follow(store):
    code, key = store.start()
    assert cs.normal_code(code.lower()) == code
    assert store.position(code) is None  # nothing to follow yet
    assert store.is_teacher(code, key) and not store.is_teacher(code, "guess")
    first = store.move(code, key, "softmax", {"softmax.step": "2"})
    second = store.move(code, key, "scaling", {"scaling.d_k": "64", "lang": "zh"})
    assert second == first + 1
    where = store.position(code)
    assert (where.stage, dict(where.params), where.version) == (
        "scaling", {"scaling.d_k": "64", "lang": "zh"}, second)


def test_only_the_teacher_key_moves_the_class_or_reveals(store):
    code, key = store.start()
    store.move(code, key, "softmax", {})
    for forged in ("", "x" * 22, store.start()[1]):  # nothing, a guess, another class's key
        with pytest.raises(cs.NotTeacher):
            store.move(code, forged, "masks", {})
        with pytest.raises(cs.NotTeacher):
            store.reveal(code, forged, "softmax", "kb")
    assert store.position(code).stage == "softmax"
    assert store.revealed(code) == set()


def test_answers_are_kept_per_learner_and_exercise_and_the_last_one_counts(store):
    code, key = store.start()
    store.join(code, "a", "<b>Ann</b>")
    store.join(code, "b")
    store.answer(code, "a", "softmax", "kb", "0", False)
    store.answer(code, "a", "softmax", "kb", "1", True)  # a changed mind replaces
    store.answer(code, "b", "softmax", "kb", "1", True)
    store.answer(code, "b", "masks", "a22", "1.000", True)
    on_softmax = store.answers(code, "softmax")
    assert sorted((a.learner, a.answer, a.right) for a in on_softmax) == [
        ("a", "1", True), ("b", "1", True)]
    assert {a.nickname for a in on_softmax} == {"<b>Ann</b>", ""}  # stored as typed
    assert len(store.answers(code)) == 3 and store.learners(code) == 2
    store.reveal(code, key, "softmax", "kb")
    assert store.revealed(code) == {("softmax", "kb")}


def test_bounds_on_learners_answers_and_nicknames(store, monkeypatch):
    monkeypatch.setattr(cs, "MAX_LEARNERS", 2)
    monkeypatch.setattr(cs, "MAX_ANSWERS", 2)
    code, _ = store.start()
    store.join(code, "a", "n" * 100)
    store.join(code, "b")
    store.join(code, "a")  # a learner who joins again is not a new one
    with pytest.raises(cs.ClassFull):
        store.join(code, "c")
    store.answer(code, "a", "s", "e1", "1", True)
    store.answer(code, "a", "s", "e2", "1" * 500, True)
    store.answer(code, "a", "s", "e2", "2", True)  # replacing is not a new answer
    with pytest.raises(cs.TooManyAnswers):
        store.answer(code, "a", "s", "e3", "1", True)
    with pytest.raises(cs.ClassGone):
        store.answer(code, "stranger", "s", "e1", "1", True)  # never joined
    assert store.learners(code) == 2
    assert max(len(a.answer) for a in store.answers(code)) <= cs.MAX_ANSWER


def test_a_class_expires_after_its_last_activity(store):
    code, key = store.start()
    store.move(code, key, "softmax", {})
    store.clock.now += cs.TTL - 60
    assert store.position(code).stage == "softmax"  # activity renews it
    if isinstance(store, cs.RedisStore):
        store.redis.delete(*store._keys(code))  # Redis expires keys by its own clock
    else:
        store.clock.now += cs.TTL + 1
    with pytest.raises(cs.ClassGone):
        store.position(code)
    with pytest.raises(cs.ClassGone):
        store.join("ZZZZZZ", "a")


def test_codes_are_hard_to_guess_and_typed_codes_are_checked():
    assert len(cs.CODE_ALPHABET) ** cs.CODE_LENGTH > 5e8
    assert len({cs.new_code() for _ in range(2000)}) == 2000
    assert cs.normal_code(" abcdef ") == "ABCDEF"
    assert [cs.normal_code(c) for c in ("ABCDE", "ABCDEFG", "ABCDE0", "", "<script>")] == [
        None] * 5


def test_a_store_that_cannot_be_reached_says_so():
    down = cs.RedisStore(f"redis://127.0.0.1:{_free_port()}/0")
    with pytest.raises(cs.StoreDown):
        down.start()
    assert cs.StoreDown.key == "class.store_down"


def test_the_setting_chooses_the_store(tmp_path):
    assert isinstance(cs.store_from(str(tmp_path / "c.sqlite")), cs.SQLiteStore)
    assert isinstance(cs.store_from("redis://127.0.0.1:1/0"), cs.RedisStore)


def test_sqlite_processes_share_one_file(tmp_path):
    """Two stores on one file stand for two app processes of the class server."""
    one = cs.SQLiteStore(tmp_path / "c.sqlite")
    two = cs.SQLiteStore(tmp_path / "c.sqlite")
    code, key = one.start()
    one.move(code, key, "masks", {"masks.causal": "true"})
    assert two.position(code).stage == "masks"
    two.join(code, "a")
    assert one.learners(code) == 1


def test_the_poll_counts_each_learners_last_vote_and_no_crafted_one(store):
    from ui import class_poll  # the next-token poll of 10.1 and 10.2

    code, _ = store.start()
    for learner in "abc":
        store.join(code, learner)
    store.answer(code, "a", "logits", class_poll.NAME, "0", False)
    store.answer(code, "a", "logits", class_poll.NAME, "1", False)  # a changed mind
    store.answer(code, "b", "logits", class_poll.NAME, "1", False)
    store.answer(code, "c", "logits", class_poll.NAME, "7", False)  # no such candidate
    store.answer(code, "c", "logits", class_poll.NAME, "-1", False)
    store.answer(code, "c", "logits", "cool", "2", True)  # an exercise, not the poll
    assert class_poll.tally(store.answers(code, "logits")) == [0, 2, 0]


def test_the_overview_counts_right_answers_and_finds_the_common_wrong_one():
    from ui.class_session import csv_safe, nickname_text, overview_rows

    def answer(learner, exercise, given, right, stage="softmax"):
        return cs.Answer(learner, "", stage, exercise, given, right)

    answers = [answer("a", "kb", "0", False), answer("b", "kb", "2", False),
               answer("c", "kb", "2", False), answer("d", "kb", "1", True),
               answer("a", "a22", "0.5", False, "masks"), answer("a", "poll.next", "1", False)]
    known = {("softmax", "kb"): ("Which?", ("up", "down", "same"), "down"),
             ("scaling", "sq"): ("Why?", ("x", "y"), "x")}  # seen, not answered yet
    rows = overview_rows(answers, known, ["softmax", "scaling", "masks"])
    assert [(r.stage, r.answered, r.right, r.wrong, r.wrong_count) for r in rows] == [
        ("softmax", 4, 1, "same", 2), ("scaling", 0, 0, "", 0), ("masks", 1, 0, "0.5", 1)]
    assert nickname_text("  Ann\u202e\x00 " + "n" * 40) == ("Ann " + "n" * 40)[:cs.MAX_NICKNAME]
    assert [csv_safe(x) for x in ("=1+1", "@a", "Ann")] == ["'=1+1", "'@a", "Ann"]


def test_the_version_grows_with_moves_and_reveals_and_the_counts_follow(store):
    code, key = store.start()
    assert store.version(code) == 0 and store.counts(code, "softmax") == (0, 0)
    moved = store.move(code, key, "softmax", {})
    assert store.version(code) == moved == store.position(code).version
    store.reveal(code, key, "softmax", "kb")
    assert store.version(code) == moved + 1  # a reveal reaches the followers' poll
    store.reveal(code, key, "softmax", "kb")  # shown already: nothing new
    assert store.version(code) == moved + 1
    store.join(code, "a")
    store.answer(code, "a", "softmax", "kb", "1", True)
    store.answer(code, "a", "masks", "a22", "1", True)
    assert store.counts(code, "softmax") == (1, 1)
    with pytest.raises(cs.ClassGone):
        store.version("ZZZZZZ")


def test_a_poll_writes_nothing_and_renews_the_class_once_a_minute(tmp_path):
    """SQLite has one write lock for every process; a poll that wrote held up the rest."""
    clock = Clock()
    store = cs.SQLiteStore(tmp_path / "c.sqlite", clock=clock)
    code, key = store.start()
    store.move(code, key, "softmax", {})
    other = sqlite3.connect(tmp_path / "c.sqlite")  # another process's view of the file
    committed = other.execute("PRAGMA data_version").fetchone()  # grows with others' commits
    clock.now += cs.TOUCH - 1
    store.version(code), store.position(code), store.revealed(code), store.counts(code, "x")
    assert other.execute("PRAGMA data_version").fetchone() == committed  # reads only
    clock.now += 2
    store.version(code)
    assert other.execute("PRAGMA data_version").fetchone() != committed  # renewed once
    other.close()
