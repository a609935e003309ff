"""The classroom around every page: presenter view, keyboard, sharing by QR code, and
the downloads (the page's state as JSON, its tables as CSV, a printable handout).

Presenter view (?present=true, or the sidebar switch): no sidebar or toolbar, larger type,
a bar that always shows the stage and large previous / next buttons; the arrow keys
move between stages and N / B through the steps of a worked example.
"""

from __future__ import annotations

import html
import io
import json
import os
from dataclasses import dataclass
from urllib.parse import urlencode

import streamlit as st

from ui import handout, inputs, state
from ui.i18n import current_lang, t

PUBLIC_URL_ENV = "TINYFORMER_PUBLIC_URL"  # the address the class uses, e.g. a LAN IP
_ADDRESS = "_share_address"
MAX_ADDRESS = 200  # characters in the class address box

_PRESENTER_CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"], [data-testid="stToolbar"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding: 0.5rem 2rem 2rem; max-width: 100%; }
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,
[data-testid="stMain"] [data-testid="stCaptionContainer"] { font-size: 20px !important; }
/* A small label in markdown (":small[...]", a formula's) grows as captions do. */
[data-testid="stMain"] p > span[style^="font-size"] { font-size: 20px !important; }
[data-testid="stMain"] h1 { font-size: 2.2rem; }
[data-testid="stMain"] .katex { font-size: 1.35em; }
/* Sticky on the bar's wrapper: the bar itself fills its parent, so it had nowhere to
   stick and scrolled away with the page. */
[data-testid="stLayoutWrapper"]:has(> .st-key-presenter_bar) { position: sticky; top: 0;
  z-index: 1000; }
.st-key-presenter_bar { background: #fff; border-bottom: 1px solid #dee2e6;
  padding: 0.4rem 0; }
.st-key-presenter_bar a, .st-key-presenter_bar button { font-size: 22px !important; }
</style>"""

# Arrow keys: previous / next stage (presenter view); N / B: next / previous step.
# Keys typed into an input, or pressed on a focused slider, are left alone.
# On a narrow screen (a phone): numbers that no longer fit their heatmap cell get a
# smaller font, down to the figure's cell_min_px (11 px; 18 in presenter view); a single
# row's numbers turn upright in its tall cells; else they are left out and a note under
# the chart (its text in the figure's meta, ui/figures.py) says how to read them. A
# formula wider than its column is scaled down to fit (it scrolls beyond 60 %).
_CLIENT_JS = """<style>
/* A heatmap's note, written under it by fitHeatmap once its numbers are left out: the
   text is the figure's (layout.meta.cells_note), so no element waits on every run. */
[data-cells-note] { flex: 0 0 auto !important; height: auto !important;
  position: relative; padding-bottom: 3.2em; overflow: visible !important; }
[data-cells-note]::after { content: attr(data-cells-note); position: absolute; left: 0;
  right: 0; bottom: 0; font-size: 0.875rem; line-height: 1.6;
  color: rgba(49, 51, 63, 0.6); }
