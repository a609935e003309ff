"""Where a class session lives: the teacher's position, who joined, what they answered.

One interface, two stores, chosen by TINYFORMER_CLASS_STORE:
- SQLite (a file path, or unset: a file in the system's temp folder), WAL mode, so the
  class server's processes on one machine share it with nothing to install;
- Redis (`redis://host:port/db`) for a school whose app processes run on several machines.

Rules the store enforces, whatever a page or a crafted request asks:
- only the holder of the teacher key moves the class or reveals an answer (the store keeps
  the key's SHA-256, never the key);
- a class code is 6 characters of a 31-letter alphabet (about 8.9e8 codes), so trying a few
  hundred finds nothing;
- learners per class and answers per learner are bounded, a nickname is cut to its limit
  (it is shown as text, never as HTML: that is the page's job);
- a class and everything in it expires `TTL` after its last activity.

A store that cannot be reached raises StoreDown; the page then says so and goes on alone.
No Streamlit here.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import secrets
import sqlite3
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

TTL = 12 * 3600  # seconds after the last activity
TOUCH = 60  # a read renews the class's activity at most once in this many seconds
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ2345679"  # no 0/O, 1/I, 8/B lookalikes
CODE_LENGTH = 6
MAX_LEARNERS = 200
MAX_ANSWERS = 400  # per learner and class: every exercise of the lesson, several times
MAX_NICKNAME = 20
MAX_ANSWER = 64  # characters of one answer as stored
MAX_PARAMS = 4096  # characters of the teacher's position (a page's URL parameters)


class ClassError(Exception):
    """A refusal the page shows as a translated message: `key` is under "class."."""

    key = "class.error"


class ClassGone(ClassError):
    key = "class.gone"  # no such class, or it expired


class NotTeacher(ClassError):
    key = "class.not_teacher"


class ClassFull(ClassError):
    key = "class.full"


class TooManyAnswers(ClassError):
    key = "class.too_many_answers"


class StoreDown(ClassError):
    key = "class.store_down"


@dataclass(frozen=True)
class Position:
    """Where the teacher is: a stage id and its URL parameters (step, open sections,
    inputs). `version` grows with every move and every reveal (see ClassStore.version)."""

    stage: str
    params: Mapping[str, str]
    version: int


@dataclass(frozen=True)
class Answer:
    learner: str
    nickname: str
    stage: str
    exercise: str
    answer: str
    right: bool


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(code: str) -> str | None:
    """A typed or linked class code in its stored form, or None if it cannot be one."""
    code = (code or "").strip().upper()
    if len(code) == CODE_LENGTH and all(c in CODE_ALPHABET for c in code):
        return code
    return None


def _params_text(params: Mapping[str, str]) -> str:
    text = json.dumps(dict(params), ensure_ascii=False, sort_keys=True)
    if len(text) > MAX_PARAMS:
        raise ClassError("position too large")
    return text


class ClassStore(ABC):
    """The class session's state. Every method may raise StoreDown; a method given a
    code that does not exist (or expired) raises ClassGone."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock

    @abstractmethod
    def start(self) -> tuple[str, str]:
        """A new class: (its code, the teacher key)."""

    @abstractmethod
    def is_teacher(self, code: str, key: str) -> bool: ...

    @abstractmethod
    def move(self, code: str, key: str, stage: str, params: Mapping[str, str]) -> int:
        """The teacher is now at `stage` with `params`; returns the new version."""

    @abstractmethod
    def position(self, code: str) -> Position | None:
        """Where the teacher is (None: not moved yet)."""

    @abstractmethod
    def version(self, code: str) -> int:
        """A number that grows with every move and every reveal: a follower's poll reads
        this alone, and the position and the revealed answers only when it changed. A
        read: it takes no write lock and renews the class at most once per TOUCH."""

    @abstractmethod
    def counts(self, code: str, stage: str) -> tuple[int, int]:
        """(learners who joined, answers given on `stage`): the teacher's poll."""

    @abstractmethod
    def join(self, code: str, learner: str, nickname: str = "") -> None: ...

    @abstractmethod
    def learners(self, code: str) -> int: ...

    @abstractmethod
    def answer(self, code: str, learner: str, stage: str, exercise: str, answer: str,
               right: bool) -> None:
        """Record (or replace) a learner's answer to one exercise."""

    @abstractmethod
    def answers(self, code: str, stage: str | None = None) -> list[Answer]: ...

    @abstractmethod
    def reveal(self, code: str, key: str, stage: str, exercise: str) -> None: ...

    @abstractmethod
    def revealed(self, code: str) -> set[tuple[str, str]]: ...


