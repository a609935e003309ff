"""deploy.warm and deploy.stream: the one place that reads Streamlit's private runtime
state, checked so that a Streamlit release that changes it fails here, loudly, rather
than silently turning the warm-up's "give way to learners" off; and the one
websocket client's messages."""

from __future__ import annotations

from deploy import stream, warm


def test_streamlit_still_has_the_runtime_state_the_warm_up_reads() -> None:
    from streamlit.runtime import Runtime, RuntimeState

    assert callable(Runtime.exists)
    assert callable(Runtime.instance)
    assert hasattr(Runtime, "state")
    assert RuntimeState.ONE_OR_MORE_SESSIONS_CONNECTED.name == "ONE_OR_MORE_SESSIONS_CONNECTED"


def test_without_a_server_nobody_is_connected() -> None:
    assert warm.sessions_connected() is False
    assert warm.learner_connected(wait=0.01) is False
    assert warm._CHANGED == []  # nothing in Streamlit was missing


def test_a_changed_streamlit_is_reported_not_hidden(monkeypatch, capsys) -> None:
    def changed() -> bool:
        raise AttributeError("type object 'Runtime' has no attribute 'state'")

    monkeypatch.setattr(warm, "sessions_connected", changed)
    monkeypatch.setattr(warm, "_CHANGED", [])
    assert warm.learner_connected(wait=0.01) is False
    assert "Streamlit changed" in capsys.readouterr().err
    assert len(warm._CHANGED) == 1


def test_the_rerun_message_opens_a_page_like_a_browser() -> None:
    message = stream.rerun_message("127.0.0.1", 8501, page_name="softmax", query="lang=zh")
    rerun = message.rerun_script
    assert (rerun.page_name, rerun.query_string) == ("softmax", "lang=zh")
    assert rerun.context_info.url == "http://127.0.0.1:8501/softmax"
    known = stream.rerun_message("127.0.0.1", 8501, page_name="softmax", page_script_hash="h")
    assert (known.rerun_script.page_name, known.rerun_script.page_script_hash) == ("", "h")
