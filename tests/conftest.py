"""Shared test set-up: the repository root on sys.path, so `import tinyformer` and
`import ui` work from any test folder."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.chdir(ROOT)  # Streamlit resolves pages/ and .streamlit/ from the working directory


def _navigation_from_app_py() -> None:
    """AppTest forgets, before every run, that app.py calls st.navigation, and with a
    pages/ folder beside app.py runs a switched-to page on its own, without the frame
    (deploy/serve.py says the same to the real server). Tell it after it forgets."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init


def _one_component_scan() -> None:
    """Each new AppTest scans every installed package's metadata for Streamlit
    components before its first run: measured here, 0.23 s of a 0.25 s test, most of the
    app tests' time. Nothing installed changes during a test session, so every AppTest
    shares one scan."""
    from streamlit.components.v2.component_manager import BidiComponentManager
    from streamlit.testing.v1.app_test import AppTest

    original = AppTest.__init__
    shared: list[BidiComponentManager] = []

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        assert hasattr(self, "_bidi_component_manager"), "Streamlit changed AppTest"
        if not shared:
            shared.append(BidiComponentManager())
            shared[0].discover_and_register_components(start_file_watching=False)
        self._bidi_component_manager = shared[0]

    AppTest.__init__ = init


def _own_class_store() -> None:
    """Class sessions (serving/class_store.py) of a test run live in a file of their own,
    shared by this run's processes (xdist workers, app servers), never the machine's."""
    import tempfile

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())
    os.environ["TINYFORMER_CLASS_STORE"] = str(
        Path(tempfile.gettempdir()) / f"tinyformer-test-classes-{run}.sqlite")


def _one_torch_thread() -> None:
    """torch on one thread in every test process and in the processes they start (app
    servers, an installed copy), as the app runs it (ui/frame.py): the tests' tensors are
    small, and threads that wait for each other on 2 busy cores burn CPU time. Measured
    here under load: tests/unit/test_cache_work.py and test_context.py took 33 s of
    CPU time with torch's default threads, 12 s with one. OMP_NUM_THREADS, set by hand,
    wins."""
    threads = os.environ.setdefault("OMP_NUM_THREADS", "1")
    if "torch" in sys.modules and threads.isdigit():  # imported before this file ran
        sys.modules["torch"].set_num_threads(int(threads))


_navigation_from_app_py()
_one_component_scan()
_own_class_store()
_one_torch_thread()

BROWSER_FOLDERS = ("e2e", "proxy")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items) -> None:
    """Under pytest-xdist (--dist loadgroup) the browser tests form two groups, each on
    one worker with its own app server and Chromium: the walk over every page
    (tests/e2e/test_every_page.py), and the rest. They wait on the browser more than they
    compute, so two halves side by side finish sooner than one queue."""
    for item in items:
        path = Path(item.path).relative_to(ROOT / "tests")
        if path.parts[0] in BROWSER_FOLDERS:
            group = "browser-pages" if path.name == "test_every_page.py" else "browser-rest"
            item.add_marker(pytest.mark.xdist_group(group))
