"""The curriculum order of the built pages. Only built pages are listed here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Stage:
    id: str  # translation prefix and stable name
    path: str  # file, relative to the app root
    number: str  # curriculum section ("" for the overview)
    icon: str


HOME = Stage("home", "app.py", "", ":material/home:")

_CURRICULUM: tuple[Stage, ...] = (
    Stage("ngram", "pages/00_before_transformers.py", "0", ":material/history_edu:"),
    Stage("tokens", "pages/01_tokens.py", "1", ":material/tag:"),
    Stage("qkv", "pages/02_qkv.py", "2", ":material/call_split:"),
    Stage("scaling", "pages/03_scaling.py", "3", ":material/straighten:"),
    Stage("masks", "pages/04_masks.py", "4", ":material/visibility_off:"),
    Stage("softmax", "pages/05_softmax.py", "5", ":material/functions:"),
    Stage("multihead", "pages/06_multi_head.py", "6", ":material/view_column:"),
)
# Only pages that exist are listed: no placeholders in the navigation.
STAGES: tuple[Stage, ...] = tuple(s for s in _CURRICULUM if (ROOT / s.path).exists())


def all_pages() -> tuple[Stage, ...]:
    return (HOME, *STAGES)


def by_id(stage_id: str) -> Stage:
    for stage in all_pages():
        if stage.id == stage_id:
            return stage
    raise KeyError(stage_id)


def neighbours(stage_id: str) -> tuple[Stage | None, Stage | None]:
    """(previous, next) in curriculum order; the overview precedes the first stage."""
    pages = all_pages()
    index = [p.id for p in pages].index(stage_id)
    previous = pages[index - 1] if index > 0 else None
    following = pages[index + 1] if index + 1 < len(pages) else None
    return previous, following


# The overview's diagram: the path from text to the next token. A step links to the
# page that teaches it once that page is built.
PIPELINE: tuple[tuple[str, str | None], ...] = (
    ("text", None),
    ("tokens", "tokens"),
    ("embed", "tokens"),
    ("qkv", "qkv"),
    ("scores", "scaling"),
    ("mask", "masks"),
    ("softmax", "softmax"),
    ("heads", "multihead"),
    ("ffn", None),
    ("norm", None),
    ("logits", None),
    ("next", None),
)


def built(stage_id: str | None) -> Stage | None:
    """The stage's page if it is built, else None (the diagram then shows no link)."""
    return next((s for s in STAGES if s.id == stage_id), None)
