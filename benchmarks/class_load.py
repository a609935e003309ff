"""A class on one app server: many sessions at once, each changing its page's input.

Starts the app (`streamlit run app.py`) once, opens N websocket sessions at the same
time, spread round robin over the app's pages, and lets each behave like a learner:
after its page has loaded, it changes the page's first input (the widget rerun_cost.py
picks) about once every --think seconds, for --seconds. Every rerun is timed on the
client, from sending the change to receiving script_finished. Meanwhile the server's
CPU time and memory are read from /proc.

It prints figures only and exits 0 however slow the server was. See README.md.

    .venv/bin/python benchmarks/class_load.py [--sessions 50] [--think 3] [--seconds 60]
    .venv/bin/python benchmarks/class_load.py --sessions 1 --seconds 20   # the baseline
"""

from __future__ import annotations

import argparse
import math
import os
import random
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rerun_cost import (
    FINISHED_OK,
    PLAIN,
    Knob,
    RunResult,
    Tab,
    _widget_id,
    app_pages,
    find_knob,
    fmt,
    machine,
    measure,
    select,
    servers,
)

MAX_SESSIONS = 200
MAX_SECONDS = 600.0
MIN_THINK = 0.1
JITTER = 0.5  # a learner's pause is uniform in [think * (1 - JITTER), think * (1 + JITTER)]
OPEN_TIMEOUT = 120.0  # opening a page while the whole class opens theirs may be slow
SAMPLE_EVERY = 0.25  # seconds between two reads of the server's memory
PROGRESS_EVERY = 10.0  # seconds between two progress lines
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --- The server's resources, from /proc -----------------------------------------------


@dataclass
class Usage:
    """The server's process group at one moment: every process in it, summed."""

    cpu_s: float = 0.0  # user + system, with that of children already reaped
    rss_mib: float = 0.0
    hwm_mib: float = 0.0  # the largest lifetime peak (VmHWM) of one process
    threads: int = 0
    processes: int = 0


def _status_fields(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def group_usage(pgid: int) -> Usage:
    """Sum /proc/<pid>/stat and /proc/<pid>/status over the processes of group `pgid`."""
    usage = Usage()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            # The command name is in parentheses and may hold spaces: split after it.
            # Then rest[2] is the process group; rest[11:15] utime, stime, cutime, cstime.
            rest = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            if int(rest[2]) != pgid:
                continue
            cpu_ticks = sum(int(value) for value in rest[11:15])
            status = _status_fields(Path(entry.path, "status").read_text())
        except (OSError, ValueError, IndexError):  # the process ended meanwhile
            continue
        usage.cpu_s += cpu_ticks / CLOCK_TICKS
        usage.rss_mib += _kib(status.get("VmRSS")) / 1024
        usage.hwm_mib = max(usage.hwm_mib, _kib(status.get("VmHWM")) / 1024)
        usage.threads += int(status.get("Threads", "0").strip() or 0)
        usage.processes += 1
    return usage


def _kib(value: str | None) -> float:
    return float(value.split()[0]) if value else 0.0


class Sampler(threading.Thread):
    """Reads the server's group every SAMPLE_EVERY seconds and keeps the peaks."""

    def __init__(self, pgid: int) -> None:
        super().__init__(daemon=True)
        self.pgid = pgid
        self.first = group_usage(pgid)
        self.peak = Usage(**vars(self.first))
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_EVERY):
            self._keep(group_usage(self.pgid))

    def stop(self) -> Usage:
        self.done.set()
        self.join()
        last = group_usage(self.pgid)
        self._keep(last)
        return last

    def _keep(self, usage: Usage) -> None:
        peak = self.peak
        peak.rss_mib = max(peak.rss_mib, usage.rss_mib)
        peak.hwm_mib = max(peak.hwm_mib, usage.hwm_mib)
        peak.threads = max(peak.threads, usage.threads)
        peak.processes = max(peak.processes, usage.processes)


# --- One learner ----------------------------------------------------------------------


@dataclass
class Phase:
    """When the class starts changing inputs, and until when. Set before `go` is."""

    go: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)  # Ctrl-C
    start: float = 0.0
    deadline: float = 0.0


