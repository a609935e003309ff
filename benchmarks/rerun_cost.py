"""Rerun cost of every page, against a one-slider, one-heatmap reference page.

Starts two Streamlit servers from the repository root (the app, and
benchmarks/reference_page.py), then talks to each over its websocket the way a
browser does: Streamlit's own protobuf messages on /_stcore/stream. For every page it
opens a session and times, again and again, "send a rerun" -> "script_finished
arrives", in two kinds, reported apart:

- section: a rerun that changes the page's first input; where that input is drawn in a
  section (st.fragment, ui.page.part) the rerun names the fragment and that section
  reruns alone, as in a browser;
- full: a full run of the whole page, the rerun a page open, a link, Continue, a
  page-wide input or the language switch causes: no fragment id, the whole script, with
  the page's rest open (`<stage>.more=true` in the query string).

Reruns are spaced as learners act: --pause ms (default 250) between the end of one rerun
and the next request. Sent back to back (--pause 0), a rerun waits in the server before
it starts (about 35 ms on the 2-core machine), the same on every page and on the
reference, which pulls every ratio towards 1: that was the old "40 ms floor".

It prints figures and a verdict against the target (median <= --target x the
reference's median, same run, same method); it never fails on a missed target. See
README.md.

    .venv/bin/python benchmarks/rerun_cost.py [--runs 30] [--warmup 5] [--pause 250]
        [--kinds full section] [--pages softmax home] [--root /tmp/before]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import math
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = "benchmarks/reference_page.py"
TARGET_RATIO = 2.0
KINDS = ("section", "full")
MAIN_CONTAINER = 0  # RootContainer.MAIN; the sidebar (1) is the same on every page

sys.path.insert(0, str(ROOT))

from streamlit.proto.Element_pb2 import Element  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.Slider_pb2 import Slider  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402
from streamlit.source_util import page_icon_and_name  # noqa: E402
from websockets.sync.client import ClientConnection  # noqa: E402

from deploy.stream import open_stream, receive, rerun_message  # noqa: E402

FINISHED_OK = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY
FRAGMENT_OK = ForwardMsg.ScriptFinishedStatus.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
# Reruns sent as the browser sends them: with a fragment's id (that section reruns alone)
# or without (the whole page runs). Printed at the end.
SENT = {"fragment": 0, "full": 0}


# --- Servers -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    script: str
    port: int
    process: subprocess.Popen
    log: Any  # the temporary file that holds the server's output

    def tail(self, lines: int = 15) -> str:
        self.log.flush()
        text = Path(self.log.name).read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def start_server(script: str, log: Any, root: Path = ROOT) -> Server:
    """`python -m streamlit run <script>` in its own process group, from `root` (the
    repository root, or another checkout of it with --root)."""
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
               "--server.address", "127.0.0.1"]
    process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    return Server(script, port, process, log)


def wait_healthy(server: Server, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{server.port}/_stcore/health"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server for {server.script} exited:\n{server.tail()}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"server for {server.script} not healthy after {timeout:.0f} s")


def stop_servers(started: list[Server], grace: float = 8.0) -> None:
    """SIGTERM every process group, then SIGKILL what is left after `grace` seconds."""
    running = [server for server in started if server.process.poll() is None]
    for server in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for server in running:
        try:
            server.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=5)


@contextlib.contextmanager
def servers(*scripts: str, roots: dict[str, Path] | None = None) -> Iterator[list[Server]]:
    started: list[Server] = []
    with contextlib.ExitStack() as logs:
        try:
            for script in scripts:
                log = logs.enter_context(tempfile.NamedTemporaryFile(
                    "w+", prefix="bench-server-", suffix=".log"))
                started.append(start_server(script, log, (roots or {}).get(script, ROOT)))
            for server in started:
                wait_healthy(server)
            yield started
        finally:
            stop_servers(started)


# --- One browser tab ------------------------------------------------------------------


@dataclass
class RunResult:
    ms: float
    status: int
    elements: list[tuple[tuple[int, ...], Element]]
    exceptions: list[str]
    page_script_hash: str | None = None  # from navigation, else new_session
    url_pathname: str | None = None  # of that page, from navigation
    query_string: str | None = None  # from page_info_changed
    page_not_found: bool = False


class Tab:
    """A websocket session that speaks like Streamlit's frontend."""

    def __init__(self, socket: ClientConnection, port: int, timeout: float) -> None:
        self.socket = socket
        self.port = port
        self.timeout = timeout
        self.page_script_hash = ""
        self.query_string = ""
        self.fragment_of: dict[str, str] = {}  # widget id -> the fragment that drew it

    @classmethod
    @contextlib.contextmanager
    def open(cls, port: int, timeout: float) -> Iterator[Tab]:
        with open_stream("127.0.0.1", port, timeout) as socket:
            yield cls(socket, port, timeout)

    def rerun(self, widgets: list[WidgetState], page_name: str = "") -> RunResult:
        """Send rerun_script and read ForwardMsgs until script_finished."""
        # Streamlit's frontend names the fragment (st.fragment; ui.page.part) that drew
        # the changed widget, and the server then reruns that fragment alone.
        fragment = self.fragment_of.get(widgets[0].id, "") if len(widgets) == 1 else ""
        SENT["fragment" if fragment else "full"] += 1
        msg = rerun_message("127.0.0.1", self.port, page_name=page_name,
                            query=self.query_string, page_script_hash=self.page_script_hash,
                            widgets=widgets, fragment_id=fragment)
        payload = msg.SerializeToString()

        elements: list[tuple[tuple[int, ...], Element]] = []
        result = RunResult(0.0, -1, elements, [])
        start = time.perf_counter()
        self.socket.send(payload)
        while True:
            forward = receive(self.socket, self.timeout)
            kind = forward.WhichOneof("type")
            if kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                path = tuple(forward.metadata.delta_path)
                element = forward.delta.new_element
                elements.append((path, element))
                if widget := _widget_id(element):
                    self.fragment_of[widget] = forward.delta.fragment_id
                if element.WhichOneof("type") == "exception":
                    result.exceptions.append(element.exception.type or "exception")
            elif kind == "new_session":
                result.page_script_hash = result.page_script_hash or (
                    forward.new_session.page_script_hash)
            elif kind == "navigation":
                # A pages/ folder runs as st.navigation: new_session names the entry
                # point, this message names the page actually shown.
                nav = forward.navigation
                result.page_script_hash = nav.page_script_hash
                result.url_pathname = next((p.url_pathname for p in nav.app_pages
                                            if p.page_script_hash == nav.page_script_hash), None)
            elif kind == "page_info_changed":
                result.query_string = forward.page_info_changed.query_string
            elif kind == "page_not_found":
                result.page_not_found = True
            elif kind == "script_finished":
                result.ms = (time.perf_counter() - start) * 1000
                # A fragment's successful run counts as a successful rerun.
                status = forward.script_finished
                result.status = FINISHED_OK if status == FRAGMENT_OK else status
                break
        # What the browser does next: keep the page and the URL it was given.
        if result.page_script_hash:
            self.page_script_hash = result.page_script_hash
        if result.query_string is not None:
            self.query_string = result.query_string
        return result


