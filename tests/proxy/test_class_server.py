"""The class server over plain HTTP: each browser's cookie keeps it on one process, and
the browsers of a class spread over both processes."""

from __future__ import annotations

import urllib.request
from http.cookies import SimpleCookie

from e2e.conftest import Server

from deploy import nginx

from .conftest import PROCESSES

CLIENTS = 24  # with 2 processes, all on one by chance: about 1 in 8 million


def get(server: Server, path: str, cookie: str | None = None):
    request = urllib.request.Request(f"{server.url}{path}")
    if cookie:
        request.add_header("Cookie", cookie)
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()
        return reply.status, reply.headers


def sticky_cookie(headers) -> str:
    for value in headers.get_all("Set-Cookie") or []:
        cookie = SimpleCookie(value)
        if nginx.COOKIE in cookie:
            return f"{nginx.COOKIE}={cookie[nginx.COOKIE].value}"
    raise AssertionError(f"no {nginx.COOKIE} cookie set: {headers.get_all('Set-Cookie')}")


def test_each_browser_stays_on_one_process_and_the_class_spreads(class_server) -> None:
    used = set()
    for _ in range(CLIENTS):
        status, headers = get(class_server, "/")  # a browser's first request
        assert status == 200
        cookie = sticky_cookie(headers)
        answered = set()
        for path in ("/_stcore/health", "/_stcore/host-config", "/", "/_stcore/health"):
            status, headers = get(class_server, path, cookie)
            assert status == 200
            assert headers.get_all("Set-Cookie") is None or nginx.COOKIE not in str(
                headers.get_all("Set-Cookie"))  # set once, then only sent back
            answered.add(headers[nginx.UPSTREAM_HEADER])
        assert len(answered) == 1, f"one browser answered by {answered}"
        used |= answered
    assert len(used) == PROCESSES, used