</style><script>
if (!window.__tinyformerKeys) {
  window.__tinyformerKeys = true;
  document.addEventListener("keydown", (event) => {
    const target = event.target || {};
    const tag = (target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag) || target.isContentEditable) return;
    if ((target.getAttribute && target.getAttribute("role")) === "slider") return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const press = (selector) => {
      const el = document.querySelector(selector);
      if (!el || el.disabled) return false;
      el.click(); event.preventDefault(); return true;
    };
    const presenting = !!document.querySelector(".st-key-presenter_bar");
    const next = '.st-key-bar_next a, .tf-page-nav a[rel="next"]';
    const previous = '.st-key-bar_prev a, .tf-page-nav a[rel="prev"]';
    if (presenting && event.key === "ArrowRight") press(next);
    if (presenting && event.key === "ArrowLeft") press(previous);
    // N also starts a walk that has not begun (its "Step by step" button).
    if (event.key === "n" || event.key === "N") {
      press('[class*="-step-next"] button') || press('[class*="-step-start"] button');
    }
    if (event.key === "b" || event.key === "B") press('[class*="-step-back"] button');
  });
  const fitHeatmap = (chart) => {
    const labels = [...chart.querySelectorAll(".heatmap-label text")];
    const image = chart.querySelector(".heatmaplayer image");
    const meta = (chart.layout && chart.layout.meta) || {};
    if (!labels.length || !image || !meta.cols) return;
    const box = image.getBBox();
    const cellWidth = box.width / meta.cols, cellHeight = box.height / meta.rows;
    let widest = 0;
    for (const label of labels) {
      label.style.display = "";
      label.removeAttribute("transform");
      label.style.fontSize = label.dataset.size || (label.dataset.size = label.style.fontSize);
      widest = Math.max(widest, label.getComputedTextLength());
    }
    const given = parseFloat(labels[0].dataset.size), least = meta.cell_min_px || 11;
    let hidden = false;
    if (widest > cellWidth * 0.92) {
      const size = given * (cellWidth * 0.92) / widest;
      // A single row (one query's weights) has tall cells: its numbers turn upright.
      const upright = Math.min(given, cellWidth / 1.3, given * (cellHeight * 0.92) / widest);
      if (size >= least) {
        labels.forEach((label) => { label.style.fontSize = size + "px"; });
      } else if (meta.rows === 1 && upright >= least) {
        for (const label of labels) {
          label.style.fontSize = upright + "px";
          const x = parseFloat(label.getAttribute("x"));
          const middle = parseFloat(label.getAttribute("y")) - 0.35 * given;
          label.setAttribute("transform", `rotate(-90 ${x} ${middle})`);
        }
      } else {
        hidden = true;  // smaller would be unreadable: the note says where they are
        labels.forEach((label) => { label.style.display = "none"; });
      }
    }
    const holder = chart.closest('[class*="st-key-"]');
    const note = hidden ? meta.cells_note || "" : "";
    if (holder && (holder.getAttribute("data-cells-note") || "") !== note) {
      if (note) holder.setAttribute("data-cells-note", note);
      else holder.removeAttribute("data-cells-note");
    }
  };
  const fitFormula = (box) => {
    const inner = box.querySelector(".katex");
    if (!inner) return;
    inner.style.fontSize = "";
    if (box.scrollWidth <= box.clientWidth + 1) return;
    // Scale the size the page gave it (the presenter's is larger), never below 60 %.
    const size = parseFloat(getComputedStyle(inner).fontSize);
    inner.style.fontSize = size * Math.max(0.6, box.clientWidth / box.scrollWidth) + "px";
  };
  // The full-screen QR code opened from presenter view's Share popover: close the
  // popover, which would sit above the dialog and take the first Esc.
  const closePopoverUnderQr = () => {
    const qr = document.querySelector(".st-key-qr_full");
    if (!qr || qr.dataset.popoverClosed) return;
    qr.dataset.popoverClosed = "true";
    document.querySelectorAll('[data-testid="stPopoverButton"][aria-expanded="true"]')
      .forEach((button) => button.click());
  };
  let pending = false;
  const fitAll = () => {
    pending = false;
    document.querySelectorAll(".js-plotly-plot").forEach(fitHeatmap);
    document.querySelectorAll(".katex-display").forEach(fitFormula);
    closePopoverUnderQr();
  };
  const later = () => { if (!pending) { pending = true; requestAnimationFrame(fitAll); } };
  new MutationObserver(later).observe(document.body, { childList: true, subtree: true });
  // Plotly turns a first tap into a hover only; one tap on a cell should explain it, so
  // a tap on a chart is replayed as the mouse click Plotly selects on.
  document.addEventListener("touchend", (event) => {
    const area = event.target.closest && event.target.closest(".js-plotly-plot .nsewdrag");
    if (!area || event.changedTouches.length !== 1) return;
    const { clientX, clientY } = event.changedTouches[0];
    const init = { bubbles: true, cancelable: true, clientX, clientY, button: 0, view: window };
    setTimeout(() => {
      area.dispatchEvent(new MouseEvent("mousemove", init));
      area.dispatchEvent(new MouseEvent("mousedown", init));
      area.dispatchEvent(new MouseEvent("mouseup", init));
      area.dispatchEvent(new MouseEvent("click", init));
    }, 30);
  }, { passive: true });
  window.addEventListener("resize", later);
  // On a phone the open sidebar covers the page: close it once a stage is chosen.
  document.addEventListener("click", (event) => {
    if (window.innerWidth > 640) return;
    if (!(event.target.closest && event.target.closest('[data-testid="stSidebar"] a'))) return;
    setTimeout(() => {
      const close = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
      if (close) close.click();
    }, 60);
  });
}
</script>"""


def resolve_presenting() -> bool:
    """Presenter view from the URL (?present=true), kept while the learner moves on."""
    on = state.initial(state.PRESENT, False, state.BOOL_CODEC, t("kit.presenter"))
    state.write_url(state.PRESENT, on, False, state.BOOL_CODEC)
    return on


def presenting() -> bool:
    return bool(st.session_state.get(state.PRESENT, False))


def set_presenting(on: bool) -> None:
    state.set_value(state.PRESENT, on, False, state.BOOL_CODEC)


def page_styles() -> str:
    """Presenter view's styles when it is on: a part of the frame's one style element."""
    return _PRESENTER_CSS if presenting() else ""


def page_script() -> str:
    """The keyboard handler (with its styles): a part of the frame's one script element."""
    return _CLIENT_JS