# --- The widget to change -------------------------------------------------------------


@dataclass
class Knob:
    """One input widget and two valid values to alternate between."""

    widget_id: str
    description: str
    state: Callable[[Any], WidgetState]
    values: tuple[Any, Any]


# A page without an input widget (the overview) gets the rerun the browser sends on
# "R" or a language switch: no widget changes.
PLAIN = Knob("", "- (plain rerun)", lambda _: WidgetState(), (None, None))


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _state(widget_id: str, **value: Any) -> WidgetState:
    state = WidgetState(id=widget_id)
    for name, content in value.items():
        if name.endswith("array_value"):
            getattr(state, name).data.extend(content)
        else:
            setattr(state, name, content)
    return state


def _step_within(value: float, step: float, high: float) -> float:
    """One step up, or down where up would pass the maximum."""
    up = value + step
    return up if up <= high + 1e-9 else value - step


def _slider_knob(proto: Slider) -> Knob:
    current = list(proto.value if proto.set_value and proto.value else proto.default)
    name = f"slider '{proto.label}'"
    if proto.type == Slider.Type.SELECT_SLIDER:
        options = list(proto.options)
        index = int(current[0])
        other = index + 1 if index + 1 < len(options) else index - 1
        first, second = list(current), list(current)
        second[0] = other
        if len(second) == 2 and second[0] > second[1]:
            second[0] = index - 1
        return Knob(proto.id, f"select_{name}",
                    lambda v: _state(proto.id, string_array_value=[options[int(i)] for i in v]),
                    (first, second))
    step = proto.step or 1.0
    high = current[1] if len(current) == 2 else proto.max
    second = list(current)
    second[0] = _step_within(current[0], step, high)
    return Knob(proto.id, name, lambda v: _state(proto.id, double_array_value=v),
                (current, second))


