"""A byte-level BPE tokenizer trained on the texts given (Hugging Face ``tokenizers``).

Byte-level BPE starts from the 256 byte values, so any text can be encoded, and learns
merges of frequent neighbouring pieces, most frequent first. A Chinese character is 3
bytes in UTF-8, so a learned token can hold a whole character, several characters
(「运费谁承担」) or only part of one character's bytes. Such a partial token is not text:
its display form shows the bytes themselves (``<E8 BF>``), never "�".

GPT-2's byte-level convention stores each byte as one printable character (e.g. the
byte 0x20, a space, as "Ġ"); ``token_bytes`` undoes that mapping.

For teaching, ``first_merges(k)`` is the same tokenizer knowing only its first k merges
(same vocabulary, same IDs), so a page can apply the merges one by one; ``merge_run``
counts a text's tokens after each of them, and ``compare_cuts`` puts a character
vocabulary's cut of a text beside the BPE's, with both round trips. The BPE trained on
the classroom's corpus is tinyformer.lessons.bpe_corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from tinyformer.errors import ParameterError
from tinyformer.tokenizer import CharVocab, Encoding

DEFAULT_VOCAB_SIZE = 400
VOCAB_SIZE_BOUNDS = (256, 4096)  # 256 = the bytes alone, no merge learned
MIN_FREQUENCY = 2  # a pair seen once is not worth a token
MAX_TEXT_CHARS = 10_000
MAX_TRAIN_CHARS = 2_000_000


@dataclass(frozen=True)
class Merge:
    """One learned merge: ``left`` + ``right`` -> ``merged`` (raw byte-level strings)."""

    rank: int  # 0 = learned first (the most frequent pair at that point)
    left: str
    right: str
    merged: str
    left_display: str
    right_display: str
    merged_display: str


@dataclass(frozen=True)
class BPEEncoding:
    """One text as BPE tokens."""

    text: str
    ids: tuple[int, ...]  # [N]
    tokens: tuple[str, ...]  # [N] raw byte-level token strings
    display: tuple[str, ...]  # [N] readable: text, with partial UTF-8 bytes as <E8 BF>
    n_bytes: tuple[int, ...]  # [N] how many UTF-8 bytes each token holds
    offsets: tuple[tuple[int, int], ...]  # [N] the characters of text each token touches
    hex: tuple[str, ...] = ()  # [N] each token's bytes in hex: "E8 BF 90"
    partial: tuple[bool, ...] = ()  # [N] True: the bytes are not whole UTF-8 characters

    @property
    def byte_spans(self) -> tuple[tuple[int, int], ...]:
        """[N] each token's bytes [start, end) within the text's UTF-8 bytes."""
        return _spans(self.n_bytes)

    def covering(self, char_index: int) -> tuple[int, ...]:
        """The tokens that hold some byte of the character at char_index."""
        return tuple(i for i, (start, end) in enumerate(self.offsets) if start <= char_index < end)

    def split_chars(self) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """Characters whose bytes are spread over several tokens: (char index, tokens)."""
        spread = ((c, self.covering(c)) for c in range(len(self.text)))
        return tuple((c, tokens) for c, tokens in spread if len(tokens) > 1)


@cache
def _byte_to_char() -> dict[int, str]:
    """GPT-2's bytes_to_unicode: printable bytes stay, the others move to U+0100 upward."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


@cache
def _char_to_byte() -> dict[str, int]:
    return {char: byte for byte, char in _byte_to_char().items()}


def token_bytes(token: str) -> bytes:
    """The bytes a raw byte-level token stands for."""
    table = _char_to_byte()
    return bytes(table[char] for char in token)


def display_bytes(data: bytes) -> str:
    """Readable form of a byte string: whole UTF-8 characters as text, the rest as <XX ..>.

    Consecutive bytes that do not form a whole character are grouped into one
    ``<E8 BF>``; a token never shows "�". Unprintable characters (a newline) and
    whitespace (a space would be an invisible token) show as bytes: ``<0A>``, ``<20>``.
    """
    parts: list[str] = []
    stray: list[int] = []
    i = 0
    while i < len(data):
        char, size = _char_at(data, i)
        if char is None or not char.isprintable() or char.isspace():
            stray.append(data[i])
            i += 1
            continue
        if stray:
            parts.append(_hex(stray))
            stray = []
        parts.append(char)
        i += size
    if stray:
        parts.append(_hex(stray))
    return "".join(parts)


def _char_at(data: bytes, i: int) -> tuple[str | None, int]:
    """The whole UTF-8 character starting at byte i, or (None, 1) if none starts there."""
    for size in (1, 2, 3, 4):
        try:
            return data[i : i + size].decode("utf-8"), size
        except UnicodeDecodeError:
            continue
    return None, 1


