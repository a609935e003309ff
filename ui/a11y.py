"""Accessibility that every page needs (WCAG 2.1 A/AA, checked by axe-core in
tests/e2e/test_every_page.py): drawn once per run by the frame (ui/frame.py).

What Streamlit 1.67 draws that axe-core or a Chinese reader flagged, and what this
module does about it:

- captions are drawn at 60 % opacity: #828180 on white, 3.88:1, under the 4.5:1 that
  text needs. At 75 % they are 6.1:1 on white and 5.9:1 on the sidebar.
- `<html lang="en">` on every page: a screen reader then reads Chinese with an English
  voice. The page's language is set to the one shown (zh-CN or en).
- a formula wider than its column scrolls (ui/frame.py's CSS), as does a wide table on
  a narrow screen, but a keyboard cannot reach a scrolling box that holds nothing
  focusable. A table (or a block of code) gets a tab stop while it scrolls. A formula
  that overflows by more than a rounding error (3 px) scrolls and gets one, only while
  it does; one that overflows by a pixel or two (a formula scaled to fit its column
  keeps about 2 px) no longer scrolls: it showed the same without scrolling anyway.
- the navigation's `<ul>` holds its sections as `<div>`s: a list of lists without list
  items, so its items count as outside any list. The outer list becomes presentational
  and each section a list named after its header.
- Streamlit's own English (its buttons' names, "Press Enter to apply", a number box's
  range message, "Page not found") in the Chinese view: each text is replaced by its
  translation (the `kit.st_*` keys, whose English is exactly Streamlit's, which
  tests/unit/test_a11y.py checks against Streamlit's bundle), and put back in English.

A page named by no stage (an old or mistyped link) would get Streamlit's English
"Page not found" dialog; `claim_unknown_page`, called before st.navigation, opens the
overview with the app's own translated note instead.
"""

from __future__ import annotations

import functools
import json
import re

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ui.i18n import catalogue, t
from ui.stages import CLASS_OVERVIEW, STAGES

HTML_LANG = {"zh": "zh-CN", "en": "en"}
# Streamlit's own English, as `kit.<key>` texts: the English text is Streamlit's exactly
# ({name} stands for what Streamlit fills in), the Chinese its translation.
STREAMLIT_TEXTS = (
    "st_increment", "st_decrement", "st_help_for", "st_heading_link", "st_png",
    "st_collapse_sidebar", "st_expand_sidebar", "st_sidebar", "st_app_pages", "st_skip",
    "st_open", "st_clear_value", "st_no_results", "st_press_enter", "st_press_key_enter",
    "st_range_between", "st_range_below", "st_range_above", "st_range_below_short",
    "st_range_above_short", "st_page_not_found", "st_page_missing", "st_running", "st_stop",
    "st_connecting", "st_connection_error", "st_search", "st_fullscreen",
    "st_close_fullscreen", "st_download_csv", "st_columns",
)
CAPTION_OPACITY = 0.75  # Streamlit's 0.6 gives 3.88:1 on white

_CSS = f"""<style>
[data-testid="stCaptionContainer"] {{ opacity: {CAPTION_OPACITY}; }}
[data-testid="stMarkdownContainer"] .katex-display {{ overflow-x: hidden; }}
[data-testid="stMarkdownContainer"] .katex-display.a11y-scrolls {{ overflow-x: auto; }}
.katex-display.a11y-scrolls:focus-visible, [data-a11y-focus]:focus-visible {{
  outline: 2px solid #3b5bdb; outline-offset: 2px; }}
</style>"""