# --- Sharing -------------------------------------------------------------------------------
def page_params() -> dict[str, str]:
    return {key: st.query_params[key] for key in st.query_params}


def share_url(base: str | None = None) -> str:
    """The page's exact address as the class would open it: same stage, inputs, language."""
    return compose_url(st.context.url or "", base, page_params())


def compose_url(here: str, address: str | None, params: dict[str, str]) -> str:
    """The page's address (here, without its query), with another host and port when the
    class reaches the server at `address`, and the URL parameters."""
    address = (address or "").strip().rstrip("/")
    if address and "://" not in address:  # "192.168.1.20:8501" as a teacher types it
        address = f"http://{address}"
    if address:
        path = here.split("//", 1)[-1].partition("/")[2] if "//" in here else ""
        here = f"{address}/{path}" if path else address
    query = urlencode(params)
    return f"{here}?{query}" if query else here


def qr_png(url: str) -> bytes:
    import segno  # a well-kept, pure-Python QR encoder

    buffer = io.BytesIO()
    segno.make(url, error="m").save(buffer, kind="png", scale=10, border=2)
    return buffer.getvalue()


SHARE_ON = "_share_on"  # the QR code is shown (and kept up to date, see ui.page.part)


def share_panel() -> None:
    """The page's address as a large QR code and as text, for the class to open.

    Drawn on demand: while it is shown, an edit inside a section that reruns alone
    reruns the whole page, so the code always carries the inputs on screen."""
    default = os.environ.get(PUBLIC_URL_ENV, "")
    address = st.text_input(t("kit.share_address"), value=default, key=_ADDRESS,
                            help=t("kit.share_address_help"), on_change=inputs.text_changed,
                            args=(_ADDRESS, MAX_ADDRESS))
    inputs.text_note(_ADDRESS)  # a longer paste keeps its first MAX_ADDRESS characters
    if not st.toggle(t("kit.share_show"), key=SHARE_ON):
        return
    url = share_url(address)
    st.session_state["_share_url"] = url  # what the QR code encodes (checked by tests)
    st.image(qr_png(url), width=320)
    st.code(url, language=None, wrap_lines=True)
    if st.button(t("kit.share_full"), key="_share_full", icon=":material/fullscreen:",
                 help=t("kit.share_full_help")):
        _full_screen_qr(url)


