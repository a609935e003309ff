"""A class session under load: one teacher leads, the followers follow, answer and poll.

Serves the app with the class server (`python -m deploy.classroom --processes 2`: two
warmed Streamlit processes behind nginx, what `python3.11 dev.py class --processes 2`
starts), on a class store of its own: a fresh SQLite file by default, `--store redis`
(a throwaway Debian redis-server on a port of 8700-8799, no persistence), or a given
`redis://` URL or SQLite path. Then it drives one class through nginx over Streamlit's
websocket protocol (deploy/stream.py), each session acting as a browser tab does:

- the teacher opens the first stage of --stages whole, presses "Start a class" in the
  sidebar and, every --move seconds, goes to the next stage (the whole page open, the
  class link's code kept);
- each follower opens the overview with the class link (`?class=CODE`): it joins, and
  the class session moves it to the teacher's stage. Once the class has started, it
  changes its page's first input about every --think seconds and answers one of the
  page's exercises about every --answer seconds (both +-50 %; an answer is two clicks:
  an option or a typed number, then, a second later, the exercise's button), and it
  waits for its page to update before its next own action, as class_load.py's learners do;
- every page polls the class store every 2 s (below), the teacher's as well (its tally).

The polls. ui/class_session.py's poll is an st.fragment with run_every=2 s. Streamlit's
server does not run such a fragment on its own: each run that draws it sends the browser
an `auto_rerun` message (the fragment's id and interval), and the frontend (Streamlit
1.67's App.handleAutoRerun) starts a timer, setInterval, that every interval sends a
rerun_script for that fragment id with is_auto_rerun set, whether or not the previous one
has finished. A whole run's new_session clears every timer (the run sends its own again),
a page change clears them, and `stop_auto_rerun` clears one. Each session here keeps the
same timers; without them the followers would never poll.

What is timed (on this client, through nginx):
- an interaction (an input change, an exercise's option, its button, a teacher's move):
  from sending it to the end of the first successful run that started after it was sent
  and that ran its section (st.fragment) or the whole page; a section's first answer
  reruns the whole page, so its button is timed to the end of that whole run;
- a poll: the same, for the poll's own fragment;
- a move reaching a follower: from the teacher's sending the move to the end of the
  follower's first successful whole run that shows the teacher's new stage;
- following's server CPU: after every follower has arrived, --idle seconds in which no one
  acts and only the polls run; the Streamlit processes' CPU in that window, less their CPU
  in a window as long before any session connected, divided by the polls answered (CPU
  per poll) and by the followers (cores per follower);
- memory: each process's resident memory every 0.25 s; --soak MINUTES reports its drift.

It prints figures only and exits 0 however slow the server was. See README.md.

    .venv/bin/python benchmarks/class_session_load.py [--followers 50] [--seconds 180]
    .venv/bin/python benchmarks/class_session_load.py --store redis
    .venv/bin/python benchmarks/class_session_load.py --soak 10 [--store redis]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from class_load import (
    Phase,
    Sampler,
    Server,
    first_visit,
    group_usage,
    machine_busy_s,
    percentile,
    plural,
    print_table,
    process_usage,
    report_drift,
    stop_group,
    wait_warm,
)
from rerun_cost import (
    FINISHED_OK,
    FRAGMENT_OK,
    ROOT,
    _widget_id,
    app_pages,
    find_knob,
    fmt,
    machine,
    select,
    whole_page_query,
)
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from deploy import nginx  # after rerun_cost, which puts the repository on sys.path
from deploy.stream import open_stream, rerun_message

STORE_ENV = "TINYFORMER_CLASS_STORE"  # serving/class_store.py reads it
PORTS = range(8700, 8800)  # this benchmark's nginx and redis-server
MAX_FOLLOWERS = 200
JITTER = 0.5  # a pause is uniform in [mean * (1 - JITTER), mean * (1 + JITTER)]
PRESS_AFTER = 1.0  # seconds between an exercise's option and its button
OPEN_TIMEOUT = 120.0
ARRIVE_TIMEOUT = 120.0  # every follower on the teacher's stage before the idle window
TICK = 0.2  # the longest a session waits for a message before checking its timers
RECONNECT_TRIES = 8
TARGET_P95_MS = 300.0
TARGET_REACH_S = 3.0
TARGET_SHARE = 0.95
EARLY = ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN
LEARNER_KINDS = ("input", "option", "button")
KIND_NAMES = {"input": "follower: change an input", "option": "follower: pick an option",
              "button": "follower: press the exercise's button",
              "move": "teacher: go to the next stage", "poll": "poll (every page, 2 s)"}


# --- The store ---------------------------------------------------------------------------


def free_port(ports: range = PORTS) -> int:
    for port in ports:
        with socket.socket() as sock, contextlib.suppress(OSError):
            sock.bind(("127.0.0.1", port))
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


@dataclass
class Store:
    setting: str  # TINYFORMER_CLASS_STORE for the app processes
    described: str
    redis_pid: int | None = None  # a redis-server this benchmark started


@contextlib.contextmanager
def class_store(choice: str, folder: Path) -> Iterator[Store]:
    """The store the class server uses: a fresh SQLite file (default), a redis-server
    started here (`redis`, no persistence, loopback only), or the URL or path given."""
    if choice == "sqlite":
        path = folder / "classes.sqlite"
        yield Store(str(path), f"SQLite, a fresh file ({path}, WAL)")
        return
    if choice != "redis":
        yield Store(choice, choice)
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is missing (Debian: apt-get install redis-server)")
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", str(folder), "--daemonize", "no",
               "--logfile", str(folder / "redis.log")]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_redis(port, process)
        yield Store(f"redis://127.0.0.1:{port}/0", f"Redis, redis-server on 127.0.0.1:{port} "
                    "(started here, no persistence)", process.pid)
    finally:
        stop_group(process, grace=5.0)


def wait_redis(port: int, process: subprocess.Popen, timeout: float = 15.0) -> None:
    import redis

    client = redis.Redis(port=port, socket_timeout=1, socket_connect_timeout=1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("redis-server exited at its start")
        with contextlib.suppress(redis.RedisError, OSError):
            if client.ping():
                return
        time.sleep(0.1)
    raise RuntimeError(f"redis-server did not answer on port {port}")


# --- The class server ----------------------------------------------------------------------


@contextlib.contextmanager
def class_server(processes: int, store: Store, folder: Path) -> Iterator[Server]:
    """`python -m deploy.classroom --processes N` on a port of 8700-8799, in its own
    process group, its processes given the store through TINYFORMER_CLASS_STORE."""
    run_dir, log = folder / "run", folder / "class.log"
    port = free_port()
    command = [sys.executable, "-m", "deploy.classroom", "--processes", str(processes),
               "--port", str(port), "--address", "127.0.0.1", "--show-upstream",
               "--run-dir", str(run_dir), "--no-restart"]
    env = {**os.environ, STORE_ENV: store.setting}
    with open(log, "wb") as handle:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    try:
        wait_warm(process, port, run_dir, processes, log)
        yield Server(port, process.pid, True, run_dir)
    finally:
        stop_group(process)


# --- What the sessions share -----------------------------------------------------------------


@dataclass
class Done:
    """One timed interaction or poll."""

    kind: str
    at: float  # sent, seconds since the class started (negative before)
    ms: float
    process: str
    early: bool = False  # a run that took it was stopped for a whole run, which ended it


@dataclass
class Failed:
    kind: str
    at: float
    what: str
    process: str


@dataclass
class Move:
    stage: str
    sent: float  # monotonic
    arrived: dict[str, float] = field(default_factory=dict)  # follower -> seconds


@dataclass
class Bench:
    """The class: its code, its phase, and everything the sessions measured."""

    args: argparse.Namespace
    port: int
    pages: dict[str, str]  # stage id -> url name
    stages: list[str]  # the teacher's walk
    code: str = ""
    started: threading.Event = field(default_factory=threading.Event)  # the class exists
    acting: threading.Event = field(default_factory=threading.Event)  # the class phase
    stop: threading.Event = field(default_factory=threading.Event)
    start: float = 0.0  # monotonic, when the class phase began
    deadline: float = float("inf")
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: list[Done] = field(default_factory=list)
    failed: list[Failed] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    joined: dict[str, float] = field(default_factory=dict)  # follower -> seconds to arrive
    exceptions: int = 0  # runs that put an exception on a page

    def since(self, moment: float) -> float:
        """Seconds since the class began acting (-1: before)."""
        return moment - self.start if self.start else -1.0

    def acts(self) -> bool:
        """The class phase is on: learners and the teacher act."""
        return self.acting.is_set() and time.monotonic() < self.deadline

    def keep(self, item: Done | Failed) -> None:
        with self.lock:
            (self.done if isinstance(item, Done) else self.failed).append(item)

    def stage_of(self, url_name: str) -> str | None:
        return next((stage for stage, name in self.pages.items() if name == url_name), None)


# --- One browser tab -------------------------------------------------------------------------


@dataclass
class Run:
    started: float
    fragments: tuple[str, ...]  # () for a whole run
    stage: str | None = None


@dataclass
class Pending:
    kind: str
    sent: float
    fragment: str  # "": a whole run
    then: Callable[[], None] | None = None  # what the learner does once it is done
    early: bool = False  # a run that took it was stopped for a whole run
    stage: str | None = None  # the page it was made on
    runs: int = 0  # runs of other sections that started after it was sent


@dataclass
class Widget:
    element: object
    fragment: str
    path: tuple[int, ...]


class Broken(Exception):
    """The connection is gone: reconnect as a browser does."""


class Tab:
    """A websocket session that keeps what a browser tab keeps: the page's widgets and
    the section each belongs to, the URL's query string, the current page, and the
    frontend's auto-rerun timers."""

    def __init__(self, bench: Bench, name: str, rng: random.Random) -> None:
        self.bench = bench
        self.name = name
        self.rng = rng
        self.socket = None
        self.process = ""
        self.cookie = ""
        self.query = ""
        self.page_hash = ""  # the page shown, sent with every rerun as the browser does
        self.stage: str | None = None  # the page the last whole run showed
        self.widgets: dict[str, Widget] = {}
        self.drawers: dict[str, str] = {}  # the sidebar's drawers (ui/drawer.py): key -> id
        # The values this tab has given the page's widgets: a browser sends every
        # widget's value with every rerun (the server keeps the newest request's values
        # when it merges two requests), polls included.
        self.values: dict[str, WidgetState] = {}
        self.timers: dict[str, list[float]] = {}  # fragment -> [interval, next due]
        self.runs: dict[str, Run] = {}
        self.current: Run | None = None
        self.pending: list[Pending] = []
        self.ended_early: tuple[Run, float] | None = None  # (run, when), see early_end
        self.actions: list[tuple[float, Callable[[], None]]] = []

    # --- the websocket ---
    def send(self, *, page_name: str | None = None, widgets: list[WidgetState] | None = None,
             fragment: str = "", auto: bool = False, query: str | None = None) -> None:
        states = {} if page_name is not None else dict(self.values)  # a new page: none
        for state in widgets or ():
            states[state.id] = state
            if state.WhichOneof("value") != "trigger_value":  # a click is sent once
                self.values[state.id] = state
        message = rerun_message("127.0.0.1", self.bench.port, page_name=page_name,
                                query=self.query if query is None else query,
                                page_script_hash="" if page_name is not None else self.page_hash,
                                widgets=list(states.values()), fragment_id=fragment)
        message.rerun_script.is_auto_rerun = auto
        try:
            self.socket.send(message.SerializeToString())
        except Exception as error:
            raise Broken(str(error)) from error

    def interact(self, kind: str, fragment: str, then: Callable[[], None] | None = None,
                 **send: object) -> None:
        self.pending.append(Pending(kind, time.monotonic(), fragment, then, stage=self.stage))
        self.send(fragment=fragment, **send)

    def loop(self, until: Callable[[], bool]) -> None:
        """Read messages and fire timers until `until()` or the end of the run."""
        while not until() and not self.bench.stop.is_set():
            now = time.monotonic()
            if now >= self.bench.deadline + self.bench.args.timeout:
                return
            due = min([TICK + now, *(t[1] for t in self.timers.values()),
                       *(at for at, _ in self.actions)])
            try:
                raw = self.socket.recv(timeout=max(0.0, due - now))
            except TimeoutError:
                raw = None
            except Exception as error:  # closed, reset
                raise Broken(type(error).__name__) from error
            if raw is not None:
                message = ForwardMsg()
                message.ParseFromString(raw)
                self.handle(message)
            self.fire()

    def fire(self) -> None:
        now = time.monotonic()
        if self.ended_early is not None and now - self.ended_early[1] > 2.0:
            self.early_end(whole_follows=False)  # no run followed: it was complete
        for fragment, timer in list(self.timers.items()):
            if timer[1] <= now:  # setInterval: whether or not the last one has finished
                timer[1] += timer[0]
                self.interact("poll", fragment, auto=True)
        due = [action for action in self.actions if action[0] <= now]
        self.actions = [action for action in self.actions if action[0] > now]
        for _, action in due:
            action()
        for item in [p for p in self.pending if now - p.sent > self.bench.args.timeout]:
            self.pending.remove(item)
            moved = "the page changed since" if item.stage != self.stage else "same page"
            others = "other runs meanwhile" if item.runs else "no other run meanwhile"
            self.bench.keep(Failed(item.kind, self.bench.since(item.sent),
                                   f"timed out ({moved}, {others})",
                                   self.process))

    # --- what the server says ---
    def handle(self, message: ForwardMsg) -> None:
        kind = message.WhichOneof("type")
        if kind == "new_session":
            run = message.metadata.run
            if self.ended_early is not None:
                self.early_end(whole_follows=not run.fragment_ids)
            self.current = Run(time.monotonic(), tuple(run.fragment_ids))
            self.runs[run.script_run_id] = self.current
            self.page_hash = message.new_session.page_script_hash or self.page_hash
            if not run.fragment_ids:  # a whole run: the page is drawn anew
                self.timers.clear()
                self.widgets = {}
        elif kind == "navigation":
            nav = message.navigation
            self.page_hash = nav.page_script_hash or self.page_hash
            url = next((p.url_pathname for p in nav.app_pages
                        if p.page_script_hash == nav.page_script_hash), None)
            if self.current is not None and url is not None:
                self.current.stage = self.bench.stage_of(url)
        elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
            element = message.delta.new_element
            if element.WhichOneof("type") == "exception":
                with self.bench.lock:
                    self.bench.exceptions += 1
            if widget := _widget_id(element):
                self.widgets[widget] = Widget(element, message.delta.fragment_id,
                                              tuple(message.metadata.delta_path))
        elif kind == "delta" and message.delta.WhichOneof("type") == "add_block":
            block = message.delta.add_block
            if block.WhichOneof("type") == "expandable" and block.expandable.id:
                self.drawers[user_key(block.expandable.id)] = block.expandable.id
        elif kind == "page_info_changed":
            self.query = message.page_info_changed.query_string
        elif kind == "auto_rerun":
            fragment, interval = message.auto_rerun.fragment_id, message.auto_rerun.interval
            if fragment and self.timers.get(fragment, [None])[0] != interval:
                self.timers[fragment] = [interval, time.monotonic() + interval]
        elif kind == "stop_auto_rerun":
            for fragment in message.stop_auto_rerun.fragment_ids:
                self.timers.pop(fragment, None)
        elif kind == "script_finished":
            self.finished(message)

    def finished(self, message: ForwardMsg) -> None:
        run = self.runs.pop(message.metadata.run.script_run_id, None)
        status = message.script_finished
        if run is None:
            return
        if status == EARLY:  # see early_end: known once the next run starts
            self.ended_early = (run, time.monotonic())
            return
        self.complete(run, status in (FINISHED_OK, FRAGMENT_OK), time.monotonic(), status)

    def early_end(self, whole_follows: bool) -> None:
        """A run reported FINISHED_EARLY_FOR_RERUN, and the next run starts. Streamlit
        reports that for a run stopped by st.rerun or st.switch_page, and also for a
        run that ended well but whose messages were still queued when the next run
        started (ForwardMsgQueue rewrites its script_finished): its deltas are sent all
        the same. A whole run next redraws the page, so what the early run took waits
        for it; a section's run next means the early run was complete."""
        run, at = self.ended_early
        self.ended_early = None
        if whole_follows:
            for item in self.pending:
                if item.sent < run.started:
                    item.early = True
            return
        self.complete(run, True, at, EARLY)

    def complete(self, run: Run, ok: bool, now: float, status: int) -> None:
        took = [p for p in self.pending if p.sent < run.started
                and (not run.fragments or p.fragment in run.fragments)]
        for item in self.pending:
            if item.sent < run.started and item not in took:
                item.runs += 1
        if not run.fragments and ok:
            self.stage = run.stage or self.stage
            # The browser forgets the values of widgets no longer on the page.
            self.values = {k: v for k, v in self.values.items() if k in self.widgets}
        for item in took:
            self.pending.remove(item)
            at = self.bench.since(item.sent)
            if ok:
                self.bench.keep(Done(item.kind, at, (now - item.sent) * 1000, self.process,
                                     item.early))
                if item.then is not None:
                    item.then()
            else:
                self.bench.keep(Failed(item.kind, at, f"status {status}", self.process))
        if not run.fragments and ok:
            self.whole_run_done(now)

    def whole_run_done(self, now: float) -> None:
        """A whole run ended well (a page drawn): the roles act on it."""

    def widget(self, key: str) -> tuple[str, Widget] | None:
        """The widget whose id or key is `key`."""
        return next(((wid, w) for wid, w in self.widgets.items()
                     if key in (wid, user_key(wid))), None)

    def mine(self) -> bool:
        """An own action (not a poll) is waiting for its run."""
        return any(p.kind != "poll" for p in self.pending)


