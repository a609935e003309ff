"""The classroom tools every page gets from the kit: presenter view, sharing by QR
code (also full screen), the state as JSON, the tables as CSV and the printable handout.
The downloads' pure parts are tested in tests/unit/test_handout.py."""

import csv
import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.helpers import DRAWERS, _walk, assert_clean, open_page, page_text
from tests.unit.test_handout import latex_left
from tinyformer.lessons.chain import run_chain
from ui import classroom, handout
from ui.i18n import catalogue
from ui.stages import STAGES

PAGE = "pages/03_softmax.py"
EN = catalogue("en")
LABELS = {"made_from": "From", "answers": "ANSWERS", "partial": "PARTIAL"}


def test_presenter_view_from_the_url_keeps_its_links(lang):
    at = open_page(PAGE, lang, params={"present": "1"})  # a link from before "true"
    assert_clean(at)
    assert at.session_state["present"] is True
    assert at.query_params["present"] == "true"
    links = at.main.get("page_link")
    assert links and all("present=true" in (link.proto.query_string or "") for link in links)
    assert "[1.340, 1.321]" in page_text(at)  # the same page, only laid out for a projector


def test_presenter_bar_says_where_the_lesson_stands():
    from ui.stages import STAGES

    en = catalogue("en")
    at = open_page(PAGE, params={"present": "true"})
    k = [s.path for s in STAGES].index(PAGE) + 1
    assert en["kit.stage_of"].format(k=k, n=len(STAGES)) in [c.value for c in at.caption]
    assert en["kit.lesson_over"] not in page_text(at)
    last = open_page(STAGES[-1].path, params={"present": "true"})
    assert en["kit.lesson_over"] in page_text(last)


def test_presenter_view_folds_an_exercise_into_one_line_that_still_works():
    """On a projector an exercise is a closed expander titled by its question, so the
    stage's first result stays on the first screen; opened, it works as usual."""
    question = catalogue("en")["softmax.ex_question"]
    normal = open_page(PAGE)
    assert not [e for e in normal.expander if question in e.label]
    at = open_page(PAGE, params={"present": "true"})
    folded = [e for e in at.expander if question in e.label]
    assert len(folded) == 1
    at.radio("_softmax.ex.kb.choice").set_value(1).run()
    at.button("_softmax.ex.kb.reveal").click().run()
    assert len(at.success) == 1 and at.success[0].value.startswith("Right")


def test_presenter_switch_and_exit():
    at = open_page(PAGE)
    at.sidebar.toggle("_present_switch").set_value(True).run()
    assert at.query_params["present"] == "true"
    at.button("_present_exit").click().run()
    assert "present" not in at.query_params
    assert_clean(at)


def test_share_panel_encodes_the_page_with_its_inputs():
    at = open_page(PAGE, params={"hand.kB": "2, 0"}, state=DRAWERS)
    at.sidebar.text_input("_share_address").input("http://192.168.1.20:8501").run()
    assert "_share_url" not in at.session_state  # nothing drawn until asked for
    at.sidebar.toggle("_share_on").set_value(True).run()
    url = at.session_state["_share_url"]
    assert url.startswith("http://192.168.1.20:8501")
    assert "hand.kB=2%2C+0" in url and "lang=en" in url
    assert classroom.qr_png(url).startswith(b"\x89PNG")


def test_state_json_opens_the_same_page_again():
    at = open_page(PAGE, params={"hand.kB": "2, 0", "softmax.causal": "false"})
    params = {key: at.query_params[key] for key in at.query_params}
    saved = json.loads(classroom.state_json("softmax", "en", params, "http://x/softmax"))
    again = open_page(PAGE, params=saved["params"])
    assert page_text(again) == page_text(at)
    assert "[0.660, 2.679]" in page_text(again)


