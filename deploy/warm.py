"""Warm a Streamlit server before the first learner arrives: import the heavy
libraries, then run every page once through the server's own websocket.

A first script run pays for importing torch, pandas, plotly's figure classes and the
project, and for filling the pages' caches: seconds that the first learner after a
start would otherwise wait. `deploy.serve` calls `warm` on a background thread of the
server process itself, so the imports and caches are that process's own.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from deploy.stream import open_stream, receive, rerun_message

ROOT = Path(__file__).resolve().parent.parent
# Libraries that the pages import and that import nothing of Streamlit (importing
# Streamlit-based modules here could read its configuration before the command line
# has set it). The pages' own runs import the rest.
HEAVY = ("numpy", "torch", "pandas", "plotly.graph_objects", "tinyformer")
START_TIMEOUT_S = 120.0  # the server must answer its health check within this
RUN_TIMEOUT_S = 120.0  # one page's first run
LEAVE_S = 1.0  # how long the server may take to notice the warm-up's session has left
GIVE_WAY_S = 3.0  # with a learner connected, this pause before each page's warm-up run
LOCALE = "en-US"


@dataclass(frozen=True)
class PageRun:
    page: str  # url name; "" is the overview
    query: str
    seconds: float
    ok: bool
    note: str = ""
    server_gone: bool = False  # refused, or closed as the server stops


def import_heavy(modules: Iterable[str] = HEAVY) -> list[str]:
    """Import the libraries and every module of the tinyformer package; returns the
    names that failed (a module mid-edit must not stop the server)."""
    failed = []
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception:
            failed.append(name)
            continue
        if name == "tinyformer":
            for info in pkgutil.walk_packages(module.__path__, "tinyformer."):
                if info.name.endswith("__main__") or info.name == "tinyformer.lessons.train":
                    continue  # entry points, not libraries
                try:
                    importlib.import_module(info.name)
                except Exception:
                    failed.append(info.name)
    return failed


def client_host(address: str) -> str:
    """Where to reach a server bound to `address` from the same machine."""
    if address in ("", "0.0.0.0", "::", "[::]"):
        return "127.0.0.1"
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def wait_healthy(host: str, port: int, alive: Callable[[], bool] = lambda: True,
                 timeout: float = START_TIMEOUT_S) -> bool:
    """Poll /_stcore/health until it says ok; False on timeout or when `alive` fails."""
    deadline = time.monotonic() + timeout
    url = f"http://{host}:{port}/_stcore/health"
    while time.monotonic() < deadline and alive():
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as reply:
            if reply.status == 200:
                return True
        time.sleep(0.1)
    return False


def page_names() -> list[str]:
    """The url name of every page, the overview ("") first, as Streamlit names them."""
    from streamlit.source_util import page_icon_and_name

    from ui.stages import HOME, all_pages

    return ["" if stage == HOME else page_icon_and_name(Path(stage.path))[1]
            for stage in all_pages()]


def run_page(host: str, port: int, page: str, query: str = "",
             timeout: float = RUN_TIMEOUT_S) -> PageRun:
    """Open one session on `page` the way a browser tab does and wait for its first run
    to finish. Never raises: a broken page is reported, not fatal."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    message = rerun_message(host, port, page_name=page, query=query, locale=LOCALE)
    started = time.monotonic()
    exceptions = 0
    try:
        with open_stream(host, port, timeout) as socket:
            socket.send(message.SerializeToString())
            while True:
                forward = receive(socket, timeout)
                kind = forward.WhichOneof("type")
                if (kind == "delta" and forward.delta.WhichOneof("type") == "new_element"
                        and forward.delta.new_element.WhichOneof("type") == "exception"):
                    exceptions += 1
                elif kind == "script_finished":
                    ok = (forward.script_finished
                          == ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY)
                    note = "" if ok else f"status {forward.script_finished}"
                    if exceptions:
                        ok, note = False, f"{exceptions} exception(s) on the page"
                    return PageRun(page, query, time.monotonic() - started, ok, note)
    except Exception as error:
        gone = isinstance(error, ConnectionRefusedError) or "1012" in str(error)
        return PageRun(page, query, time.monotonic() - started, False,
                       f"{type(error).__name__}: {error}", gone)


def sessions_connected() -> bool:
    """Whether Streamlit's runtime in this process has a session connected.

    Streamlit has no public way to ask this; its runtime's state is private and may
    change with any release. This function is the only place that reads it, and
    tests/unit/test_warm.py fails loudly when Streamlit changes it. False outside a
    server (no runtime)."""
    from streamlit.runtime import Runtime, RuntimeState

    return Runtime.exists() and (
        Runtime.instance().state == RuntimeState.ONE_OR_MORE_SESSIONS_CONNECTED)


def learner_connected(wait: float = LEAVE_S) -> bool:
    """Whether someone else has a session open in this process: Streamlit's runtime
    still counts a connected session `wait` seconds after the warm-up's own left.
    If Streamlit changed its private state, the warm-up says so once and never
    gives way (it only warms caches; learners are served either way)."""
    deadline = time.monotonic() + wait
    try:
        while sessions_connected():
            if time.monotonic() >= deadline:
                return True
            time.sleep(0.05)
    except (ImportError, AttributeError) as error:
        if not _CHANGED:
            _CHANGED.append(error)
            print(f"tinyformer warm-up: cannot tell whether learners are connected "
                  f"(Streamlit changed: {type(error).__name__}: {error})", file=sys.stderr,
                  flush=True)
    return False


_CHANGED: list[BaseException] = []  # the error, once seen


def warm(address: str, port: int, alive: Callable[[], bool] = lambda: True,
         ready_file: Path | None = None, log: Callable[[str], None] | None = None) -> bool:
    """Import, wait for the server, run every page once (and the overview in Chinese
    too: the other language's catalogue), then write `ready_file`. True when the
    server answered; page failures are logged, not raised.

    The imports serve everyone; the page runs only warm caches, so once a learner is
    connected they give way: a pause before each, so that a learner who arrives early
    competes with at most one short page run."""
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    started = time.monotonic()
    failed = import_heavy()
    imported = time.monotonic() - started
    host = client_host(address)
    if not wait_healthy(host, port, alive):
        log("tinyformer warm-up: the server did not answer its health check; not warmed")
        return False
    try:
        pages = [(name, "") for name in page_names()] + [("", "lang=zh")]
    except Exception as error:  # ui mid-edit: the server still serves
        log(f"tinyformer warm-up: no page list ({type(error).__name__}: {error})")
        pages = [("", "")]
    runs, gave_way = [], 0
    for name, query in pages:
        if learner_connected():
            gave_way += 1
            time.sleep(GIVE_WAY_S)
        runs.append(run_page(host, port, name, query))
        if runs[-1].server_gone:
            log("tinyformer warm-up: the server stopped; warm-up abandoned")
            return False
    broken = [f"/{run.page}?{run.query} ({run.note})" for run in runs if not run.ok]
    if ready_file is not None:
        ready_file.write_text(f"{time.monotonic() - started:.2f}\n")
    log(f"tinyformer warm-up: {time.monotonic() - started:.1f} s (imports {imported:.1f} s, "
        f"{len(runs)} page runs {sum(run.seconds for run in runs):.1f} s)"
        + (f"; gave way to learners before {gave_way}" if gave_way else "")
        + (f"; could not import {', '.join(failed)}" if failed else "")
        + (f"; pages with problems: {'; '.join(broken)}" if broken else ""))
    return True