def _hex(values: list[int]) -> str:
    return "<" + hex_bytes(bytes(values)) + ">"


def hex_bytes(data: bytes) -> str:
    """b"\xe8\xbf\x90" -> "E8 BF 90"."""
    return " ".join(f"{b:02X}" for b in data)


def is_whole_utf8(data: bytes) -> bool:
    """Do these bytes form whole UTF-8 characters (no character cut at either end)?"""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def display_token(token: str) -> str:
    """Readable form of one raw byte-level token."""
    return display_bytes(token_bytes(token))


class BPETokenizer:
    """A trained byte-level BPE: encode, decode, the merges in order, readable tokens."""

    def __init__(self, tokenizer: Tokenizer,
                 known: tuple[dict[str, int], tuple[Merge, ...]] | None = None) -> None:
        """known: the vocabulary and merges, when the caller has them (first_merges):
        else they are read back from the tokenizer's JSON."""
        self._tokenizer = tokenizer
        if known is None:
            model = json.loads(tokenizer.to_str())["model"]
            known = (model["vocab"],
                     tuple(_merge(rank, pair) for rank, pair in enumerate(model["merges"])))
        self._vocab: dict[str, int] = known[0]
        self._merges: tuple[Merge, ...] = known[1]
        self._prefixes: dict[int, BPETokenizer] = {}  # first_merges(k), built once each

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size()

    @property
    def merges(self) -> tuple[Merge, ...]:
        """Merges in the order they were learned (the order encoding applies them)."""
        return self._merges

    def token(self, token_id: int) -> str:
        """The raw byte-level string of one ID."""
        token = self._tokenizer.id_to_token(int(token_id))
        if token is None:
            raise ParameterError(
                "bpe_bad_id",
                f"ID {token_id} is outside the vocabulary (0..{self.vocab_size - 1})",
                id=int(token_id),
                vocab=self.vocab_size,
            )
        return token

    def encode(self, text: str) -> BPEEncoding:
        _check_text(text)
        enc = self._tokenizer.encode(text)
        raw = tuple(enc.tokens)
        data = [token_bytes(t) for t in raw]
        return BPEEncoding(
            text=text,
            ids=tuple(enc.ids),
            tokens=raw,
            display=tuple(display_token(t) for t in raw),
            n_bytes=tuple(len(d) for d in data),
            offsets=tuple(tuple(o) for o in enc.offsets),
            hex=tuple(hex_bytes(d) for d in data),
            partial=tuple(not is_whole_utf8(d) for d in data),
        )

    def count(self, text: str) -> int:
        """How many tokens the text becomes: encode's IDs alone, without the display
        strings that `encode` builds for every token (merge_run asks once per merge)."""
        _check_text(text)
        return len(self._tokenizer.encode(text).ids)

    def first_merges(self, k: int) -> BPETokenizer:
        """The same tokenizer knowing only its first k merges (0: bytes only).

        Hugging Face's BPE model applies the merges it knows, lowest rank first, as
        the full tokenizer does; the vocabulary is the full one, so every ID means the
        same token (the tokens of later merges are simply never produced).
        """
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= len(self._merges):
            raise ParameterError(
                "bpe_merges_range",
                f"k must be a whole number from 0 to {len(self._merges)}, got {k!r}",
                value=str(k),
                high=len(self._merges),
            )
        if k == len(self._merges):
            return self
        if k not in self._prefixes:
            pairs = [(m.left, m.right) for m in self._merges[:k]]
            # Shared, not read back from the prefix's JSON: each of the 145 prefixes one
            # merge_run builds held its own copy of both (about 10 MiB a process).
            self._prefixes[k] = BPETokenizer(_byte_level(models.BPE(self._vocab, pairs)),
                                             (self._vocab, self._merges[:k]))
        return self._prefixes[k]

    def decode(self, ids: Sequence[int]) -> str:
        """IDs back to text; the bytes of all tokens are joined before UTF-8 decoding."""
        for i in ids:
            self.token(i)  # raises a keyed error for an unknown ID
        return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def to_str(self) -> str:
        """The tokenizer as Hugging Face's JSON (vocabulary and merges)."""
        return self._tokenizer.to_str()


def _merge(rank: int, pair: Sequence[str] | str) -> Merge:
    left, right = pair.split(" ") if isinstance(pair, str) else pair
    return Merge(
        rank,
        left,
        right,
        left + right,
        display_token(left),
        display_token(right),
        display_token(left + right),
    )


