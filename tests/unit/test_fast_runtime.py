"""serving/fast_runtime.py: each patch answers as the Streamlit code it replaces."""

from __future__ import annotations

import asyncio
import threading
import time
import types

import pytest
import streamlit as st
from streamlit.runtime.state.session_state import STREAMLIT_INTERNAL_KEY_PREFIX
from streamlit.testing.v1 import AppTest

from serving import fast_runtime


def _inputs_script() -> None:
    import streamlit as st

    st.session_state.setdefault("plain", 3)
    st.session_state.setdefault("nothing", None)
    st.slider("keyed slider", 0, 10, key="rate")
    st.selectbox("keyed box", ["a", "b"], key="pick")
    st.number_input("no value", value=None, key="empty_box")
    st.slider("keyless slider", 0, 10)  # its id must stay out of the view
    st.session_state["copy"] = st.session_state.to_dict()


@pytest.fixture(scope="module")
def app() -> AppTest:
    assert fast_runtime.install()  # this Streamlit is the one the patches were written for
    at = AppTest.from_function(_inputs_script)
    at.run()
    at.slider(key="rate").set_value(7).run()
    assert not at.exception
    return at


def test_the_view_holds_what_streamlits_dict_holds(app: AppTest) -> None:
    safe = app._session_state
    original = safe._state.filtered_state  # SessionState's own, not patched
    view = safe.filtered_state
    assert isinstance(view, fast_runtime.FilteredStateView)
    assert set(original) >= {"plain", "nothing", "rate", "pick", "empty_box"}
    assert dict(view) == original and len(view) == len(original)
    for key, value in original.items():
        assert key in view and view[key] == value
    assert view["rate"] == 7 and view["empty_box"] is None and view["nothing"] is None


def test_the_view_leaves_out_what_streamlits_dict_leaves_out(app: AppTest) -> None:
    safe = app._session_state
    view = safe.filtered_state
    keyless = [k for k in safe._state._keys() if k not in safe._state.filtered_state]
    assert keyless  # the keyless slider's id, at least
    for key in [*keyless, "absent", STREAMLIT_INTERNAL_KEY_PREFIX + "x", 3]:
        assert key not in view
    with pytest.raises(KeyError):
        view["absent"]
    with pytest.raises(KeyError):
        view[STREAMLIT_INTERNAL_KEY_PREFIX + "x"]


def test_to_dict_and_str_stay_a_dicts(app: AppTest) -> None:
    copied = app.session_state["copy"]
    assert type(copied) is dict and copied["rate"] == 7
    assert repr(app._session_state.filtered_state) == repr(
        app._session_state._state.filtered_state)
    assert isinstance(st.session_state.to_dict, types.MethodType)


class _Queue:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def enqueue(self, msg: str) -> None:
        self.sent.append(msg)


class _Runtime:
    """The shape of Streamlit's Runtime that the wake-up reads."""

    def __init__(self, pending: bool) -> None:
        flag = types.SimpleNamespace(is_set=lambda: pending)
        self._async_objs = types.SimpleNamespace(need_send_data=flag)
        self.wakeups = 0

    def _enqueued_some_message(self) -> None:
        self.wakeups += 1


@pytest.mark.parametrize("pending", [False, True])
def test_a_message_is_always_queued_and_wakes_the_loop_only_when_none_is_pending(
        pending: bool) -> None:
    runtime = _Runtime(pending)
    session = types.SimpleNamespace(_browser_queue=_Queue(),
                                    _message_enqueued_callback=runtime._enqueued_some_message)
    fast_runtime.enqueue_forward_msg(session, "delta")
    assert session._browser_queue.sent == ["delta"]
    assert runtime.wakeups == (0 if pending else 1)


def test_a_callback_of_another_shape_is_always_called() -> None:
    calls = []
    session = types.SimpleNamespace(_browser_queue=_Queue(),
                                    _message_enqueued_callback=lambda: calls.append(1))
    fast_runtime.enqueue_forward_msg(session, "delta")
    assert calls == [1]


