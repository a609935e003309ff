"""The class server: several warmed Streamlit processes behind nginx, on one machine.

    python -m deploy.classroom [--processes N] [--port 8501] [--address localhost]
                               [--upstream HOST:PORT ...] [--run-dir DIR]

One Streamlit process runs its scripts on one core (one interpreter lock), so a class
that keeps one process busy queues while the other cores idle. This command starts N
processes (deploy/serve.py, default one per core) on loopback ports, and Debian's nginx
in front of them on --port: sticky sessions by nginx's own userid cookie, websockets
proxied, passive health checks (deploy/tinyformer.nginx.conf). Every process gets the
same server.cookieSecret. nginx runs unprivileged as this command's child, with its
configuration, pid and logs in a temporary run folder. A process that exits is started
again; Ctrl-C (or SIGTERM) stops nginx and every process, and removes the run folder.
--upstream adds processes on other machines to the same proxy (docs/deploy.md).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from deploy import nginx
from deploy.warm import ROOT, client_host, wait_healthy

MAX_PROCESSES = 64
START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
RESTARTS_PER_MINUTE = 5  # more than this and a process is left stopped (it keeps failing)
TICK_S = 0.5
SECRET_ENV = "STREAMLIT_SERVER_COOKIE_SECRET"  # Streamlit reads server.cookieSecret here


class Stop(Exception):
    """Ctrl-C or SIGTERM: stop everything."""


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop(signal.Signals(signum).name)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when this command dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port(taken: set[int]) -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in taken:
            taken.add(port)
            return port


@dataclass
class Worker:
    """One local Streamlit process slot: its port stays the same across restarts."""

    index: int
    port: int
    run_dir: Path
    cold: bool
    env: dict[str, str]
    process: subprocess.Popen | None = None
    restarts: list[float] = field(default_factory=list)  # when, over the last minute
    given_up: bool = False

    @property
    def ready_file(self) -> Path:
        return self.run_dir / f"process-{self.index}.warm"

    def start(self) -> None:
        self.ready_file.unlink(missing_ok=True)
        command = [sys.executable, "-m", "deploy.serve", "--port", str(self.port),
                   "--address", "127.0.0.1", "--ready-file", str(self.ready_file)]
        if self.cold:
            command.append("--cold")
        # stdout holds only Streamlit's "you can now view" banner with the process's
        # own loopback URL, which would mislead: it goes to a log. Errors stay on stderr.
        with open(self.run_dir / f"process-{self.index}.log", "ab") as log:
            self.process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log,
                                            stdin=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def is_warm(self) -> bool:
        return self.cold or self.ready_file.exists()


@dataclass
class Settings:
    processes: int
    port: int
    address: str
    remote: list[nginx.Address]
    run_dir: Path | None
    show_upstream: bool
    restart: bool
    cold: bool


def say(text: str) -> None:
    print(f"tinyformer class: {text}", file=sys.stderr, flush=True)


class Classroom:
    def __init__(self, settings: Settings, nginx_binary: str) -> None:
        self.settings = settings
        self.nginx_binary = nginx_binary
        self.own_run_dir = settings.run_dir is None
        self.run_dir = (settings.run_dir or Path(tempfile.mkdtemp(prefix="tinyformer-class-")))
        self.run_dir = self.run_dir.resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # nginx's workers (user nobody) must reach their folders
            self.run_dir.chmod(0o711)
        env = dict(os.environ)
        env[SECRET_ENV] = env.get(SECRET_ENV) or secrets.token_hex(32)
        taken = {settings.port}
        self.workers = [Worker(i, free_port(taken), self.run_dir, settings.cold, env)
                        for i in range(settings.processes)]
        self.proxy: subprocess.Popen | None = None
        self.started = time.monotonic()

    # --- Start ------------------------------------------------------------------------

    def write_config(self) -> Path:
        upstreams = [nginx.Address("127.0.0.1", w.port) for w in self.workers]
        listen = nginx.Address(nginx_host(self.settings.address), self.settings.port)
        site = nginx.site_config([*upstreams, *self.settings.remote], listen,
                                 show_upstream=self.settings.show_upstream)
        conf = self.run_dir / "nginx.conf"
        conf.write_text(nginx.standalone_config(site, self.run_dir))
        checked = nginx.check(self.nginx_binary, conf, self.run_dir)
        if checked.returncode != 0:
            raise RuntimeError(f"nginx -t rejected {conf}:\n{checked.stderr.strip()}")
        return conf

    def start(self) -> None:
        conf = self.write_config()
        for worker in self.workers:
            worker.start()
        for worker in self.workers:
            if not wait_healthy("127.0.0.1", worker.port, worker.alive, START_TIMEOUT_S):
                raise RuntimeError(f"process {worker.index} (port {worker.port}) did not "
                                   f"start; see {self.run_dir}/process-{worker.index}.log")
        for remote in self.settings.remote:
            answered = wait_healthy(remote.host, remote.port, timeout=3)
            say(f"remote process {remote}: {'healthy' if answered else 'NOT answering'}")
        self.proxy = subprocess.Popen(
            nginx.nginx_command(self.nginx_binary, conf, self.run_dir), cwd=self.run_dir,
            stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        host = client_host(nginx_host(self.settings.address))
        if not wait_healthy(host, self.settings.port, self.proxy_alive, 30):
            raise RuntimeError(f"nginx did not answer on port {self.settings.port}:\n"
                               + tail(self.run_dir / "error.log"))
        say(f"{len(self.workers)} Streamlit processes behind nginx on "
            f"http://{shown_host(self.settings.address)}:{self.settings.port} "
            f"(health answered after {time.monotonic() - self.started:.1f} s; "
            f"run folder {self.run_dir}). Ctrl-C stops it.")

    def proxy_alive(self) -> bool:
        return self.proxy is not None and self.proxy.poll() is None

    # --- Supervise --------------------------------------------------------------------

    def supervise(self, sleep: Callable[[float], None] = time.sleep) -> None:
        all_warm = False
        while True:
            if not self.proxy_alive():
                raise RuntimeError("nginx exited:\n" + tail(self.run_dir / "error.log"))
            for worker in self.workers:
                if not worker.alive():
                    self.restart(worker)
            if not all_warm and all(w.is_warm() for w in self.workers):
                all_warm = True
                say(f"every process is warm ({time.monotonic() - self.started:.1f} s after "
                    "the start)")
            sleep(TICK_S)

    def restart(self, worker: Worker) -> None:
        if worker.given_up or worker.process is None:
            return
        now = time.monotonic()
        worker.restarts = [t for t in worker.restarts if now - t < 60]
        code = worker.process.returncode
        if not self.settings.restart or len(worker.restarts) >= RESTARTS_PER_MINUTE:
            worker.given_up = True
            say(f"process {worker.index} (port {worker.port}) exited ({code}); left "
                "stopped, the proxy sends its learners to the others")
            return
        say(f"process {worker.index} (port {worker.port}) exited ({code}); starting it "
            "again (its learners reconnect to the others meanwhile)")
        worker.restarts.append(now)
        worker.start()

    # --- Stop -------------------------------------------------------------------------

    def stop(self) -> None:
        """nginx first (no new requests), then every process: SIGTERM, then SIGKILL."""
        running = [p for p in [self.proxy, *(w.process for w in self.workers)]
                   if p is not None and p.poll() is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self.own_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)


def nginx_host(address: str) -> str:
    """nginx's listen address for Streamlit's --address words."""
    return {"localhost": "127.0.0.1", "": "0.0.0.0", "::": "[::]"}.get(address, address)


def shown_host(address: str) -> str:
    return "localhost" if address in ("", "0.0.0.0", "::", "localhost") else address


def tail(path: Path, lines: int = 10) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def parse(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="docs/deploy.md describes every option and what was measured with it.")
    cores = len(os.sched_getaffinity(0))
    parser.add_argument("--processes", type=int, default=cores,
                        help=f"Streamlit processes on this machine (default: one per core, "
                             f"{cores} here; 0 with --upstream: a proxy only)")
    parser.add_argument("--port", type=int, default=8501, help="nginx's port (8501)")
    parser.add_argument("--address", default="localhost",
                        help="nginx's address; 0.0.0.0 serves the classroom's network")
    parser.add_argument("--upstream", action="append", default=[], metavar="HOST:PORT",
                        help="a Streamlit process on another machine (repeatable)")
    parser.add_argument("--run-dir", type=Path,
                        help="keep nginx's configuration and logs here (default: a "
                             "temporary folder, removed on exit)")
    parser.add_argument("--show-upstream", action="store_true",
                        help=f"add an {nginx.UPSTREAM_HEADER} header naming the process "
                             "that answered (benchmarks and tests)")
    parser.add_argument("--no-restart", dest="restart", action="store_false",
                        help="leave a process that exits stopped")
    parser.add_argument("--cold", action="store_true", help="do not warm the processes")
    args = parser.parse_args(argv)
    try:
        remote = [nginx.Address.parse(text) for text in args.upstream]
    except nginx.ConfigError as error:
        parser.error(str(error))
    if not 0 <= args.processes <= MAX_PROCESSES or args.processes + len(remote) == 0:
        parser.error(f"--processes must be 1 to {MAX_PROCESSES} (0 only with --upstream)")
    if not 0 < args.port < 65536:
        parser.error("--port must be 1 to 65535")
    return Settings(args.processes, args.port, args.address, remote, args.run_dir,
                    args.show_upstream, args.restart, args.cold)


def main(argv: list[str] | None = None) -> int:
    settings = parse(argv)
    binary = nginx.find_nginx()
    if binary is None:
        say("nginx is not installed (Debian: apt-get install nginx); "
            "`python3.11 dev.py run` serves one process without it")
        return 2
    signal.signal(signal.SIGINT, _raise_stop)
    signal.signal(signal.SIGTERM, _raise_stop)
    classroom = None
    try:
        classroom = Classroom(settings, binary)
        classroom.start()
        classroom.supervise()
    except Stop as stop:
        say(f"{stop}: stopping nginx and the processes")
        return 0
    except (RuntimeError, nginx.ConfigError, OSError) as error:
        say(str(error))
        return 1
    finally:
        # A second Ctrl-C while stopping must not leave processes behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if classroom is not None:
            classroom.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
