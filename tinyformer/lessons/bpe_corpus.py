"""The byte-level BPE trained on the classroom's corpus, and one text cut both ways: by
the corpus's character vocabulary (the model's tokens) and by that BPE (the BPE page).

The tokenizer itself is tinyformer.bpe; this module only fixes what it learns from:
every question and answer of tinyformer.lessons.corpus.
"""

from __future__ import annotations

from functools import cache

from tinyformer.bpe import DEFAULT_VOCAB_SIZE, BPETokenizer, TwoCuts, compare_cuts, train_bpe
from tinyformer.lessons.corpus import all_examples, vocabulary


def corpus_texts() -> list[str]:
    """Every question of the corpus followed by its answer, in the corpus's fixed order."""
    return [example.text for example in all_examples()]


@cache
def corpus_bpe(vocab_size: int = DEFAULT_VOCAB_SIZE) -> BPETokenizer:
    """The BPE trained on the corpus, built once per vocabulary size."""
    return train_bpe(corpus_texts(), vocab_size)


def corpus_cuts(text: str) -> TwoCuts:
    """One non-empty text cut by the corpus's character vocabulary and by its BPE."""
    return compare_cuts(text, vocabulary(), corpus_bpe())
