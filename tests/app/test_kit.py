"""The kit's verbs, each once, inside the frame (ui.frame.around) but without a page:
an AppTest of a few lines runs in about a second. Page tests check only what is the
page's own (its shapes, its bounds, its numbers); how every input refuses a bad value
or a bad link, keeps its URL and shares keys is tested here."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.helpers import DRAWERS, click, page_text
from ui.i18n import catalogue

EN = catalogue("en")
# Bad cell texts matrix_input must refuse: text, NaN, inf, too large, empty.
BAD_CELLS = ("abc", "nan, 1", "inf, 0", "1e300, 0", "")


def _run(script, params: dict | None = None, state: dict | None = None,
         lang: str = "en") -> AppTest:
    at = AppTest.from_function(script, default_timeout=60)
    at.query_params["lang"] = lang
    for key, value in (params or {}).items():
        at.query_params[key] = value
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _main_errors(at: AppTest) -> list[str]:
    return [e.value for e in at.main.error]


# --- number, choice, toggle, text ----------------------------------------------------------
def _inputs():
    import streamlit as st

    from ui.frame import around
    from ui.inputs import choice, number, text, toggle

    with around("softmax"):
        n = number("n", "N", 1, 9, 3)
        x = number("x", "X", 0.0, 1.0, 0.5, gesture="both")
        c = choice("c", "C", ("a", "b", "c"), "a")
        on = toggle("on", "On", True)
        words = text("w", "W", "hello", 8)
        st.markdown(f"values {n} {x} {c} {on} {words}")


def test_inputs_start_from_their_defaults_and_leave_the_url_clean():
    at = _run(_inputs)
    assert "values 3 0.5 a True hello" in page_text(at)
    assert not [k for k in at.query_params if k.startswith("softmax.")]


def test_inputs_read_a_link_and_write_an_edit_back():
    at = _run(_inputs, params={"softmax.n": "7", "softmax.x": "0.25", "softmax.c": "b",
                               "softmax.on": "false", "softmax.w": "hi"})
    assert "values 7 0.25 b False hi" in page_text(at)
    assert not _main_errors(at)
    at.number_input("softmax.n").set_value(2).run()
    at.radio("softmax.c").set_value("c").run()
    at.toggle("softmax.on").set_value(True).run()
    assert at.query_params["softmax.n"] == "2" and at.query_params["softmax.c"] == "c"
    assert "softmax.on" not in at.query_params  # back to its default: out of the URL
    assert "values 2 0.25 c True hi" in page_text(at)


def test_old_boolean_spelling_is_still_read():
    at = _run(_inputs, params={"softmax.on": "0"})
    assert "values 3 0.5 a False hello" in page_text(at)
    assert at.query_params["softmax.on"] == "false"  # written in today's spelling


def test_slider_and_box_are_two_views_of_one_value():
    at = _run(_inputs)
    at.number_input("_softmax.x~n").set_value(0.8).run()
    assert at.slider("_softmax.x~s").value == pytest.approx(0.8)
    assert at.query_params["softmax.x"] == "0.8"


@pytest.mark.parametrize("params", [
    {"softmax.n": "0"}, {"softmax.n": "2.5"}, {"softmax.n": "abc"}, {"softmax.n": "1e300"},
    {"softmax.x": "nan"}, {"softmax.x": "inf"}, {"softmax.x": "2"},
    {"softmax.c": "d"}, {"softmax.c": "True"}, {"softmax.on": "maybe"},
    {"softmax.w": "far too long for eight"},
])
def test_a_bad_link_value_falls_back_to_the_default_with_one_note(params):
    at = _run(_inputs, params=params)
    assert "values 3 0.5 a True hello" in page_text(at)
    [note] = _main_errors(at)
    name = {"n": "N", "x": "X", "c": "C", "on": "On", "w": "W"}[
        next(iter(params)).split(".")[1]]
    assert note == EN["input.bad_link"].format(name=name)


def _warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.main.warning]


def test_a_number_box_clamps_or_keeps_its_value_and_says_which_in_the_learners_language():
    """Streamlit's box would keep showing 12 while the page used 3 (its English tooltip
    the only word), and would turn an unreadable entry (letters, 1e309: None here, as
    the browser sends it) into its minimum silently."""
    zh = catalogue("zh")
    at = _run(_inputs, lang="zh")
    at.number_input("softmax.n").set_value(12).run()  # its range is 1 to 9
    assert at.number_input("softmax.n").value == 9 and at.query_params["softmax.n"] == "9"
    assert "values 9 0.5" in page_text(at)
    assert _warnings(at) == [zh["input.number_clamped"].format(name="N", lo=1, hi=9,
                                                               typed=12, used=9)]
    at.number_input("_softmax.x~n").set_value(None).run()  # the exact box beside a slider
    assert at.number_input("_softmax.x~n").value == 0.5 and "values 9 0.5" in page_text(at)
    assert _warnings(at) == [zh["input.number_missing"].format(name="X", used="0.5")]
    at.number_input("softmax.n").set_value(2.5).run()  # a box of whole numbers
    assert _warnings(at) == [zh["input.number_whole"].format(name="N", typed=2.5, used=3)]
    at.number_input("softmax.n").set_value(4).run()  # a good value: no note left over
    assert _warnings(at) == [] and "values 4 0.5" in page_text(at)


def test_a_text_longer_than_its_limit_keeps_its_first_part_and_says_so():
    at = _run(_inputs)
    at.text_input("softmax.w").input("abcdefghijkl").run()  # 12 characters, limit 8
    assert at.text_input("softmax.w").value == "abcdefgh"
    assert "values 3 0.5 a True abcdefgh" in page_text(at)
    assert at.query_params["softmax.w"] == "abcdefgh"
    assert _warnings(at) == [EN["input.text_cut"].format(n=12, limit=8)]


# --- matrix_input --------------------------------------------------------------------------
def _matrix():
    import streamlit as st

    from ui.frame import around
    from ui.inputs import matrix_input

    with around("softmax"):
        m = matrix_input("M", "M", [[1, 0], [0, 1]], rows=2, bound=100)
        v = matrix_input("v", "v", [1, 2], sliders=True, slider_labels=["v1", "v2"])
        st.markdown(f"M={m.tolist()} v={v.tolist()}")


@pytest.mark.parametrize("bad", [*BAD_CELLS, "1, 2, 3; 4, 5, 6"])
def test_a_bad_matrix_cell_shows_one_message_and_keeps_the_last_value(bad):
    at = _run(_matrix)
    at.text_input("softmax.M").input("2, 0; 0, 2").run()
    at.text_input("softmax.M").input(bad).run()
    assert not at.exception
    [message] = _main_errors(at)
    assert message.endswith(EN["input.kept_last"])
    assert "M=[[2.0, 0.0], [0.0, 2.0]]" in page_text(at)


def test_a_bad_first_matrix_keeps_the_default_and_says_so():
    at = _run(_matrix, params={"softmax.M": "1, x; 0, 1"})
    [message] = _main_errors(at)
    assert message == EN["input.not_number"].format(token="x") + " " + EN["input.kept_default"]
    assert "M=[[1.0, 0.0], [0.0, 1.0]]" in page_text(at)


def test_matrix_messages_are_translated():
    at = _run(_matrix, lang="zh")
    at.text_input("softmax.M").input("abc").run()
    assert _main_errors(at)[0].startswith(catalogue("zh")["input.not_number"].format(token="abc"))


def test_a_component_slider_changes_only_its_component():
    at = _run(_matrix, params={"softmax.v": "1.25, 2"})
    at.slider("_softmax.v~1").set_value(-3.0).run()
    assert at.text_input("softmax.v").value == "1.25, -3"
    assert "v=[1.25, -3.0]" in page_text(at)
    assert [s.label for s in at.main.slider] == ["v1", "v2"]


def _slider_blocks(block) -> list[tuple[str, list[str], bool]]:
    """(key, labels, horizontal) of each block that holds sliders itself."""
    kids = list(getattr(block, "children", {}).values())
    labels = [c.label for c in kids if getattr(c, "type", "") == "slider"]
    flex = getattr(block.proto, "flex_container", None) if hasattr(block, "proto") else None
    found = [(block.proto.id.split("-", 2)[2], labels,
              flex is not None and flex.direction == flex.HORIZONTAL)] if labels else []
    return found + [row for kid in kids for row in _slider_blocks(kid)]


def _sliders():
    from ui.frame import around
    from ui.inputs import matrix_input

    with around("softmax"):
        matrix_input("v", "v", [1, 2], sliders=True)
        matrix_input("W", "W", [[1, 0, 1], [0, 1, -1]], rows=2, sliders=True)


def test_a_matrix_s_sliders_are_one_block_its_lines_as_long_as_its_rows():
    """One horizontal block a matrix, its key saying how many sliders share a line: the
    frame's CSS breaks the line where a matrix row ends (on a phone too, where columns
    would stack: checked in Chromium at 390 and 1280 px)."""
    from ui.inputs import SLIDER_GRID_CSS, SLIDER_GRID_KEY

    blocks = _slider_blocks(_run(_sliders).main)
    assert [(key.split("-softmax")[0], labels, horizontal)
            for key, labels, horizontal in blocks] == [
        (f"{SLIDER_GRID_KEY}2", [EN["input.component"].format(i=i) for i in range(2)], True),
        (f"{SLIDER_GRID_KEY}3", [EN["input.cell"].format(r=r, c=c)
                                 for r in range(2) for c in range(3)], True)]
    assert f'st-key-{SLIDER_GRID_KEY}3-"] > div {{ flex: 0 0 calc((100% - 2rem) / 3)' \
        in SLIDER_GRID_CSS


# --- heatmap click -------------------------------------------------------------------------
def _heatmap():
    from ui.figures import heatmap
    from ui.frame import around

    with around("softmax"):
        heatmap([[1, 2], [3, 4]], ["a", "b"], ["r", "s"], key="map",
                explain=lambda r, c: f"cell {r},{c}")


def test_a_heatmap_click_is_explained_and_kept_in_the_url():
    at = _run(_heatmap)
    pick = at.selectbox(key="_softmax.map~pick")
    assert pick.label == EN["kit.cell_pick"] and pick.value is None  # the hint is its label
    # The note for cells too narrow for their numbers travels with the figure: the
    # browser writes it under the chart once it leaves the numbers out.
    (chart,) = at.main.get("plotly_chart")
    assert json.loads(chart.proto.spec)["layout"]["meta"]["cells_note"] == EN["kit.cells_hidden"]
    assert EN["kit.cells_hidden"] not in page_text(at)
    at = _run(_heatmap, state=click(("softmax.map", 1, 0)))
    assert "cell 1,0" in page_text(at)
    assert at.query_params["softmax.map"] == "1,0"


def test_a_heatmap_shared_between_sessions_keeps_each_sessions_language():
    """The figure is kept per process and shared; its note is in the session's language."""
    def note(at: AppTest) -> str:
        (chart,) = at.main.get("plotly_chart")
        return json.loads(chart.proto.spec)["layout"]["meta"]["cells_note"]

    assert note(_run(_heatmap, lang="en")) == EN["kit.cells_hidden"]
    assert note(_run(_heatmap, lang="zh")) == catalogue("zh")["kit.cells_hidden"]


