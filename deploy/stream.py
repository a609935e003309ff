"""One client for Streamlit's browser protocol: a websocket on /_stcore/stream that
speaks Streamlit's own protobuf messages (BackMsg out, ForwardMsg in), the way a
browser tab does. The warm-up (deploy/warm.py) and the benchmarks (benchmarks/)
both open their sessions here.

    with open_stream("127.0.0.1", 8501, timeout=60) as socket:
        socket.send(rerun_message("127.0.0.1", 8501, page_name="softmax").SerializeToString())
        while (message := receive(socket, timeout=60)).WhichOneof("type") != "script_finished":
            ...

The messages are Streamlit's public wire format (the frontend and the server agree on
it, and Streamlit ships the compiled protobuf classes); imports are inside the
functions, so that importing this module reads no Streamlit configuration.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import ClientConnection

# The frontend offers "streamlit" plus its XSRF token (a placeholder without one).
SUBPROTOCOLS = ["streamlit", "PLACEHOLDER_AUTH_TOKEN"]
LOCALE = "en-US"


@contextlib.contextmanager
def open_stream(host: str, port: int, timeout: float,
                headers: Mapping[str, str] | None = None) -> Iterator[ClientConnection]:
    """A websocket session on the server at host:port. No Origin header: the server
    then skips its XSRF check, which only guards auth cookies (none here); `headers`
    carries a proxy's sticky cookie, say."""
    from websockets.sync.client import connect

    with connect(f"ws://{host}:{port}/_stcore/stream",
                 subprotocols=SUBPROTOCOLS,  # type: ignore[arg-type]
                 additional_headers=dict(headers) if headers else None, max_size=None,
                 open_timeout=timeout, close_timeout=2) as socket:
        yield socket


def rerun_message(host: str, port: int, *, page_name: str = "", query: str = "",
                  page_script_hash: str = "", widgets: Iterable[Any] = (),
                  fragment_id: str = "", locale: str = LOCALE) -> BackMsg:
    """The rerun_script message a browser sends: open `page_name` (its url name; ""
    is the main page) or, once the server named the page, `page_script_hash`; with
    the widget states that changed (WidgetState messages) and the fragment that drew
    them, if one did (that fragment then reruns alone)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    message = BackMsg()
    rerun = message.rerun_script
    rerun.query_string = query
    rerun.page_script_hash = page_script_hash
    rerun.page_name = "" if page_script_hash else page_name
    rerun.widget_states.widgets.extend(widgets)
    rerun.fragment_id = fragment_id
    info = rerun.context_info
    info.timezone = "UTC"
    info.locale = locale
    info.color_scheme = "light"
    info.url = f"http://{host}:{port}/{page_name}"
    return message


def receive(socket: ClientConnection, timeout: float) -> ForwardMsg:
    """The next message from the server (raises TimeoutError after `timeout` s)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    message = ForwardMsg()
    message.ParseFromString(socket.recv(timeout=timeout))
    return message
