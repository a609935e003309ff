"""Moving between stages in ONE session (one session state for every page of a tab).

Streamlit keeps a single session state per tab, so a key one page leaves behind is
still there when the next page runs. Two checks:
- every key a page writes lies in its own namespace (ui.state's rule), or in a
  namespace shared on purpose;
- a walk through every ordered pair of pages, opening the whole page on arrival and
  editing a slider and a text box on each page before leaving it: no exception on
  arrival, and none on the way back (the walk is an Eulerian circuit of the complete
  directed graph, so (a, b) and (b, a) are each travelled once, always right after an
  edit on the page left).
"""

from __future__ import annotations

from itertools import pairwise

from streamlit.testing.v1 import AppTest

from tests.app.helpers import APP, open_rest
from ui.stages import HOME, STAGES, Stage

PAGES: tuple[Stage, ...] = (HOME, *STAGES)
SHARED = ("hand.",)  # namespaces two stages share on purpose (ui/hand_example.py)
# The kit's own keys, one of each per session whatever the page.
KIT_KEYS = {"_stage", "_entered", "_run", "_lang", "_lang_switch", "device", "_present",
            "_present_switch", "_present_exit", "_handout", "_share_url", "_share_address",
            "_dl_state", "_dl_tables", "_dl_handout"}


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


def eulerian_circuit(n: int) -> list[int]:
    """Hierholzer's walk over every ordered pair (a, b), a != b, of n nodes."""
    unused = {a: [b for b in range(n) if b != a] for a in range(n)}
    stack, circuit = [0], []
    while stack:
        node = stack[-1]
        if unused[node]:
            stack.append(unused[node].pop())
        else:
            circuit.append(stack.pop())
    return circuit[::-1]


def test_the_circuit_covers_every_ordered_pair_once():
    walk = eulerian_circuit(5)
    pairs = list(pairwise(walk))
    assert sorted(pairs) == sorted((a, b) for a in range(5) for b in range(5) if a != b)


def test_every_key_stays_in_its_own_namespace():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "en"
    _run_clean(at, "overview")
    for page in STAGES:
        before = set(at.session_state.keys())
        _go(at, page)
        _edit(at, page)
        added = set(at.session_state.keys()) - before - KIT_KEYS
        stray = [k for k in added if not k.lstrip("_").startswith((f"{page.id}.", *SHARED))]
        assert stray == [], (page.id, stray)


def test_every_ordered_pair_of_pages_after_an_edit():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = "zh"
    _run_clean(at, "overview")
    walk = eulerian_circuit(len(PAGES))
    for index in walk[1:]:
        _edit(at, _current(at))
        _go(at, PAGES[index])


def _current(at: AppTest) -> Stage:
    stage_id = at.session_state["_stage"]
    return next(p for p in PAGES if p.id == stage_id)
