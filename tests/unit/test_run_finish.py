"""serving/run_finish.py: a section's run that would replace a finished runner starts
after that runner's queued events, on a real asyncio loop with stand-in runners."""

from __future__ import annotations

import asyncio
import threading
import types

import pytest

from serving import run_finish


class Runner:
    def __init__(self, name: str, accepts: bool = True) -> None:
        self.name, self.accepts, self.requests = name, accepts, []

    def request_rerun(self, rerun_data) -> bool:
        if self.accepts:
            self.requests.append(rerun_data)
        return self.accepts


class Session:
    """What the patch reads of an AppSession; the 'events' list records the order in
    which the loop ran things."""

    def __init__(self, loop: asyncio.AbstractEventLoop, runner: Runner | None) -> None:
        self._event_loop, self._scriptrunner, self.events = loop, runner, []

    def deliver(self, event: str) -> None:  # an old runner's event, queued on the loop
        self.events.append(event)


@pytest.fixture()
def created(monkeypatch: pytest.MonkeyPatch) -> list:
    """Streamlit's own _create_scriptrunner, replaced by a recorder."""
    made: list = []

    def create(session, rerun_data) -> None:
        session.events.append(f"new runner for {rerun_data.fragment_id or 'the page'}")
        session._scriptrunner = Runner("new")
        made.append(rerun_data)

    monkeypatch.setitem(run_finish.ORIGINALS, "_create_scriptrunner", create)
    return made


def _data(fragment: str = "") -> types.SimpleNamespace:
    return types.SimpleNamespace(fragment_id=fragment)


def _on_loop(session: Session, *steps) -> None:
    """Run the steps on the session's loop, in a thread of its own (as the server's
    loop runs; another test may leave a loop running in this one)."""
    async def main() -> None:
        for step in steps:
            step()
        for _ in range(5):
            await asyncio.sleep(0)

    worker = threading.Thread(target=session._event_loop.run_until_complete, args=(main(),))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()


def test_a_section_s_run_starts_after_the_old_runner_s_queued_events(created) -> None:
    loop = asyncio.new_event_loop()
    old = Runner("old", accepts=False)  # its run is over: it refuses the request
    session = Session(loop, old)
    _on_loop(session,
             lambda: loop.call_soon(session.deliver, "last messages"),
             lambda: loop.call_soon(session.deliver, "finished"),
             lambda: run_finish.create_scriptrunner(session, _data("poll")))
    loop.close()
    assert session.events == ["last messages", "finished", "new runner for poll"]


def test_without_it_the_new_runner_comes_first(created) -> None:
    """The order Streamlit had: the new runner before the old one's queued events (which
    AppSession then ignores)."""
    loop = asyncio.new_event_loop()
    session = Session(loop, Runner("old", accepts=False))
    _on_loop(session,
             lambda: loop.call_soon(session.deliver, "finished"),
             lambda: run_finish.ORIGINALS["_create_scriptrunner"](session, _data("poll")))
    loop.close()
    assert session.events == ["new runner for poll", "finished"]


def test_a_runner_started_meanwhile_takes_the_request(created) -> None:
    loop = asyncio.new_event_loop()
    session = Session(loop, Runner("old", accepts=False))
    meanwhile = Runner("whole page")

    def whole_page_arrives() -> None:  # fastReruns: a new runner for the whole page
        session._scriptrunner = meanwhile

    _on_loop(session,  # the whole page's request was already queued when the poll came
             lambda: loop.call_soon(whole_page_arrives),
             lambda: run_finish.create_scriptrunner(session, _data("poll")))
    loop.close()
    assert [d.fragment_id for d in meanwhile.requests] == ["poll"] and not created


def test_a_session_closed_meanwhile_starts_nothing(created) -> None:
    loop = asyncio.new_event_loop()
    session = Session(loop, Runner("old", accepts=False))

    def tab_closed() -> None:
        session._state = types.SimpleNamespace(name="SHUTDOWN_REQUESTED")

    _on_loop(session,
             lambda: run_finish.create_scriptrunner(session, _data("poll")),
             tab_closed)  # the tab closes before the deferred start runs
    loop.close()
    assert not created


def test_a_whole_page_run_and_a_first_runner_start_at_once(created) -> None:
    loop = asyncio.new_event_loop()
    session = Session(loop, Runner("old", accepts=False))
    run_finish.create_scriptrunner(session, _data())  # not on the loop, not deferred
    fresh = Session(loop, None)
    run_finish.create_scriptrunner(fresh, _data("poll"))
    loop.close()
    assert session.events == ["new runner for the page"]
    assert fresh.events == ["new runner for poll"]


def test_it_installs_on_this_streamlit() -> None:
    from streamlit.runtime.app_session import AppSession

    assert run_finish.install()
    assert AppSession._create_scriptrunner is run_finish.create_scriptrunner
