"""A class on the app: many sessions at once, each changing its page's input.

Serves the app either as one Streamlit process (`streamlit run app.py`, the default) or
as the class server (`--proxy N`: N processes behind nginx, deploy/classroom.py), opens
N websocket sessions at the same time, spread round robin over the app's pages, and
lets each behave like a learner: after its page has loaded, it changes the page's first
input (the widget rerun_cost.py picks) about once every --think seconds, for --seconds.
Every rerun is timed on the client, from sending the change to receiving
script_finished. Meanwhile each server process's CPU time and memory are read from
/proc. A session whose connection breaks reconnects as a browser does (its URL only).

--full F makes a share F of the interactions full runs of the whole page (no fragment
id, the whole script, as a page open, a link, Continue or the language switch cause)
instead of a change of the page's first input (a section alone where that input is in
one): --full 1 is a class navigating together, --full 0.2 a lesson's mix.

--soak MINUTES runs longer and reports memory drift per process; --kill-one (with
--proxy 2 or more) kills one Streamlit process mid-run and reports what the learners
on the others, those on the killed one, and newcomers saw.

It prints figures only and exits 0 however slow the server was. See README.md.

    .venv/bin/python benchmarks/class_load.py [--sessions 50] [--think 3] [--seconds 60]
    .venv/bin/python benchmarks/class_load.py --sessions 1 --seconds 20   # the baseline
    .venv/bin/python benchmarks/class_load.py --proxy 2 [--kill-one] [--soak 10]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.cookies import SimpleCookie
from pathlib import Path

from rerun_cost import (
    FINISHED_OK,
    PLAIN,
    ROOT,
    Knob,
    RunResult,
    Tab,
    _widget_id,
    app_pages,
    find_knob,
    fmt,
    free_port,
    machine,
    measure,
    select,
    servers,
    whole_page_query,
)

from deploy import nginx  # after rerun_cost, which puts the repository on sys.path
from deploy.stream import open_stream
from deploy.warm import wait_healthy

MAX_SESSIONS = 200
MAX_SECONDS = 3600.0
MAX_PROCESSES = 16
MIN_THINK = 0.1
JITTER = 0.5  # a learner's pause is uniform in [think * (1 - JITTER), think * (1 + JITTER)]
OPEN_TIMEOUT = 120.0  # opening a page while the whole class opens theirs may be slow
START_TIMEOUT = 180.0  # the class server: every process started and warm
SAMPLE_EVERY = 0.25  # seconds between two reads of the server's memory
PROGRESS_EVERY = 10.0  # seconds between two progress lines
RECONNECT_AFTER = 0.5  # a browser retries about this soon after losing its connection
RECONNECT_TRIES = 8  # one second apart
PROBE_EVERY = 0.5  # newcomers after a kill: one fresh session this often ...
PROBE_FOR = 15.0  # ... for this long
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --- The server's resources, from /proc -----------------------------------------------


@dataclass
class Usage:
    """A set of processes at one moment, summed."""

    cpu_s: float = 0.0  # user + system, with that of children already reaped
    rss_mib: float = 0.0
    hwm_mib: float = 0.0  # the largest lifetime peak (VmHWM) of one process
    threads: int = 0
    processes: int = 0


def _status_fields(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _stat(pid: int | str) -> list[str]:
    """/proc/<pid>/stat after the command name (which may hold spaces): rest[0] is the
    state, rest[1] the parent, rest[2] the process group, rest[11:15] the CPU times."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_usage(pid: int | str, rest: list[str] | None = None) -> Usage:
    """One process; an empty Usage if it ended meanwhile."""
    try:
        rest = rest or _stat(pid)
        status = _status_fields(Path(f"/proc/{pid}/status").read_text())
    except (OSError, ValueError, IndexError):
        return Usage()
    return Usage(sum(int(value) for value in rest[11:15]) / CLOCK_TICKS,
                 _kib(status.get("VmRSS")) / 1024, _kib(status.get("VmHWM")) / 1024,
                 int(status.get("Threads", "0").strip() or 0), 1)


def group_usage(pgid: int) -> Usage:
    """Every process of group `pgid` (the server and, with --proxy, nginx), summed."""
    usage = Usage()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            rest = _stat(entry.name)
            if int(rest[2]) != pgid:
                continue
        except (OSError, ValueError, IndexError):  # the process ended meanwhile
            continue
        one = process_usage(entry.name, rest)
        usage.cpu_s += one.cpu_s
        usage.rss_mib += one.rss_mib
        usage.hwm_mib = max(usage.hwm_mib, one.hwm_mib)
        usage.threads += one.threads
        usage.processes += one.processes
    return usage


def _kib(value: str | None) -> float:
    return float(value.split()[0]) if value else 0.0


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every core, every process)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        # user nice system idle iowait irq softirq steal: all but idle and iowait
        return (sum(fields[:8]) - fields[3] - fields[4]) / CLOCK_TICKS
    return 0.0