def _blank_cell():
    from ui.figures import heatmap
    from ui.frame import around

    with around("softmax"):
        heatmap([[1, float("nan")]], ["a", "b"], ["r"], key="map", title="T")


def test_a_cell_without_a_value_is_blank_on_the_chart_and_in_the_csv():
    import csv
    import io
    import zipfile

    from tests.app.helpers import tables
    from ui import handout

    at = _run(_blank_cell)
    assert tables(at)[0].values.tolist() == [["1.000", ""]]
    files = zipfile.ZipFile(io.BytesIO(handout.tables_zip(at.session_state["_handout"])))
    [name] = files.namelist()
    # A caption row, the column labels, then the row (ui/handout.py, table_csv).
    rows = list(csv.reader(io.StringIO(files.read(name).decode("utf-8-sig"))))
    assert rows[2] == ["r", "1.000", ""]


@pytest.mark.parametrize("cell", ["5,5", "a,b", "1"])
def test_a_heatmap_link_to_a_missing_cell_is_ignored(cell):
    at = _run(_heatmap, params={"softmax.map": cell})
    assert at.selectbox(key="_softmax.map~pick").value is None  # no cell chosen
    assert not _main_errors(at)


# --- exercises -----------------------------------------------------------------------------
def _exercises():
    from ui.exercise import choice_exercise, number_exercise
    from ui.frame import around

    with around("softmax"):
        choice_exercise("c", "Which?", ["one", "two"], 1, "Because two.")
        number_exercise("n", "How much?", 0.25, "worked steps")


