"""What the frame adds in the browser for a class: type the back of the room can read,
a key for "Continue", the page scrolling to what a step or "Continue" revealed, and a
browser history that Back leaves a page by. (ui/classroom.py has the rest of the
classroom's browser code: presenter view's layout and the keys ← → N B.)

- Presenter view sets every number under discussion in at least 18 px: input boxes,
  slider values, a step's result, table cells and the charts' axes (measured in
  Chromium with getComputedStyle: 12-15 px before, beside 20 px text).
- M presses the page's "Continue" button (ui/fold.py). C and R are Streamlit's own
  keys (clear cache, rerun), ← → N B the presenter view's. With a lesson loaded
  (ui/lesson_plan.py), ← → walk the lesson's steps instead of the curriculum.
- After "Next step", "Back", "Step by step" (or N, B) and "Continue" (or M), once the
  page has run, it scrolls so the element that appeared first is on screen, below
  presenter view's bar; going back, the current step's heading. Nothing moves when it
  is already in view.
- Streamlit 1.67 writes every change of st.query_params into the address with
  history.pushState (its frontend's handlePageInfoChanged), so each edit on a page was
  one more press of Back before the previous page. A change of the parameters that
  stays on the same page now replaces the address; moving to another page still adds
  an entry. The first address of a freshly opened tab (the language added to it) is
  written before this code has loaded, and stays one entry.
"""

from __future__ import annotations

CONTINUE_KEY = "M"  # said in the presenter bar's help (kit.presenter_keys)
MIN_PX = 18  # the smallest type of a number in presenter view

_CSS = """<style>
/* Presenter view: the numbers under discussion, readable from the back of the room. */
[data-testid="stMain"] input, [data-testid="stMain"] textarea,
[data-testid="stMain"] [data-baseweb="select"] div { font-size: 20px !important; }
[data-testid="stMain"] [data-testid="stSliderThumbValue"],
[data-testid="stMain"] [data-testid="stSliderTickBarMin"],
[data-testid="stMain"] [data-testid="stSliderTickBarMax"] { font-size: 18px !important; }
[data-testid="stMain"] code { font-size: 19px !important; }
[data-testid="stMain"] td, [data-testid="stMain"] th { font-size: 18px !important; }
/* Plotly writes each label's size into its style attribute; a stylesheet's !important
   outranks it. */
[data-testid="stMain"] .js-plotly-plot .xtick text,
[data-testid="stMain"] .js-plotly-plot .ytick text,
[data-testid="stMain"] .js-plotly-plot .g-xtitle text,
[data-testid="stMain"] .js-plotly-plot .g-ytitle text,
[data-testid="stMain"] .js-plotly-plot .cbaxis text,
[data-testid="stMain"] .js-plotly-plot .legendtext { font-size: 18px !important; }
/* The bar stays one row on a projector (1280 px): a long title wraps inside its own
   space (two lines at most) instead of pushing the buttons onto a second row. A
   narrower screen lets the bar wrap as before. */
@media (min-width: 1100px) {
  .st-key-presenter_bar { flex-wrap: nowrap !important; }
  .st-key-presenter_bar > [data-testid="stElementContainer"]:has(h1) { min-width: 0;
    flex: 1 1 0; }
  .st-key-presenter_bar h1 { font-size: 1.9rem !important; line-height: 1.2; }
}
</style>"""

