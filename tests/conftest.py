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


_navigation_from_app_py()

BROWSER_FOLDERS = ("e2e", "proxy")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items) -> None:
    """Under pytest-xdist (--dist loadgroup) the browser tests form two groups, each on
    one worker with its own app server and Chromium: every page in turn
    (tests/e2e/test_browser.py), and the rest. They wait on the browser more than they
    compute, so two halves side by side finish sooner than one queue."""
    for item in items:
        path = Path(item.path).relative_to(ROOT / "tests")
        if path.parts[0] in BROWSER_FOLDERS:
            group = "browser-pages" if path.name == "test_browser.py" else "browser-rest"
            item.add_marker(pytest.mark.xdist_group(group))