# --- The teacher ------------------------------------------------------------------------------


class Teacher(Tab):
    def run(self) -> None:
        try:
            self.cookie = first_visit(self.bench.port)
            with open_stream("127.0.0.1", self.bench.port, OPEN_TIMEOUT,
                             {"Cookie": self.cookie}) as self.socket:
                self.process = upstream(self.socket)
                first = self.bench.stages[0]
                self.query = "" if self.bench.args.folded else whole_page_query(first)
                self.interact("open", "", page_name=self.bench.pages[first])
                self.loop(lambda: self.stage == first and not self.mine())
                # The class's drawer opened first: closed, it draws no button (ui/drawer.py)
                box = self.drawers.get("_class_box")
                if box is None:
                    raise RuntimeError("no class drawer in the sidebar")
                self.interact("drawer", "", widgets=[WidgetState(id=box, bool_value=True)])
                self.loop(lambda: not self.mine())
                key = self.widget("_class_start")
                if key is None:
                    raise RuntimeError("no 'Start a class' button in the sidebar")
                self.interact("start", key[1].fragment,
                              widgets=[WidgetState(id=key[0], trigger_value=True)])
                self.loop(lambda: "class=" in self.query and not self.mine())
                self.bench.code = dict(parse_qsl(self.query))["class"]
                self.bench.started.set()
                self.loop(lambda: self.bench.acting.is_set())
                self.actions.append((self.bench.start + self.bench.args.move, self.move))
                self.loop(lambda: False)
        except Exception as error:
            self.bench.keep(Failed("teacher", 0.0, f"{type(error).__name__}: {error}",
                                   self.process))
            self.bench.started.set()  # the followers stop waiting

    def move(self) -> None:
        """The next stage, keeping the class code (the frame's links carry it): whole,
        or with --folded its first part only, as the footer's link opens it."""
        index = (len(self.bench.moves) + 1) % len(self.bench.stages)
        stage = self.bench.stages[index]
        kept = [(k, v) for k, v in parse_qsl(self.query) if "." not in k]
        rest = [] if self.bench.args.folded else parse_qsl(whole_page_query(stage))
        query = urlencode([*kept, *rest])
        with self.bench.lock:
            self.bench.moves.append(Move(stage, time.monotonic()))
        self.query = query
        self.interact("move", "", page_name=self.bench.pages[stage])
        at = self.bench.start + self.bench.args.move * (len(self.bench.moves) + 1)
        if at < self.bench.deadline:
            self.actions.append((at, self.move))