def _text_knob(widget_id: str, label: str, text: str) -> Knob:
    """Perturb the first number (a matrix '1, 0; 0, 1'); else swap the first two words."""
    match = _NUMBER.search(text)
    if match is not None:
        number = float(match.group())
        changed = text[: match.start()] + f"{number + 0.5:g}" + text[match.end():]
    elif len(words := text.split()) >= 2:
        changed = " ".join([words[1], words[0], *words[2:]])
    elif len(text) >= 2:
        changed = text[1] + text[0] + text[2:]
    else:
        changed = text + "a"
    return Knob(widget_id, f"text_input '{label}'",
                lambda v: _state(widget_id, string_value=v), (text, changed))


def _widget_id(element: Element) -> str | None:
    kind = element.WhichOneof("type")
    return getattr(getattr(element, kind), "id", None) if kind else None


def find_knob(elements: list[tuple[tuple[int, ...], Element]],
              prefer: str | None = None) -> Knob | None:
    """The first slider in the main area, else number input, else text input, else
    checkbox or toggle; with `prefer`, the first of these whose widget key (the end of
    its id) or label contains it."""
    main = [e for path, e in elements if path and path[0] == MAIN_CONTAINER]
    if prefer:
        main = [e for e in main if prefer in (_widget_id(e) or "")
                or prefer in getattr(getattr(e, e.WhichOneof("type") or "", None), "label", "")]
    by_kind: dict[str, Element] = {}
    for element in main:
        by_kind.setdefault(element.WhichOneof("type"), element)
    if (element := by_kind.get("slider")) is not None:
        return _slider_knob(element.slider)
    if (element := by_kind.get("number_input")) is not None:
        proto = element.number_input
        value = proto.value if proto.set_value else proto.default
        high = proto.max if proto.has_max else math.inf
        other = _step_within(value, proto.step or 1.0, high)
        return Knob(proto.id, f"number_input '{proto.label}'",
                    lambda v: _state(proto.id, double_value=v), (value, other))
    if (element := by_kind.get("text_input")) is not None:
        proto = element.text_input
        text = proto.value if proto.set_value else proto.default
        return _text_knob(proto.id, proto.label, text)
    if (element := by_kind.get("checkbox")) is not None:
        proto = element.checkbox
        value = proto.value if proto.set_value else proto.default
        return Knob(proto.id, f"checkbox '{proto.label}'",
                    lambda v: _state(proto.id, bool_value=v), (value, not value))
    return None


# --- Measuring ------------------------------------------------------------------------


@dataclass
class Measurement:
    page: str
    widget: str = "-"
    times: list[float] = field(default_factory=list)
    failures: int = 0
    exceptions: int = 0
    open_ms: float | None = None
    problem: str = ""
    cpu_ms: float | None = None  # the server's CPU per timed rerun
    kind: str = "section"  # "section": the page's first input; "full": whole page, no fragment
    fragment_runs: int = 0  # timed reruns sent with a fragment id (a section alone)
    paired: list[float] = field(default_factory=list)  # --paired: the reference's, alternated

    @property
    def paired_median(self) -> float | None:
        return statistics.median(self.paired) if self.paired else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def p95(self) -> float | None:
        if not self.times:
            return None
        ordered = sorted(self.times)
        return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def measure(port: int, page: str, url_name: str, args: argparse.Namespace,
            kind: str = "section") -> Measurement:
    """One new session on the page, then its reruns of `kind` ("section": change the
    page's first input; "full": a whole-page rerun without a fragment id)."""
    result = Measurement(page, kind=kind)
    try:
        with Tab.open(port, args.timeout) as tab, contextlib.ExitStack() as stack:
            paired = None
            if getattr(args, "reference_port", None):  # --paired
                paired = _Paired(stack.enter_context(Tab.open(args.reference_port,
                                                              args.timeout)))
            _measure(tab, url_name, args, result, paired)
    except Exception as error:  # a broken page must not stop the others
        result.problem = f"{type(error).__name__}: {error}"
    return result