def test_every_table_of_the_page_as_csv():
    at = open_page(PAGE)
    files = zipfile.ZipFile(io.BytesIO(handout.tables_zip(at.session_state["_handout"])))
    caption = EN["softmax.scaled_table"]  # the heatmap's heading (the weights wait for ex. 2)
    assert files.namelist() == [f"{handout._slug(caption)}.csv"]
    raw = files.read(files.namelist()[0])
    assert raw.startswith(handout.BOM.encode())
    scores = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert scores[0] == [caption] and scores[1] == ["", "运费", "谁", "承担", "？"]
    first_row = run_chain().scaled[0].tolist()  # the hand model's, as stage 2 feeds it
    assert scores[2] == ["运费", *(f"{v:.3f}" for v in first_row)]


def test_handout_has_the_worked_numbers_and_the_answers_last(lang):
    at = open_page(PAGE, lang)
    record = at.session_state["_handout"]
    page = handout.handout_html(record, {"made_from": "from", "answers": "ANSWERS"}, "http://x")
    assert "<math" in page and "3.028" in page and "0.670" in page
    weights = catalogue(lang)["softmax.step_weights"]  # a walk's step, with its result
    assert f'<p class="step"><b>3 · {weights}</b> — <code>[0.670, 0.330]</code>' in page
    answers = page.index("ANSWERS")
    assert page.index("page-break-before") < answers
    assert "0.330" in page[answers:]  # the numeric exercise's answer, on the last page


def test_shown_qr_code_follows_an_edit_made_in_a_section_that_reruns_alone():
    """The softmax hand example is a section of its own (ui.page.part): with the QR code
    on show, an edit there reruns the whole page, so the code carries it."""
    at = open_page(PAGE, state=DRAWERS)
    at.sidebar.toggle("_share_on").set_value(True).run()
    at.text_input("hand.kB").input("2, 0").run()
    assert "hand.kB=2%2C+0" in at.session_state["_share_url"]



_EXERCISE = re.compile(r'(?:choice|number)_exercise\(\s*(?:#[^\n]*\s*)?"(\w+)"')


def all_answered(stage) -> dict:
    """Session state in which every exercise of the stage has been answered (ui/exercise.py),
    so that what waits for an answer is drawn too."""
    names = _EXERCISE.findall(Path(stage.path).read_text(encoding="utf-8"))
    return {f"_{stage.id}.ex.{name}.answered": 0 for name in names}


class NotInDownloads(AssertionError):
    """A table on screen that the CSV downloads and the handout do not hold."""


def _cells(columns, rows) -> tuple:
    return [str(c) for c in columns], [[str(v) for v in row] for row in rows]


WHOLE_PAGES = [pytest.param(s, id=s.id) for s in STAGES]


@pytest.mark.parametrize("stage", WHOLE_PAGES)
def test_every_handout_typesets_its_maths_and_the_csv_holds_every_table(stage):
    """Every page, whole, every exercise answered, in the class's language: each formula
    typeset as MathML, no LaTeX command left in the text (they printed as
    \\begin{gathered} and 1.0002.000), and every table on screen (st.table or a scrolling
    st.dataframe) is one of the downloads' CSV tables, cell for cell."""
    state = all_answered(stage)
    at = open_page(stage.path, "zh", state=state)
    assert_clean(at)
    exercises = {key.rsplit(".", 1)[0] for node in _walk(at.main)
                 if (key := str(getattr(node, "key", None))).startswith(f"_{stage.id}.ex.")
                 and key.endswith((".choice", ".value"))}
    assert {f"{key}.answered" for key in exercises} <= set(state)  # none left unanswered
    record = at.session_state["_handout"]
    page = handout.handout_html(record, LABELS, "http://x", at.session_state["_url_now"])
    assert latex_left(page) == []
    formulas = sum(kind == "formula" for kind, _ in record.all_items())
    assert page.count('<div class="formula"><math') == formulas
    recorded = [_cells(table.columns, table.cells) for table in record.tables()]
    missing = []
    for node in _walk(at.main):
        if node.type in ("table", "dataframe"):
            shown = _cells(node.value.columns, node.value.astype(str).values.tolist())
            if shown in recorded:
                recorded.remove(shown)
            else:
                missing.append(shown[0])
    if missing:
        raise NotInDownloads(f"tables with columns {missing} are not in the downloads")