# --- A follower --------------------------------------------------------------------------------


class Follower(Tab):
    def __init__(self, bench: Bench, name: str, rng: random.Random) -> None:
        super().__init__(bench, name, rng)
        self.knob = None
        self.knob_stage: str | None = None
        self.flip = 0
        self.opened = 0.0
        self.arrived = threading.Event()
        self.scheduled = False
        self.problem = ""

    def run(self) -> None:
        self.bench.started.wait()
        if not self.bench.code:
            return
        tries = 0
        while not self.bench.stop.is_set() and time.monotonic() < self.bench.deadline:
            try:
                self.session()
                return
            except Broken as error:
                self.lost(str(error))
                tries += 1
                if tries > RECONNECT_TRIES:
                    self.problem = "gave up reconnecting"
                    return
                time.sleep(0.5 if tries == 1 else 1.0)
            except Exception as error:
                self.problem = f"{type(error).__name__}: {error}"
                self.arrived.set()
                return
        self.arrived.set()

    def lost(self, what: str) -> None:
        for item in self.pending:
            if item.kind != "poll":
                self.bench.keep(Failed(item.kind, self.bench.since(item.sent),
                                       f"connection lost ({what})", self.process))
        self.pending.clear()
        self.timers.clear()
        self.actions.clear()
        self.scheduled = False

    def session(self) -> None:
        self.cookie = self.cookie or first_visit(self.bench.port)
        with open_stream("127.0.0.1", self.bench.port, OPEN_TIMEOUT,
                         {"Cookie": self.cookie}) as self.socket:
            self.process = upstream(self.socket)
            if not self.opened:  # the class link: the overview with the class code
                self.opened = time.monotonic()
                self.query = f"class={self.bench.code}"
                self.interact("open", "", page_name="")
            else:  # a reconnect: the page of the URL the browser shows
                self.interact("open", "", page_name=self.bench.pages.get(self.stage or "", ""))
            self.loop(lambda: False)

    def fire(self) -> None:
        if not self.scheduled and self.bench.acts():  # the class begins: act
            self.scheduled = True
            self.schedule()
        super().fire()

    def whole_run_done(self, now: float) -> None:
        moves = self.bench.moves
        target = moves[-1].stage if moves else self.bench.stages[0]
        if self.stage == target:
            if not moves and self.name not in self.bench.joined:
                self.bench.joined[self.name] = now - self.opened
                self.arrived.set()
            elif moves and self.name not in moves[-1].arrived:
                moves[-1].arrived[self.name] = now - moves[-1].sent
        if self.stage != self.knob_stage:  # a new page: its first input
            self.knob_stage = self.stage
            self.knob = find_knob([(w.path, w.element) for wid, w in self.widgets.items()
                                   if ".ex." not in wid])

    def schedule(self) -> None:
        """The first change anywhere in the first pause, so the class does not act in
        step; --think 0 or --answer 0: never."""
        think, answer = self.bench.args.think, self.bench.args.answer
        now = time.monotonic()
        if think:
            self.actions.append((now + self.rng.uniform(0, think), self.change))
        if answer:
            self.actions.append((now + self.rng.uniform(0, answer), self.answer))

    def later(self, mean: float, action: Callable[[], None]) -> None:
        at = time.monotonic() + mean * self.rng.uniform(1 - JITTER, 1 + JITTER)
        if at < self.bench.deadline:
            self.actions.append((at, action))

    def busy(self, action: Callable[[], None]) -> bool:
        """The learner waits for its page before acting again: retry a little later."""
        if self.mine():
            self.actions.append((time.monotonic() + 0.05, action))
            return True
        return False

    def change(self) -> None:
        if self.busy(self.change):
            return
        knob = self.knob
        found = self.widget(knob.widget_id) if knob is not None and knob.widget_id else None
        if knob is not None and found is not None:
            self.flip += 1
            self.interact("input", found[1].fragment,
                          widgets=[knob.state(knob.values[self.flip % 2])])
        self.later(self.bench.args.think, self.change)

    def answer(self) -> None:
        if self.busy(self.answer):
            return
        exercises = self.exercises()
        if exercises:
            wid, widget, button = self.rng.choice(exercises)
            element = widget.element
            if element.WhichOneof("type") == "radio":
                options = list(element.radio.options)
                state = WidgetState(id=wid, string_value=self.rng.choice(options))
            else:
                state = WidgetState(id=wid, double_value=round(self.rng.uniform(0, 1), 3))
            self.interact("option", widget.fragment, widgets=[state],
                          then=lambda: self.actions.append(
                              (time.monotonic() + PRESS_AFTER, lambda: self.press(button))))
        self.later(self.bench.args.answer, self.answer)

    def press(self, button: str) -> None:
        if self.busy(lambda: self.press(button)):
            return
        found = self.widget(button)
        if found is not None:
            self.interact("button", found[1].fragment,
                          widgets=[WidgetState(id=found[0], trigger_value=True)])

    def exercises(self) -> list[tuple[str, Widget, str]]:
        """(widget id, widget, its button's id) of every exercise on the page: a choice
        (radio '<key>.choice', button '<key>.reveal') or a number ('<key>.value',
        button '<key>.check')."""
        found = []
        keys = {user_key(wid) for wid in self.widgets}
        for wid, widget in self.widgets.items():
            key = user_key(wid)
            for own, press in ((".choice", ".reveal"), (".value", ".check")):
                if ".ex." in key and key.endswith(own):
                    button = key[: -len(own)] + press
                    if button in keys:
                        found.append((wid, widget, button))
        return found


