"""Fixtures for the proxy tests: Debian's nginx, and the class server started the way
docs/deploy.md starts it (`python3.11 dev.py class --processes 2`, on a free port, in
its own process group). The server, browser and tab helpers are the e2e tests' own.

Without nginx the tests that need it skip, except under CI=true, where a missing
nginx is a failure (as a missing Chromium is for the e2e tests).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from e2e.conftest import (  # noqa: F401  (browser, new_tab: fixtures used here)
    RUN_COMMAND,
    Server,
    browser,
    new_tab,
    start_server,
    wait_healthy,
)

from deploy import nginx

PROCESSES = 2
# The README's interpreter, the class command, and the header that names the process
# which answered (the tests read stickiness from it).
CLASS_COMMAND = [RUN_COMMAND[0], "dev.py", "class", "--processes", str(PROCESSES),
                 "--show-upstream"]


@pytest.fixture(scope="session")
def nginx_binary() -> str:
    found = nginx.find_nginx()
    if found:
        return found
    reason = "nginx is missing: install Debian's nginx package to run the proxy tests"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: a missing nginx is a failure, not a skip)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def class_server(nginx_binary: str) -> Iterator[Server]:
    """Two Streamlit processes behind nginx; `port` is nginx's."""
    server = start_server(command=CLASS_COMMAND)
    try:
        wait_healthy(server)  # through nginx: it starts once every process answers
        yield server
    finally:
        server.stop()
        server.log.unlink(missing_ok=True)