def streamlit_children(supervisor: int) -> dict[str, int]:
    """The class server's Streamlit processes: upstream address -> pid."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if int(_stat(entry.name)[1]) != supervisor:
                continue
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if b"deploy.serve" in argv and b"--port" in argv:
            port = argv[argv.index(b"--port") + 1].decode()
            found[f"127.0.0.1:{port}"] = int(entry.name)
    return found


@dataclass
class Sample:
    at: float  # seconds since the class started (negative before)
    rss_mib: float
    cpu_s: float


class Sampler(threading.Thread):
    """Reads the server's group, and each Streamlit process, every SAMPLE_EVERY s."""

    def __init__(self, server: Server, phase: Phase) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.phase = phase
        self.first = group_usage(server.pgid)
        self.peak = Usage(**vars(self.first))
        self.series: dict[str, list[Sample]] = {}
        self.machine: list[tuple[float, float]] = []  # (at, busy seconds so far)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_EVERY):
            self._keep(group_usage(self.server.pgid))

    def stop(self) -> Usage:
        self.done.set()
        self.join()
        last = group_usage(self.server.pgid)
        self._keep(last)
        return last

    def _keep(self, usage: Usage) -> None:
        peak = self.peak
        peak.rss_mib = max(peak.rss_mib, usage.rss_mib)
        peak.hwm_mib = max(peak.hwm_mib, usage.hwm_mib)
        peak.threads = max(peak.threads, usage.threads)
        peak.processes = max(peak.processes, usage.processes)
        at = time.monotonic() - self.phase.start if self.phase.start else -1.0
        self.machine.append((at, machine_busy_s()))
        for name, pid in self.server.processes().items():
            one = process_usage(pid)
            if one.processes:
                self.series.setdefault(name, []).append(Sample(at, one.rss_mib, one.cpu_s))


# --- Serving: one process, or the class server behind nginx ---------------------------


@dataclass
class Server:
    port: int  # where learners connect: the app itself, or nginx
    pgid: int
    proxy: bool
    run_dir: Path | None = None  # the class server's (nginx's logs)
    single: dict[str, int] = field(default_factory=dict)

    def processes(self) -> dict[str, int]:
        """Streamlit processes now: address -> pid (restarted ones included)."""
        return streamlit_children(self.pgid) if self.proxy else self.single


@contextlib.contextmanager
def serve(args: argparse.Namespace) -> Iterator[Server]:
    if not args.proxy:
        with servers("app.py") as (app,):
            yield Server(app.port, app.process.pid, False,
                         single={f"127.0.0.1:{app.port}": app.process.pid})
        return
    with tempfile.TemporaryDirectory(prefix="class-load-") as folder:
        run_dir, log = Path(folder) / "run", Path(folder) / "class.log"
        port = free_port()
        command = [sys.executable, "-m", "deploy.classroom", "--processes", str(args.proxy),
                   "--port", str(port), "--address", "127.0.0.1", "--show-upstream",
                   "--run-dir", str(run_dir)]
        if not args.restart:
            command.append("--no-restart")
        with open(log, "wb") as handle:
            process = subprocess.Popen(command, cwd=ROOT, stdout=handle,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        try:
            wait_warm(process, port, run_dir, args.proxy, log)
            yield Server(port, process.pid, True, run_dir)
        finally:
            stop_group(process)


def wait_warm(process: subprocess.Popen, port: int, run_dir: Path, count: int,
              log: Path) -> None:
    """Until every process has written its warm file and nginx answers."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the class server exited:\n{log.read_text()[-2000:]}")
        warm = len(list(run_dir.glob("process-*.warm"))) if run_dir.exists() else 0
        if warm == count and wait_healthy("127.0.0.1", port, timeout=1.0):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the class server was not warm after {START_TIMEOUT:.0f} s")


def stop_group(process: subprocess.Popen, grace: float = 15.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def first_visit(port: int) -> str:
    """What a browser's first request brings back: the proxy's sticky cookie."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=OPEN_TIMEOUT) as reply:
        reply.read()
        for value in reply.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie(value)
            if nginx.COOKIE in cookie:
                return f"{nginx.COOKIE}={cookie[nginx.COOKIE].value}"
    return ""


@contextlib.contextmanager
def open_tab(server: Server, timeout: float, cookie: str = "") -> Iterator[tuple[Tab, str]]:
    """A websocket session as rerun_cost.Tab.open makes one, carrying the cookie; also
    which process answered (the proxy's header, or the single process)."""
    headers = {"Cookie": cookie} if cookie else None
    with open_stream("127.0.0.1", server.port, timeout, headers) as socket:
        # nginx names every process it tried, the one that answered last.
        tried = (socket.response.headers.get(nginx.UPSTREAM_HEADER, "?") if server.proxy
                 else next(iter(server.single)))
        yield Tab(socket, server.port, timeout), tried.split(",")[-1].strip()


# --- One learner ----------------------------------------------------------------------


@dataclass
class Phase:
    """When the class starts changing inputs, and until when. Set before `go` is."""

    go: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)  # Ctrl-C
    start: float = 0.0
    deadline: float = 0.0
    killed: str = ""  # the process --kill-one killed, and when (since the start)
    killed_at: float = math.inf

    def now(self) -> float:
        return time.monotonic() - self.start


