"""The corpus as next-token training pairs (tinyformer.training), character by character."""

from __future__ import annotations

from collections.abc import Sequence

from tinyformer.lessons.corpus import Example
from tinyformer.tokenizer import CharVocab
from tinyformer.training import Batches, next_token_pairs


def encode_examples(examples: Sequence[Example], vocab: CharVocab) -> Batches:
    """Each question and its answer as one right-padded sequence; the answer mask covers
    the answer's characters."""
    return next_token_pairs(
        [vocab.encode(ex.text).ids for ex in examples], [len(ex.question) for ex in examples]
    )
