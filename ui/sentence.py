"""The teacher's own sentence: typed once, the running example of every stage that shows
a sentence (docs/architecture.md, "The teacher's own sentence").

    sentence.box()                  # the sidebar box, drawn once per run by the frame
    sentence.current()              # the sentence now (default: the running example)
    sentence.follow("text", ...)    # a page's own box that opens on the sentence
    kept = sentence.for_vocab(vocab.tokens)  # what a model with this vocabulary reads

The value lives in session state under the global key `sentence` (ui/state.py), so every
link between pages carries it; the running example itself is left out of the URL. Its
length is bounded by what the trained model can read and still write its answer
(MAX_CHARS). An empty box or an over-long paste gets a translated note, never a
traceback: empty means the running example again, a long paste keeps its first
MAX_CHARS characters.
"""

from __future__ import annotations

from collections.abc import Container

import streamlit as st

from tinyformer.lessons.example import RUNNING_EXAMPLE
from tinyformer.lessons.train import ANSWER_LENGTH
from tinyformer.lessons.train_settings import MAX_LENGTH
from ui import state
from ui.i18n import t
from ui.inputs import text

KEY = state.SENTENCE  # "sentence": a global key, carried by every link
DEFAULT = RUNNING_EXAMPLE
# The shipped model reads MAX_LENGTH positions and writes ANSWER_LENGTH tokens after a
# question: the longest sentence it can read and still answer (probe.max_question_length).
MAX_CHARS = MAX_LENGTH - ANSWER_LENGTH + 1
CODEC = state.Codec(encode=str, decode=str,
                    valid=lambda v: isinstance(v, str) and 0 < len(v) <= MAX_CHARS
                    and v == v.strip())
_WIDGET = f"_{KEY}{state.PRIVATE}box"  # the box's own key; the value is KEY's
_NOTE = f"_{KEY}{state.PRIVATE}note"  # what the last edit's check found


def clean(typed: str | None) -> tuple[str, str | None]:
    """A typed sentence -> (the sentence to use, the note's key or None): surrounding
    blanks dropped, empty -> the running example, longer than MAX_CHARS -> cut."""
    text = (typed or "").strip()
    if not text:
        return DEFAULT, "kit.sentence.empty"
    if len(text) > MAX_CHARS:
        return text[:MAX_CHARS].strip(), "kit.sentence.cut"
    return text, None


def current() -> str:
    """The sentence now, on any page: the session's, else a valid one in the URL, else
    the running example."""
    value = st.session_state.get(KEY)
    if CODEC.valid(value):
        return value
    raw = st.query_params.get(KEY)
    return raw if raw is not None and CODEC.valid(raw) else DEFAULT


def is_default() -> bool:
    return current() == DEFAULT


def box(where: str = "sidebar") -> str:
    """The sentence's box with its "running example" button; returns the sentence.
    The frame draws it in the sidebar of every stage; the overview draws it on the page
    instead (where="home"): each shows and changes the same value."""
    value = state.initial(KEY, DEFAULT, CODEC, t("kit.sentence.label"))
    widget = f"{_WIDGET}{where}"
    st.session_state[widget] = value
    st.text_input(t("kit.sentence.label"), key=widget, on_change=_typed, args=(widget,),
                  help=t("kit.sentence.help", limit=MAX_CHARS))
    found = st.session_state.pop(f"{_NOTE}{where}", None)
    if found is not None:
        note, length = found
        st.warning(t(note, n=length, limit=MAX_CHARS, example=DEFAULT),
                   icon=":material/warning:")
    if value != DEFAULT:
        st.button(t("kit.sentence.reset"), key=f"{widget}_reset", on_click=_set, args=(DEFAULT,),
                  icon=":material/restart_alt:", help=t("kit.sentence.reset_help", example=DEFAULT))
    state.write_url(KEY, st.session_state[KEY], DEFAULT, CODEC)
    # The frame recorded its values before this box read the sentence (the first run of a
    # session had none): this whole run draws the page with the sentence now, so a
    # section's own rerun must not take it for a change and redraw everything.
    state.frame_drawn()
    return st.session_state[KEY]


def _typed(widget: str) -> None:
    typed = st.session_state.get(widget) or ""
    value, note = clean(typed)
    if note is not None:
        st.session_state[f"{_NOTE}{widget.removeprefix(_WIDGET)}"] = (note, len(typed.strip()))
    _set(value)


def _set(value: str) -> None:
    st.session_state[KEY] = value
    state.write_url(KEY, value, DEFAULT, CODEC)


def known_part(sentence: str, vocab: Container[str]) -> tuple[str, tuple[str, ...]]:
    """(the sentence without the characters outside `vocab`, those characters, each
    once, in the order they first appear)."""
    kept = "".join(ch for ch in sentence if ch in vocab)
    unknown = tuple(dict.fromkeys(ch for ch in sentence if ch not in vocab))
    return kept, unknown


def for_vocab(vocab: Container[str], sentence: str | None = None) -> str:
    """What a model with this vocabulary reads of the sentence (default: current()),
    with a translated note naming the characters it drops; when none is left, the
    running example, and a note saying so."""
    sentence = current() if sentence is None else sentence
    kept, unknown = known_part(sentence, vocab)
    if not unknown:
        return sentence
    chars = "".join(f"「{ch}」" for ch in unknown)
    if not kept:
        st.warning(t("kit.sentence.none_known", chars=chars, example=DEFAULT),
                   icon=":material/warning:")
        return DEFAULT
    st.warning(t("kit.sentence.dropped", chars=chars, kept=kept), icon=":material/warning:")
    return kept


def follow(name: str, label: str, limit: int, help: str | None = None) -> str:
    """A page's own sentence box (ui.inputs.text) that opens on the teacher's sentence and
    follows it when it changes, until the learner types something else here."""
    key = state.qualify(name)
    drawn = f"_{key}{state.PRIVATE}default"  # the sentence this box last followed
    default = current()[:limit]
    previous = st.session_state.get(drawn)
    if previous is not None and previous != default and st.session_state.get(key) == previous:
        st.session_state[key] = default  # untouched here: it follows the new sentence
    st.session_state[drawn] = default
    return text(name, label, default, limit, help=help)