@dataclass
class Learner:
    number: int
    page: str  # stage id
    url_name: str
    opened: threading.Event = field(default_factory=threading.Event)
    open_ms: float | None = None
    widget: str = "-"
    times: list[float] = field(default_factory=list)
    failures: int = 0
    exceptions: int = 0
    problem: str = ""


def learn(learner: Learner, port: int, args: argparse.Namespace, phase: Phase) -> None:
    """A thread's body: open the page, wait for the class to start, then interact."""
    knob = None
    try:
        with Tab.open(port, OPEN_TIMEOUT) as tab:
            knob = open_page(tab, learner)
            learner.opened.set()
            if knob is None:
                return
            tab.timeout = args.timeout
            phase.go.wait()
            interact(tab, knob, learner, args, phase)
    except Exception as error:  # the server closed, a page broke: note it, end the session
        learner.problem = learner.problem or f"{type(error).__name__}: {error}"
        if knob is not None:
            learner.failures += 1
    finally:
        learner.opened.set()


def open_page(tab: Tab, learner: Learner) -> Knob | None:
    """The first run of the learner's page (a student opening the link); None if broken."""
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
             phase: Phase) -> None:
    """Change the widget about every `think` seconds until the deadline.

    A learner waits for the page to update before the next change: a change is sent a
    pause after the previous one was sent, or at once when that rerun took longer."""
    rng = random.Random(learner.number)
    next_send = phase.start + rng.uniform(0, args.think)  # the class does not act in step
    index = 0
    while next_send < phase.deadline:
        if phase.stop.wait(max(0.0, next_send - time.monotonic())):
            return
        sent = time.monotonic()
        index += 1
        value = knob.values[index % 2]  # the first change moves the widget off its value
        run = tab.rerun([knob.state(value)] if knob.widget_id else [])
        record(learner, knob, run, index)
        next_send = sent + args.think * rng.uniform(1 - JITTER, 1 + JITTER)


def record(learner: Learner, knob: Knob, run: RunResult, index: int) -> None:
    if knob.widget_id and not learner.problem and all(
            _widget_id(element) != knob.widget_id for _, element in run.elements):
        learner.problem = f"{knob.description} was gone after change {index}"
    if run.status != FINISHED_OK:
        learner.failures += 1
        return
    learner.exceptions += bool(run.exceptions)
    learner.times.append(run.ms)


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


def run_class(port: int, learners: list[Learner], args: argparse.Namespace,
              phase: Phase, sampler: Sampler) -> tuple[float, Usage, float]:
    """Open every session at once, then let the class interact for args.seconds.

    Returns the opening's wall seconds, the server's usage when the class started, and
    the client's own CPU seconds while it interacted."""
    threads = [threading.Thread(target=learn, args=(learner, port, args, phase), daemon=True)
               for learner in learners]
    opening = time.monotonic()
    for thread in threads:
        thread.start()
    for learner in learners:
        while not learner.opened.wait(0.5):
            pass
    opened_s = time.monotonic() - opening
    at_start = group_usage(sampler.pgid)
    client_start = _own_cpu()
    phase.start = time.monotonic()
    phase.deadline = phase.start + args.seconds
    phase.go.set()
    wait_for(threads, learners, phase)
    time.sleep(max(0.0, phase.deadline - time.monotonic()))  # the whole period, idle or not
    return opened_s, at_start, _own_cpu() - client_start


def wait_for(threads: list[threading.Thread], learners: list[Learner], phase: Phase) -> None:
    """Join the learners, printing a progress line every PROGRESS_EVERY seconds."""
    next_line = phase.start + PROGRESS_EVERY
    for thread in threads:
        while thread.is_alive():
            thread.join(0.5)
            if time.monotonic() >= next_line and time.monotonic() < phase.deadline:
                done = sum(len(learner.times) for learner in learners)
                failed = sum(learner.failures for learner in learners)
                print(f"  {next_line - phase.start:.0f} s: {done} reruns, {failed} failed",
                      flush=True)
                next_line += PROGRESS_EVERY


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


