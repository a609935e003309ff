"""Checks of a running tinyformer, over Streamlit's websocket (deploy/stream.py), for
deploy/build_image.sh: does a page open, and does a class session work through the
class store the server was given?

    python deploy/image_check.py page --port 8741 [--stage softmax]
    python deploy/image_check.py class --port 8743 [--stage softmax]
    python deploy/image_check.py down --port 8743 --code ABC234 [--stage softmax]

`page` opens one stage as a browser tab does and prints the time of its first run (the
request to script_finished), with no exception on the page. `class` is a teacher and a
learner: the teacher opens the stage and presses "Start a class" in the sidebar; the
learner opens the overview with the class link (`?class=CODE`), sends its poll as the
browser's timer does (the auto_rerun fragment, see benchmarks/class_session_load.py),
and must land on the teacher's stage. It prints the class code (the store holds it) and
exits 1 with a reason if anything fails. `down`, once the class store is stopped: a
learner opening the class link still gets the page, with no exception, and the
translated message that the class cannot be reached.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.stream import open_stream, receive, rerun_message

TIMEOUT = 120.0


class Check(Exception):
    """A failed check: its message says what."""


def page_names() -> dict[str, str]:
    """Stage id -> the page's url name (the app's navigation)."""
    from streamlit.source_util import page_icon_and_name

    from ui.stages import HOME, all_pages

    return {s.id: "" if s == HOME else page_icon_and_name(Path(s.path))[1]
            for s in all_pages()}


class Tab:
    """A websocket session: sends reruns, reads one run to its end."""

    def __init__(self, socket, port: int) -> None:
        self.socket, self.port = socket, port
        self.query = ""
        self.page_hash = ""
        self.widgets: dict[str, str] = {}  # a widget's key -> its id
        self.fragments: dict[str, str] = {}  # a widget's key -> the section that drew it
        self.timers: list[str] = []  # auto_rerun fragment ids
        self.url = ""  # the page the last whole run showed
        self.alerts: list[str] = []  # st.error / st.warning / st.info texts drawn

    def run(self, *, page_name: str | None = None, widgets=(), fragment: str = "",
            auto: bool = False) -> tuple[float, list[str]]:
        """One request, read to the end of the run it causes (and of a whole run it
        asks for): the seconds it took and the exceptions on the page."""
        message = rerun_message("127.0.0.1", self.port, query=self.query,
                                page_name=page_name or "",
                                page_script_hash="" if page_name is not None else self.page_hash,
                                widgets=widgets, fragment_id=fragment)
        message.rerun_script.is_auto_rerun = auto
        began = time.monotonic()
        self.socket.send(message.SerializeToString())
        exceptions: list[str] = []
        while True:
            forward = receive(self.socket, TIMEOUT)
            kind = forward.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = forward.new_session.page_script_hash or self.page_hash
            elif kind == "navigation":
                nav = forward.navigation
                self.page_hash = nav.page_script_hash
                self.url = next((p.url_pathname for p in nav.app_pages
                                 if p.page_script_hash == nav.page_script_hash), self.url)
            elif kind == "page_info_changed":
                self.query = forward.page_info_changed.query_string
            elif kind == "auto_rerun":
                self.timers.append(forward.auto_rerun.fragment_id)
            elif kind == "delta" and forward.delta.WhichOneof("type") == "add_block":
                block = forward.delta.add_block  # a drawer (ui/drawer.py) is a widget too
                if block.WhichOneof("type") == "expandable" and block.expandable.id:
                    self.widgets[block.expandable.id.split("-", 2)[2]] = block.expandable.id
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                element = forward.delta.new_element
                what = element.WhichOneof("type")
                if what == "exception":
                    exceptions.append(element.exception.message[:200])
                elif what == "alert":
                    self.alerts.append(element.alert.body)
                widget_id = getattr(getattr(element, what), "id", "") if what else ""
                if widget_id.startswith("$$ID-"):
                    key = widget_id.split("-", 2)[2]
                    self.widgets[key] = widget_id
                    self.fragments[key] = forward.delta.fragment_id
            elif kind == "script_finished":
                status = forward.script_finished
                if status == forward.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN:
                    continue  # st.rerun or st.switch_page: the next run follows
                if status == forward.ScriptFinishedStatus.FINISHED_WITH_COMPILE_ERROR:
                    raise Check("the page did not compile")
                return time.monotonic() - began, exceptions


def check_page(port: int, stage: str) -> None:
    pages = page_names()
    with open_stream("127.0.0.1", port, TIMEOUT) as socket:
        tab = Tab(socket, port)
        tab.query = f"{stage}.more=true" if stage != "home" else ""
        seconds, exceptions = tab.run(page_name=pages[stage])
    if exceptions:
        raise Check(f"page {stage}: an exception on the page: {exceptions[0]}")
    if tab.url != pages[stage]:
        raise Check(f"asked for {stage}, the server ran '{tab.url}'")
    print(f"page {stage}: first run {seconds * 1000:.0f} ms (the whole page), no exception")


def check_class(port: int, stage: str) -> None:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    pages = page_names()
    with open_stream("127.0.0.1", port, TIMEOUT) as teacher_socket:
        teacher = Tab(teacher_socket, port)
        teacher.run(page_name=pages[stage])
        if "_class_box" not in teacher.widgets:
            raise Check("no class drawer in the sidebar")
        box = WidgetState(id=teacher.widgets["_class_box"], bool_value=True)
        teacher.run(widgets=[box])  # opened: its tools are drawn only while open
        if "_class_start" not in teacher.widgets:
            raise Check("no 'Start a class' button in the sidebar")
        seconds, exceptions = teacher.run(
            widgets=[box, WidgetState(id=teacher.widgets["_class_start"], trigger_value=True)],
            fragment=teacher.fragments["_class_start"])
        code = dict(p.split("=", 1) for p in teacher.query.split("&") if "=" in p).get("class")
        if not code or exceptions:
            raise Check(f"the teacher's class did not start (query '{teacher.query}', "
                        f"{exceptions or 'no exception'}): is the class store reachable?")
        print(f"class {code}: started by the teacher in {seconds * 1000:.0f} ms")
        with open_stream("127.0.0.1", port, TIMEOUT) as learner_socket:
            learner = Tab(learner_socket, port)
            learner.query = f"class={code}"
            began = time.monotonic()
            learner.run(page_name="")  # the class section may move it at once
            while learner.url != pages[stage] and time.monotonic() - began < 30:
                if not learner.timers:
                    raise Check("the learner's page does not poll (no auto_rerun)")
                time.sleep(2.0)  # the browser's timer: every 2 s
                _, exceptions = learner.run(fragment=learner.timers[-1], auto=True)
                if exceptions:
                    raise Check(f"the learner's page: {exceptions[0]}")
            if learner.url != pages[stage]:
                raise Check(f"the learner did not follow the teacher to {stage}")
        print(f"class {code}: a learner opened the class link (the overview) and was on the "
              f"teacher's stage, {stage}, {time.monotonic() - began:.1f} s later")


def check_down(port: int, stage: str, code: str) -> None:
    from ui.i18n import catalogue

    message = catalogue("en")["class.store_down"]
    with open_stream("127.0.0.1", port, TIMEOUT) as socket:
        tab = Tab(socket, port)
        tab.query = f"class={code}&lang=en"
        seconds, exceptions = tab.run(page_name=page_names()[stage])
    if exceptions:
        raise Check(f"with the store down, an exception on the page: {exceptions[0]}")
    if message not in tab.alerts:
        raise Check(f"with the store down, no '{message}' on the page (alerts: {tab.alerts})")
    print(f"store down: {stage} with the class link opened in {seconds * 1000:.0f} ms, no "
          f"exception, and says: {message}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("check", choices=("page", "class", "down"))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stage", default="softmax")
    parser.add_argument("--code", default="", help="the class code, for `down`")
    args = parser.parse_args(argv)
    try:
        if args.check == "down":
            check_down(args.port, args.stage, args.code)
        else:
            (check_page if args.check == "page" else check_class)(args.port, args.stage)
    except (Check, OSError, TimeoutError) as error:
        print(f"check failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
