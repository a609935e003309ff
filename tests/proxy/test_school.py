"""A school on several machines (docs/deploy.md, section 3): app processes on other
hosts, and the class command as a proxy only (`--processes 0 --upstream HOST:PORT`).

The other hosts are loopback addresses of their own (127.0.0.2, 127.0.0.3: Linux routes
the whole of 127.0.0.0/8 to this machine), so each process is reached at a different
address, as a process on another machine would be. Each browser stays on one host; the
browsers of a class spread over both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from e2e.conftest import RUN_COMMAND, Server, start_server, wait_healthy

from deploy import nginx, warm

from .test_class_server import CLIENTS, get, sticky_cookie

HOSTS = ("127.0.0.2", "127.0.0.3")
# The class command as a proxy only: no local process, the upstreams are elsewhere.
PROXY_COMMAND = [RUN_COMMAND[0], "dev.py", "class", "--processes", "0", "--show-upstream"]
SECRET = "one-secret-for-every-machine-of-the-school"  # docs/deploy.md: the same everywhere


def app_machine(host: str, env: dict[str, str]) -> Server:
    """`python3.11 dev.py run --address HOST --port ...`, as on one machine of a school."""
    machine = start_server("--address", host, env=env)
    if not warm.wait_healthy(host, machine.port, lambda: machine.process.poll() is None,
                             timeout=120):
        machine.stop()
        raise AssertionError(f"{host}:{machine.port} did not answer: {machine.log_tail()}")
    return machine


@pytest.fixture(scope="module")
def school(nginx_binary: str) -> Iterator[tuple[Server, list[str]]]:
    env = {**os.environ, "STREAMLIT_SERVER_COOKIE_SECRET": SECRET}
    servers: list[Server] = []
    try:
        for host in HOSTS:
            servers.append(app_machine(host, env))
        upstreams = [f"{host}:{machine.port}" for host, machine in zip(HOSTS, servers,
                                                                       strict=True)]
        proxy = start_server(*(arg for upstream in upstreams for arg in ("--upstream", upstream)),
                             command=PROXY_COMMAND, env=env)
        servers.append(proxy)
        wait_healthy(proxy)
        yield proxy, upstreams
    finally:
        for server in servers:
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