def user_key(widget_id: str) -> str:
    """The key a page gave a widget: Streamlit's ids read '$$ID-<hash>-<key>'."""
    parts = widget_id.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "$$ID" else ""


def upstream(connection: object) -> str:
    """The process that answered (nginx's header names every process it tried)."""
    tried = connection.response.headers.get(nginx.UPSTREAM_HEADER, "?")
    return tried.split(",")[-1].strip()


# --- The run -----------------------------------------------------------------------------------


def cpu_of(pids: list[int]) -> float:
    return sum(process_usage(pid).cpu_s for pid in pids)


def quiet_cpu(server: Server, seconds: float) -> float:
    """The Streamlit processes' CPU seconds over `seconds` with no session at all."""
    pids = list(server.processes().values())
    before = cpu_of(pids)
    time.sleep(seconds)
    return cpu_of(pids) - before


@dataclass
class Idle:
    seconds: float
    cpu_s: float
    quiet_cpu_s: float
    polls: int
    followers: int
    machine_cores: float | None


def measure_idle(bench: Bench, server: Server, seconds: float, quiet: float,
                 followers: int) -> Idle:
    pids = list(server.processes().values())
    polls = lambda: sum(1 for d in bench.done if d.kind == "poll")  # noqa: E731
    before, counted, busy, began = cpu_of(pids), polls(), machine_busy_s(), time.monotonic()
    time.sleep(seconds)
    spent = time.monotonic() - began
    machine_cores = (machine_busy_s() - busy) / spent
    return Idle(spent, cpu_of(pids) - before, quiet * spent / seconds, polls() - counted,
                followers, machine_cores)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    print(machine())
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    pages = {stage: url for stage, _path, url in app_pages()}
    stages = [stage for stage, _path, _url in select(app_pages(), args.stages)
              if stage != "home"] if args.stages else [s for s in pages if s != "home"]
    if not stages:
        print("no stage for the teacher")
        return 0
    phase = Phase()
    try:
        with tempfile.TemporaryDirectory(prefix="class-session-load-") as folder, \
                class_store(args.store, Path(folder)) as store, \
                class_server(args.processes, store, Path(folder)) as server:
            print(describe(args, store, stages), flush=True)
            return run(args, server, store, pages, stages, phase)
    except KeyboardInterrupt:
        print("\ninterrupted; server stopped")
        return 130