def test_choice_exercise_right_and_wrong():
    at = _run(_exercises)
    assert at.button("_softmax.ex.c.reveal").disabled  # nothing chosen yet
    at.radio("_softmax.ex.c.choice").set_value(1).run()
    at.button("_softmax.ex.c.reveal").click().run()
    assert [s.value for s in at.success] == [EN["kit.right"] + " Because two."]
    at.radio("_softmax.ex.c.choice").set_value(0).run()
    at.button("_softmax.ex.c.reveal").click().run()
    assert not at.success
    assert at.warning[0].value.startswith(EN["kit.not_quite"].format(answer="two"))


@pytest.mark.parametrize(("typed", "kind"), [(0.252, "success"), (0.3, "warning")])
def test_number_exercise_within_its_tolerance(typed, kind):
    at = _run(_exercises)
    assert "worked steps" not in page_text(at)  # the steps wait for an answer
    at.number_input("_softmax.ex.n.value").set_value(typed).run()
    at.button("_softmax.ex.n.check").click().run()
    assert len(getattr(at, kind)) == 1
    assert "worked steps" in page_text(at)


@pytest.mark.parametrize("typed", [None, float("inf")])
def test_an_answer_box_without_a_number_gets_the_number_boxes_note(typed):
    """Letters or 1e309 reach the app as no number (or infinity): Check says so in the
    words of every number box (ui.inputs.refuse_number), in the learner's language."""
    at = _run(_exercises, lang="zh")
    at.number_input("_softmax.ex.n.value").set_value(typed).run()
    at.button("_softmax.ex.n.check").click().run()
    zh = catalogue("zh")
    assert [w.value for w in at.warning] == [zh["input.number_none"].format(
        name=zh["kit.answer_box"])]
    assert "worked steps" not in page_text(at)  # not counted as an answer


