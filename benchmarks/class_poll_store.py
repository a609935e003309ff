"""What one follower's poll costs the class store, under a class's load, in-process.

Two processes (the class server's two) each run --threads sessions (Streamlit runs each
session's script in its own thread) that poll the store every 2 s (+-50 %) for
--seconds, while one thread per process stands for the teacher's tally (every 2 s), a
learner's answer arrives every 0.8 s per process, and --busy threads per process do pure
Python work, as the pages' runs do: a transaction's thread then waits for the GIL while
it holds SQLite's write lock, and every other writer waits for it.

A poll is what ui/class_session.py's follower asks the store each 2 s: `--mode old`,
position() and revealed() (before issue 18's part 5 each was a write transaction, as
every call renewed the class's activity; give `--root` a checkout of that commit), or
`--mode new`, version() (one read; the position and the revealed answers only when it
changed). Prints the polls and their latency's p50 / p95 / p99 / max, on a fresh SQLite
file or a Redis URL; a poll the store refused ("database is locked") is printed too.

    .venv/bin/python benchmarks/class_poll_store.py --mode new [--store redis://...]
    git show 06a8269:serving/class_store.py > /tmp/old/serving/class_store.py  # + __init__.py
    .venv/bin/python benchmarks/class_poll_store.py --mode old --root /tmp/old
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_root = sys.argv[sys.argv.index("--root") + 1] if "--root" in sys.argv[:-1] else str(ROOT)
sys.path.insert(0, _root)

from serving import class_store as cs  # noqa: E402 - the checkout asked for


def _poll(store: cs.ClassStore, code: str, mode: str, seen: list[int]) -> None:
    if mode == "old":
        store.position(code)
        store.revealed(code)
        return
    version = store.version(code)
    if version != seen[0]:
        seen[0] = version
        store.position(code)
        store.revealed(code)


def _process(setting: str, code: str, key: str, mode: str, threads: int, seconds: float,
             busy_threads: int, out: mp.Queue) -> None:
    store = cs.store_from(setting)
    stop = time.monotonic() + seconds
    times: list[float] = []
    refused: list[int] = []
    lock = threading.Lock()

    def follower(n: int) -> None:
        learner = f"{os.getpid()}-{n}"
        store.join(code, learner)
        seen, mine = [-1], []
        time.sleep(random.uniform(0, 2))
        while time.monotonic() < stop:
            start = time.perf_counter()
            try:
                _poll(store, code, mode, seen)
            except cs.StoreDown:
                refused.append(1)
            mine.append(time.perf_counter() - start)
            time.sleep(random.uniform(1, 3))
        with lock:
            times.extend(mine)

    def teacher() -> None:
        k = 0
        while time.monotonic() < stop:
            if mode == "old":
                store.learners(code), len(store.answers(code, "softmax"))
            else:
                store.counts(code, "softmax")
            k += 1
            if k % 5 == 0 and os.getpid() % 2 == 0:
                store.move(code, key, "softmax", {"softmax.step": str(k)})
            time.sleep(2.0)

    def answers() -> None:
        store.join(code, f"{os.getpid()}-answers")
        k = 0
        while time.monotonic() < stop:
            store.answer(code, f"{os.getpid()}-answers", "softmax", f"e{k % 300}", "1", True)
            k += 1
            time.sleep(0.8)

    def busy() -> None:
        while time.monotonic() < stop:
            sum(i * i for i in range(20_000))  # a page's pure Python work, about a ms

    workers = [threading.Thread(target=follower, args=(n,)) for n in range(threads)]
    workers += [threading.Thread(target=teacher), threading.Thread(target=answers)]
    workers += [threading.Thread(target=busy) for _ in range(busy_threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    out.put((times, len(refused)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("old", "new"), default="new")
    parser.add_argument("--store", help="a redis:// URL (default: a fresh SQLite file)")
    parser.add_argument("--threads", type=int, default=25, help="sessions per process (25)")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--busy", type=int, default=2, help="busy threads per process (2)")
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose store runs")
    args = parser.parse_args()
    setting = args.store or str(Path(tempfile.mkdtemp()) / "classes.sqlite")
    code, key = cs.store_from(setting).start()
    cs.store_from(setting).move(code, key, "softmax", {})
    out: mp.Queue = mp.Queue()
    procs = [mp.Process(target=_process, args=(setting, code, key, args.mode, args.threads,
                                               args.seconds, args.busy, out)) for _ in range(2)]
    for proc in procs:
        proc.start()
    results = [out.get() for _ in procs]
    times = [t for got, _ in results for t in got]
    refused = sum(n for _, n in results)
    for proc in procs:
        proc.join()
    times.sort()
    q = statistics.quantiles(times, n=100)
    print(f"mode {args.mode}, store {'redis' if args.store else 'sqlite'}, "
          f"{2 * args.threads} followers, {args.busy} busy threads per process: "
          f"{len(times)} polls, {refused} refused; per poll p50 {q[49] * 1e3:.2f} ms, "
          f"p95 {q[94] * 1e3:.2f} ms, p99 {q[98] * 1e3:.2f} ms, max {times[-1] * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
