"""A school on several machines (docs/deploy.md, section 3): app processes on other
hosts, and the class command as a proxy only (`--processes 0 --upstream HOST:PORT`).

The other hosts are loopback addresses of their own (127.0.0.2, 127.0.0.3: Linux routes
the whole of 127.0.0.0/8 to this machine), so each process is reached at a different
address, as a process on another machine would be. Each browser stays on one host; the
browsers of a class spread over both.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.conftest import ROOT, RUN_COMMAND, Server, free_port, wait_healthy

from deploy import nginx

from .test_class_server import CLIENTS, get, sticky_cookie

HOSTS = ("127.0.0.2", "127.0.0.3")
SECRET = "one-secret-for-every-machine-of-the-school"  # docs/deploy.md: the same everywhere


def start(command: list[str], name: str, env: dict[str, str]) -> Server:
    log = Path(tempfile.mkstemp(prefix=f"tinyformer-{name}-", suffix=".log")[1])
    with open(log, "wb") as handle:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                   stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return Server(0, process, log)


def wait_answering(host: str, port: int, server: Server, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.process.poll() is None, server.log_tail()
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/_stcore/health", timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise AssertionError(f"{host}:{port} did not answer: {server.log_tail()}")


@pytest.fixture(scope="module")
def school(nginx_binary: str) -> Iterator[tuple[Server, list[str]]]:
    env = {**os.environ, "STREAMLIT_SERVER_COOKIE_SECRET": SECRET}
    machines, upstreams = [], []
    try:
        for host in HOSTS:  # `python3.11 dev.py run --address ... --port ...` on each
            port = free_port()
            machine = start([*RUN_COMMAND, "--address", host, "--port", str(port)],
                            f"school-{host}", env)
            machines.append(machine)
            wait_answering(host, port, machine)
            upstreams.append(f"{host}:{port}")
        port = free_port()
        proxy = start([RUN_COMMAND[0], "dev.py", "class", "--processes", "0", "--port",
                       str(port), "--show-upstream",
                       *(arg for upstream in upstreams for arg in ("--upstream", upstream))],
                      "school-proxy", env)
        proxy.port = port
        machines.append(proxy)
        wait_healthy(proxy)
        yield proxy, upstreams
    finally:
        for server in machines:
            server.stop()
            server.log.unlink(missing_ok=True)


def test_the_proxy_reports_each_remote_process(school) -> None:
    proxy, upstreams = school
    log = proxy.log_tail(20_000)
    for upstream in upstreams:
        assert f"remote process {upstream}: healthy" in log, log


def test_each_browser_stays_on_one_host_and_the_class_spreads(school) -> None:
    proxy, upstreams = school
    used = set()
    for _ in range(CLIENTS):
        status, headers = get(proxy, "/")
        assert status == 200
        cookie = sticky_cookie(headers)
        answered = {get(proxy, path, cookie)[1][nginx.UPSTREAM_HEADER]
                    for path in ("/_stcore/health", "/_stcore/host-config", "/")}
        assert len(answered) == 1, f"one browser answered by {answered}"
        used |= answered
    assert used == set(upstreams)