def test_a_learner_part_way_through_a_walk_takes_home_every_step():
    at = open_page(PAGE)
    at.button("_softmax.hand.step~start").click().run()
    assert at.query_params["softmax.hand.step"] == "1"
    record, now = at.session_state["_handout"], at.session_state["_url_now"]
    assert "1.340" not in handout.handout_html(record, LABELS, "x")  # on screen: step 1
    page = handout.handout_html(record, LABELS, "x", now)
    assert "0.670" in page and "1.340" in page and "PARTIAL" not in page  # steps 3 and 4
    # Opened at step 2 from a link, the page never drew steps 3 and 4: the handout says so.
    linked = open_page(PAGE, params={"softmax.hand.step": "2"})
    page = handout.handout_html(linked.session_state["_handout"], LABELS, "x",
                                linked.session_state["_url_now"])
    assert "1.340" not in page and "PARTIAL" in page


def _frame_and_its_link():
    import streamlit as st

    from ui import classroom
    from ui.frame import around

    with around("softmax"):
        pass
    st.markdown(f"LINK {classroom.files_now('softmax').link()}")


def test_downloads_link_to_the_class_address(monkeypatch):
    monkeypatch.setenv(classroom.PUBLIC_URL_ENV, "http://10.0.0.5:8501")
    at = AppTest.from_function(_frame_and_its_link, default_timeout=60)
    at.query_params["lang"] = "en"
    for key, value in DRAWERS.items():
        at.session_state[key] = value
    at.run()
    links = [m.value for m in at.markdown if m.value.startswith("LINK ")]
    assert links == ["LINK http://10.0.0.5:8501?lang=en"]  # AppTest has no page address
    at.sidebar.text_input("_share_address").input("192.168.1.20:8501").run()
    assert [m.value for m in at.markdown if m.value.startswith("LINK ")] == [
        "LINK http://192.168.1.20:8501?lang=en"]


def test_the_qr_code_full_screen_for_the_back_of_the_room():
    at = AppTest.from_function(_frame_and_its_link, default_timeout=60)
    at.query_params["lang"] = "en"
    for key, value in DRAWERS.items():
        at.session_state[key] = value
    at.run()
    at.sidebar.toggle("_share_on").set_value(True).run()
    assert not at.get("dialog")
    at.sidebar.button("_share_full").click().run()
    (dialog,) = at.get("dialog")
    assert dialog.proto.dialog.title == EN["kit.share_full_title"]
    assert dialog.proto.dialog.dismissible  # Esc, the ✕ or a click outside closes it
    url = at.session_state["_share_url"]
    assert len(dialog.get("image")) == 1  # the page's QR code (the same as the panel's)
    assert f'<p class="qr-address">{url}</p>' in [h.proto.body for h in dialog.get("html")]
    assert any(".st-key-qr_full" in h.proto.body and "100vw" in h.proto.body
               for h in at.get("html"))  # the dialog widened to fill the screen
    at.run()
    assert not at.get("dialog")  # gone once closed: the next run does not open it


def _a_table():
    import pandas as pd

    from ui.frame import around
    from ui.tables import table

    with around("kv_cache"):
        table(pd.DataFrame({"bytes": ["131,072", "524,288"]}, index=["Llama-3-8B", "MHA"]),
              name="Cache")


def test_a_kit_table_is_drawn_and_in_the_downloads():
    """The K/V cache page drew its table with st.table, which the downloads never saw."""
    at = AppTest.from_function(_a_table, default_timeout=60)
    at.query_params["lang"] = "en"
    for key, value in DRAWERS.items():
        at.session_state[key] = value
    at.run()
    assert len(at.table) == 1
    assert at.session_state["_handout"].tables() == [
        handout.Table("Cache", ["bytes"], ["Llama-3-8B", "MHA"], [["131,072"], ["524,288"]])]
    assert "_dl_tables" in {b.key for b in at.sidebar.get("download_button")}