# One script per run; its text changes only with the language, and Streamlit runs an
# st.html script again only when its text changes, so the observer is installed once
# (window.__tinyformerA11y) and a new language only updates what it applies.
_JS = """<script>
(() => {
  const A = window.__tinyformerA11y || (window.__tinyformerA11y = {});
  A.lang = __LANG__;
  A.words = __WORDS__.map(([source, names, target]) => [new RegExp(source), names, target]);
  if (A.apply) { A.apply(document.body); return; }

  const ATTRS = ["aria-label", "title", "placeholder", "data-title", "alt"];
  // Our own texts (already in the page's language) are never touched.
  const OURS = '[data-testid="stMarkdownContainer"], .katex, .main-svg, script, style';
  const shown = new WeakMap();  // node -> {attribute or "#text": [original, written]}
  const translate = (text) => {
    if (!A.lang.startsWith("zh") || !/[A-Za-z]/.test(text) || text.length > 200) return text;
    const core = text.trim();
    for (const [pattern, names, target] of A.words) {
      const found = pattern.exec(core);
      if (found) {
        const fill = (_, name) => found[names.indexOf(name) + 1] ?? "";
        return text.replace(core, target.replace(/\\{(\\w+)\\}/g, fill));
      }
    }
    return text;
  };
  // The original is what Streamlit wrote last: kept while our translation stands, taken
  // anew when Streamlit has written something else since.
  const rewrite = (node, name, now, write) => {
    if (now === null || now === undefined) return;
    const seen = shown.get(node) || {};
    const [original, written] = seen[name] || [now, null];
    const source = now === written ? original : now;
    const text = translate(source);
    seen[name] = [source, text];
    shown.set(node, seen);
    if (text !== now) write(text);
  };
  const fixText = (node) => {
    const parent = node.parentElement;
    if (!parent || parent.closest(OURS)) return;
    rewrite(node, "#text", node.nodeValue, (text) => { node.nodeValue = text; });
  };
  const fixAttributes = (el) => {
    if (el.closest(".katex, .main-svg")) return;
    for (const name of ATTRS) {
      if (el.hasAttribute(name)) {
        rewrite(el, name, el.getAttribute(name), (text) => el.setAttribute(name, text));
      }
    }
  };
  const translateUnder = (root) => {
    if (root.nodeType === Node.TEXT_NODE) { fixText(root); return; }
    if (root.nodeType !== Node.ELEMENT_NODE) return;
    fixAttributes(root);
    root.querySelectorAll(ATTRS.map((a) => `[${a}]`).join(",")).forEach(fixAttributes);
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) fixText(node);
  };

  // A formula that overflows its column by more than a rounding error gets a tab stop,
  // so a keyboard can scroll it; one that fits has none.
  // A formula also changes width without any change to the page's elements (its font
  // arrives, its column narrows): each one is watched for that too.
  const resized = new ResizeObserver(() => later());
  const watched = new WeakSet();
  const focusFormulas = () => {
    document.querySelectorAll(".katex-display").forEach((box) => {
      if (!watched.has(box)) {
        watched.add(box);
        resized.observe(box);
        if (box.firstElementChild) resized.observe(box.firstElementChild);
      }
      const wide = box.scrollWidth > box.clientWidth + 3;
      if (wide && !box.classList.contains("a11y-scrolls")) {
        box.classList.add("a11y-scrolls");
        set(box, "tabindex", "0");
      } else if (!wide && box.classList.contains("a11y-scrolls")) {
        box.classList.remove("a11y-scrolls");
        box.removeAttribute("tabindex");
      }
    });
  };
  // Only what differs is written: writing an attribute, even the same value, is a
  // change the observers see, and would start the next pass, frame after frame.
  const set = (el, name, value) => {
    if (el.getAttribute(name) !== value) el.setAttribute(name, value);
  };
  // The navigation: its sections are div elements inside its ul (a list).
  const fixNavigation = () => {
    const list = document.querySelector('[data-testid="stSidebarNavItems"]');
    if (!list) return;
    set(list, "role", "none");
    for (const child of list.children) {
      if (child.tagName === "LI") { set(child, "role", "none"); continue; }
      set(child, "role", "list");
      const header = child.querySelector('[data-testid="stNavSectionHeader"]');
      const name = header && header.querySelector("p");
      if (name) set(child, "aria-label", name.textContent.trim());
    }
  };
  // Other boxes that scroll sideways on a narrow screen: a table, a block of code.
  const SCROLLERS = '[data-testid="stTable"] > div, [data-testid="stMain"] pre';
  const focusScrollers = () => {
    document.querySelectorAll(SCROLLERS).forEach((box) => {
      if (!watched.has(box)) { watched.add(box); resized.observe(box); }
      const wide = box.scrollWidth > box.clientWidth + 3 || box.scrollHeight > box.clientHeight + 3;
      if (wide && !box.hasAttribute("tabindex")) {
        box.dataset.a11yFocus = "1";
        set(box, "tabindex", "0");
      } else if (!wide && box.dataset.a11yFocus) {
        delete box.dataset.a11yFocus;
        box.removeAttribute("tabindex");
      }
    });
  };
  const layout = () => {
    set(document.documentElement, "lang", A.lang);
    fixNavigation();
    focusFormulas();
    focusScrollers();
  };
  // After the frame's own per-frame fitting of formulas (ui/classroom.py), which was
  // registered earlier and so runs first in the same animation frame.
  let pending = false;
  const later = () => {
    if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; layout(); }); }
  };
  A.apply = (root) => { translateUnder(root); layout(); };
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "characterData") fixText(record.target);
      else if (record.type === "attributes") fixAttributes(record.target);
      else record.addedNodes.forEach(translateUnder);
    }
    later();
  }).observe(document.body, { childList: true, subtree: true, characterData: true,
                              attributes: true, attributeFilter: ATTRS });
  window.addEventListener("resize", later);
  document.fonts.addEventListener("loadingdone", later);
  A.apply(document.body);
})();
</script>"""