def _gated_exercise():
    import streamlit as st

    from ui.exercise import after_answer, choice_exercise
    from ui.frame import around
    from ui.page import part

    answered = {}

    @part
    def ask():
        answered["c"] = choice_exercise("c", "Which?", ["one", "two"], 1, "Because two.")

    with around("softmax"):
        ask()
        st.slider("Unrelated", 0, 5, key="unrelated")
        if answered["c"]:
            st.markdown("the table that gives the answer away")
        else:
            after_answer()


def test_what_answers_an_exercise_appears_only_once_it_is_answered():
    at = _run(_gated_exercise)
    assert "the table that gives the answer away" not in page_text(at)
    assert EN["kit.after_answer"] in page_text(at)
    at.radio("_softmax.ex.c.choice").set_value(0).run()
    assert "the table that gives the answer away" not in page_text(at)
    at.button("_softmax.ex.c.reveal").click().run()  # inside a section: the page reruns
    assert "the table that gives the answer away" in page_text(at)
    at.slider("unrelated").set_value(3).run()  # the feedback stays for the same answer
    assert at.warning[0].value.startswith(EN["kit.not_quite"].format(answer="two"))
    at.radio("_softmax.ex.c.choice").set_value(1).run()  # a new answer waits for Reveal
    assert not at.warning and not at.success
    assert "the table that gives the answer away" in page_text(at)


