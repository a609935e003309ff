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
    """Under pytest-xdist (--dist loadgroup) the browser tests run on one worker: they
    share one app server and one Chromium, started once, instead of one per worker."""
    for item in items:
        if Path(item.path).relative_to(ROOT / "tests").parts[0] in BROWSER_FOLDERS:
            item.add_marker(pytest.mark.xdist_group("browser"))
