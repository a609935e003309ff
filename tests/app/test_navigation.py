"""Moving between stages in ONE session (one session state for every page of a tab).

Streamlit keeps a single session state per tab, so a key one page leaves behind is
still there when the next page runs. Two pages can only collide through a key both
use, and ui.state's rule leaves three kinds: the frame's globals, the kit's own keys,
and the namespaces shared on purpose ("hand."). So:
- one walk through every page in curriculum order, opening the whole page on arrival
  and editing a slider and a text box before leaving it, checks that every key a page
  adds lies in its own namespace, a shared one, or the kit's (25 arrivals, each right
  after an edit on the page left: no exception);
- every page that writes a shared key writes it with the same kind and shape of value
  (its meaning on every stage), and the pages that share keys are then walked forwards
  and back, each arrival right after an edit on its neighbour in curriculum order
  (about twice as many arrivals as sharing pages).
Two pages can only disturb each other through a key both hold, and the shared keys hold
one kind and shape of value on every page, written by the same kit verb, so an edit
anywhere leaves a value any other sharing page reads: that is what the shape check
asserts. The forward-and-back walk then shows each page taking over a value another
page just edited. (It replaces a walk over every ordered pair of sharing pages: 72
arrivals since the hand chain reaches nine stages, 72 s.)
"""

from __future__ import annotations

from itertools import pairwise

from streamlit.testing.v1 import AppTest

from tests.app.helpers import APP, open_rest
from ui.stages import STAGES, Stage
from ui.state import SHARED_NAMESPACES

SHARED = tuple(f"{name}." for name in SHARED_NAMESPACES)
# The frame's and the kit's own keys, one of each per session whatever the page.
KIT_KEYS = {"_stage", "_entered", "_run", "_url_now", "lang", "_lang_switch", "device",
            "present", "_present_switch", "_present_exit", "_handout", "_share_url",
            "_share_address", "_share_on", "_bar_share", "_dl_state", "_dl_tables",
            "_dl_handout", "_reset_page", "_share_box", "_dl_box", "_class_box",
            "_lesson_box", "_sentence~boxsidebar"}  # that box: every stage but the overview


def _run_clean(at: AppTest, where: str) -> None:
    at.run()
    assert not at.exception, (where, [e.value for e in at.exception])


def _go(at: AppTest, page: Stage) -> None:
    """Arrive on `page` and open the rest of it (its "Continue" button, ui/fold.py), so
    that every input of the page is drawn and in session state."""
    at.switch_page(page.path)
    _run_clean(at, f"arriving on {page.id}")
    open_rest(at)


def _edit(at: AppTest, page: Stage) -> None:
    """Move the first slider to its other end and re-type the first text box (a trailing
    space: a real edit of the widget's value that every parser accepts), in one run."""
    sliders = [s for s in at.main.slider if not s.disabled]
    boxes = [b for b in at.main.text_input if not b.disabled]
    if sliders:
        slider = sliders[0]
        slider.set_value(slider.max if slider.value != slider.max else slider.min)
    if boxes:
        boxes[0].input((boxes[0].value or "") + " ")
    if sliders or boxes:
        _run_clean(at, f"editing {page.id}")


def _shape(value) -> tuple:
    """The kind of a value, and for a typed matrix its number of rows and columns."""
    if isinstance(value, str) and value.strip():
        rows = value.split(";")
        return ("text", len(rows), len(rows[0].split(",")))
    return (type(value).__name__,)


def _session() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "en"
    _run_clean(at, "overview")
    return at


def test_keys_stay_in_their_namespaces_and_pages_sharing_keys_meet_in_every_order():
    at = _session()
    shared: dict[str, dict[str, tuple]] = {}  # key -> stage -> shape
    for page in STAGES:
        before = set(at.session_state.keys())
        _go(at, page)
        now = set(at.session_state.keys())
        for key in now:
            if key.startswith(SHARED):
                shared.setdefault(key, {})[page.id] = _shape(at.session_state[key])
        _edit(at, page)
        added = set(at.session_state.keys()) - before - KIT_KEYS
        stray = [k for k in added if not k.lstrip("_").startswith((f"{page.id}.", *SHARED))]
        assert stray == [], (page.id, stray)
    for key, shapes in shared.items():
        assert len(set(shapes.values())) == 1, (key, shapes)

    sharing = [s for s in STAGES if any(s.id in shapes for shapes in shared.values())]
    assert len(sharing) >= 2, sharing  # stages 2-5 share their hand example
    # Each page is arrived at right after an edit on the sharing page before it and on
    # the one after it, and the last meets the first both ways (the walk closes).
    walk = sharing + sharing[-2::-1] + [sharing[-1]]
    for a, b in pairwise(walk):
        if at.session_state["_stage"] != a.id:
            _go(at, a)
        _edit(at, a)
        _go(at, b)
    met = set(pairwise(s.id for s in walk))
    assert all((a.id, b.id) in met and (b.id, a.id) in met for a, b in pairwise(sharing))