def run(args: argparse.Namespace, server: Server, store: Store, pages: dict[str, str],
        stages: list[str], phase: Phase) -> int:
    bench = Bench(args, server.port, pages, stages)
    warm_up(bench)
    quiet = quiet_cpu(server, args.idle)
    sampler = Sampler(server, phase)
    sampler.start()
    teacher = Teacher(bench, "teacher", random.Random(0))
    followers = [Follower(bench, f"follower {i}", random.Random(i + 1))
                 for i in range(args.followers)]
    threads = [threading.Thread(target=tab.run, daemon=True) for tab in [teacher, *followers]]
    try:
        threads[0].start()
        if not bench.started.wait(OPEN_TIMEOUT) or not bench.code:
            print("the teacher could not start a class:",
                  "; ".join(f.what for f in bench.failed) or "timed out")
            return 0
        print(f"class {bench.code} started by the teacher; {args.followers} followers open "
              "the class link at once", flush=True)
        opening = time.monotonic()
        for thread in threads[1:]:
            thread.start()
        deadline = opening + ARRIVE_TIMEOUT
        for follower in followers:
            follower.arrived.wait(max(0.0, deadline - time.monotonic()))
        arrived_s = time.monotonic() - opening
        print(f"  {len(bench.joined)} of {args.followers} on the teacher's stage after "
              f"{arrived_s:.1f} s; idle following for {args.idle:g} s", flush=True)
        idle = measure_idle(bench, server, args.idle, quiet, len(bench.joined))
        redis_before = process_usage(store.redis_pid).cpu_s if store.redis_pid else 0.0
        at_start, client_start, busy_start = group_usage(server.pgid), _own_cpu(), \
            machine_busy_s()
        bench.start = phase.start = time.monotonic()
        bench.deadline = bench.start + args.seconds
        bench.acting.set()  # the class begins: every follower starts acting
        progress(bench)
        seconds = time.monotonic() - bench.start
        after, client = group_usage(server.pgid), _own_cpu() - client_start
        machine_cores = (machine_busy_s() - busy_start) / seconds
        redis_cpu = (process_usage(store.redis_pid).cpu_s - redis_before
                     if store.redis_pid else None)
        time.sleep(min(args.timeout, 5.0))  # the last interactions finish
        bench.stop.set()
        for thread in threads:
            thread.join(5.0)
        sampler.stop()
    finally:
        bench.stop.set()
    report(bench, followers, idle, arrived_s, seconds, sampler)
    report_processes(bench, sampler, seconds)
    report_timeline(bench, sampler, seconds, args.every)
    if args.soak or args.seconds >= 300:
        report_drift(sampler.series, seconds)
    print(f"\nserver CPU while the class acted: {after.cpu_s - at_start.cpu_s:.1f} s in "
          f"{seconds:.1f} s = {(after.cpu_s - at_start.cpu_s) / seconds:.2f} cores busy of "
          f"{len(os.sched_getaffinity(0))} (nginx and the supervisor included)")
    if redis_cpu is not None:
        print(f"redis-server's CPU in that time: {redis_cpu:.2f} s = "
              f"{redis_cpu / seconds:.3f} cores; {redis_memory(store)}")
    others = max(0.0, machine_cores - (after.cpu_s - at_start.cpu_s + client) / seconds
                 - (redis_cpu or 0.0) / seconds)
    print(f"this benchmark's own CPU (client, same machine): {client:.1f} s = "
          f"{client / seconds:.2f} cores; the rest of the machine: {others:.2f} cores busy"
          + (" (a shared machine: these latencies are not this server's alone)"
             if others > 0.25 else ""))
    verdict(bench, seconds)
    return 0


