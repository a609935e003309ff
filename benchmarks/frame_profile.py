"""Where one full run of a page goes: cProfile over app.py's script runs, the frame
included (st.navigation, ui/frame.py) and the page's own lesson.

Runs app.py through Streamlit's AppTest (st.navigation picks the page, as in a server;
tests/conftest.py's set-up), `--warmup` untimed runs first, then profiles `--runs` full
runs of the whole page (`<stage>.more=true`, no fragment) inside the script thread, and
prints the top entries by cumulative and by own time, per run.

    .venv/bin/python benchmarks/frame_profile.py                 # the overview
    .venv/bin/python benchmarks/frame_profile.py --page softmax --runs 20 --top 40

It prints figures; nothing asserts a time. AppTest is not a browser session (no
websocket, no protobuf serialisation to a client), so read the shares, not the total.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", default="home", help="stage id (default: home, the overview)")
    parser.add_argument("--runs", type=int, default=20, help="profiled full runs (20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first (3)")
    parser.add_argument("--top", type=int, default=30, help="entries printed per table")
    parser.add_argument("--dump", help="also write the raw cProfile stats to this file "
                        "(read with pstats, e.g. print_callers)")
    parser.add_argument("--root", default=str(ROOT),
                        help="the checkout whose app.py runs (default: this one)")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    os.chdir(root)

    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.testing.v1 import AppTest

    original_init = PagesManager.__init__

    def init(self, *a, **k):  # as tests/conftest.py: app.py navigates, not pages/
        original_init(self, *a, **k)
        PagesManager.uses_pages_directory = False

    if "navigation" in (root / "app.py").read_text():  # not before commit 5893db0
        PagesManager.__init__ = init

    profile = cProfile.Profile()
    state = {"on": False, "wall": []}
    original_run = script_runner.ScriptRunner._run_script

    def profiled(self, *a, **k):  # runs in the script thread; cProfile is per thread
        if not state["on"]:
            return original_run(self, *a, **k)
        start = time.perf_counter()
        profile.enable()
        try:
            return original_run(self, *a, **k)
        finally:
            profile.disable()
            state["wall"].append((time.perf_counter() - start) * 1000)

    script_runner.ScriptRunner._run_script = profiled

    from ui.stages import HOME, by_id

    stage = by_id(args.page)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=120)
    at.query_params["lang"] = "en"
    if stage != HOME:
        from ui.fold import NAME, OPEN

        at.query_params[f"{stage.id}.{NAME}"] = OPEN
        at.switch_page(stage.path)
    for _ in range(max(1, args.warmup)):
        at.run()
    if at.exception:
        print("the page raised:", [e.message for e in at.exception])
        return 1
    state["on"] = True
    for _ in range(args.runs):
        at.run()
    state["on"] = False
    walls = sorted(state["wall"])
    print(f"page {stage.id} ({stage.path}) from {root}: {args.runs} profiled full runs, "
          f"script thread wall under the profiler: median {walls[len(walls) // 2]:.1f} ms "
          f"(profiling inflates it; read shares)")
    if args.dump:
        profile.dump_stats(args.dump)
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats(key).print_stats(args.top)
        text = out.getvalue()
        print(f"\n=== sorted by {key} (times are totals over {args.runs} runs) ===")
        print(text[text.find("ncalls"):] if "ncalls" in text else text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
