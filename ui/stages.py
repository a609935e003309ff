"""The stages in curriculum order: each one's id (its URL path, URL prefix and
translation prefix), page file, number and icon; the navigation's sections."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Stage:
    id: str  # URL path ("/softmax"), URL and key prefix, translation prefix
    path: str  # file, relative to the app root
    number: str  # curriculum section ("" for the overview)
    icon: str
    uses_device: bool = False  # runs a model: the frame offers the device (CPU / CUDA)


HOME = Stage("home", "pages/overview.py", "", ":material/home:")
CLASS_OVERVIEW = Stage("class", "pages/class_overview.py", "", ":material/insights:")  # no stage

# A curriculum section that holds two ideas spans two pages, numbered 0.1, 0.2 ...
# The order is the lesson's: softmax (3) comes before scaling (4) and masks (5.1), which
# both act on what softmax does; the K/V cache (10.3) after the generation loop it speeds
# up. Stage ids are URL paths, so a reordering keeps every old link working.
_CURRICULUM: tuple[Stage, ...] = (
    Stage("ngrams", "pages/00_ngrams.py", "0.1", ":material/history_edu:"),
    Stage("embeddings", "pages/00_embeddings.py", "0.2", ":material/scatter_plot:"),
    Stage("tokens", "pages/01_tokens.py", "1.1", ":material/tag:"),
    Stage("bpe", "pages/01_bpe.py", "1.2", ":material/call_merge:"),
    Stage("qkv", "pages/02_qkv.py", "2", ":material/call_split:"),
    Stage("softmax", "pages/03_softmax.py", "3", ":material/functions:"),
    Stage("scaling", "pages/04_scaling.py", "4", ":material/straighten:"),
    Stage("masks", "pages/05_masks.py", "5.1", ":material/visibility_off:"),
    Stage("context", "pages/05_context.py", "5.2", ":material/compare_arrows:"),
    Stage("multi_head", "pages/06_multi_head.py", "6", ":material/view_column:"),
    Stage("positions", "pages/07_positions.py", "7.1", ":material/format_list_numbered:"),
    Stage("rope", "pages/07_rope.py", "7.2", ":material/rotate_right:"),
    Stage("ffn", "pages/08_ffn.py", "8.1", ":material/hub:"),
    Stage("swiglu_moe", "pages/08_swiglu_moe.py", "8.2", ":material/alt_route:"),
    Stage("residual_norm", "pages/09_residual_norm.py", "9.1", ":material/add_circle:"),
    Stage("pre_post_norm", "pages/09_pre_post_norm.py", "9.2", ":material/stacked_line_chart:"),
    Stage("logits", "pages/10_logits.py", "10.1", ":material/bar_chart:"),
    Stage("decoding", "pages/10_decoding.py", "10.2", ":material/casino:"),
    # The cache speeds up the generation loop of 10.2, so it comes right after it.
    Stage("kv_cache", "pages/10_kv_cache.py", "10.3", ":material/memory:"),
    Stage("forward", "pages/11_forward.py", "11", ":material/account_tree:", True),
    Stage("backbones", "pages/12_backbones.py", "12", ":material/schema:"),
    Stage("training", "pages/13_training.py", "13.1", ":material/model_training:"),
    Stage("inside", "pages/13_inside.py", "13.2", ":material/biotech:", True),
    Stage("generate", "pages/13_generate.py", "13.3", ":material/edit_note:", True),
)
# Only pages that exist are listed: no placeholders in the navigation.
STAGES: tuple[Stage, ...] = tuple(s for s in _CURRICULUM if (ROOT / s.path).exists())


def all_pages() -> tuple[Stage, ...]:
    return (HOME, *STAGES)


def by_id(stage_id: str) -> Stage:
    for stage in (*all_pages(), CLASS_OVERVIEW):
        if stage.id == stage_id:
            return stage
    raise KeyError(stage_id)


def by_url(url_path: str) -> Stage:
    """The stage at a URL path ("" is the overview)."""
    return by_id(url_path or HOME.id)


def neighbours(stage_id: str) -> tuple[Stage | None, Stage | None]:
    """(previous, next) in curriculum order; the overview precedes the first stage."""
    pages = all_pages()
    if stage_id not in [p.id for p in pages]:  # CLASS_OVERVIEW: no previous or next
        return None, None
    index = [p.id for p in pages].index(stage_id)
    previous = pages[index - 1] if index > 0 else None
    following = pages[index + 1] if index + 1 < len(pages) else None
    return previous, following


# The overview's diagram: the path from text to the next token, then the whole model.
# Each step links to the pages that teach it, once they are built.
PIPELINE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text", ("ngrams", "embeddings")),
    ("tokens", ("tokens", "bpe")),
    ("qkv", ("qkv",)),
    ("softmax", ("softmax",)),
    ("scores", ("scaling",)),
    ("mask", ("masks", "context")),
    ("heads", ("multi_head",)),
    ("positions", ("positions", "rope")),
    ("ffn", ("ffn", "swiglu_moe")),
    ("norm", ("residual_norm", "pre_post_norm")),
    ("logits", ("logits",)),
    ("next", ("decoding", "kv_cache")),
    ("whole", ("forward",)),
    ("backbones", ("backbones",)),
    ("trained", ("training", "inside", "generate")),
)


def built(stage_id: str | None) -> Stage | None:
    """The stage's page if it is built, else None (the diagram then shows no link)."""
    return next((s for s in STAGES if s.id == stage_id), None)


# The navigation's sections, in lesson order: (translation key under "nav.", stage ids).
NAV_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("home",)),
    ("text", ("ngrams", "embeddings", "tokens", "bpe")),
    ("attention", ("qkv", "softmax", "scaling", "masks", "context", "multi_head")),
    ("block", ("positions", "rope", "ffn", "swiglu_moe", "residual_norm", "pre_post_norm")),
    ("output", ("logits", "decoding", "kv_cache", "forward", "backbones")),
    ("trained", ("training", "inside", "generate")),
)