def test_exercises_in_presenter_view_are_closed_lines():
    at = _run(_exercises, params={"present": "true"})
    assert [e.label for e in at.main.expander if "?" in e.label] == [
        f"**{EN['kit.exercise']}** · Which?", f"**{EN['kit.exercise_number']}** · How much?"]


# --- Stepper, fold, part -------------------------------------------------------------------
def _stepper():
    import streamlit as st

    from ui.frame import around
    from ui.page import fold
    from ui.reveal import Stepper

    with around("softmax"):
        steps = Stepper("hand", ["one", "two", "three"], fold_at=3)
        for k in (1, 2):
            steps.step(k, f"result {k}")
        fold("Later")
        steps.step(3, "result 3")
        st.markdown("below the fold")


def _buttons(at: AppTest, suffix: str):
    return next(b for b in at.button if (b.key or "").endswith(suffix))


def test_stepper_walks_step_by_step_and_opens_the_fold():
    at = _run(_stepper)
    assert "**2 · two** — result 2" in page_text(at)  # every step shown at first
    assert "below the fold" not in page_text(at)
    _buttons(at, "~start").click().run()
    assert at.query_params["softmax.hand.step"] == "1"
    assert "result 1" in page_text(at) and "result 2" not in page_text(at)
    _buttons(at, "~next").click().run()
    _buttons(at, "~next").click().run()  # step 3 lies below the fold: it opens
    assert at.query_params["softmax.more"] == "true"
    assert "result 3" in page_text(at) and "below the fold" in page_text(at)


@pytest.mark.parametrize("step", ["9", "-1", "x"])
def test_a_bad_step_in_a_link_shows_every_step_with_a_note(step):
    at = _run(_stepper, params={"softmax.hand.step": step, "softmax.more": "true"})
    assert "result 3" in page_text(at)
    assert _main_errors(at) == [EN["input.bad_link"].format(name=EN["kit.step_label"])]


def test_fold_button_opens_the_rest_and_a_bad_link_value_keeps_it_closed():
    at = _run(_stepper, params={"softmax.more": "maybe"})
    assert _main_errors(at) == [EN["input.bad_link"].format(name=EN["kit.fold_label"])]
    button = at.button("_softmax.more~open")
    assert button.label == EN["kit.fold_continue"].format(title="Later")
    button.click().run()
    assert "below the fold" in page_text(at)
    assert EN["kit.downloads_folded"] not in page_text(at)


def _parts():

    from ui.frame import around
    from ui.inputs import number
    from ui.page import part

    @part
    def section():
        number("k", "K", 1, 5, 1)

    with around("softmax"):
        section()


def test_a_part_keeps_the_url_and_the_shown_qr_code_in_step():
    """AppTest reruns the whole script for a fragment's widget, so what is checked here
    is the part's bookkeeping: its input reaches the URL, and the QR code on show."""
    at = _run(_parts, state=DRAWERS)
    at.number_input("softmax.k").set_value(2).run()
    assert at.query_params["softmax.k"] == "2"
    at.sidebar.toggle("_share_on").set_value(True).run()
    at.number_input("softmax.k").set_value(3).run()
    assert "softmax.k=3" in at.session_state["_share_url"]  # the whole page reran