_UNKNOWN_PAGE = "_unknown_page"  # the path a link asked for that names no stage


# What the frame adds to every page for screen readers and keyboards (ui/frame.py draws
# them with its own styles and scripts, one element each): the styles, the script (the
# page's language, focusable wide formulas, the navigation's lists, Streamlit's English
# translated), and the note for an unknown address.
STYLES = _CSS


@functools.cache
def page_script(lang: str) -> str:
    return _JS.replace("__LANG__", json.dumps(HTML_LANG.get(lang, lang))) \
        .replace("__WORDS__", json.dumps(streamlit_words(lang), ensure_ascii=False))


def unknown_page_note() -> None:
    asked = st.session_state.pop(_UNKNOWN_PAGE, None)
    if asked is not None:
        # As code, and only plain path characters: the address is the visitor's text.
        path = "/" + re.sub(r"[^\w./~%-]", "", asked.strip("/"))[:80]
        st.warning(t("kit.unknown_page", page=f"`{path}`"), icon=":material/explore_off:")


def streamlit_words(lang: str) -> list[tuple[str, list[str], str]]:
    """(pattern, names, text) for each of Streamlit's English texts: a regular
    expression (the same in Python and JavaScript) that matches Streamlit's English
    whole, with a group for each {name} in order, and the text in `lang`, each {name}
    to be filled from its group."""
    english, here = catalogue("en"), catalogue(lang)
    return [(*english_pattern(english[f"kit.{key}"]), here[f"kit.{key}"])
            for key in STREAMLIT_TEXTS]


def english_pattern(text: str) -> tuple[str, list[str]]:
    """'Help for {label}' -> ('^Help\\ for\\ (.+?)$', ['label']). No named groups: their
    '(?<' would make the page's HTML sanitizer (DOMPurify) drop the whole script, which
    it does to any script whose text holds '<' before a letter."""
    parts = re.split(r"\{(\w+)\}", text)
    pattern = "".join("(.+?)" if index % 2 else re.escape(part)
                      for index, part in enumerate(parts))
    return "^" + pattern + "$", parts[1::2]


def claim_unknown_page() -> str | None:
    """Before st.navigation: a URL path that names no stage runs the overview, with the
    app's own translated note (unknown_page_note draws it), instead of Streamlit's English
    "Page not found" dialog. Returns the path asked for, or None.

    Streamlit 1.67 resolves the page after st.navigation from what the browser asked
    (its pages manager's intended page name) and sends the dialog when none matches;
    asking for no page instead makes it run the default page, the overview."""
    ctx = get_script_run_ctx(suppress_warning=True)
    manager = getattr(ctx, "pages_manager", None)
    asked = getattr(manager, "intended_page_name", None)
    if not asked or getattr(manager, "intended_page_script_hash", None):
        return None  # the overview, or a page chosen in the navigation (by its hash)
    if asked.strip("/") in {stage.id for stage in (*STAGES, CLASS_OVERVIEW)}:
        return None
    manager.set_script_intent("", "")
    st.session_state[_UNKNOWN_PAGE] = asked
    return asked