@dataclass
class Rerun:
    at: float  # sent, seconds since the class started
    ms: float
    process: str


@dataclass
class Failure:
    at: float
    process: str
    what: str


@dataclass
class Reconnect:
    at: float  # when the connection broke
    seconds: float  # until the page worked again
    before: str
    after: str
    url_state_kept: bool | None  # None: the widget is not in the URL


@dataclass
class Learner:
    number: int
    page: str  # stage id
    url_name: str
    opened: threading.Event = field(default_factory=threading.Event)
    open_ms: float | None = None
    widget: str = "-"
    process: str = ""  # the process serving the session now
    first_process: str = ""
    reruns: list[Rerun] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    exceptions: int = 0
    reconnects: list[Reconnect] = field(default_factory=list)
    problem: str = ""

    @property
    def times(self) -> list[float]:
        return [rerun.ms for rerun in self.reruns]

    @property
    def failures(self) -> int:
        return len(self.failed)


@dataclass
class Progress:
    """A learner's place in its routine; survives a reconnect."""

    rng: random.Random
    next_send: float = 0.0
    index: int = 0
    last_value: object = None
    query_string: str = ""  # the URL's query, as the browser keeps it
    opened_query: str = ""
    url_bound: bool = False  # a change showed in the query string


class Broken(Exception):
    """The session's connection is gone (or a rerun timed out): reconnect."""


def learn(learner: Learner, server: Server, args: argparse.Namespace, phase: Phase) -> None:
    """A thread's body: open the page, wait for the class to start, then interact,
    reconnecting like a browser when the connection breaks."""
    progress = Progress(random.Random(learner.number))
    knob = None
    try:
        cookie = first_visit(server.port) if server.proxy else ""
        with open_tab(server, OPEN_TIMEOUT, cookie) as (tab, process):
            learner.process = learner.first_process = process
            knob = open_page(tab, learner)
            if knob is not None and args.full >= 1:  # the input is never changed
                learner.widget = "- (full runs)"
            progress.opened_query = tab.query_string
            learner.opened.set()
            if knob is None:
                return
            tab.timeout = args.timeout
            phase.go.wait()
            progress.next_send = phase.start + progress.rng.uniform(0, args.think)
            interact(tab, knob, learner, args, phase, progress)
            return
    except Broken:
        pass
    except Exception as error:  # a page broke before the class started: note it, end
        learner.problem = learner.problem or f"{type(error).__name__}: {error}"
        return
    finally:
        learner.opened.set()
    while knob is not None and not phase.stop.is_set() and time.monotonic() < phase.deadline:
        if not reconnect(learner, server, args, phase, progress, knob, cookie):
            return


def open_page(tab: Tab, learner: Learner) -> Knob | None:
    """The first run of the learner's page (a student opening the link, the whole page
    as after its "Continue" button); None if broken."""
    tab.query_string = whole_page_query(learner.page)
    first = tab.rerun([], page_name=learner.url_name)
    learner.open_ms = first.ms
    if first.page_not_found or (first.url_pathname or "") != learner.url_name:
        learner.problem = f"asked for '{learner.url_name}', the server ran '{first.url_pathname}'"
        return None
    if first.status != FINISHED_OK or first.exceptions:
        learner.problem = f"first run: status {first.status}, exceptions {first.exceptions}"
        return None
    knob = find_knob(first.elements) or PLAIN
    learner.widget = knob.description
    return knob


def interact(tab: Tab, knob: Knob, learner: Learner, args: argparse.Namespace,
             phase: Phase, progress: Progress) -> None:
    """Change the widget about every `think` seconds until the deadline.

    A learner waits for the page to update before the next change: a change is sent a
    pause after the previous one was sent, or at once when that rerun took longer."""
    while progress.next_send < phase.deadline:
        if phase.stop.wait(max(0.0, progress.next_send - time.monotonic())):
            return
        sent = time.monotonic()
        progress.index += 1
        value = knob.values[progress.index % 2]  # the first change moves the widget
        full = args.full >= 1 or (args.full > 0 and progress.rng.random() < args.full)
        try:
            # A full run: no widget, no fragment id, the whole page (its rest stays open).
            run = tab.rerun([knob.state(value)] if knob.widget_id and not full else [])
        except Exception as error:  # closed by the server, reset, or timed out
            learner.failed.append(Failure(sent - phase.start, learner.process,
                                          type(error).__name__))
            progress.query_string = tab.query_string
            raise Broken from error
        progress.last_value = value
        progress.query_string = tab.query_string
        progress.url_bound |= tab.query_string != progress.opened_query
        record(learner, knob, run, progress.index, sent - phase.start)
        progress.next_send = sent + args.think * progress.rng.uniform(1 - JITTER, 1 + JITTER)


