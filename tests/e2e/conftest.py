"""End-to-end fixtures: the app started the way the README starts it (`python3.11 dev.py
run`, on a free port, in its own process group), and Debian's Chromium
(/usr/bin/chromium, never a downloaded browser) driven by Playwright.

One browser per session, a fresh context per test. Without /usr/bin/chromium the tests
skip, except under CI=true, where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ui.stages import HOME, STAGES, Stage

ROOT = Path(__file__).resolve().parent.parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = ROOT / "screenshots"  # git-ignored
# Screenshots are for a person to look at. By default each is the first screen, as a
# learner opens the page; TINYFORMER_SCREENSHOTS=full takes the whole page instead
# (the viewport grows to the page and every chart reflows: seconds a page).
FULL_SCREENSHOTS = os.environ.get("TINYFORMER_SCREENSHOTS") == "full"
MAX_SCREENSHOT_HEIGHT = 20_000  # px; a taller page is cut in its full screenshot
TIMEOUT_MS = 30_000  # every wait on the page
START_TIMEOUT_S = 90  # server start
VIEWPORT = {"width": 1400, "height": 1000}

# The README's way to start the app. dev.py needs Python 3.11; the venv's python is one.
RUN_COMMAND = [shutil.which("python3.11") or sys.executable, "dev.py", "run"]

# Streamlit's frontend, opened on a deep link (/<page>), first probes these two paths
# under the page's own path and logs a 404 for each. Only these are filtered.
DEEP_LINK_PROBES = ("_stcore/health", "_stcore/host-config")


def screenshot(page, path: Path) -> None:
    """Save the page for a person to look at (nothing is asserted on the picture)."""
    path.parent.mkdir(exist_ok=True)
    if not FULL_SCREENSHOTS:
        page.screenshot(path=str(path))
        return
    # Streamlit scrolls inside its main area, not the document: grow the viewport to the
    # content's height so that a full-page screenshot holds the whole page.
    size = page.viewport_size
    height = page.evaluate(
        """() => Math.max(...[...document.querySelectorAll(
                 '[data-testid="stMain"], [data-testid="stSidebarContent"]')]
                 .map(el => el.scrollHeight), window.innerHeight)""")
    page.set_viewport_size({"width": size["width"],
                            "height": min(int(height), MAX_SCREENSHOT_HEIGHT)})
    try:
        page.wait_for_timeout(300)  # one layout pass at the new size (charts reflow)
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)


# --- The browser must be Debian's Chromium ----------------------------------------------
@pytest.fixture(scope="session", autouse=True)
def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: install Debian's chromium package to run the e2e tests"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: a missing browser is a failure, not a skip)")
    pytest.skip(reason)


# --- The server, started by the README's command in its own process group -------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    port: int
    process: subprocess.Popen
    log: Path

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """End the whole process group: the app and anything it started."""
        group = self.process.pid
        with suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _group_alive(group):
            self.process.poll()  # reap our child as soon as it exits
            time.sleep(0.1)
        with suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def start_server(*extra: str, command: Sequence[str] = RUN_COMMAND,
                 env: Mapping[str, str] | None = None) -> Server:
    """`command` (the README's run command) on a free port, in its own process group."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix=f"tinyformer-e2e-{port}-", suffix=".log")[1])
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [*command, "--port", str(port), *extra],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, ended as a whole
        )
    return Server(port, process, log)


def _wait(server: Server, ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            server.stop()
            pytest.fail(f"the app (dev.py run) exited with {server.process.returncode} "
                        f"before {what}:\n{server.log_tail()}")
        if ready():
            return
        time.sleep(0.2)
    server.stop()
    pytest.fail(f"no {what} within {START_TIMEOUT_S} s:\n" + server.log_tail())


def wait_healthy(server: Server) -> None:
    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2) as reply:
                return reply.read().decode().strip() == "ok"
        except (urllib.error.URLError, OSError):
            return False

    _wait(server, healthy, "health check answering 'ok'")


def wait_listening(server: Server) -> None:
    """Ready without sending a single HTTP request: the port accepts connections."""

    def listening() -> bool:
        try:
            with socket.create_connection(("localhost", server.port), timeout=1):
                return True
        except OSError:
            return False

    _wait(server, listening, "listening port")


@contextmanager
def _serving(wait: Callable[[Server], None], *extra: str) -> Iterator[Server]:
    running = start_server(*extra)
    try:
        wait(running)
        yield running
    finally:
        running.stop()
        running.log.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """The app for the whole session, checked healthy before the first test."""
    with _serving(wait_healthy) as running:
        yield running


@pytest.fixture(scope="module")
def fresh_server() -> Iterator[Server]:
    """A server that has answered no HTTP request yet: the test sends the first one
    (--cold: no warm-up visits either, so the deep link is truly the first)."""
    with _serving(wait_listening, "--cold") as running:
        yield running


# --- The browser, and a fresh context per tab -------------------------------------------
# One Chromium for the whole test session. The proxy tests register this fixture again
# (from their own conftest), and Playwright's sync API may run only once per process, so
# both registrations share the one browser started here; it closes when pytest ends.
_ONE_BROWSER: dict[str, object] = {}


def _shared_browser():
    if "browser" not in _ONE_BROWSER:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        _ONE_BROWSER["playwright"] = playwright
        _ONE_BROWSER["browser"] = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    return _ONE_BROWSER["browser"]


@pytest.fixture(scope="session")
def browser():
    return _shared_browser()


def pytest_unconfigure(config) -> None:
    if "browser" in _ONE_BROWSER:
        _ONE_BROWSER.pop("browser").close()
        _ONE_BROWSER.pop("playwright").stop()


@dataclass
class Tab:
    """A page in its own browser context, with every console error it logged."""

    page: object  # playwright.sync_api.Page
    errors: list[tuple[str, str]] = field(default_factory=list)  # (text, location url)

    def console_errors(self) -> list[tuple[str, str]]:
        """Console errors, less the two 404s a deep link makes Streamlit log."""
        return [(text, url) for text, url in self.errors if not _deep_link_probe(text, url)]


def url_name(stage: Stage) -> str:
    """The page's path in the URL: its stage id (st.navigation's url_path); "" is the
    overview, the default page."""
    return "" if stage == HOME else stage.id


def _deep_link_probe(text: str, url: str) -> bool:
    """Exactly <page>/_stcore/health or <page>/_stcore/host-config answering 404."""
    if "404" not in text:
        return False
    page, _, probe = urlsplit(url).path.strip("/").partition("/")
    return probe in DEEP_LINK_PROBES and page in {url_name(s) for s in STAGES}


def tab_in(context) -> Tab:
    """A new page in `context` that records console errors and uncaught page errors."""
    context.set_default_timeout(TIMEOUT_MS)
    tab = Tab(context.new_page())

    def on_console(message) -> None:
        if message.type == "error":
            tab.errors.append((message.text, message.location.get("url", "")))

    tab.page.on("console", on_console)
    tab.page.on("pageerror", lambda error: tab.errors.append((f"pageerror: {error}", "")))
    return tab


@pytest.fixture
def new_tab(browser) -> Iterator[Callable[[], Tab]]:
    """A factory: each call opens a page in a NEW browser context (no shared state)."""
    contexts = []

    def open_tab() -> Tab:
        context = browser.new_context(viewport=VIEWPORT, locale="en-US")
        contexts.append(context)
        return tab_in(context)

    yield open_tab
    for context in contexts:
        context.close()