_JS = """<script>
if (!window.__tinyformerPresenter) {
  window.__tinyformerPresenter = true;

  // Back leaves the page: an edit replaces the address instead of adding one.
  const push = history.pushState.bind(history);
  history.pushState = function (state, title, url) {
    try {
      if (url != null && new URL(url, location.href).pathname === location.pathname) {
        return history.replaceState(state, title, url);
      }
    } catch (error) { /* an address the URL parser refuses: leave it to the browser */ }
    return push(state, title, url);
  };

  // A lesson (ui/class_session.py's lesson bar): in presenter view the arrow keys walk
  // it instead of the curriculum. Registered on the window in the capture phase, so it
  // runs before ui/classroom.py's keys on the document and stops them.
  window.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
    if (!document.querySelector(".st-key-presenter_bar")) return;
    if (!document.querySelector(".st-key-lesson_bar")) return;
    const target = event.target || {};
    const tag = (target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag) || target.isContentEditable) return;
    if ((target.getAttribute && target.getAttribute("role")) === "slider") return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const side = event.key === "ArrowRight" ? "next" : "prev";
    const button = document.querySelector(`.st-key-lesson_${side} button`);
    if (button && !button.disabled) button.click();
    event.preventDefault();
    event.stopImmediatePropagation();
  }, true);

  // M presses "Continue" (the same guards as the keys of ui/classroom.py).
  document.addEventListener("keydown", (event) => {
    const target = event.target || {};
    const tag = (target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag) || target.isContentEditable) return;
    if ((target.getAttribute && target.getAttribute("role")) === "slider") return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key !== "m" && event.key !== "M") return;
    const button = document.querySelector('[class*="-more-open"] button');
    if (button && !button.disabled) { button.click(); event.preventDefault(); }
  });

  // A popover opened from the keyboard (presenter view's Share and More): its content
  // is drawn at the end of the page, and the focus went to whatever button had loaded
  // first ("Reset this page", the download buttons' code arriving later); it moves
  // to the content's first control once the content has loaded.
  const FOCUSABLE = 'button:not([disabled]), a[href], input:not([disabled])';
  document.addEventListener("keydown", (event) => {
    const opener = event.target.closest && event.target.closest('[data-testid="stPopoverButton"]');
    if (!opener || (event.key !== "Enter" && event.key !== " ")) return;
    let tries = 0;
    const enter = () => {
      const bodies = [...document.querySelectorAll('[data-testid="stPopoverBody"]')];
      const body = bodies[bodies.length - 1];
      const ready = opener.getAttribute("aria-expanded") === "true" && body
        && !body.querySelector('[data-testid="stSkeleton"]');
      if (ready && body.querySelector(FOCUSABLE)) body.querySelector(FOCUSABLE).focus();
      else if (++tries < 40) setTimeout(enter, 50);
    };
    setTimeout(enter, 100);
  });

  // After a step or "Continue": scroll to what appeared.
  const BLOCKS = '[data-testid="stMain"] [data-testid="stElementContainer"]';
  const CONTROLS = '[class*="-step-controls"]';
  const app = () => document.querySelector('[data-testid="stApp"]');
  const running = () => (app() || {}).dataset?.testScriptState !== "notRunning";
  const text = (el) => (el.innerText || "").trim();
  const blocks = () => [...document.querySelectorAll(BLOCKS)]
    .filter((el) => !el.closest(CONTROLS) && el.offsetParent !== null && text(el));
  const scroller = () => {
    const main = document.querySelector('[data-testid="stMain"]');
    return main && main.scrollHeight > main.clientHeight ? main : document.scrollingElement;
  };
  const topEdge = () => {
    const bar = document.querySelector(".st-key-presenter_bar");
    const header = document.querySelector('[data-testid="stHeader"]');
    const over = bar || header;
    return over ? Math.max(0, over.getBoundingClientRect().bottom) : 0;
  };
  const bringIntoView = (el) => {
    const top = topEdge();
    const box = el.getBoundingClientRect();
    const room = window.innerHeight - top;
    if (box.top >= top && box.top <= top + 0.6 * room) return;  // already in view
    scroller().scrollBy({ top: box.top - top - 8, behavior: "instant" });
  };
  const currentStep = (controls) => {
    // "Step k of n: label" -> the heading "k · label" that ui/reveal.py draws.
    const row = controls && document.querySelector("." + controls);
    const match = row && text(row).match(/(\\d+)\\D+?\\d+\\D*?[:：]\\s*(.+?)\\s*$/m);
    if (!match) return row;
    const heading = `${match[1]} · ${match[2]}`;
    const found = [...document.querySelectorAll('[data-testid="stMain"] strong')]
      .find((el) => text(el) === heading);
    return found || row;
  };
  let pending = null;
  const settle = () => {
    if (!pending) return;
    const waited = Date.now() - pending.at;
    const busy = running() || document.querySelector('[data-testid="stSkeleton"]');
    if (waited > 20000) { pending = null; return; }
    if (busy || waited < 250) { setTimeout(settle, 100); return; }
    const { before, controls } = pending;
    pending = null;
    const fresh = blocks().find((el) => !before.has(text(el)));
    const target = fresh || currentStep(controls);
    if (target) bringIntoView(target);
  };
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest(
      '[class*="-step-start"] button, [class*="-step-next"] button, '
      + '[class*="-step-back"] button, [class*="-more-open"] button');
    if (!button) return;
    const row = button.closest(CONTROLS);
    const controls = row && [...row.classList].find((c) => c.startsWith("st-key-"));
    pending = { before: new Set(blocks().map(text)), controls, at: Date.now() };
    setTimeout(settle, 100);
  }, true);
}
</script>"""


def page_script(presenting: bool) -> str:
    """The browser code, and presenter view's type: a part of the frame's one script
    element."""
    return (_CSS if presenting else "") + _JS
