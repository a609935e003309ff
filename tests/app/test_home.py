"""The overview page, the language rules and the navigation."""

import html
import re

from streamlit.testing.v1 import AppTest

from tests.app.helpers import (
    APP,
    WHOLE,
    assert_clean,
    fold_button,
    open_page,
    page_text,
    tables,
)
from ui.fold import NAME as FOLD_NAME
from ui.fold import OPEN as FOLD_OPEN
from ui.i18n import catalogue
from ui.stages import STAGES


def test_overview_renders_in_both_languages(each_lang):
    at = open_page(None, each_lang)
    assert_clean(at)
    title = at.title[0].value
    assert title == ("总览" if each_lang == "zh" else "Overview")


def test_language_follows_the_browser_locale_when_the_url_has_none():
    at = AppTest.from_file(APP, default_timeout=60)
    at.context["locale"] = "en-GB"
    at.run()
    assert at.title[0].value == "Overview"
    assert at.query_params["lang"] == "en"  # written back so a shared link keeps it
    at = AppTest.from_file(APP, default_timeout=60)
    at.context["locale"] = "fr-FR"
    at.run()
    assert at.title[0].value == "总览"


def test_the_switch_in_the_title_row_changes_the_language():
    at = open_page("pages/03_softmax.py", "zh")
    switch = at.main.get("button_group")
    assert [b.key for b in switch] == ["_lang_switch"]  # in the page, not the sidebar
    at.button_group("_lang_switch").set_value("en").run()
    assert at.query_params["lang"] == "en"
    assert at.session_state["lang"] == "en"
    assert at.title[0].value == "3 · Softmax and the weighted sum"
    assert at.main.get("page_link")[0].proto.query_string == "lang=en"  # links follow


def test_the_switch_sits_in_the_presenter_bar_in_presenter_view():
    at = open_page("pages/03_softmax.py", "zh", params={"present": "true"})
    at.button_group("_lang_switch").set_value("en").run()
    assert at.query_params["lang"] == "en" and at.query_params["present"] == "true"


def _navigation_sections():
    """What app.py hands st.navigation, captured: (section, [(title, url path)]).
    AppTest shows no element for Streamlit's own navigation, so the pages are caught
    on their way in (st.Page would look for the files beside this test's script)."""
    from types import SimpleNamespace
    from unittest.mock import patch

    import streamlit as st

    from ui import frame
    from ui.stages import CLASS_OVERVIEW

    def capture(sections, **_):
        st.session_state["sections"] = [
            (name, [(page.title, page.url_path, page.path) for page in pages
                    if page.path != CLASS_OVERVIEW.path])
            for name, pages in sections.items()]
        st.session_state["class_page"] = [getattr(page, "visibility", None)
                                          for pages in sections.values() for page in pages
                                          if page.path == CLASS_OVERVIEW.path]
        return next(iter(sections.values()))[0]

    def page(path, **options):
        return SimpleNamespace(path=path, **options)

    with patch("streamlit.navigation", capture), patch("streamlit.Page", page):
        frame.navigation()


def test_navigation_lists_every_stage_in_order_in_translated_sections(each_lang):
    at = AppTest.from_function(_navigation_sections, default_timeout=60)
    at.query_params["lang"] = each_lang
    at.run()
    assert not at.exception
    sections = at.session_state["sections"]
    pages = [page for _, section in sections for page in section]
    assert pages[0] == (catalogue(each_lang)["home.title"], None, "pages/overview.py")
    assert [(url, path) for _, url, path in pages[1:]] == [(s.id, s.path) for s in STAGES]
    assert [title for title, _, _ in pages[1:]] == [
        f"{s.number} · {catalogue(each_lang)[f'{s.id}.title']}" for s in STAGES]
    names = [name for name, _ in sections if name]
    assert names and all(name in catalogue(each_lang).values() for name in names)
    assert at.session_state["class_page"] == ["hidden"]  # the teacher's page, not a learner's


def _answers_on_screen(at) -> list[str]:
    """Numeric exercises whose answer is already on screen before anyone has answered
    (ui/exercise.py: what would give it away waits for the answer). An answer with
    decimals, or of three digits or more, is specific enough to search for; the worked
    steps of every exercise must be absent too."""
    text = page_text(at)
    found = []
    for kind, item in at.session_state["_handout"].all_items():
        if kind != "exercise":
            continue
        question, options, answer, steps = item
        if steps and steps in text:
            found.append(f"steps of: {question}")
        specific = options is None and ("." in answer or len(answer.lstrip("-")) >= 3)
        if specific and re.search(rf"(?<![\d.]){re.escape(answer)}(?![\d])", text):
            found.append(f"{answer} for: {question}")
    return found


# An index in a label: "q[1]", "W₁[0,1]", "head 2", "block 0 · head 1", "位置 3".
_BRACKETED = re.compile(r"([^\W\d_][\ŵ]*)\[(\d+)(?:,\s*\d+)?\]")
_NAMED = re.compile(r"\b(head|block|position|row|column|头|块|位置) ?(\d+)\b")