def record(learner: Learner, knob: Knob, run: RunResult, index: int, at: float) -> None:
    if knob.widget_id and not learner.problem and all(
            _widget_id(element) != knob.widget_id for _, element in run.elements):
        learner.problem = f"{knob.description} was gone after change {index}"
    if run.status != FINISHED_OK:
        learner.failed.append(Failure(at, learner.process, f"status {run.status}"))
        return
    learner.exceptions += bool(run.exceptions)
    learner.reruns.append(Rerun(at, run.ms, learner.process))


def reconnect(learner: Learner, server: Server, args: argparse.Namespace, phase: Phase,
              progress: Progress, knob: Knob, cookie: str) -> bool:
    """What the browser does after losing its connection: retry, open the page of the
    URL it shows (the URL's state; the lost session's memory is gone), and carry on.
    True when the new connection broke too (reconnect again), False when done."""
    broke = time.monotonic()
    before = learner.process
    time.sleep(RECONNECT_AFTER)
    for _ in range(RECONNECT_TRIES):
        try:
            with open_tab(server, args.timeout, cookie) as (tab, process):
                learner.process = process
                tab.query_string = progress.query_string
                first = tab.rerun([], page_name=learner.url_name)
                if first.status != FINISHED_OK or first.exceptions:
                    raise RuntimeError(f"status {first.status}, {first.exceptions}")
                learner.reconnects.append(Reconnect(
                    broke - phase.start, time.monotonic() - broke, before, process,
                    url_state_kept(knob, first, progress)))
                try:
                    interact(tab, knob, learner, args, phase, progress)
                except Broken:
                    return True
                return False
        except Exception:  # refused, reset, a broken page: a second later, again
            time.sleep(1.0)
    learner.problem = f"no working page {RECONNECT_TRIES} tries after losing the connection"
    return False


def url_state_kept(knob: Knob, first: RunResult, progress: Progress) -> bool | None:
    """Whether the reopened page shows the learner's last value, read from the URL;
    None when the change never showed in the query string (a widget bound to the URL
    is written there by the browser's own code, which this client does not run)."""
    if not knob.widget_id or progress.last_value is None or not progress.url_bound:
        return None
    again = find_knob(first.elements)
    if again is None or again.widget_id != knob.widget_id:
        return False
    return again.values[0] == progress.last_value


# --- The class ------------------------------------------------------------------------


def enrol(count: int, pages: list[tuple[str, str, str]]) -> list[Learner]:
    """`count` learners over the pages, round robin: the overview, stage 0, stage 1..."""
    return [Learner(number, pages[number % len(pages)][0], pages[number % len(pages)][2])
            for number in range(count)]


def warm_up(port: int, pages: list[tuple[str, str, str]]) -> None:
    """One session opens every page once (imports, cached models), as the teacher
    checking the links before class would; not measured."""
    warm = argparse.Namespace(timeout=OPEN_TIMEOUT, runs=0, warmup=0)
    opens = []
    for stage_id, _path, url_name in pages:
        result = measure(port, stage_id, url_name, warm)
        opens.append(f"{stage_id} {fmt(result.open_ms)}")
    print(f"warm-up, one session opening each page once (ms): {', '.join(opens)}", flush=True)


def run_class(server: Server, learners: list[Learner], args: argparse.Namespace,
              phase: Phase, sampler: Sampler) -> tuple[float, Usage, float, list[Probe]]:
    """Open every session at once, then let the class interact for args.seconds.

    Returns the opening's wall seconds, the server's usage when the class started, the
    client's own CPU seconds while it interacted, and the newcomers after a kill."""
    threads = [threading.Thread(target=learn, args=(learner, server, args, phase),
                                daemon=True) for learner in learners]
    opening = time.monotonic()
    for thread in threads:
        thread.start()
    for learner in learners:
        while not learner.opened.wait(0.5):
            pass
    opened_s = time.monotonic() - opening
    at_start = group_usage(server.pgid)
    client_start = _own_cpu()
    phase.start = time.monotonic()
    phase.deadline = phase.start + args.seconds
    probes: list[Probe] = []
    if args.kill_one:
        threading.Thread(target=kill_one, args=(server, learners, args, phase, probes),
                         daemon=True).start()
    phase.go.set()
    wait_for(threads, learners, phase)
    time.sleep(max(0.0, phase.deadline - time.monotonic()))  # the whole period, idle or not
    return opened_s, at_start, _own_cpu() - client_start, probes


def wait_for(threads: list[threading.Thread], learners: list[Learner], phase: Phase) -> None:
    """Join the learners, printing a progress line every PROGRESS_EVERY seconds."""
    next_line = phase.start + PROGRESS_EVERY
    for thread in threads:
        while thread.is_alive():
            thread.join(0.5)
            if time.monotonic() >= next_line and time.monotonic() < phase.deadline:
                done = sum(len(learner.reruns) for learner in learners)
                failed = sum(learner.failures for learner in learners)
                print(f"  {next_line - phase.start:.0f} s: {done} reruns, {failed} failed",
                      flush=True)
                next_line += PROGRESS_EVERY


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