# --- the frame's share panel and downloads -------------------------------------------------
def test_the_sidebar_drawers_draw_their_tools_only_while_open():
    """ui/drawer.py: closed, a drawer's content is not drawn at all (a full run of any
    page then skips it); opened, it is; closed again, it is gone again."""
    tools = {"_share_address", "_dl_state", "_dl_handout", "_class_start", "_lesson_add"}

    def drawn(at: AppTest) -> set[str]:
        return {w.key for kind in ("text_input", "download_button", "button")
                for w in at.sidebar.get(kind)} & tools

    at = _run(_inputs)
    assert drawn(at) == set()
    assert {e.label for e in at.sidebar.expander} >= {
        EN["kit.share"], EN["kit.downloads"], EN["class.box_title"], EN["class.lesson_title"]}
    for key in DRAWERS:
        at.session_state[key] = True
    at.run()
    assert drawn(at) == tools
    at.session_state["_dl_box"] = False
    at.run()
    assert drawn(at) == tools - {"_dl_state", "_dl_handout"}


def test_share_panel_draws_on_demand_with_the_class_address():
    at = _run(_inputs, params={"softmax.n": "5"}, state=DRAWERS)
    assert "_share_url" not in at.session_state
    at.sidebar.text_input("_share_address").input("http://192.168.1.20:8501/").run()
    at.sidebar.toggle("_share_on").set_value(True).run()
    url = at.session_state["_share_url"]
    assert url.startswith("http://192.168.1.20:8501") and "softmax.n=5" in url
    assert "lang=en" in url
    assert len(at.sidebar.code) == 1 and at.sidebar.code[0].value == url


def test_a_class_address_typed_without_its_scheme_gets_http():
    at = _run(_inputs, state=DRAWERS)
    at.sidebar.text_input("_share_address").input("192.168.1.20:8501").run()
    at.sidebar.toggle("_share_on").set_value(True).run()
    assert at.session_state["_share_url"].startswith("http://192.168.1.20:8501?")


def test_downloads_offer_state_and_handout_and_tables_only_when_there_are_some():
    at = _run(_inputs, state=DRAWERS)
    keys = {b.key for b in at.sidebar.get("download_button")}
    assert keys == {"_dl_state", "_dl_handout"}
    at = _run(_heatmap, state=DRAWERS)
    keys = {b.key for b in at.sidebar.get("download_button")}
    assert keys == {"_dl_state", "_dl_tables", "_dl_handout"}


def test_downloads_say_when_the_page_is_folded():
    at = _run(_stepper, state=DRAWERS)
    assert EN["kit.downloads_folded"] in [c.value for c in at.sidebar.caption]


# --- ui.state: old prefixes, shared namespaces ---------------------------------------------
def _two_stages():
    import streamlit as st

    from ui.frame import around
    from ui.inputs import number, text

    stage = st.query_params.get("to", "multi_head")
    with around(stage):
        h = number("h", "heads", 1, 8, 2)
        q = text("hand.q", "q", "1, 0", 20)
        st.markdown(f"on {stage}: h={h} q={q}")


def test_an_old_prefix_in_a_link_is_renamed_on_entry():
    at = _run(_two_stages, params={"multihead.h": "4"})
    assert "on multi_head: h=4" in page_text(at)
    assert at.query_params["multi_head.h"] == "4"
    assert "multihead.h" not in at.query_params
    at = _run(_two_stages, params={"multihead.h": "4", "multi_head.h": "6"})
    assert "h=6" in page_text(at)  # today's name wins over an old one


def test_only_listed_namespaces_and_globals_are_shared_between_stages():
    """'hand.q' keeps its value from one stage to the next, as 'lang' does; 'h' is each
    stage's own ('multi_head.h' is not 'kv_cache.h')."""
    at = _run(_two_stages)
    at.number_input("multi_head.h").set_value(5).run()
    at.text_input("hand.q").input("2, 2").run()
    for key in list(at.query_params):
        del at.query_params[key]
    at.query_params["to"] = "kv_cache"
    at.run()
    assert "on kv_cache: h=2 q=2, 2" in page_text(at)  # h: kv_cache's own default
    assert at.session_state["lang"] == "en"  # a global, kept although the URL lost it


