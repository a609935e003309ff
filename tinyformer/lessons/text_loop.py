"""The generation loop of stage 10.2 on text: a prompt typed in characters for the
trained model (one character per token, tinyformer.lessons.corpus's vocabulary), and
token IDs read through a vocabulary for a model that has none of its own.

The loop itself is tinyformer.lessons.decoding.generate; this module only turns text
into IDs (with keyed errors for what the model cannot read) and IDs into the tokens a
learner reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from tinyformer.errors import ParameterError
from tinyformer.tokenizer import CharVocab


def prompt_ids(vocab: CharVocab, text: str) -> tuple[int, ...]:
    """The prompt's IDs, one per character; empty or with characters outside the
    vocabulary: a keyed error (the model would read [UNK], a row it never learned)."""
    if not isinstance(text, str) or not text.strip():
        raise ParameterError("prompt_empty", "the prompt needs at least one character")
    encoding = vocab.encode(text.strip())
    if encoding.unknown:
        chars = "".join(encoding.unknown)
        raise ParameterError("trained_question_unknown", f"the model never saw these "
                             f"characters in training: {chars}", chars=chars)
    return encoding.ids


def labels(tokens: Sequence[str], ids: Sequence[int]) -> tuple[tuple[int, str], ...]:
    """Each distinct ID in order of first appearance, with its token in ``tokens``."""
    return tuple((i, tokens[i]) for i in dict.fromkeys(int(i) for i in ids))
