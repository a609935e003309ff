#!/usr/bin/env python3
"""Set up and start tinyformer, or set up and test it. Needs only Python 3.11.

    python3.11 dev.py run      # set up (first time), start the app on http://localhost:8501
    python3.11 dev.py class    # the same for a class: one process per core behind nginx
    python3.11 dev.py test     # set up (first time), run every test
    python3.11 dev.py bench    # set up (first time), print the rerun-cost benchmark

Set-up is idempotent: it creates .venv and installs the pinned requirements once, and
again only when a requirements file changes. `run`, `class` and `bench` install what the
app needs (requirements.txt); `test` adds the test tools (requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
# venv's layout: bin/python, or Scripts\python.exe on Windows.
PYTHON = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
APP = ("requirements.txt",)  # what the app needs: run, class, bench
DEV = ("requirements.txt", "requirements-dev.txt")  # and the test tools: test
STAMPS = {APP: VENV / ".installed-app", DEV: VENV / ".installed-dev"}


def _digest(names: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def _installed(names: tuple[str, ...]) -> bool:
    stamp = STAMPS[names]
    return PYTHON.exists() and stamp.exists() and stamp.read_text() == _digest(names)


def setup(names: tuple[str, ...] = APP) -> None:
    """.venv with the pinned requirements `names` (the last file of the tuple is the one
    installed; requirements-dev.txt includes requirements.txt). Nothing to do when they
    are installed and unchanged."""
    if sys.version_info[:2] != (3, 11):
        sys.exit(f"tinyformer needs Python 3.11 (this is {sys.version.split()[0]}).")
    if _installed(names):
        return
    if not PYTHON.exists():
        print("Creating .venv …", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print(f"Installing the pinned packages of {names[-1]} (first time only; PyTorch is "
          "large, so this can take several minutes) …", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-r", str(ROOT / names[-1])], check=True)
    STAMPS[names].write_text(_digest(names))
    if names == DEV:  # the app's requirements came with them
        STAMPS[APP].write_text(_digest(APP))


def _exec(*args: str) -> None:
    """Replace this process, so Ctrl-C and signals reach the real program."""
    os.chdir(ROOT)
    os.execv(str(PYTHON), [str(PYTHON), *args])


def _keep_bytecode() -> None:
    """A test run imports the project in every pytest worker and every app server it
    starts, and pytest rewrites the asserts of every test module: with
    PYTHONDONTWRITEBYTECODE set (some containers set it) and no __pycache__ written yet,
    each process compiles all of it again, every run. Measured here: collecting the
    suite took 12.1 s of CPU, 5.9 s once the compiled files were kept (git ignores
    __pycache__). The installed packages' own compiled files are used either way."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="set up, then start the app (one process, "
                              "warmed before the first learner arrives)")
    run.add_argument("--port", type=int, default=8501)
    run.add_argument("--address", default="localhost",
                     help="0.0.0.0 serves the classroom's local network")
    run.add_argument("--cold", action="store_true", help="skip the warm-up")
    room = commands.add_parser(
        "class", help="set up, then start one app process per core behind nginx",
        description="One warmed app process per core behind Debian's nginx (sticky "
        "sessions); Ctrl-C stops everything. Other arguments go to deploy/classroom.py: "
        "--upstream HOST:PORT (processes on other machines), --run-dir DIR, --no-restart, "
        "--cold, --show-upstream. See docs/deploy.md.")
    room.add_argument("--processes", type=int, help="Streamlit processes (default: one "
                      "per core)")
    room.add_argument("--port", type=int, default=8501)
    room.add_argument("--address", default="localhost",
                      help="0.0.0.0 serves the classroom's local network")
    commands.add_parser("test", help="set up, then run ruff and every test; other "
                        "arguments go to pytest (e.g. tests/unit -x)")
    commands.add_parser("bench", help="set up, then print the rerun-cost benchmark; other "
                        "arguments go to benchmarks/rerun_cost.py")
    args, extra = parser.parse_known_args()
    if extra and args.command == "run":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")

    setup(DEV if args.command == "test" else APP)
    if args.command == "run":
        _exec("-m", "deploy.serve", "--port", str(args.port), "--address", args.address,
              *(["--cold"] if args.cold else []))
    elif args.command == "class":
        processes = [] if args.processes is None else ["--processes", str(args.processes)]
        _exec("-m", "deploy.classroom", "--port", str(args.port), "--address", args.address,
              *processes, *extra)
    elif args.command == "test":
        if subprocess.run([str(PYTHON), "-m", "ruff", "check", "."], cwd=ROOT).returncode:
            sys.exit(1)
        _keep_bytecode()
        _exec("-m", "pytest", *extra)
    else:
        _exec("benchmarks/rerun_cost.py", *extra)


if __name__ == "__main__":
    main()