def train_bpe(texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> BPETokenizer:
    """Train a byte-level BPE on ``texts``.

    Deterministic: the same texts in the same order give the same merges.
    """
    _check_vocab_size(vocab_size)
    texts = list(texts)
    for text in texts:
        _check_text(text)
    total = sum(len(t) for t in texts)
    if total > MAX_TRAIN_CHARS:
        raise ParameterError(
            "bpe_corpus_too_large",
            f"{total} characters to train on, more than {MAX_TRAIN_CHARS}",
            n=total,
            limit=MAX_TRAIN_CHARS,
        )
    tokenizer = _byte_level(models.BPE())
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=MIN_FREQUENCY,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # all 256 bytes: nothing is unknown
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return BPETokenizer(tokenizer)


def _byte_level(model: models.BPE) -> Tokenizer:
    tokenizer = Tokenizer(model)
    # add_prefix_space=False: no invented space, so decode(encode(s)) gives s back exactly
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _check_vocab_size(vocab_size: int) -> None:
    low, high = VOCAB_SIZE_BOUNDS
    if (
        isinstance(vocab_size, bool)
        or not isinstance(vocab_size, int)
        or not (low <= vocab_size <= high)
    ):
        raise ParameterError(
            "bpe_vocab_size",
            f"the BPE vocabulary size must be a whole number from {low} to {high}, "
            f"got {vocab_size!r}",
            value=str(vocab_size),
            low=low,
            high=high,
        )


def _check_text(text: str) -> None:
    if not isinstance(text, str):
        raise ParameterError("bpe_text_type", f"expected text, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise ParameterError(
            "bpe_text_too_long",
            f"{len(text)} characters, more than {MAX_TEXT_CHARS}",
            n=len(text),
            limit=MAX_TEXT_CHARS,
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:  # a lone surrogate has no UTF-8 bytes
        raise ParameterError(
            "bpe_text_not_utf8",
            f"character {err.start + 1} cannot be written in UTF-8",
            position=err.start + 1,  # counted from 1, as a reader counts
        ) from err


# --- Teaching views: the merges one by one, and two tokenizers side by side -------------


@dataclass(frozen=True)
class MergeRun:
    """A text cut by the first k merges, for every k from 0 (bytes) to all of them."""

    text: str
    counts: tuple[int, ...]  # [K + 1] tokens after the first k merges (counts[0]: bytes)
    uses: tuple[int, ...]  # [K] how often merge k (rank k) joins two pieces of this text

    @property
    def used(self) -> tuple[int, ...]:
        """The ranks of the merges that change this text, in order."""
        return tuple(rank for rank, n in enumerate(self.uses) if n)


def merge_run(bpe: BPETokenizer, text: str) -> MergeRun:
    """Encode the text with the first k merges for every k; each merge applied joins two
    pieces into one, so the drop in the token count is how often it applied."""
    _check_text(text)
    counts = tuple(bpe.first_merges(k).count(text) for k in range(len(bpe.merges) + 1))
    return MergeRun(text, counts, tuple(a - b for a, b in pairwise(counts)))


@dataclass(frozen=True)
class TwoCuts:
    """One text cut by the character vocabulary and by the byte-level BPE."""

    text: str
    n_bytes: int  # UTF-8 bytes of the text: the tokens of a BPE without merges
    chars: Encoding  # one token per character; characters it lacks become [UNK]
    bpe: BPEEncoding
    char_vocab: int  # entries of each vocabulary
    bpe_vocab: int
    char_decoded: str  # vocab.decode(chars.ids): an [UNK] cannot give its character back
    bpe_decoded: str  # bpe.decode(bpe.ids): the bytes joined, then read as UTF-8
    char_spans: tuple[tuple[int, int], ...]  # [N_chars] each character's bytes [start, end)

    @property
    def char_round_trip(self) -> bool:
        return self.char_decoded == self.text

    @property
    def bpe_round_trip(self) -> bool:
        return self.bpe_decoded == self.text


def compare_cuts(text: str, vocab: CharVocab, bpe: BPETokenizer) -> TwoCuts:
    """Both cuts of one non-empty text, by a character vocabulary and by a BPE, each
    decoded back."""
    _check_text(text)
    if not text:
        raise ParameterError("bpe_text_empty", "the text is empty: type at least one character")
    chars, pieces = vocab.encode(text), bpe.encode(text)
    return TwoCuts(
        text,
        len(text.encode("utf-8")),
        chars,
        pieces,
        len(vocab),
        bpe.vocab_size,
        vocab.decode(chars.ids),
        bpe.decode(pieces.ids),
        _spans(len(c.encode("utf-8")) for c in text),
    )


def _spans(sizes: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """[3, 2, 1] -> ((0, 3), (3, 5), (5, 6)): consecutive pieces laid along the bytes."""
    spans, start = [], 0
    for size in sizes:
        spans.append((start, start + size))
        start += size
    return tuple(spans)