_FULL_CSS = """<style>
/* The dialog fills the screen: the code is scanned from the back of the room. */
[data-testid="stDialog"] [role="dialog"]:has(.st-key-qr_full) { position: fixed !important;
  inset: 0 !important; width: 100vw !important; max-width: 100vw !important;
  height: 100vh !important; max-height: 100vh !important; margin: 0 !important;
  border-radius: 0 !important; overflow: auto; background: #fff !important;
  color: #111 !important; }
.st-key-qr_full { align-items: center; }
.st-key-qr_full [data-testid="stImage"] img { height: min(58vh, 88vw) !important;
  width: auto !important; max-width: none !important; image-rendering: pixelated; }
.st-key-qr_full .qr-address { font-size: clamp(1.3rem, 2.8vw, 2.6rem); font-weight: 600;
  text-align: center; overflow-wrap: anywhere; line-height: 1.25; margin: 0; }
</style>"""


def _full_screen_qr(url: str) -> None:
    """The QR code filling the screen, the address in large text under it; Esc, the ✕
    or a click outside closes it."""
    @st.dialog(t("kit.share_full_title"), width="large")
    def show() -> None:
        with st.container(key="qr_full"):
            st.html(_FULL_CSS)
            st.image(qr_png(url))
            st.html(f'<p class="qr-address">{html.escape(url)}</p>')
            st.caption(t("kit.share_full_close"))

    show()


# --- Downloads -------------------------------------------------------------------------------
def state_json(stage_id: str, lang: str, params: dict[str, str], url: str) -> str:
    """The page's whole state: its URL parameters, and the link that opens it again."""
    return json.dumps({"tinyformer": 1, "stage": stage_id, "lang": lang, "params": params,
                       "url": url}, ensure_ascii=False, indent=2)


def share_address() -> str:
    """The address the class reaches this server at: typed in the share panel, else
    TINYFORMER_PUBLIC_URL, else "" (this browser's own address is used)."""
    typed = st.session_state.get(_ADDRESS)
    return (typed if typed is not None else os.environ.get(PUBLIC_URL_ENV, "")).strip()


@dataclass
class Files:
    """What the downloads are made from, captured during the run: Streamlit makes a file
    only when it is asked for, in another thread, outside any run."""
    stage_id: str
    lang: str
    here: str  # this browser's address of the page, without its query
    address: str  # the class's address (share_address), "" for none
    params: dict[str, str]  # the URL's parameters: ui.state keeps this dict up to date
    record: handout.Record
    labels: dict[str, str]

    def link(self) -> str:
        """The page as it is now, at the class's address when one is set."""
        return compose_url(self.here, self.address, dict(self.params))

    def state(self) -> str:
        return state_json(self.stage_id, self.lang, dict(self.params), self.link())

    def tables(self) -> bytes:
        return handout.tables_zip(self.record, dict(self.params))

    def handout(self) -> str:
        return handout.handout_html(self.record, self.labels, self.link(), dict(self.params),
                                    self.lang)


def files_now(stage_id: str) -> Files:
    """The downloads of the page being drawn, with its current record and address."""
    labels = {"made_from": t("kit.handout_from"), "answers": t("kit.handout_answers"),
              "partial": t("kit.handout_partial", all=t("kit.step_all"))}
    return Files(stage_id, current_lang(), st.context.url or "", share_address(),
                 state.url_now(), handout.current(), labels)


def downloads(stage_id: str, *, folded: bool = False) -> None:
    """State as JSON, every table as CSV (a zip), and the printable handout; `folded`:
    part of the page is still closed, so they hold only the part on screen."""
    if folded:
        st.caption(t("kit.downloads_folded"))
    files = files_now(stage_id)
    st.download_button(t("kit.download_state"), data=files.state,
                       file_name=f"tinyformer-{stage_id}.json", mime="application/json",
                       on_click="ignore", icon=":material/data_object:", key="_dl_state")
    if files.record.tables(files.params):
        st.download_button(t("kit.download_tables"), data=files.tables,
                           file_name=f"tinyformer-{stage_id}-tables.zip",
                           mime="application/zip", on_click="ignore",
                           icon=":material/table:", key="_dl_tables")
    st.download_button(t("kit.download_handout"), data=files.handout,
                       file_name=f"tinyformer-{stage_id}-{files.lang}.html", mime="text/html",
                       on_click="ignore", icon=":material/print:", key="_dl_handout")