# --- Killing one process --------------------------------------------------------------


@dataclass
class Probe:
    """A newcomer after the kill: a fresh browser opening the overview."""

    at: float  # since the kill
    ok: bool
    process: str
    ms: float
    what: str = ""


def kill_one(server: Server, learners: list[Learner], args: argparse.Namespace,
             phase: Phase, probes: list[Probe]) -> None:
    """At --kill-at, SIGKILL the Streamlit process with the most sessions; then a
    newcomer every PROBE_EVERY seconds for PROBE_FOR seconds."""
    if phase.stop.wait(max(0.0, phase.start + args.kill_at - time.monotonic())):
        return
    processes = server.processes()
    load = {name: sum(1 for learner in learners if learner.process == name)
            for name in processes}
    victim = max(sorted(load), key=load.__getitem__)
    os.kill(processes[victim], signal.SIGKILL)
    phase.killed, phase.killed_at = victim, phase.now()
    print(f"  {phase.killed_at:.1f} s: killed the process at {victim} "
          f"(pid {processes[victim]}, {load[victim]} sessions)", flush=True)
    arrivals = []
    for index in range(round(PROBE_FOR / PROBE_EVERY)):
        if phase.stop.wait(max(0.0, phase.start + phase.killed_at + index * PROBE_EVERY
                               - time.monotonic())):
            break
        arrival = threading.Thread(target=lambda at=index * PROBE_EVERY: probes.append(
            probe(server, at)), daemon=True)  # each on its own, as browsers arrive
        arrival.start()
        arrivals.append(arrival)
    for arrival in arrivals:
        arrival.join(OPEN_TIMEOUT)


def probe(server: Server, at: float) -> Probe:
    """A fresh browser `at` seconds after the kill: `/`, its cookie, the overview."""
    started = time.monotonic()
    try:
        with open_tab(server, 30.0, first_visit(server.port)) as (tab, process):
            run = tab.rerun([], page_name="")
        ok = run.status == FINISHED_OK and not run.exceptions
        return Probe(at, ok, process, (time.monotonic() - started) * 1000,
                     "" if ok else f"status {run.status}")
    except Exception as error:
        return Probe(at, False, "", (time.monotonic() - started) * 1000,
                     type(error).__name__)


_NGINX_TIME = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) \[(\w+)\] (.*)$")


def nginx_failures(run_dir: Path | None, victim: str) -> list[tuple[float, str]]:
    """(wall time, kind) of nginx's error-log lines about the killed process."""
    found = []
    with contextlib.suppress(OSError):
        for line in (run_dir / "error.log").read_text(errors="replace").splitlines():
            match = _NGINX_TIME.match(line)
            if not match or victim not in line:
                continue
            text = match.group(3)
            kind = ("marked down" if "temporarily disabled" in text else
                    "refused" if "connect() failed" in text else "dropped")
            wall = datetime.strptime(match.group(1), "%Y/%m/%d %H:%M:%S").timestamp()
            found.append((wall, kind))
    return found


# --- Report ---------------------------------------------------------------------------


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest rank, as rerun_cost.py's p95."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def latency_cells(times: list[float]) -> tuple[str, ...]:
    return (fmt(statistics.median(times) if times else None), fmt(percentile(times, 0.95)),
            fmt(percentile(times, 0.99)), fmt(max(times) if times else None))


def table_row(name: str, group: list[Learner]) -> tuple[str, ...]:
    times = [ms for learner in group for ms in learner.times]
    widgets = sorted({learner.widget for learner in group if learner.widget != "-"})
    widget = widgets[0] if len(widgets) == 1 else ("(several)" if widgets else "-")
    return (name, str(len(group)), widget, str(len(times)),
            str(sum(learner.failures for learner in group)),
            str(sum(learner.exceptions for learner in group)), *latency_cells(times))


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]],
                total: bool = True) -> None:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*header))
    print(line.format(*("-" * w for w in widths)))
    for index, row in enumerate(rows):
        if total and index == len(rows) - 1:
            print(line.format(*("-" * w for w in widths)))
        print(line.format(*row))


PAGE_HEADER = ("page", "sessions", "widget changed", "reruns", "fail", "exc", "median ms",
               "p95 ms", "p99 ms", "max ms")