# --- SQLite ---------------------------------------------------------------------------------
_SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, teacher TEXT NOT NULL, last REAL NOT NULL,
    stage TEXT, params TEXT, version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS learners (
    code TEXT NOT NULL, learner TEXT NOT NULL, nickname TEXT NOT NULL,
    PRIMARY KEY (code, learner));
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL, learner TEXT NOT NULL, stage TEXT NOT NULL, exercise TEXT NOT NULL,
    answer TEXT NOT NULL, right INTEGER NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (code, learner, stage, exercise));
CREATE TABLE IF NOT EXISTS revealed (
    code TEXT NOT NULL, stage TEXT NOT NULL, exercise TEXT NOT NULL,
    PRIMARY KEY (code, stage, exercise));
"""


class SQLiteStore(ClassStore):
    """One file shared by the app processes of one machine (WAL: readers never wait for
    the writer). Connections are pooled: Streamlit runs every rerun, and so every poll,
    in a new thread, and a connection per thread was opened again for each."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self.path = str(path)
        self._pool: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        db = self._connect()
        try:
            db.executescript(_SCHEMA)
        except sqlite3.Error as error:
            raise StoreDown(str(error)) from error
        finally:
            self._release(db)

    def _connect(self) -> sqlite3.Connection:
        """A connection of the pool for this caller alone; give it back with _release."""
        try:
            return self._pool.get_nowait()
        except queue.Empty:
            pass
        try:
            db = sqlite3.connect(self.path, timeout=5, isolation_level=None,
                                 check_same_thread=False)  # one thread at a time: the pool's
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as error:
            raise StoreDown(str(error)) from error
        return db

    def _release(self, db: sqlite3.Connection) -> None:
        self._pool.put(db)

    class _Tx:
        def __init__(self, store: SQLiteStore, mode: str = "IMMEDIATE") -> None:
            self.store = store
            self.db = store._connect()
            self.mode = mode  # IMMEDIATE: a write; DEFERRED: a read, no write lock

        def __enter__(self) -> sqlite3.Connection:
            try:
                self.db.execute(f"BEGIN {self.mode}")
            except sqlite3.Error as error:
                self.store._release(self.db)
                raise StoreDown(str(error)) from error
            return self.db

        def __exit__(self, kind, error, trace) -> bool:
            try:
                if kind is None:
                    self.db.execute("COMMIT")
                    return False
                self.db.execute("ROLLBACK")
            except sqlite3.Error as failed:
                if self.db.in_transaction:  # a COMMIT that failed: the pool gets it clean
                    self.db.execute("ROLLBACK")
                raise StoreDown(str(failed)) from failed
            finally:
                self.store._release(self.db)
            if isinstance(error, sqlite3.Error):
                raise StoreDown(str(error)) from error
            return False

    def _db(self) -> SQLiteStore._Tx:
        return SQLiteStore._Tx(self)

    def _reading(self) -> SQLiteStore._Tx:
        return SQLiteStore._Tx(self, "DEFERRED")

    def _seen(self, db: sqlite3.Connection, code: str) -> tuple:
        """The class row for a read; ClassGone if it does not exist or expired. Nothing
        is written: a write waits for SQLite's one write lock, held across processes,
        and a poll that took it held up every other (measured: benchmarks/README.md)."""
        row = db.execute("SELECT teacher, last, stage, params, version FROM classes "
                         "WHERE code = ?", (code,)).fetchone()
        if row is None or row[1] < self.clock() - TTL:
            raise ClassGone(code)
        return row

    def _touch(self, code: str, row: tuple) -> None:
        """Renew the class's activity after a read, at most once per TOUCH seconds."""
        now = self.clock()
        if row[1] < now - TOUCH:
            with self._db() as db:
                db.execute("UPDATE classes SET last = ? WHERE code = ?", (now, code))

    def _live(self, db: sqlite3.Connection, code: str) -> tuple:
        """The class row, refreshed; ClassGone if it does not exist or expired."""
        now = self.clock()
        row = db.execute("SELECT teacher, last, stage, params, version FROM classes "
                         "WHERE code = ?", (code,)).fetchone()
        if row is None or row[1] < now - TTL:
            if row is not None:
                self._drop(db, code)
            raise ClassGone(code)
        db.execute("UPDATE classes SET last = ? WHERE code = ?", (now, code))
        return row

    @staticmethod
    def _drop(db: sqlite3.Connection, code: str) -> None:
        for table in ("classes", "learners", "answers", "revealed"):
            db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))

    def _sweep(self, db: sqlite3.Connection) -> None:
        for (code,) in db.execute("SELECT code FROM classes WHERE last < ?",
                                  (self.clock() - TTL,)).fetchall():
            self._drop(db, code)

    def start(self) -> tuple[str, str]:
        key = secrets.token_urlsafe(16)
        with self._db() as db:
            self._sweep(db)
            while True:
                code = new_code()
                if db.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone() is None:
                    break
            db.execute("INSERT INTO classes (code, teacher, last) VALUES (?, ?, ?)",
                       (code, _digest(key), self.clock()))
        return code, key

    def is_teacher(self, code: str, key: str) -> bool:
        with self._reading() as db:
            row = self._seen(db, code)
        self._touch(code, row)
        return secrets.compare_digest(row[0], _digest(key or ""))

    def _teacher(self, db: sqlite3.Connection, code: str, key: str) -> tuple:
        row = self._live(db, code)
        if not secrets.compare_digest(row[0], _digest(key or "")):
            raise NotTeacher(code)
        return row

    def move(self, code: str, key: str, stage: str, params: Mapping[str, str]) -> int:
        text = _params_text(params)
        with self._db() as db:
            version = self._teacher(db, code, key)[4] + 1
            db.execute("UPDATE classes SET stage = ?, params = ?, version = ? WHERE code = ?",
                       (stage, text, version, code))
        return version

    def position(self, code: str) -> Position | None:
        with self._reading() as db:
            row = self._seen(db, code)
        self._touch(code, row)
        _, _, stage, params, version = row
        return None if stage is None else Position(stage, json.loads(params), version)

    def version(self, code: str) -> int:
        with self._reading() as db:
            row = self._seen(db, code)
        self._touch(code, row)
        return row[4]

    def counts(self, code: str, stage: str) -> tuple[int, int]:
        with self._reading() as db:
            row = self._seen(db, code)
            learners = self._count(db, code)
            answered = db.execute("SELECT COUNT(*) FROM answers WHERE code = ? AND stage = ?",
                                  (code, stage)).fetchone()[0]
        self._touch(code, row)
        return learners, answered

    def join(self, code: str, learner: str, nickname: str = "") -> None:
        with self._db() as db:
            self._live(db, code)
            known = db.execute("SELECT 1 FROM learners WHERE code = ? AND learner = ?",
                               (code, learner)).fetchone()
            if known is None and self._count(db, code) >= MAX_LEARNERS:
                raise ClassFull(code)
            db.execute("INSERT OR REPLACE INTO learners VALUES (?, ?, ?)",
                       (code, learner, nickname[:MAX_NICKNAME]))

    @staticmethod
    def _count(db: sqlite3.Connection, code: str) -> int:
        return db.execute("SELECT COUNT(*) FROM learners WHERE code = ?", (code,)).fetchone()[0]

    def learners(self, code: str) -> int:
        with self._reading() as db:
            row = self._seen(db, code)
            count = self._count(db, code)
        self._touch(code, row)
        return count

    def answer(self, code: str, learner: str, stage: str, exercise: str, answer: str,
               right: bool) -> None:
        with self._db() as db:
            self._live(db, code)
            if db.execute("SELECT 1 FROM learners WHERE code = ? AND learner = ?",
                          (code, learner)).fetchone() is None:
                raise ClassGone(code)  # join first
            count = db.execute("SELECT COUNT(*) FROM answers WHERE code = ? AND learner = ?",
                               (code, learner)).fetchone()[0]
            exists = db.execute(
                "SELECT 1 FROM answers WHERE code = ? AND learner = ? AND stage = ? AND "
                "exercise = ?", (code, learner, stage, exercise)).fetchone()
            if exists is None and count >= MAX_ANSWERS:
                raise TooManyAnswers(code)
            db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (code, learner, stage, exercise, answer[:MAX_ANSWER], int(right),
                        self.clock()))

    def answers(self, code: str, stage: str | None = None) -> list[Answer]:
        with self._reading() as db:
            self._seen(db, code)
            rows = db.execute(
                "SELECT a.learner, COALESCE(l.nickname, ''), a.stage, a.exercise, a.answer, "
                "a.right FROM answers a LEFT JOIN learners l ON l.code = a.code AND "
                "l.learner = a.learner WHERE a.code = ? AND (? IS NULL OR a.stage = ?) "
                "ORDER BY a.at", (code, stage, stage)).fetchall()
        return [Answer(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def reveal(self, code: str, key: str, stage: str, exercise: str) -> None:
        with self._db() as db:
            self._teacher(db, code, key)
            added = db.execute("INSERT OR IGNORE INTO revealed VALUES (?, ?, ?)",
                               (code, stage, exercise)).rowcount
            if added:  # the followers' poll sees it
                db.execute("UPDATE classes SET version = version + 1 WHERE code = ?", (code,))

    def revealed(self, code: str) -> set[tuple[str, str]]:
        with self._reading() as db:
            self._seen(db, code)
            rows = db.execute("SELECT stage, exercise FROM revealed WHERE code = ?",
                              (code,)).fetchall()
        return {(stage, exercise) for stage, exercise in rows}


# --- Redis ----------------------------------------------------------------------------------
class RedisStore(ClassStore):
    """The same class state in Redis: one hash per class, with its learners, answers and
    revealed exercises beside it; every key of a class expires TTL after its last activity
    (a call renews them, at most once per TOUCH seconds from one process). Moves and
    answers are single commands or MULTI blocks."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        import redis  # only a school's set-up needs the client library loaded

        self._errors = (redis.RedisError, OSError)
        self.redis = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2,
                                          decode_responses=True)
        self._renewed: dict[str, float] = {}  # code -> when this process last renewed it

    @staticmethod
    def _keys(code: str) -> tuple[str, str, str, str]:
        base = f"tinyformer:class:{code}"
        return base, f"{base}:learners", f"{base}:answers", f"{base}:revealed"

    def _call(self, work: Callable[..., object], *args: object, **kwargs: object) -> object:
        try:
            return work(*args, **kwargs)
        except self._errors as error:
            raise StoreDown(str(error)) from error

    def _live(self, code: str) -> dict[str, str]:
        base = self._keys(code)[0]
        row = self._call(self.redis.hgetall, base)
        if not row:
            raise ClassGone(code)
        self._renew(code)
        return row

    def _renew(self, code: str) -> None:
        now = self.clock()
        if now - self._renewed.get(code, -TTL) < TOUCH:
            return
        if len(self._renewed) > 10_000:  # a long-running process: forget old classes
            self._renewed.clear()
        self._renewed[code] = now
        pipe = self.redis.pipeline()
        for key in self._keys(code):
            pipe.expire(key, TTL)
        self._call(pipe.execute)

    def _teacher(self, code: str, key: str) -> dict[str, str]:
        row = self._live(code)
        if not secrets.compare_digest(row["teacher"], _digest(key or "")):
            raise NotTeacher(code)
        return row

    def start(self) -> tuple[str, str]:
        key = secrets.token_urlsafe(16)
        while True:
            code = new_code()
            base = self._keys(code)[0]
            created = self._call(self.redis.hsetnx, base, "teacher", _digest(key))
            if created:
                self._call(self.redis.expire, base, TTL)
                return code, key

    def is_teacher(self, code: str, key: str) -> bool:
        return secrets.compare_digest(self._live(code)["teacher"], _digest(key or ""))

    def move(self, code: str, key: str, stage: str, params: Mapping[str, str]) -> int:
        text = _params_text(params)
        self._teacher(code, key)
        base = self._keys(code)[0]
        pipe = self.redis.pipeline()  # MULTI: a follower never reads a half-made move
        pipe.hset(base, mapping={"stage": stage, "params": text})
        pipe.hincrby(base, "version", 1)
        return int(self._call(pipe.execute)[1])

    def position(self, code: str) -> Position | None:
        row = self._live(code)
        if "stage" not in row:
            return None
        return Position(row["stage"], json.loads(row["params"]), int(row["version"]))

    def version(self, code: str) -> int:
        teacher, version = self._call(self.redis.hmget, self._keys(code)[0],
                                      ["teacher", "version"])
        if teacher is None:
            raise ClassGone(code)
        self._renew(code)
        return int(version or 0)

    def counts(self, code: str, stage: str) -> tuple[int, int]:
        self._live(code)
        _, learners, answers, _ = self._keys(code)
        fields = self._call(self.redis.hkeys, answers)
        on_stage = sum(1 for field in fields if json.loads(field)[1] == stage)
        return int(self._call(self.redis.hlen, learners)), on_stage

    def join(self, code: str, learner: str, nickname: str = "") -> None:
        self._live(code)
        learners = self._keys(code)[1]
        known = self._call(self.redis.hexists, learners, learner)
        if not known and self._call(self.redis.hlen, learners) >= MAX_LEARNERS:
            raise ClassFull(code)
        self._call(self.redis.hset, learners, learner, nickname[:MAX_NICKNAME])
        self._call(self.redis.expire, learners, TTL)

    def learners(self, code: str) -> int:
        self._live(code)
        return int(self._call(self.redis.hlen, self._keys(code)[1]))

    def answer(self, code: str, learner: str, stage: str, exercise: str, answer: str,
               right: bool) -> None:
        self._live(code)
        _, learners, answers, _ = self._keys(code)
        if not self._call(self.redis.hexists, learners, learner):
            raise ClassGone(code)  # join first
        field = json.dumps([learner, stage, exercise], ensure_ascii=False)
        if not self._call(self.redis.hexists, answers, field):
            mine = self._call(self.redis.hincrby, f"{answers}:count", learner, 1)
            self._call(self.redis.expire, f"{answers}:count", TTL)
            if int(mine) > MAX_ANSWERS:
                raise TooManyAnswers(code)
        value = json.dumps([answer[:MAX_ANSWER], bool(right), self.clock()], ensure_ascii=False)
        self._call(self.redis.hset, answers, field, value)
        self._call(self.redis.expire, answers, TTL)

    def answers(self, code: str, stage: str | None = None) -> list[Answer]:
        self._live(code)
        _, learners, answers, _ = self._keys(code)
        names = self._call(self.redis.hgetall, learners)
        found = []
        for field, value in self._call(self.redis.hgetall, answers).items():
            learner, at_stage, exercise = json.loads(field)
            text, right, at = json.loads(value)
            if stage is None or at_stage == stage:
                found.append((at, Answer(learner, names.get(learner, ""), at_stage, exercise,
                                         text, bool(right))))
        return [a for _, a in sorted(found, key=lambda pair: pair[0])]

    def reveal(self, code: str, key: str, stage: str, exercise: str) -> None:
        self._teacher(code, key)
        base, _, _, revealed = self._keys(code)
        if self._call(self.redis.sadd, revealed, json.dumps([stage, exercise])):
            self._call(self.redis.hincrby, base, "version", 1)  # the followers' poll sees it
        self._call(self.redis.expire, revealed, TTL)

    def revealed(self, code: str) -> set[tuple[str, str]]:
        self._live(code)
        members = self._call(self.redis.smembers, self._keys(code)[3])
        return {tuple(json.loads(m)) for m in members}


# --- the process's store --------------------------------------------------------------------
STORE_ENV = "TINYFORMER_CLASS_STORE"
_store: ClassStore | None = None
_store_lock = threading.Lock()


def store_from(setting: str | None) -> ClassStore:
    """`redis://...` → Redis; a path → that SQLite file; nothing → a SQLite file in the
    system's temp folder, which every app process of this machine finds."""
    if setting and setting.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(setting)
    path = setting or os.path.join(tempfile.gettempdir(), "tinyformer-classes.sqlite")
    return SQLiteStore(path)


def store() -> ClassStore:
    """This process's store, made on first use from TINYFORMER_CLASS_STORE."""
    global _store
    with _store_lock:
        if _store is None:
            _store = store_from(os.environ.get(STORE_ENV))
        return _store
