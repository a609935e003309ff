"""The byte-level BPE trained on the classroom's corpus, and one text cut both ways: by
the corpus's character vocabulary (the model's tokens) and by that BPE (the BPE page).

The tokenizer itself is tinyformer.bpe; this module only fixes what it learns from:
every question and answer of tinyformer.lessons.corpus. ``byte_entries`` reads back how
its vocabulary holds the 256 bytes: each as one printable character (GPT-2's fixed table,
the space byte 20 as "Ġ"), numbered in the vocabulary's own order, so a byte's ID is not
its value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tinyformer.bpe import (
    DEFAULT_VOCAB_SIZE,
    BPETokenizer,
    TwoCuts,
    compare_cuts,
    token_bytes,
    train_bpe,
)
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


@dataclass(frozen=True)
class ByteEntry:
    """One byte as the vocabulary holds it."""

    value: int  # the byte, 0..255
    char: str  # the printable character it is stored as ("Ġ" for the space byte 20)
    id: int  # its token ID


def byte_entries(bpe: BPETokenizer) -> tuple[ByteEntry, ...]:
    """[256] the vocabulary's single-byte entries, indexed by byte value, read back from
    its tokens (every byte-level vocabulary holds all 256)."""
    found: dict[int, ByteEntry] = {}
    for token_id in range(bpe.vocab_size):
        token = bpe.token(token_id)
        data = token_bytes(token)  # the bytes the token's characters stand for
        if len(data) == 1:
            found[data[0]] = ByteEntry(data[0], token, token_id)
    return tuple(found[value] for value in range(256))


@cache
def corpus_byte_entries() -> tuple[ByteEntry, ...]:
    """``byte_entries`` of the corpus's BPE, read once."""
    return byte_entries(corpus_bpe())