def report(learners: list[Learner], pages: list[tuple[str, str, str]], opened_s: float,
           seconds: float) -> None:
    opens = [learner.open_ms for learner in learners if learner.open_ms is not None]
    median = statistics.median(opens) if opens else None
    print(f"\nopening: {plural(len(learners), 'session')} at once, {len(opens)} opened, in "
          f"{opened_s:.1f} s; first run of a page: median {fmt(median)} ms, "
          f"p95 {fmt(percentile(opens, 0.95))} ms, max {fmt(max(opens, default=None))} ms")
    print(f"interaction: {seconds:.1f} s\n")
    rows = [table_row(stage_id, [learner for learner in learners if learner.page == stage_id])
            for stage_id, _path, _url in pages]
    print_table(PAGE_HEADER, [*[row for row in rows if row[1] != "0"],
                              table_row("all", learners)])
    problems: dict[str, list[int]] = {}
    for learner in learners:
        if learner.problem:
            problems.setdefault(f"{learner.page}: {learner.problem}", []).append(learner.number)
    if problems:
        print("\nproblems (sessions):")
        for problem, numbers in problems.items():
            print(f"  {problem} ({len(numbers)}: {', '.join(map(str, numbers[:10]))}"
                  f"{' ...' if len(numbers) > 10 else ''})")


def report_processes(learners: list[Learner], series: dict[str, list[Sample]],
                     seconds: float) -> None:
    """Per Streamlit process: its sessions' latencies, its CPU and its memory."""
    print("\nper process (reruns by the process that ran them; memory read from /proc):")
    rows = []
    for name in sorted(series):
        reruns = [r.ms for learner in learners for r in learner.reruns if r.process == name]
        failed = sum(1 for learner in learners for f in learner.failed if f.process == name)
        during = [s for s in series[name] if 0 <= s.at <= seconds]
        cores = ((during[-1].cpu_s - during[0].cpu_s) / (during[-1].at - during[0].at)
                 if len(during) > 1 and during[-1].at > during[0].at else None)
        rss = [s.rss_mib for s in series[name]]
        rows.append((name, str(sum(1 for learner in learners if learner.first_process == name)),
                     str(len(reruns)), str(failed), *latency_cells(reruns)[:3],
                     "-" if cores is None else f"{cores:.2f}",
                     f"{rss[0]:.0f}", f"{max(rss):.0f}", f"{rss[-1]:.0f}"))
    print_table(("process", "sessions", "reruns", "fail", "median ms", "p95 ms", "p99 ms",
                 "cores busy", "RSS first MiB", "peak", "last"), rows, total=False)


def _rate(points: list[tuple[float, float]], start: float, end: float) -> float | None:
    """How fast a cumulative count grew between the samples nearest `start`, `end`."""
    inside = [(at, value) for at, value in points if start <= at <= end]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def report_timeline(learners: list[Learner], sampler: Sampler, seconds: float,
                    every: float) -> None:
    """Latency, errors, CPU and each process's memory, window by window. The machine
    may be shared: `others` is its busy cores less the server's (this client, about
    0.05 core, included), so a slow window can be told from a busy machine."""
    series = sampler.series
    names = sorted(series)
    print(f"\nover time (windows of {every:g} s; cores busy: the server's Streamlit "
          "processes, and the rest of the machine; RSS MiB of each process at the "
          "window's end):")
    rows = []
    start = 0.0
    while start < seconds - 1e-9:
        end = min(seconds, start + every)
        times = [r.ms for learner in learners for r in learner.reruns if start <= r.at < end]
        failed = sum(1 for learner in learners for f in learner.failed if start <= f.at < end)
        server = sum(rate for name in names if (rate := _rate(
            [(s.at, s.cpu_s) for s in series[name]], start, end)) is not None)
        machine = _rate(sampler.machine, start, end)
        memory = []
        for name in names:
            inside = [s.rss_mib for s in series[name] if s.at < end]
            memory.append(f"{inside[-1]:.0f}" if inside else "-")
        rows.append((f"{start:.0f}-{end:.0f}", str(len(times)), str(failed),
                     fmt(statistics.median(times) if times else None),
                     fmt(percentile(times, 0.95)), f"{server:.2f}",
                     "-" if machine is None else f"{max(0.0, machine - server):.2f}",
                     *memory))
        start = end
    print_table(("seconds", "reruns", "fail", "median ms", "p95 ms", "server", "others",
                 *names), rows, total=False)


