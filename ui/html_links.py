"""Links between our stages drawn as one HTML element each time, instead of one
Streamlit element per link, card and column: the overview's cards, and the previous /
next links under every page.

The overview drew 15 cards with 25 page links: about 80 elements, half of every full run
of that page; every page's footer drew up to 8 for its two links (docs/deploy.md, "Links as
one element"). Here each is one element. Their links are plain anchors with the address
`st.page_link` would give (the page's path and the frame's values). The frame's script
(`SCRIPT`) turns a plain click on one into Streamlit's own page change: it writes the
address into the browser's history and tells Streamlit the address changed, as the
browser's back button does. So the session, the socket and the page's state stay, as
with `st.page_link`. A click with a modifier key (new tab, new window) and a browser
without the script follow the address itself.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlencode

import streamlit as st

from ui.stages import HOME, Stage

ATTRIBUTE = "data-tf-page"  # marks the anchors the script handles

SCRIPT = """<script>
(() => {
  if (window.__tinyformerCardLinks) return;
  window.__tinyformerCardLinks = true;
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a[__ATTR__]");
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    history.pushState(null, "", link.href);
    window.dispatchEvent(new PopStateEvent("popstate"));
    // As after st.page_link: the new page starts at its top.
    const main = document.querySelector('[data-testid="stMain"]');
    if (main) main.scrollTo(0, 0);
  });
})();
</script>""".replace("__ATTR__", ATTRIBUTE)

STYLES = """<style>  /* in the frame's one style element (ui/frame.py) */
/* At most five cards a row (three rows of five on a laptop), fewer where each would be
   narrower than 9rem (two on a phone). */
ol.tf-cards.tf-cards { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.75rem;
  grid-template-columns: repeat(auto-fill, minmax(max(9rem, calc((100% - 3rem) / 5)), 1fr)); }
.tf-cards > li { margin: 0; padding: 0.75rem 1rem; border-radius: 0.5rem;
  border: 1px solid rgba(49, 51, 63, 0.2); display: flex; flex-direction: column; }
.tf-cards .tf-card-title { font-weight: 600; margin: 0; }
.tf-cards .tf-card-note { font-size: 0.875rem; margin: 0.25rem 0 0.5rem; flex-grow: 1; }
.tf-cards.tf-cards ul { list-style: none; margin: 0; padding: 0; }
.tf-cards ul li { margin: 0; padding: 0; }
.tf-cards a { display: block; padding: 0.2rem 0.4rem; margin-left: -0.4rem;
  border-radius: 0.5rem; color: inherit; text-decoration: none; }
.tf-cards a:hover { background: rgba(151, 166, 195, 0.25); }
.tf-cards a:focus-visible { outline: 2px solid #3b5bdb; outline-offset: 1px; }
.tf-cards a span { margin-right: 0.35rem; }
.tf-page-nav { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; justify-content: space-between;
  border-top: 1px solid rgba(49, 51, 63, 0.2); margin-top: 1rem; padding-top: 1rem; }
.tf-page-nav a { padding: 0.25rem 0.5rem; border-radius: 0.5rem; color: inherit;
  text-decoration: none; }
.tf-page-nav a[rel="next"] { margin-left: auto; text-align: right; }
.tf-page-nav a:hover { background: rgba(151, 166, 195, 0.25); }
.tf-page-nav a:focus-visible { outline: 2px solid #3b5bdb; outline-offset: 1px; }
</style>"""


@dataclass(frozen=True)
class Card:
    title: str
    note: str
    links: tuple[tuple[Stage, str], ...]  # (stage, label)


def draw(cards: Sequence[Card], params: Mapping[str, str], label: str) -> None:
    """The cards as one element; its HTML built once per content and address values."""
    st.html(_cached_html(tuple(cards), tuple(params.items()), label))


@lru_cache(maxsize=128)
def _cached_html(cards: tuple[Card, ...], params: tuple[tuple[str, str], ...],
                 label: str) -> str:
    return cards_html(cards, dict(params), label)


def page_nav(previous: tuple[Stage, str] | None, following: tuple[Stage, str] | None,
             params: Mapping[str, str], label: str) -> None:
    """The previous and next stages' links, `(stage, label)` each, under a rule."""
    st.html(_nav_html(previous, following, tuple(params.items()), label))


@lru_cache(maxsize=256)
def _nav_html(previous: tuple[Stage, str] | None, following: tuple[Stage, str] | None,
              params: tuple[tuple[str, str], ...], label: str) -> str:
    ends = (("prev", previous), ("next", following))
    links = "".join(_anchor(*end, dict(params), rel=rel) for rel, end in ends if end)
    return f'<nav class="tf-page-nav" aria-label="{html.escape(label)}">{links}</nav>'


def _anchor(stage: Stage, text: str, params: Mapping[str, str], *, rel: str = "",
            mark: str = "") -> str:
    """One link the frame's script handles; `mark`: a sign before the text that a
    screen reader skips."""
    relation = f' rel="{rel}"' if rel else ""
    sign = f'<span aria-hidden="true">{mark}</span>' if mark else ""
    return (f'<a {ATTRIBUTE}{relation} href="{html.escape(href(stage, params))}">'
            f"{sign}{html.escape(text)}</a>")


def href(stage: Stage, params: Mapping[str, str]) -> str:
    """The stage's address from the app's root, with the frame's values."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    path = "/".join(part for part in (base, "" if stage == HOME else stage.id) if part)
    query = urlencode(params)
    return f"/{path}" + (f"?{query}" if query else "")


def cards_html(cards: Sequence[Card], params: Mapping[str, str], label: str) -> str:
    """One list of cards; every text is escaped (titles come from our catalogue)."""
    items = []
    for card in cards:
        links = "".join(f"<li>{_anchor(stage, text, params, mark='→')}</li>"
                        for stage, text in card.links)
        items.append(f'<li><p class="tf-card-title">{html.escape(card.title)}</p>'
                     f'<p class="tf-card-note">{html.escape(card.note)}</p>'
                     f"<ul>{links}</ul></li>")
    return (f'<ol class="tf-cards" aria-label="{html.escape(label)}">'
            f'{"".join(items)}</ol>')


__all__ = ["ATTRIBUTE", "SCRIPT", "STYLES", "Card", "cards_html", "draw", "href", "page_nav"]