def _families_not_from_zero(at) -> list[str]:
    """Indices count from 0, as in PyTorch: in every family of indexed labels on a page
    (inputs, their options, table headers), the smallest index is 0."""
    widgets = [w for kind in ("slider", "number_input", "text_input", "selectbox", "radio",
                              "select_slider", "multiselect") for w in getattr(at, kind, [])]
    labels = [getattr(w, "label", "") or "" for w in widgets]
    labels += [str(option) for w in widgets for option in getattr(w, "options", None) or []]
    for frame in tables(at):
        labels += [str(c) for c in frame.columns] + [str(i) for i in frame.index]
    smallest: dict[str, int] = {}
    for label in labels:
        for pattern in (_BRACKETED, _NAMED):
            for name, index in pattern.findall(label):
                smallest[name] = min(smallest.get(name, 10**9), int(index))
    return sorted(f"{name} starts at {low}" for name, low in smallest.items() if low != 0)


def test_every_stage_renders_in_both_languages(each_lang):
    """In Chinese every stage opens as a learner first sees it, with its first part and
    "Continue" (ui/fold.py), which draws the rest and keeps it open in the URL; in
    English it opens whole, as a link after Continue does."""
    texts = catalogue(each_lang)
    for stage in STAGES:
        folds = each_lang == "zh" and stage.id not in WHOLE
        at = open_page(stage.path, each_lang, folded=folds)
        assert_clean(at)
        assert at.title[0].value.startswith(stage.number)
        if not folds:
            assert _answers_on_screen(at) == [], stage.id
            assert _families_not_from_zero(at) == [], stage.id
        if folds:
            button = at.button(key=fold_button(stage.id))
            title = texts["kit.fold_continue"].split("{title}")[0]
            assert button.label.startswith(title), stage.id
            assert texts["kit.fold_note"] in page_text(at)
            button.click().run()
            assert_clean(at)
            assert at.query_params[f"{stage.id}.{FOLD_NAME}"] == FOLD_OPEN
            assert not [b for b in at.button if b.key == fold_button(stage.id)], stage.id
            assert _answers_on_screen(at) == [], stage.id  # in Chinese too, whole
            # The button names the section that starts where the first part ended, now
            # drawn (what follows it may still wait for an exercise: ui/exercise.py).
            assert button.label.removeprefix(title) in page_text(at), stage.id


def test_a_link_asking_for_a_gpu_falls_back_to_the_cpu_with_a_note():
    """The device choice is shown on the pages that run a model (the forward pass)."""
    import torch

    from ui.i18n import catalogue

    at = open_page("pages/11_forward.py", params={"device": "cuda"})
    assert not at.exception
    notes = [i.value for i in at.sidebar.info]
    if torch.cuda.is_available():
        assert at.sidebar.radio("device").value == "cuda"
    else:
        assert catalogue("en")["kit.no_cuda"] in notes


def test_device_name_never_asks_for_a_missing_gpu():
    """A page that computes on `device_name()` gets CUDA only where it exists."""

    def script():
        import streamlit as st

        from ui.page import device_name

        st.session_state["device"] = "cuda"
        st.markdown(device_name())

    import torch

    at = AppTest.from_function(script, default_timeout=60).run()
    assert at.markdown[0].value == ("cuda" if torch.cuda.is_available() else "cpu")


def _language_script() -> None:
    import streamlit as st

    from ui.i18n import set_lang, t

    if "lang" not in st.session_state:  # as the frame: the language, once resolved, stays
        set_lang(st.session_state.get("asked", "zh"))
    st.button("switch", key="switch", on_click=set_lang, args=("en",))
    st.markdown(t("home.title"))  # drawn after the callback: in the language it set


def test_each_session_reads_its_own_language_and_a_switch_applies_at_once():
    chinese, english = AppTest.from_function(_language_script), \
        AppTest.from_function(_language_script)
    english.session_state["asked"] = "en"
    for _ in range(2):  # interleaved runs of two sessions
        chinese.run()
        english.run()
        assert chinese.markdown[0].value == "总览" and english.markdown[0].value == "Overview"
    chinese.button("switch").click().run()
    assert chinese.markdown[0].value == "Overview"


def test_the_overview_links_every_stage_with_the_frames_values_in_one_element():
    at = open_page(None, "en", params={"present": "true"})
    (cards,) = [h.proto.body for h in at.main.get("html") if h.proto.body.startswith("<ol")]
    links = [(html.unescape(href), label) for href, label in
             re.findall(r'<a data-tf-page href="([^"]+)">.*?</span>([^<]+)</a>', cards)]
    assert [href.split("?")[0] for href, _ in links] == [f"/{s.id}" for s in STAGES]
    assert {href.split("?")[1] for href, _ in links} == {"lang=en&present=true"}
    assert [label for _, label in links] == [f"Stage {s.number}" for s in STAGES]
    assert "Softmax and weighted sum" in cards and "Scores become weights" in cards


def test_every_page_ends_with_its_neighbours_in_lesson_order():
    from ui.stages import neighbours

    stage = STAGES[3]
    at = open_page(stage.path, "zh")
    (nav,) = [h.proto.body for h in at.main.get("html") if h.proto.body.startswith("<nav")]
    before, after = neighbours(stage.id)
    found = re.findall(r'<a data-tf-page rel="(prev|next)" href="([^"?]+)\?lang=zh">([^<]+)</a>',
                       nav)
    assert found == [("prev", f"/{before.id}", f"← {before.number} · "
                      + catalogue("zh")[f"{before.id}.title"]),
                     ("next", f"/{after.id}", f"{after.number} · "
                      + catalogue("zh")[f"{after.id}.title"] + " →")]
    assert 'aria-label="上一阶段与下一阶段"' in nav
