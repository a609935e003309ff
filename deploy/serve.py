"""One Streamlit process of tinyformer, warmed before the first learner arrives.

    python -m deploy.serve [--port 8501] [--address localhost] [--cold] [--ready-file F]

This process runs `streamlit run app.py` (the same server and the project's
.streamlit/config.toml) and, on a background thread of the same process, warms it
(deploy/warm.py): imports torch, pandas, plotly and tinyformer while the server starts,
then runs every page once through its own websocket, so the first learner waits no
longer than the second. `dev.py run` starts this; `dev.py class` starts several.
--cold skips the warm-up (to measure the difference); --ready-file is written once the
process is warm (the class server waits for it).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

from deploy.warm import ROOT, warm


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--address", default="localhost")
    parser.add_argument("--cold", action="store_true", help="do not warm the app")
    parser.add_argument("--ready-file", type=Path,
                        help="write this file once the process is warm")
    return parser.parse_args(argv)


def _navigation_from_app_py() -> None:
    """Every run starts in app.py, whose st.navigation draws the frame.

    Streamlit (measured on 1.67) decides once per process, at the first session, whether
    the app uses its older pages/ convention: with a pages/ folder beside app.py and no
    st.navigation seen yet, that first request runs the page it deep-links to on its
    own, without app.py, so a teacher's shared link opened first after a restart would
    show a page without its frame. The answer is ours to give: app.py always navigates.
    """
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    os.chdir(ROOT)  # Streamlit finds pages/ and .streamlit/ from the working directory
    if not args.cold:
        threading.Thread(target=warm, name="tinyformer-warm-up", daemon=True,
                         args=(args.address, args.port, threading.main_thread().is_alive,
                               args.ready_file)).start()
    _navigation_from_app_py()
    from streamlit.web.cli import main as streamlit_main

    streamlit_main(args=["run", "app.py", "--server.port", str(args.port),
                         "--server.address", args.address], prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
