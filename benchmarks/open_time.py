"""Page-open time in a real browser, against a one-slider, one-heatmap reference page
measured in the same run; and the first render after the app starts.

Debian's Chromium (/usr/bin/chromium, never a downloaded browser) through Playwright.
An open is timed in the page itself, from the navigation's start to "fully rendered":
connected, the script finished, no element still loading, every Plotly chart drawn.

    .venv/bin/python benchmarks/open_time.py [--runs 5] [--pages softmax qkv]
    .venv/bin/python benchmarks/open_time.py --no-pages        # only the start figures

It prints figures only and exits 0 whatever they are. See README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from rerun_cost import (
    REFERENCE,
    ROOT,
    app_pages,
    fmt,
    free_port,
    machine,
    select,
    servers,
)

# After rerun_cost, which puts the repository on sys.path: the e2e tests' browser set-up.
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, RUN_COMMAND, VIEWPORT
from ui.i18n import catalogue

TARGET_RATIO = 1.5  # issue 10: every stage within 1.5x the reference's open time
OPEN_TIMEOUT_MS = 90_000
START_TIMEOUT_S = 120.0

# Milestones, in ms since the navigation started (performance.now()), kept by a loop
# that runs on every animation frame from before the page's own scripts.
MARKS_SCRIPT = """
(() => {
  const marks = {};
  window.__openMarks = marks;
  const tick = () => {
    const now = performance.now();
    const app = document.querySelector('[data-testid="stApp"]');
    if (app) {
      const connection = app.getAttribute('data-test-connection-state');
      const script = app.getAttribute('data-test-script-state');
      if (marks.connected === undefined && connection === 'CONNECTED') marks.connected = now;
      if (marks.running === undefined && script === 'running') marks.running = now;
      if (marks.running !== undefined && marks.finished === undefined
          && script === 'notRunning') marks.finished = now;
    }
    if (marks.finished === undefined) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})();
"""
# True-ish (the time) once the page is settled: its run finished, nothing still loading
# (Streamlit's skeletons), every Plotly chart drawn. After "Continue" (ui/fold.py): the
# rest of the page is drawn.
SETTLED = """
() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning'
      || document.querySelector('[data-testid="stSkeleton"]')) return false;
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  if (!charts.every(chart => chart.querySelector('.main-svg'))) return false;
  return performance.now();
}
"""
# The open: settled once the page's first script run has finished.
DRAWN = f"""
() => {{
  const marks = window.__openMarks;
  return !!marks && marks.finished !== undefined && ({SETTLED.strip()})();
}}
"""
# What is on the page: the per-page costs a page builder can act on.
CONTENT = """
() => {
  const main = document.querySelector('[data-testid="stMain"]');
  return {
    charts: document.querySelectorAll('[data-testid="stPlotlyChart"]').length,
    formulas: document.querySelectorAll('.katex-display, [data-testid="stLatex"]').length,
    elements: main ? main.querySelectorAll('[data-testid="stElementContainer"]').length : 0,
    screens: main ? main.scrollHeight / window.innerHeight : 0,
  };
}
"""


# The "Continue" button's label as the en-US locale gets it (kit.fold_continue).
CONTINUE_LABEL = re.compile(
    "^" + re.escape(catalogue("en")["kit.fold_continue"].split("{title}")[0]))


@dataclass
class Open:
    ms: float  # navigation start -> fully rendered
    marks: dict[str, float]
    content: dict[str, float]
    ws_kib: float
    continue_ms: float | None = None  # "Continue" pressed -> the rest drawn
    whole: dict[str, float] | None = None  # what is on the page after that


@dataclass
class PageOpens:
    name: str
    url: str
    opens: list[Open] = field(default_factory=list)
    problem: str = ""

    def median(self, pick=lambda o: o.ms) -> float | None:
        values = [pick(o) for o in self.opens if pick(o) is not None]
        return statistics.median(values) if values else None

    def p95(self) -> float | None:
        ordered = sorted(o.ms for o in self.opens)  # nearest rank, as rerun_cost.py's
        return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)] if ordered else None


def press_continue(page, opened: Open) -> None:
    """The learner reads on: press the page's "Continue" button, if it has one, and time
    it until the rest of the page is drawn."""
    button = page.get_by_role("button", name=CONTINUE_LABEL)
    if button.count() == 0:
        return
    before = page.url
    start = float(page.evaluate("() => performance.now()"))
    button.click()
    page.wait_for_function("url => location.href !== url", arg=before, polling="raf",
                           timeout=OPEN_TIMEOUT_MS)  # the rerun has started
    done = page.wait_for_function(SETTLED, polling="raf", timeout=OPEN_TIMEOUT_MS)
    opened.continue_ms = float(done.json_value()) - start
    opened.whole = page.evaluate(CONTENT)


READ_S = [5.0]  # --read: seconds the learner reads the first part before "Continue"


def open_once(browser, url: str, continue_rest: bool = True) -> Open:
    """One learner opening `url` in a new browser context (nothing cached); then, on a
    page whose rest waits for the learner, reading its first part for --read seconds
    and pressing "Continue"."""
    context = browser.new_context(viewport=VIEWPORT, locale="en-US")
    try:
        context.add_init_script(MARKS_SCRIPT)
        page = context.new_page()
        received = [0]
        page.on("websocket", lambda ws: ws.on(
            "framereceived", lambda payload: received.__setitem__(0, received[0] + len(payload))))
        page.goto(url, wait_until="commit", timeout=OPEN_TIMEOUT_MS)
        drawn = page.wait_for_function(DRAWN, polling="raf", timeout=OPEN_TIMEOUT_MS)
        ms = float(drawn.json_value())
        marks = page.evaluate("() => window.__openMarks")
        opened = Open(ms, marks, page.evaluate(CONTENT), received[0] / 1024)
        if continue_rest:
            page.wait_for_timeout(READ_S[0] * 1000)
            press_continue(page, opened)
        return opened
    finally:
        context.close()


def measure_pages(browser, targets: list[PageOpens], runs: int) -> None:
    """Every target once (untimed: caches and lazy imports), then `runs` rounds in a
    shuffled order each, so that a busy moment does not fall on one page only."""
    for target in targets:
        try:
            open_once(browser, target.url)
        except Exception as error:
            target.problem = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    rng = random.Random(0)
    for round_number in range(runs):
        order = [t for t in targets if not t.problem]
        rng.shuffle(order)
        for target in order:
            try:
                target.opens.append(open_once(browser, target.url))
            except Exception as error:
                target.problem = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        print(f"  round {round_number + 1} of {runs} done", flush=True)


def report_pages(targets: list[PageOpens]) -> None:
    reference = targets[0].median()
    header = ("page", "opens", "p50 ms", "p95 ms", "ratio", f"<= {TARGET_RATIO:g}x",
              "connected", "script done", "charts", "formulas", "elements", "screens",
              "ws KiB", "continue ms", "whole: charts", "screens")
    rows = []
    for target in targets:
        median = target.median()
        ratio = median / reference if median and reference else None
        verdict = ("(ref)" if target is targets[0] else "-" if ratio is None
                   else "yes" if ratio <= TARGET_RATIO else "no")
        last = target.opens[-1] if target.opens else None
        rows.append((
            target.name, str(len(target.opens)), fmt(median), fmt(target.p95()),
            "-" if ratio is None else f"{ratio:.2f}", verdict,
            fmt(target.median(lambda o: o.marks.get("connected"))),
            fmt(target.median(lambda o: o.marks.get("finished"))),
            *(str(last.content[key]) if last else "-" for key in
              ("charts", "formulas", "elements")),
            f"{last.content['screens']:.1f}" if last else "-",
            fmt(target.median(lambda o: o.ws_kib)),
            fmt(target.median(lambda o: o.continue_ms)),
            str(last.whole["charts"]) if last and last.whole else "-",
            f"{last.whole['screens']:.1f}" if last and last.whole else "-"))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*header))
    print(line.format(*("-" * w for w in widths)))
    for row in rows:
        print(line.format(*row))
    problems = [t for t in targets if t.problem]
    if problems:
        print("\nproblems:")
        for target in problems:
            print(f"  {target.name}: {target.problem}")


# --- The first learner after a start ---------------------------------------------------


def start_app(port: int, cold: bool, log) -> subprocess.Popen:
    command = [*RUN_COMMAND, "--port", str(port), *(["--cold"] if cold else [])]
    return subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def wait_listening(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise RuntimeError("the app did not listen")


def stop_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


@dataclass
class Start:
    listening_s: float  # from the start to the port accepting connections
    first: Open  # the learner who opened the page at that moment
    first_s: float  # from the start to that learner's drawn page
    second: Open  # a second learner, right after
    late: Open  # on a second start: a learner arriving `arrive_after` seconds in


def first_render(browser, url_name: str, cold: bool, arrive_after: float) -> Start:
    """Start `dev.py run`; a first learner opens `url_name` the moment it listens, a
    second one right after. Start it again; a learner opens the page `arrive_after`
    seconds after the start."""
    opens: list[Open] = []
    for late in (False, True):
        port = free_port()
        with tempfile.TemporaryFile() as log:
            started = time.monotonic()
            process = start_app(port, cold, log)
            try:
                wait_listening(port, process)
                url = f"http://127.0.0.1:{port}/{url_name}"
                if late:
                    time.sleep(max(0.0, started + arrive_after - time.monotonic()))
                    opens.append(open_once(browser, url, continue_rest=False))
                    continue
                listening = time.monotonic() - started
                opens.append(open_once(browser, url, continue_rest=False))
                first_s = time.monotonic() - started
                opens.append(open_once(browser, url, continue_rest=False))
            finally:
                stop_group(process)
    return Start(listening, opens[0], first_s, opens[1], opens[2])


def report_start(browser, url_name: str, rounds: int, arrive_after: float) -> None:
    print(f"\nfirst render after a start ({' '.join(RUN_COMMAND[1:])}, page /{url_name}, "
          "browser already running), in seconds:")
    results: dict[bool, list[Start]] = {True: [], False: []}
    for _ in range(rounds):  # cold and warm in turn: a busy spell hits both
        for cold in (True, False):
            results[cold].append(first_render(browser, url_name, cold, arrive_after))
    for cold in (True, False):
        print(f"  {'cold (--cold)' if cold else 'warm (default)'}:")
        for start in results[cold]:
            marks = start.first.marks
            print(f"    listening after {start.listening_s:.1f}; the learner who opened then: "
                  f"connected +{marks.get('connected', 0) / 1000:.1f}, script done "
                  f"+{marks.get('finished', 0) / 1000:.1f}, drawn +{start.first.ms / 1000:.1f}"
                  f" = {start.first_s:.1f} after the start; a second learner right after: "
                  f"{start.second.ms / 1000:.1f}; a learner arriving {arrive_after:g} s "
                  f"after a start: {start.late.ms / 1000:.1f}", flush=True)


# --- Main -----------------------------------------------------------------------------


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed opens per page (5)")
    parser.add_argument("--pages", nargs="+", metavar="NAME",
                        help="stage ids, url names or files (default: every page)")
    parser.add_argument("--no-pages", action="store_true", help="skip the page opens")
    parser.add_argument("--start-rounds", type=int, default=1,
                        help="starts of each kind for the first-render figures (1; 0 skips)")
    parser.add_argument("--arrive-after", type=float, default=15.0,
                        help="seconds after a start that the late learner arrives (15)")
    parser.add_argument("--read", type=float, default=5.0,
                        help="seconds a learner reads the first part before pressing "
                             "Continue (5; 0: at once, as the figures before 2026-12-02)")
    parser.add_argument("--start-page", default="softmax",
                        help="stage id opened after a start (softmax, else the first stage)")
    args = parser.parse_args(argv)
    args.runs = min(max(1, args.runs), 100)
    READ_S[0] = min(max(0.0, args.read), 60.0)
    args.start_rounds = min(max(0, args.start_rounds), 10)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: install Debian's chromium package")
        return 0
    from playwright.sync_api import sync_playwright

    print(machine())
    pages = select(app_pages(), args.pages)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                 args=CHROMIUM_ARGS)
            try:
                if not args.no_pages and pages:
                    run_pages(browser, pages, args.runs)
                if args.start_rounds:
                    chosen = select(app_pages(), [args.start_page]) or app_pages()[1:2]
                    report_start(browser, chosen[0][2] if chosen else "", args.start_rounds,
                                 args.arrive_after)
            finally:
                browser.close()
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped")
        return 130
    return 0


def run_pages(browser, pages: list[tuple[str, str, str]], runs: int) -> None:
    print(f"page opens: a new browser context each (nothing cached, as a learner's first "
          f"visit); {runs} timed opens per page after one untimed, rounds shuffled\n",
          flush=True)
    with servers("app.py", REFERENCE) as (app, reference):
        targets = [PageOpens("reference", f"http://127.0.0.1:{reference.port}/")]
        targets += [PageOpens(stage_id, f"http://127.0.0.1:{app.port}/{url_name}")
                    for stage_id, _path, url_name in pages]
        # A plain `streamlit run` learns that app.py navigates from its first run: a deep
        # link as the server's first request would run that page without the frame.
        open_once(browser, f"http://127.0.0.1:{app.port}/", continue_rest=False)
        measure_pages(browser, targets, runs)
    print(f"\ntarget: a page's p50 <= {TARGET_RATIO:g}x the reference's (printed, never "
          "enforced); connected / script done: medians in ms since the navigation "
          "started; charts, formulas, elements, screens (page height / window height): "
          "the last open's; ws KiB: Streamlit's messages for the open; continue ms: the "
          f"learner reads the first part for {READ_S[0]:g} s, then presses Continue "
          "(ui/fold.py), until the rest is drawn (median), and what the whole page holds\n")
    report_pages(targets)


if __name__ == "__main__":
    sys.exit(main())