class _Paired:
    """--paired: a session on the reference page whose slider changes once after every
    timed rerun of the page, so the page and the reference are timed in the same minutes
    (this machine's speed drifts by up to 2x within minutes)."""

    def __init__(self, tab: Tab) -> None:
        self.tab = tab
        first = tab.rerun([])
        self.knob = find_knob(first.elements, None) or PLAIN
        self.index = 0

    def rerun(self) -> RunResult:
        self.index += 1
        value = self.knob.values[self.index % 2]
        return self.tab.rerun([self.knob.state(value)] if self.knob.widget_id else [])


def _measure(tab: Tab, url_name: str, args: argparse.Namespace, result: Measurement,
             paired: _Paired | None = None) -> None:
    pause = max(0.0, getattr(args, "pause", 0.0)) / 1000
    tab.query_string = whole_page_query(result.page)
    first = tab.rerun([], page_name=url_name)
    result.open_ms = first.ms
    if first.page_not_found or (first.url_pathname or "") != url_name:
        result.problem = f"asked for page '{url_name}', the server ran '{first.url_pathname}'"
        return
    if first.status != FINISHED_OK or first.exceptions:
        result.problem = f"first run: status {first.status}, exceptions {first.exceptions}"
        return
    cpu_start = None
    knob = PLAIN if result.kind == "full" else (
        find_knob(first.elements, args.knobs.get(result.page)) or PLAIN)
    result.widget = knob.description
    cpu_used = 0.0
    for index in range(args.warmup + args.runs):
        # As learners act: a pause between one rerun's end and the next request.
        time.sleep(pause)
        cpu_start = _cpu_seconds(args.server_pid) if index >= args.warmup else None
        value = knob.values[(index + 1) % 2]  # the first rerun changes the widget
        sent_before = SENT["fragment"]
        run = tab.rerun([knob.state(value)] if knob.widget_id else [])
        if cpu_start is not None and (end := _cpu_seconds(args.server_pid)) is not None:
            cpu_used += end - cpu_start  # the server's CPU during this rerun, not the pause
        if index >= args.warmup:
            result.fragment_runs += SENT["fragment"] - sent_before
        if knob.widget_id and not result.problem and all(
                _widget_id(e) != knob.widget_id for _, e in run.elements):
            result.problem = f"{knob.description} was gone after rerun {index + 1}"
        if paired is not None:
            time.sleep(pause)
            reference = paired.rerun()
            if index >= args.warmup and reference.status == FINISHED_OK:
                result.paired.append(reference.ms)
        if index < args.warmup:
            continue
        if run.status != FINISHED_OK:
            result.failures += 1
            continue
        result.exceptions += bool(run.exceptions)
        result.times.append(run.ms)
    if args.runs and args.server_pid is not None:
        result.cpu_ms = 1000 * cpu_used / args.runs


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of the server process so far (Linux /proc), in seconds."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


# --- Pages and report -----------------------------------------------------------------


def app_pages() -> list[tuple[str, str, str]]:
    """(stage id, file, url name) for every page of the app, the overview first."""
    from ui.stages import HOME, all_pages

    pages = []
    for stage in all_pages():
        url_name = "" if stage == HOME else page_icon_and_name(Path(stage.path))[1]
        pages.append((stage.id, stage.path, url_name))
    return pages


def whole_page_query(stage_id: str) -> str:
    """The query string that opens a stage whole, as after its "Continue" button
    (ui/fold.py): the benchmarks measure every section of a page, not only its first
    part, so that their figures stay comparable with those taken before the fold."""
    from ui.fold import NAME, OPEN
    from ui.stages import STAGES

    return f"{stage_id}.{NAME}={OPEN}" if stage_id in {s.id for s in STAGES} else ""


