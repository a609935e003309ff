"""The curriculum order of the built pages. Only built pages are listed here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    id: str  # translation prefix and stable name
    path: str  # file, relative to the app root
    number: str  # curriculum section ("" for the overview)
    icon: str


HOME = Stage("home", "app.py", "", ":material/home:")

STAGES: tuple[Stage, ...] = (
    Stage("softmax", "pages/05_softmax.py", "5", ":material/functions:"),
)


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
    ("tokens", None),
    ("embed", None),
    ("qkv", None),
    ("scores", None),
    ("mask", None),
    ("softmax", "softmax"),
    ("heads", None),
    ("ffn", None),
    ("norm", None),
    ("logits", None),
    ("next", None),
)