def report_drift(series: dict[str, list[Sample]], seconds: float) -> None:
    """Memory after warm-up against the end: growth and slope per process."""
    settle = min(60.0, seconds / 5)
    print(f"\nmemory drift per process (after the first {settle:.0f} s of the class; "
          "slope by least squares):")
    for name in sorted(series):
        after = [s for s in series[name] if settle <= s.at <= seconds]
        if len(after) < 3:
            print(f"  {name}: too few samples")
            continue
        mean_at = statistics.fmean(s.at for s in after)
        mean_rss = statistics.fmean(s.rss_mib for s in after)
        spread = sum((s.at - mean_at) ** 2 for s in after)
        slope = (sum((s.at - mean_at) * (s.rss_mib - mean_rss) for s in after) / spread
                 if spread else 0.0)
        window = max(1, len(after) // 10)
        head = statistics.fmean(s.rss_mib for s in after[:window])
        tail = statistics.fmean(s.rss_mib for s in after[-window:])
        print(f"  {name}: {head:.0f} MiB -> {tail:.0f} MiB ({tail - head:+.1f} MiB), "
              f"slope {slope * 60:+.2f} MiB/min, range {min(s.rss_mib for s in after):.0f}"
              f"-{max(s.rss_mib for s in after):.0f} MiB")


def report_kill(learners: list[Learner], phase: Phase, probes: list[Probe],
                server: Server, kill_wall: float) -> None:
    if not phase.killed:
        print("\nkill: no process was killed (the run ended first)")
        return
    victim, killed_at = phase.killed, phase.killed_at
    print(f"\nkill: the process at {victim} was killed at {killed_at:.1f} s")
    survivors = [ln for ln in learners if ln.first_process and ln.first_process != victim]
    on_victim = [ln for ln in learners if ln.first_process == victim]
    after = [r.ms for ln in survivors for r in ln.reruns if r.at >= killed_at]
    print(f"  sessions on the other processes: {len(survivors)}, errors "
          f"{sum(ln.failures for ln in survivors)}; their reruns after the kill: "
          f"{len(after)}, median {fmt(statistics.median(after) if after else None)} ms, "
          f"p95 {fmt(percentile(after, 0.95))} ms")
    reconnects = [rc for ln in on_victim for rc in ln.reconnects]
    kept = [rc.url_state_kept for rc in reconnects if rc.url_state_kept is not None]
    waits = [rc.seconds for rc in reconnects]
    print(f"  sessions on the killed process: {len(on_victim)}, broken connections "
          f"{sum(ln.failures for ln in on_victim)}, reconnected to a working page "
          f"{len(reconnects)} (after {fmt(statistics.median(waits) if waits else None)} s "
          f"median, {fmt(max(waits, default=None))} s at most), on "
          f"{', '.join(sorted({rc.after for rc in reconnects})) or '-'}; "
          f"URL state kept {sum(kept)} of the {len(kept)} whose change was in the query "
          f"string; gave up "
          f"{sum(1 for ln in on_victim if ln.problem)}")
    probes = sorted(probes, key=lambda p: p.at)
    good = [p for p in probes if p.ok]
    print(f"  newcomers (a fresh browser every {PROBE_EVERY:g} s for {PROBE_FOR:g} s): "
          f"{len(good)} of {len(probes)} got a working page (the first arrived at "
          f"{fmt(good[0].at if good else None)} s after the kill; open median "
          f"{fmt(statistics.median(p.ms for p in good) if good else None)} ms); landed on "
          f"{', '.join(sorted({p.process for p in good})) or '-'}"
          + (f"; failures: {', '.join(f'{p.at:.1f} s {p.what}' for p in probes if not p.ok)}"
             if len(good) < len(probes) else ""))
    failures = nginx_failures(server.run_dir, victim)
    # nginx logs whole seconds: compare whole seconds.
    after_kill = [(int(wall) - int(kill_wall), kind) for wall, kind in failures
                  if wall >= int(kill_wall)]
    tried = [at for at, kind in after_kill if kind != "marked down"]
    print(f"  nginx's error log: {len(tried)} requests found the killed process gone "
          f"({sum(1 for _, kind in after_kill if kind == 'refused')} refused, the others "
          "dropped kept-alive connections)"
          + (f", in the second of the kill +{min(tried)} s to +{max(tried)} s"
             if tried else "")
          + f"; marked down {sum(1 for _, kind in after_kill if kind == 'marked down')} "
          f"times, {nginx.FAIL_TIMEOUT_S} s each, then retried by one request; every such "
          "request went on to another process")


def report_resources(before: Usage, at_start: Usage, after: Usage, peak: Usage,
                     seconds: float, client_cpu: float, sessions: int,
                     machine: float | None) -> None:
    cores = len(os.sched_getaffinity(0))
    server_cpu = after.cpu_s - at_start.cpu_s
    growth = peak.rss_mib - before.rss_mib
    print(f"\nserver CPU while the class interacted: {server_cpu:.1f} s in {seconds:.1f} s = "
          f"{server_cpu / seconds:.2f} cores busy of {cores} "
          f"(opening the sessions: {at_start.cpu_s - before.cpu_s:.1f} s)")
    print(f"benchmark's own CPU in that time (client, same machine): {client_cpu:.1f} s = "
          f"{client_cpu / seconds:.2f} cores")
    if machine is not None:
        others = max(0.0, machine - (server_cpu + client_cpu) / seconds)
        print(f"the rest of the machine in that time: {others:.2f} cores busy"
              + (" (a shared machine: these latencies are not this server's alone)"
                 if others > 0.25 else ""))
    print(f"server memory (RSS, its whole process group, read every {SAMPLE_EVERY:g} s): "
          f"{before.rss_mib:.0f} MiB before the class, peak {peak.rss_mib:.0f} MiB "
          f"(+{growth:.0f} MiB, about {growth / sessions:.1f} MiB a session), "
          f"{after.rss_mib:.0f} MiB at the end; lifetime peak (VmHWM) {peak.hwm_mib:.0f} MiB")
    print(f"server processes: {peak.processes}, threads at most {peak.threads}")


# --- Main -----------------------------------------------------------------------------


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends like Ctrl-C, so the server is stopped either way."""
    raise KeyboardInterrupt


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50,
                        help=f"concurrent sessions (50; 1 is the baseline; at most {MAX_SESSIONS})")
    parser.add_argument("--think", type=float, default=3.0,
                        help="seconds between a learner's changes, on average, +-50%% (3)")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help=f"how long the class interacts (60; at most {MAX_SECONDS:g})")
    parser.add_argument("--soak", type=float, metavar="MINUTES",
                        help="a long run: --seconds = 60 x MINUTES, memory drift reported")
    parser.add_argument("--pages", nargs="+", metavar="NAME",
                        help="only these pages: stage ids, url names or files (default: all)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds one rerun may take before its session reconnects (30)")
    parser.add_argument("--proxy", type=int, default=0, metavar="N",
                        help="serve with the class server: N processes behind nginx "
                             "(default: one `streamlit run` process, no proxy)")
    parser.add_argument("--kill-one", action="store_true",
                        help="with --proxy 2 or more: SIGKILL one process at --kill-at")
    parser.add_argument("--kill-at", type=float,
                        help="seconds into the class for --kill-one (default: a third)")
    parser.add_argument("--restart", action="store_true",
                        help="let the class server restart a process that died (default: "
                             "it stays dead, so the run shows the proxy's failover alone)")
    parser.add_argument("--full", type=float, default=0.0, metavar="F",
                        help="share of interactions that are full runs of the whole page "
                             "(no fragment id) instead of a change of the page's input: "
                             "0 (default), 1 (all: a class navigating), 0.2 (a lesson's mix)")
    parser.add_argument("--every", type=float,
                        help="seconds per row of the timeline (default: the run / 6, "
                             "at least 5, 60 with --soak)")
    args = parser.parse_args(argv)
    if args.soak:
        args.seconds = args.soak * 60
    args.sessions = min(max(1, args.sessions), MAX_SESSIONS)
    args.seconds = min(max(1.0, args.seconds), MAX_SECONDS)
    args.think = max(MIN_THINK, args.think)
    args.timeout = max(1.0, args.timeout)
    args.proxy = min(max(0, args.proxy), MAX_PROCESSES)
    if args.kill_one and args.proxy < 2:
        parser.error("--kill-one needs --proxy 2 or more (a survivor)")
    args.kill_at = min(args.seconds, args.kill_at if args.kill_at is not None
                       else args.seconds / 3)
    args.every = args.every or (60.0 if args.soak else max(5.0, args.seconds / 6))
    return args


def describe(args: argparse.Namespace, pages: list[tuple[str, str, str]]) -> str:
    processes = f"{args.proxy} process{'es' if args.proxy > 1 else ''}"
    serving = (f"the class server, {processes} behind nginx" if args.proxy
               else "one Streamlit process")
    kill = f"; kill one process at {args.kill_at:g} s" if args.kill_one else ""
    return (f"settings: {serving}; {plural(args.sessions, 'session')} over "
            f"{plural(len(pages), 'page')} ({', '.join(p[0] for p in pages)}), round robin; "
            f"a change every {args.think:g} s +-{JITTER:.0%} each; {args.seconds:g} s; "
            f"rerun timeout {args.timeout:g} s{kill}; "
            f"full whole-page runs: {args.full:.0%} of interactions, the rest a change of "
            f"the page's input\n")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    print(machine())
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    pages = select(app_pages(), args.pages)
    if not pages:
        print("no page to measure")
        return 0
    learners = enrol(args.sessions, pages)
    print(describe(args, pages), flush=True)
    phase = Phase()
    try:
        with serve(args) as server:
            warm_up(server.port, pages)
            sampler = Sampler(server, phase)
            sampler.start()
            opened_s, at_start, client_cpu, probes = run_class(server, learners, args, phase,
                                                               sampler)
            kill_wall = time.time() - (time.monotonic() - phase.start - phase.killed_at)
            seconds = time.monotonic() - phase.start
            after = sampler.stop()
            time.sleep(0.5)  # nginx writes its log lines
            if args.kill_one:
                report_kill(learners, phase, probes, server, kill_wall)
    except KeyboardInterrupt:
        phase.stop.set()
        print("\ninterrupted; server stopped")
        return 130
    report(learners, pages, opened_s, seconds)
    report_processes(learners, sampler.series, seconds)
    report_timeline(learners, sampler, seconds, args.every)
    if args.soak or args.seconds >= 300:
        report_drift(sampler.series, seconds)
    report_resources(sampler.first, at_start, after, sampler.peak, seconds, client_cpu,
                     args.sessions, _rate(sampler.machine, 0.0, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