def redis_memory(store: Store) -> str:
    """What the class left in the redis-server this benchmark started."""
    import redis

    try:
        client = redis.Redis.from_url(store.setting, socket_timeout=2)
        keys = sum(1 for _ in client.scan_iter("tinyformer:class:*"))
        used = client.info("memory")["used_memory"] / 2**20
        empty = client.info("memory").get("used_memory_startup", 0) / 2**20
    except (redis.RedisError, OSError) as error:
        return f"its memory could not be read ({error})"
    return (f"it holds {keys} tinyformer:class:* keys, used_memory {used:.2f} MiB "
            f"({empty:.2f} MiB when empty)")


def warm_up(bench: Bench) -> None:
    """One session opens every stage of the walk once (imports, cached models), as the
    teacher checking the lesson before class would; not measured."""
    began = time.monotonic()
    walk = bench.stages[: int(bench.args.seconds // bench.args.move) + 1]
    for stage in dict.fromkeys(walk):
        tab = Tab(bench, "warm-up", random.Random(0))
        with open_stream("127.0.0.1", bench.port, OPEN_TIMEOUT,
                         {"Cookie": first_visit(bench.port)}) as tab.socket:
            tab.query = whole_page_query(stage)
            tab.interact("open", "", page_name=bench.pages[stage])
            tab.loop(lambda t=tab: not t.mine())
    bench.done.clear()
    print(f"warm-up: one session opened each stage of the walk once "
          f"({len(set(walk))}), {time.monotonic() - began:.1f} s", flush=True)


def progress(bench: Bench) -> None:
    next_line = bench.start + 30.0
    while time.monotonic() < bench.deadline and not bench.stop.is_set():
        time.sleep(min(0.5, max(0.0, bench.deadline - time.monotonic())))
        if time.monotonic() >= next_line:
            learner = [d for d in bench.done if d.kind in LEARNER_KINDS]
            print(f"  {next_line - bench.start:.0f} s: {len(learner)} interactions, "
                  f"{len(bench.failed)} failed, {len(bench.moves)} moves", flush=True)
            next_line += 30.0


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


# --- Report ------------------------------------------------------------------------------------


def latency_row(name: str, times: list[float], failed: int) -> tuple[str, ...]:
    return (name, str(len(times)), str(failed),
            fmt(statistics.median(times) if times else None), fmt(percentile(times, 0.95)),
            fmt(percentile(times, 0.99)), fmt(max(times, default=None)))


def reach(move: Move, followers: int, share: float = TARGET_SHARE) -> float | None:
    """Seconds until `share` of the followers had arrived (None: never)."""
    needed = max(1, -(-int(share * followers * 1000) // 1000))
    times = sorted(move.arrived.values())
    return times[needed - 1] if len(times) >= needed else None


def cpu_between(sampler: Sampler, start: float, end: float) -> float | None:
    """The Streamlit processes' CPU seconds between two moments (seconds since the class
    began), from the samples nearest them."""
    total = 0.0
    for samples in sampler.series.values():
        inside = [s for s in samples if start <= s.at <= end]
        if len(inside) < 2:
            return None
        total += inside[-1].cpu_s - inside[0].cpu_s
    return total


def report(bench: Bench, followers: list[Follower], idle: Idle, arrived_s: float,
           seconds: float, sampler: Sampler) -> None:
    joins = sorted(bench.joined.values())
    print(f"\njoining: {len(joins)} of {len(followers)} followers opened the class link at "
          f"once and reached the teacher's stage in {arrived_s:.1f} s; per follower median "
          f"{fmt(statistics.median(joins) if joins else None)} s, max "
          f"{fmt(max(joins, default=None))} s")
    per = idle.cpu_s - idle.quiet_cpu_s
    print(f"\nfollowing, idle ({idle.seconds:.1f} s, only the polls; {idle.followers} "
          f"followers and the teacher): {idle.polls} polls answered "
          f"({idle.polls / idle.seconds:.1f} a second); server CPU {idle.cpu_s:.2f} s, "
          f"{idle.quiet_cpu_s:.2f} s with no session; so "
          f"{(per / idle.polls * 1000) if idle.polls else float('nan'):.1f} ms per poll, "
          f"{per / idle.seconds / max(1, idle.followers + 1):.4f} cores per follower "
          f"({per / idle.seconds:.2f} cores for the class)"
          + (f"; the machine was {idle.machine_cores:.2f} cores busy"
             if idle.machine_cores is not None else ""))
    print(f"\nthe class acted for {seconds:.1f} s ({plural(len(bench.moves), 'move')} of the "
          "teacher); interactions, timed on this client through nginx:")
    in_class = [d for d in bench.done if 0 <= d.at < seconds]
    failed = [f for f in bench.failed if 0 <= f.at < seconds or f.kind == "teacher"]
    rows = [latency_row(KIND_NAMES[kind], [d.ms for d in in_class if d.kind == kind],
                        sum(1 for f in failed if f.kind == kind))
            for kind in (*LEARNER_KINDS, "move", "poll")]
    learner = [d.ms for d in in_class if d.kind in LEARNER_KINDS]
    rows.append(latency_row("an interaction (the followers' and the teacher's moves)",
                            learner + [d.ms for d in in_class if d.kind == "move"],
                            sum(1 for f in failed if f.kind != "poll")))
    print_table(("kind", "count", "fail", "median ms", "p95 ms", "p99 ms", "max ms"), rows)
    print(f"runs that put an exception on a page: {bench.exceptions}")
    slow = [d for d in in_class if d.kind != "poll" and d.ms > 1000]
    if slow:
        early = [d for d in slow if d.early]
        longest = sorted(early, key=lambda d: -d.ms)[:8]
        print(f"interactions over 1 s: {len(slow)}, of which {len(early)} ended with a whole "
              "run that stopped their own (a first answer's st.rerun, the poll's "
              "st.switch_page)" + (": " + ", ".join(
                  f"{d.kind} {d.ms / 1000:.1f} s" for d in longest) if longest else ""))
    if failed:
        kinds: dict[str, int] = {}
        for item in failed:
            kinds[f"{item.kind}: {item.what}"] = kinds.get(f"{item.kind}: {item.what}", 0) + 1
        print("failures: " + "; ".join(f"{what} x{n}" for what, n in sorted(kinds.items())))
    problems = [f"{f.name}: {f.problem}" for f in followers if f.problem]
    if problems:
        print("problems: " + "; ".join(problems[:10]))
    print(f"\nthe teacher's moves reaching the followers (seconds from the teacher's request "
          f"to the follower's page drawn on the new stage; {len(followers)} followers):")
    rows = []
    for number, move in enumerate(bench.moves):
        times = sorted(move.arrived.values())
        within = sum(1 for t in times if t <= TARGET_REACH_S)
        begin = bench.since(move.sent)
        cpu = cpu_between(sampler, begin, begin + max(times, default=0.0))
        rows.append((str(number), move.stage, f"{len(times)}",
                     fmt(statistics.median(times) if times else None),
                     fmt(reach(move, len(followers))), fmt(max(times, default=None)),
                     f"{within}", "-" if cpu is None else f"{cpu:.1f}"))
    print_table(("move", "stage", "arrived", "median s", "95 % s", "max s",
                 f"<= {TARGET_REACH_S:g} s", "server CPU s until the last"), rows, total=False)


def report_processes(bench: Bench, sampler: Sampler, seconds: float) -> None:
    print("\nper process (sessions by the process that answered their websocket):")
    rows = []
    for name in sorted(sampler.series):
        samples = sampler.series[name]
        during = [s for s in samples if 0 <= s.at <= seconds]
        cores = ((during[-1].cpu_s - during[0].cpu_s) / (during[-1].at - during[0].at)
                 if len(during) > 1 and during[-1].at > during[0].at else None)
        times = [d.ms for d in bench.done if d.process == name and 0 <= d.at < seconds
                 and d.kind != "poll"]
        rss = [s.rss_mib for s in samples]
        rows.append((name, str(len(times)), fmt(statistics.median(times) if times else None),
                     fmt(percentile(times, 0.95)), "-" if cores is None else f"{cores:.2f}",
                     f"{rss[0]:.0f}", f"{max(rss):.0f}", f"{rss[-1]:.0f}"))
    print_table(("process", "interactions", "median ms", "p95 ms", "cores busy",
                 "RSS first MiB", "peak", "last"), rows, total=False)


def report_timeline(bench: Bench, sampler: Sampler, seconds: float, every: float) -> None:
    names = sorted(sampler.series)
    print(f"\nover time (windows of {every:g} s; cores busy: the Streamlit processes, and "
          "the rest of the machine with this client; RSS MiB of each process at the end):")
    rows, start = [], 0.0
    while start < seconds - 1e-9:
        end = min(seconds, start + every)
        times = [d.ms for d in bench.done if start <= d.at < end and d.kind != "poll"]
        polls = [d.ms for d in bench.done if start <= d.at < end and d.kind == "poll"]
        failed = sum(1 for f in bench.failed if start <= f.at < end)
        server = 0.0
        for name in names:
            points = [(s.at, s.cpu_s) for s in sampler.series[name] if start <= s.at <= end]
            if len(points) > 1 and points[-1][0] > points[0][0]:
                server += (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])
        machine_points = [(at, v) for at, v in sampler.machine if start <= at <= end]
        machine_cores = ((machine_points[-1][1] - machine_points[0][1])
                         / (machine_points[-1][0] - machine_points[0][0])
                         if len(machine_points) > 1 else None)
        memory = []
        for name in names:
            inside = [s.rss_mib for s in sampler.series[name] if s.at < end]
            memory.append(f"{inside[-1]:.0f}" if inside else "-")
        rows.append((f"{start:.0f}-{end:.0f}", str(len(times)), str(failed),
                     fmt(statistics.median(times) if times else None),
                     fmt(percentile(times, 0.95)), str(len(polls)),
                     fmt(percentile(polls, 0.95)), f"{server:.2f}",
                     "-" if machine_cores is None else f"{max(0.0, machine_cores - server):.2f}",
                     *memory))
        start = end
    print_table(("seconds", "interactions", "fail", "median ms", "p95 ms", "polls",
                 "poll p95", "server", "others", *names), rows, total=False)


def verdict(bench: Bench, seconds: float) -> None:
    in_class = [d for d in bench.done if 0 <= d.at < seconds and d.kind != "poll"]
    p95 = percentile([d.ms for d in in_class], 0.95)
    errors = sum(1 for f in bench.failed if f.kind != "poll") + bench.exceptions
    reached = [reach(m, len(bench.joined)) for m in bench.moves]
    good = sum(1 for r in reached if r is not None and r <= TARGET_REACH_S)
    print(f"\ntargets: p95 of an interaction {fmt(p95)} ms (<= {TARGET_P95_MS:g}: "
          f"{'met' if p95 is not None and p95 <= TARGET_P95_MS else 'missed'}); errors "
          f"{errors} (0: {'met' if errors == 0 else 'missed'}); moves reaching 95 % of the "
          f"followers within {TARGET_REACH_S:g} s: {good} of {len(reached)}")


# --- Arguments ---------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--followers", type=int, default=50,
                        help=f"learners following the teacher (50; at most {MAX_FOLLOWERS})")
    parser.add_argument("--seconds", type=float, default=180.0,
                        help="how long the class acts after the idle window (180)")
    parser.add_argument("--soak", type=float, metavar="MINUTES",
                        help="a long run: --seconds = 60 x MINUTES, memory drift reported")
    parser.add_argument("--think", type=float, default=3.0,
                        help="seconds between a follower's input changes, +-50%% (3; 0: none)")
    parser.add_argument("--answer", type=float, default=20.0,
                        help="seconds between a follower's answers, +-50%% (20; 0: none)")
    parser.add_argument("--move", type=float, default=30.0,
                        help="seconds between the teacher's moves (30)")
    parser.add_argument("--idle", type=float, default=30.0,
                        help="seconds of following alone (only the polls) before the class "
                             "acts, and of the quiet server before anyone connects (30)")
    parser.add_argument("--folded", action="store_true",
                        help="the teacher opens each stage with its first part only, as "
                             "the footer's link does (default: the whole page)")
    parser.add_argument("--stages", nargs="+", metavar="ID",
                        help="the teacher's walk, in order (default: every stage in the "
                             "lesson's order)")
    parser.add_argument("--store", default="sqlite",
                        help="sqlite (a fresh file, default), redis (a redis-server started "
                             "here), or a redis:// URL or SQLite path")
    parser.add_argument("--processes", type=int, default=2,
                        help="Streamlit processes behind nginx (2)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds an interaction may take before it counts as failed (30)")
    parser.add_argument("--every", type=float,
                        help="seconds per row of the timeline (default 30, 60 with --soak)")
    args = parser.parse_args(argv)
    if args.soak:
        args.seconds = args.soak * 60
    args.followers = min(max(1, args.followers), MAX_FOLLOWERS)
    args.seconds = min(max(5.0, args.seconds), 3600.0)
    args.think = 0.0 if args.think <= 0 else max(0.2, args.think)
    args.answer = 0.0 if args.answer <= 0 else max(1.0, args.answer)
    args.move, args.idle = max(2.0, args.move), max(1.0, args.idle)
    args.processes = min(max(1, args.processes), 16)
    args.every = args.every or (60.0 if args.soak else 30.0)
    return args


def describe(args: argparse.Namespace, store: Store, stages: list[str]) -> str:
    return (f"settings: the class server, {args.processes} Streamlit processes behind nginx; "
            f"store: {store.described}; 1 teacher moving every {args.move:g} s through "
            f"{', '.join(stages[: max(2, int(args.seconds // args.move) + 1)])}... "
            f"({'the first part of each stage' if args.folded else 'each stage whole'}); "
            f"{plural(args.followers, 'follower')}, an input change every {args.think:g} s "
            f"and an answer every {args.answer:g} s (+-{JITTER:.0%}); idle window "
            f"{args.idle:g} s; class {args.seconds:g} s; timeout {args.timeout:g} s\n")


if __name__ == "__main__":
    sys.exit(main())
