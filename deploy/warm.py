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
            for info in pkgutil.iter_modules(module.__path__, "tinyformer."):
                if info.name.endswith("__main__") or info.name == "tinyformer.train":
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
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect

    message = BackMsg()
    rerun = message.rerun_script
    rerun.page_name, rerun.query_string = page, query
    rerun.context_info.locale, rerun.context_info.timezone = LOCALE, "UTC"
    rerun.context_info.url = f"http://{host}:{port}/{page}"
    started = time.monotonic()
    exceptions = 0
    try:
        # No Origin header: the server skips its XSRF check, which guards only auth
        # cookies (none here); a browser sends both.
        with connect(f"ws://{host}:{port}/_stcore/stream",
                     subprotocols=["streamlit"],  # type: ignore[list-item]
                     open_timeout=timeout, close_timeout=2, max_size=None) as socket:
            socket.send(message.SerializeToString())
            while True:
                forward = ForwardMsg()
                forward.ParseFromString(socket.recv(timeout=timeout))
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


def learner_connected(wait: float = LEAVE_S) -> bool:
    """Whether someone else has a session open in this process: Streamlit's runtime
    still counts a connected session `wait` seconds after the warm-up's own left."""
    try:
        from streamlit.runtime import Runtime, RuntimeState
    except ImportError:
        return False
    deadline = time.monotonic() + wait
    while Runtime.exists() and (
            Runtime.instance().state == RuntimeState.ONE_OR_MORE_SESSIONS_CONNECTED):
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)
    return False


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