def test_another_streamlit_release_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.runtime import app_session
    from streamlit.runtime.state import safe_session_state

    streamlits_own = property(lambda self: {})
    monkeypatch.setattr(safe_session_state.SafeSessionState, "filtered_state", streamlits_own)
    monkeypatch.setattr(app_session.AppSession, "_enqueue_forward_msg", len)
    monkeypatch.setattr(fast_runtime.streamlit, "__version__", "1.99.0")
    fast_runtime.install.cache_clear()
    try:
        assert fast_runtime.install() is False
        assert safe_session_state.SafeSessionState.filtered_state is streamlits_own
        assert app_session.AppSession._enqueue_forward_msg is len
    finally:
        fast_runtime.install.cache_clear()
        monkeypatch.undo()
        assert fast_runtime.install()  # as the rest of the test run has it


# --- Wake-ups of the event loop: the same callbacks, in the same order, fewer writes ----
def _idle_loop() -> asyncio.AbstractEventLoop:
    """A loop that is not running, whose self-pipe writes are counted."""
    loop = asyncio.new_event_loop()
    loop.writes = 0
    loop._write_to_self = lambda: setattr(loop, "writes", loop.writes + 1)
    return loop


def _queued(loop: asyncio.AbstractEventLoop) -> list:
    return [handle._callback for handle in loop._ready
            if handle._callback != loop._tf_wakes.answered]  # a new bound method each time


def test_callbacks_join_the_queue_in_order_with_one_write_while_unanswered() -> None:
    loop = _idle_loop()
    try:
        wakes = fast_runtime.loop_wakes(loop)
        sent = [lambda i=i: i for i in range(50)]
        for callback in sent:
            wakes.call_soon(callback)
        assert _queued(loop) == sent and loop.writes == 1
        loop.call_soon(loop.stop)
        # On a thread of its own: the test runner's thread may have a loop running.
        runner = threading.Thread(target=loop.run_forever)  # runs them, `answered` first
        runner.start()
        runner.join(5)
        assert not loop._ready and not wakes.pending
        wakes.call_soon(sent[0])
        assert loop.writes == 2  # answered: the next callback wakes the loop again
    finally:
        loop.close()


def test_the_order_matches_streamlits_own_when_mixed_with_other_callbacks() -> None:
    from streamlit.runtime import app_session

    loop = _idle_loop()
    try:
        session = types.SimpleNamespace(_event_loop=loop)
        own = fast_runtime.ORIGINALS["_call_soon_on_event_loop"]
        assert own.__qualname__ == "AppSession._call_soon_on_event_loop"
        assert app_session.AppSession._call_soon_on_event_loop is \
            fast_runtime.call_soon_on_event_loop
        sent = [lambda i=i: i for i in range(12)]
        for i, callback in enumerate(sent):
            (own if i % 3 == 0 else fast_runtime.call_soon_on_event_loop)(session, callback)
        assert _queued(loop) == sent
    finally:
        loop.close()


def test_a_running_loop_runs_every_callback_from_many_threads_in_each_threads_order() -> None:
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    try:
        wakes = fast_runtime.loop_wakes(loop)
        seen: dict[int, list[int]] = {0: [], 1: [], 2: []}
        done = threading.Event()
        total = 3 * 3000

        def send(thread: int) -> None:
            for i in range(3000):
                def callback(thread: int = thread, i: int = i) -> None:
                    seen[thread].append(i)
                    if sum(map(len, seen.values())) == total:
                        done.set()
                wakes.call_soon(callback)
                if i % 500 == 0:
                    time.sleep(0.001)  # let the loop go idle in between

        senders = [threading.Thread(target=send, args=(n,)) for n in seen]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        assert done.wait(10), {n: len(v) for n, v in seen.items()}  # none left waiting
        assert all(v == list(range(3000)) for v in seen.values())
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
        loop.close()


def test_a_closed_loop_drops_the_callback_as_streamlit_does() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    session = types.SimpleNamespace(_event_loop=loop)
    fast_runtime.call_soon_on_event_loop(session, lambda: None)  # no error


def test_a_loop_without_a_self_pipe_keeps_call_soon_threadsafe() -> None:
    calls = []
    loop = types.SimpleNamespace(call_soon_threadsafe=calls.append, is_closed=lambda: False)
    session = types.SimpleNamespace(_event_loop=loop)
    fast_runtime.call_soon_on_event_loop(session, len)
    assert fast_runtime.loop_wakes(loop) is None and calls == [len]
