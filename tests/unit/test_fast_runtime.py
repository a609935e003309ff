"""serving/fast_runtime.py: each patch answers as the Streamlit code it replaces."""

from __future__ import annotations

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