def select(pages: list[tuple[str, str, str]], wanted: list[str] | None):
    if not wanted:
        return pages
    names = {w.strip() for item in wanted for w in item.split(",") if w.strip()}
    chosen = [p for p in pages if names & {p[0], p[1], p[2], Path(p[1]).stem}]
    unknown = names - {n for p in chosen for n in (p[0], p[1], p[2], Path(p[1]).stem)}
    if unknown:
        print(f"unknown pages ignored: {', '.join(sorted(unknown))}; "
              f"known: {', '.join(p[0] for p in pages)}")
    return chosen


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    return (f"machine: {platform.system()} {platform.release()}, {cpu}, "
            f"{os.cpu_count()} cores ({usable} usable)\n"
            f"python {platform.python_version()}, torch {version('torch')}, "
            f"streamlit {version('streamlit')}, plotly {version('plotly')}, "
            f"websockets {version('websockets')}")


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def report(reference: Measurement, results: list[Measurement],
           target: float = TARGET_RATIO) -> None:
    base = reference.median
    paired = any(item.paired for item in results)
    header = ("page", "rerun sent", "open ms", "median ms", "p95 ms", "server CPU ms",
              *(("paired ref ms",) if paired else ()), "ratio", f"<= {target:g}x", "fail",
              "exc")
    rows = []
    for item in [reference, *results]:
        median = item.median
        against = item.paired_median if paired and item is not reference else base
        ratio = median / against if median is not None and against else None
        verdict = "-" if ratio is None else ("yes" if ratio <= target else "no")
        if item is reference:
            verdict = "(ref)"
        sent = item.widget
        if item is not reference and item.kind == "section" and item.times:
            sent += (" (section alone)" if item.fragment_runs == len(item.times) + item.failures
                     else " (whole page)" if item.fragment_runs == 0 else " (mixed)")
        rows.append((item.page, sent, fmt(item.open_ms), fmt(median), fmt(item.p95),
                     fmt(item.cpu_ms),
                     *((fmt(item.paired_median if item is not reference else base),)
                       if paired else ()),
                     "-" if ratio is None else f"{ratio:.2f}", verdict,
                     str(item.failures),
                     str(item.exceptions)))
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*header))
    print(line.format(*("-" * w for w in widths)))
    for row in rows:
        print(line.format(*row))
    problems = [item for item in [reference, *results] if item.problem]
    if problems:
        print("\nproblems:")
        for item in problems:
            print(f"  {item.page}: {item.problem}")


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends like Ctrl-C, so the servers are stopped either way."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed reruns a page (30)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed reruns first (5)")
    parser.add_argument("--pages", nargs="+", metavar="NAME",
                        help="stage ids, url names or files (default: every page)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for one rerun before calling a page broken")
    parser.add_argument("--pause", type=float, default=250.0, metavar="MS",
                        help="ms between the end of one rerun and the next request, as "
                             "learners act (250; 0: back to back)")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS),
                        help="section: change the page's first input (its section alone "
                             "where it is in one); full: a whole-page rerun, no fragment "
                             "id, the page's rest open (default: both, reported apart)")
    parser.add_argument("--target", type=float, default=TARGET_RATIO,
                        help=f"ratio to the reference printed as yes/no ({TARGET_RATIO:g})")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="serve app.py from this checkout (another commit's worktree, "
                             "same .venv); the reference page stays this one's")
    parser.add_argument("--paired", action="store_true",
                        help="time the reference after every rerun of each page, and give "
                             "each page's ratio against those (for a machine whose speed "
                             "drifts within minutes)")
    parser.add_argument("--knob", action="append", default=[], metavar="PAGE=TEXT",
                        help="change, on PAGE, the first input whose key or label contains "
                             "TEXT (default: the page's first input); repeatable")
    args = parser.parse_args(argv)
    args.knobs = dict(item.split("=", 1) for item in args.knob)
    args.server_pid = None
    args.runs = max(1, args.runs)
    args.warmup = max(0, args.warmup)

    signal.signal(signal.SIGTERM, _interrupt)
    print(machine())
    root = args.root.resolve()
    if root != ROOT:  # another checkout's pages (its ui.stages), this one's client
        sys.path.insert(0, str(root))
        print(f"app served from {root} (commit {_commit(root)}); reference from {ROOT}")
    pages = select(app_pages(), args.pages)
    if not pages:
        print("no page to measure")
        return 0
    print(f"pages: {', '.join(p[0] for p in pages) or 'none'}; {args.warmup} warm-up + "
          f"{args.runs} timed reruns each, kinds: {', '.join(args.kinds)}")
    print(f"spacing: {args.pause:g} ms between the end of one rerun and the next request"
          + (" (as learners act)" if args.pause > 0 else
             " (back to back: every rerun also pays the server's wait after the last)"))
    print("reference: its slider changed (its script has no fragment: a full run of it)\n")
    started = time.monotonic()
    results: dict[str, list[Measurement]] = {kind: [] for kind in args.kinds}
    try:
        with servers("app.py", REFERENCE, roots={"app.py": root}) as (app, reference_server):
            # A first session pays for the app's imports (torch...); not measured.
            warm = measure(app.port, "warm-up", "", argparse.Namespace(
                timeout=max(args.timeout, 120.0), runs=0, warmup=0, knobs={},
                server_pid=None))
            print(f"  app server warm-up (first session, imports): {fmt(warm.open_ms)} ms",
                  flush=True)
            # The reference before and after the pages: drift shows as a difference.
            args.server_pid = reference_server.process.pid
            before = measure(reference_server.port, "reference", "", args)
            args.reference_port = reference_server.port if args.paired else None
            for stage_id, path, url_name in pages:
                print(f"  measuring {stage_id} ({path}) ...", flush=True)
                args.server_pid = app.process.pid
                for kind in args.kinds:
                    results[kind].append(measure(app.port, stage_id, url_name, args, kind))
                if app.process.poll() is not None:
                    print(f"app server exited:\n{app.tail()}")
                    break
            args.server_pid = reference_server.process.pid
            args.reference_port = None
            after = measure(reference_server.port, "reference", "", args)
    except KeyboardInterrupt:
        print("\ninterrupted; servers stopped")
        return 130
    cpus = [m.cpu_ms for m in (before, after) if m.cpu_ms is not None]
    reference = Measurement("reference", before.widget, before.times + after.times,
                            before.failures + after.failures,
                            before.exceptions + after.exceptions, before.open_ms,
                            before.problem or after.problem,
                            sum(cpus) / len(cpus) if cpus else None)
    print(f"\nreference median: {fmt(before.median)} ms before the pages, "
          f"{fmt(after.median)} ms after; "
          + ("each page's ratio uses the reference reruns alternated with its own (--paired)."
             if args.paired else "the ratio uses both together."))
    print(f"target: a page's median rerun <= {args.target:g}x the reference's "
          "(yes/no below; printed, never enforced)")
    titles = {"section": "SECTION reruns: the page's first input changed (a section alone "
                         "where the input is inside one, as in a browser)",
              "full": "FULL runs of the whole page: no fragment id, the page's rest open "
                      "(a page open, link, Continue, page-wide input, language switch)"}
    for kind in args.kinds:
        print(f"\n{titles[kind]}, {args.pause:g} ms apart\n")
        report(reference, results[kind], args.target)
    medians = {kind: [m.median for m in results[kind] if m.median is not None]
               for kind in args.kinds}
    for kind, values in medians.items():
        if values and reference.median:
            ratios = sorted(m.median / (m.paired_median if args.paired and m.paired
                                        else reference.median)
                            for m in results[kind] if m.median is not None)
            print(f"{kind}: median page {statistics.median(values):.1f} ms, ratio "
                  f"{ratios[0]:.1f}-{ratios[-1]:.1f}x, median {statistics.median(ratios):.1f}x")
    print(f"\nreruns sent with a fragment id (a section alone): {SENT['fragment']}, "
          f"as whole-page runs: {SENT['full']}")
    print(f"total {time.monotonic() - started:.0f} s")
    return 0


def _commit(root: Path) -> str:
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    return "?"

if __name__ == "__main__":
    sys.exit(main())
