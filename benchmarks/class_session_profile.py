"""Where a class session's server time goes, in-process: cProfile over AppTest runs of
app.py (tests/conftest.py's set-up, as benchmarks/frame_profile.py) with a class on its
own SQLite file.

- a teacher's move: the teacher's session goes from --from to --to (a whole run of the
  new stage, which writes the move);
- a follower's arrival: the follower's next run after that move (its poll sees the move
  and switches its page: a whole run of the new stage);
- a follower's poll with nothing new: --polls whole runs of the follower's page when
  the teacher has not moved. AppTest cannot run a fragment alone, so the poll's own cost
  is its function's cumulative time (ui/class_session.py's _poll) in those runs, beside
  the whole run's.

Prints, per phase, the script thread's wall time under the profiler and the cumulative
time of the class session's functions and of the store. --root runs another checkout
(e.g. one made with `git archive <commit> | tar -x -C DIR`) for a before / after.

    .venv/bin/python benchmarks/class_session_profile.py [--from softmax --to masks]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WATCHED = ("_poll", "_follow", "_reveals_changed", "sync", "enter", "bar", "live", "version",
           "position", "revealed", "move", "learners", "answers", "counts")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="start", default="softmax")
    parser.add_argument("--to", default="masks")
    parser.add_argument("--polls", type=int, default=10)
    parser.add_argument("--root", default=str(ROOT))
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))
    os.chdir(root)
    os.environ["TINYFORMER_CLASS_STORE"] = str(Path(tempfile.mkdtemp()) / "c.sqlite")

    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.testing.v1 import AppTest

    original_init = PagesManager.__init__

    def init(self, *a, **k):  # as tests/conftest.py: app.py navigates, not pages/
        original_init(self, *a, **k)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init
    state = {"profile": None, "wall": []}
    original_run = script_runner.ScriptRunner._run_script

    def profiled(self, *a, **k):  # the script thread; cProfile is per thread
        if state["profile"] is None:
            return original_run(self, *a, **k)
        start = time.perf_counter()
        state["profile"].enable()
        try:
            return original_run(self, *a, **k)
        finally:
            state["profile"].disable()
            state["wall"].append((time.perf_counter() - start) * 1000)

    script_runner.ScriptRunner._run_script = profiled
    from ui.fold import NAME, OPEN
    from ui.stages import by_id

    def opened(stage_id: str, **params: str) -> AppTest:
        at = AppTest.from_file(str(root / "app.py"), default_timeout=120)
        at.query_params.update({"lang": "en", f"{stage_id}.{NAME}": OPEN, **params})
        at.switch_page(by_id(stage_id).path)
        return at.run()

    def phase(name: str, work) -> None:
        state["profile"], state["wall"] = cProfile.Profile(), []
        work()
        profile, walls = state["profile"], state["wall"]
        state["profile"] = None
        stats = pstats.Stats(profile).stats
        mine = {}
        for (path, _, func), (_, calls, _, cumulative, _) in stats.items():
            if func in WATCHED and ("class_session" in path or "class_store" in path):
                where = "store" if "class_store" in path else "session"
                mine[f"{where}.{func}"] = (calls, cumulative * 1000)
        print(f"\n{name}: {len(walls)} script runs, {sum(walls):.0f} ms in all "
              f"(wall under the profiler)")
        for func, (calls, ms) in sorted(mine.items(), key=lambda kv: -kv[1][1]):
            print(f"  {func:28} {calls:4d} calls  {ms:8.1f} ms cumulative")

    teacher = opened(args.start)
    teacher.session_state["_class_box"] = True  # the drawer open (ui/drawer.py)
    teacher.run()
    teacher.button("_class_start").click().run()
    code = teacher.query_params["class"]
    follower = opened(args.start, **{"class": code})
    follower.switch_page(by_id(args.start).path).run()  # settled

    def poll_runs() -> None:
        for _ in range(args.polls):
            follower.switch_page(by_id(args.start).path).run()

    phase(f"a follower's page, the teacher not moving ({args.polls} whole runs)", poll_runs)
    phase("the teacher's move", lambda: teacher.switch_page(by_id(args.to).path).run())
    phase("the follower's arrival", lambda: follower.switch_page(by_id(args.start).path).run())
    print(f"\nfollower now on: {follower.session_state['_stage']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