# --- Report ---------------------------------------------------------------------------


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest rank, as rerun_cost.py's p95."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def table_row(name: str, group: list[Learner]) -> tuple[str, ...]:
    times = [ms for learner in group for ms in learner.times]
    widgets = sorted({learner.widget for learner in group if learner.widget != "-"})
    widget = widgets[0] if len(widgets) == 1 else ("(several)" if widgets else "-")
    return (name, str(len(group)), widget, str(len(times)),
            str(sum(learner.failures for learner in group)),
            str(sum(learner.exceptions for learner in group)),
            fmt(statistics.median(times) if times else None), fmt(percentile(times, 0.95)),
            fmt(percentile(times, 0.99)), fmt(max(times) if times else None))


def print_table(rows: list[tuple[str, ...]]) -> None:
    header = ("page", "sessions", "widget changed", "reruns", "fail", "exc", "median ms",
              "p95 ms", "p99 ms", "max ms")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*header))
    print(line.format(*("-" * w for w in widths)))
    for index, row in enumerate(rows):
        if index == len(rows) - 1:
            print(line.format(*("-" * w for w in widths)))
        print(line.format(*row))


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
    print_table([*[row for row in rows if row[1] != "0"], table_row("all", learners)])
    problems: dict[str, list[int]] = {}
    for learner in learners:
        if learner.problem:
            problems.setdefault(f"{learner.page}: {learner.problem}", []).append(learner.number)
    if problems:
        print("\nproblems (sessions):")
        for problem, numbers in problems.items():
            print(f"  {problem} ({len(numbers)}: {', '.join(map(str, numbers[:10]))}"
                  f"{' ...' if len(numbers) > 10 else ''})")


def report_resources(before: Usage, at_start: Usage, after: Usage, peak: Usage,
                     seconds: float, client_cpu: float, sessions: int) -> None:
    cores = len(os.sched_getaffinity(0))
    server_cpu = after.cpu_s - at_start.cpu_s
    growth = peak.rss_mib - before.rss_mib
    print(f"\nserver CPU while the class interacted: {server_cpu:.1f} s in {seconds:.1f} s = "
          f"{server_cpu / seconds:.2f} cores busy of {cores} "
          f"(opening the sessions: {at_start.cpu_s - before.cpu_s:.1f} s)")
    print(f"benchmark's own CPU in that time (client, same machine): {client_cpu:.1f} s = "
          f"{client_cpu / seconds:.2f} cores")
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
    parser.add_argument("--pages", nargs="+", metavar="NAME",
                        help="only these pages: stage ids, url names or files (default: all)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds one rerun may take before its session is dropped (30)")
    args = parser.parse_args(argv)
    args.sessions = min(max(1, args.sessions), MAX_SESSIONS)
    args.seconds = min(max(1.0, args.seconds), MAX_SECONDS)
    args.think = max(MIN_THINK, args.think)
    args.timeout = max(1.0, args.timeout)
    return args


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
    print(f"settings: {plural(args.sessions, 'session')} over {plural(len(pages), 'page')} "
          f"({', '.join(p[0] for p in pages)}), round robin; a change every "
          f"{args.think:g} s +-{JITTER:.0%} each; {args.seconds:g} s; "
          f"rerun timeout {args.timeout:g} s\n", flush=True)
    phase = Phase()
    try:
        with servers("app.py") as (app,):
            warm_up(app.port, pages)
            sampler = Sampler(app.process.pid)  # its own group: start_new_session
            sampler.start()
            opened_s, at_start, client_cpu = run_class(app.port, learners, args, phase,
                                                       sampler)
            seconds = time.monotonic() - phase.start
            after = sampler.stop()
            if app.process.poll() is not None:
                print(f"app server exited:\n{app.tail()}")
    except KeyboardInterrupt:
        phase.stop.set()
        print("\ninterrupted; server stopped")
        return 130
    report(learners, pages, opened_s, seconds)
    report_resources(sampler.first, at_start, after, sampler.peak, seconds, client_cpu,
                     args.sessions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