def test_reset_clears_this_stages_inputs_and_the_shared_ones_it_shows_and_nothing_else():
    """Back to the defaults: the stage's own value and the hand example it shows (shared on
    purpose); kept: another stage's value, the language, and the open rest of the page."""
    at = _run(_two_stages, params={"multi_head.h": "4", "hand.q": "2, 2",
                                   "multi_head.more": "true"}, state={"kv_cache.h": 6})
    assert "on multi_head: h=4 q=2, 2" in page_text(at)
    at.sidebar.button("_reset_page").click().run()
    assert "on multi_head: h=2 q=1, 0" in page_text(at)
    assert dict(at.query_params) == {"lang": "en", "multi_head.more": "true"}
    assert at.session_state["kv_cache.h"] == 6


def test_qualify_and_is_shared():
    from ui import state

    assert state.is_shared("lang") and state.is_shared("hand.q")
    assert not state.is_shared("softmax.kB") and not state.is_shared("handy.q")


# --- The glossary's Chinese words ----------------------------------------------------------
def _glossary():
    from ui.example import gloss
    from ui.frame import around

    with around("qkv"):
        gloss(("运费", "承担", "nonsense"))


def test_the_glossary_marks_its_chinese_words_as_chinese():
    """A screen reader reads a word marked lang="zh-CN" with a Chinese voice."""
    caption = next(c.value for c in _run(_glossary).caption if "运费" in c.value)
    assert '<span lang="zh-CN">运费</span> *' in caption
    assert '<span lang="zh-CN">承担</span> *' in caption
    assert "nonsense" not in caption  # no gloss, no entry


# --- The class address box -----------------------------------------------------------------
def _frame_only():
    from ui.frame import around

    with around("softmax"):
        pass


def test_a_long_class_address_keeps_its_first_part_and_says_so():
    """Streamlit's max_chars dropped a longer paste silently; the share panel now cuts it
    as ui.inputs.text does, with the same translated note."""
    from ui.classroom import MAX_ADDRESS

    at = _run(_frame_only, state=DRAWERS)
    pasted = "http://192.168.1.20:8501/" + "x" * MAX_ADDRESS
    at.sidebar.text_input("_share_address").input(pasted).run()
    assert at.sidebar.text_input("_share_address").value == pasted[:MAX_ADDRESS]
    assert [w.value for w in at.sidebar.warning] == [
        EN["input.text_cut"].format(n=len(pasted), limit=MAX_ADDRESS)]


# --- formula ---------------------------------------------------------------------------------
def _formulas():
    from ui.formula import formula
    from ui.frame import around

    with around("softmax"):
        formula("a = b", "a = 1")
        formula("c = d", "c = 2")
        formula("e")  # symbols alone: display math, no row


def test_a_formula_is_one_row_of_two_labelled_sides():
    at = _run(_formulas)
    rows = [b for b in at.main.children.values() if type(b).__name__ == "Block"
            and b.proto.flex_container.direction == b.proto.flex_container.HORIZONTAL
            and any("$$" in getattr(m, "value", "") for m in b.children.values())]
    assert all(b.proto.flex_container.wrap for b in rows)  # one above the other, narrow
    assert [[m.value for m in b.children.values()] for b in rows] == [
        [f":small[{EN['kit.formula']}]\n\n$$\na = b\n$$",
         f":small[{EN['kit.with_numbers']}]\n\n$$\na = 1\n$$"],
        [f":small[{EN['kit.formula']}]\n\n$$\nc = d\n$$",
         f":small[{EN['kit.with_numbers']}]\n\n$$\nc = 2\n$$"]]
    assert [x.value for x in at.main.latex] == ["$$\ne\n$$"]  # symbols alone: st.latex's own
