"""Text to token IDs, and token IDs to rows of an embedding table.

A character-level vocabulary (one token per character) keeps every step visible:
ID 0 is padding ``[PAD]``, ID 1 stands for any unknown character ``[UNK]``, and the
corpus's characters follow in order of first appearance. ``embed`` looks the IDs up
in a table and adds a position row to each, returning every intermediate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import torch

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.positional import sinusoidal

PAD = "[PAD]"
UNK = "[UNK]"
PAD_ID = 0
UNK_ID = 1
SPECIALS: tuple[str, ...] = (PAD, UNK)

PositionKind = Literal["learned", "sinusoidal"]
POSITION_KINDS: tuple[str, ...] = ("learned", "sinusoidal")
POSITION_SEED_OFFSET = 1_000_003


@dataclass(frozen=True)
class Encoding:
    """One text as tokens and IDs, with the characters the vocabulary lacks."""

    text: str
    tokens: tuple[str, ...]  # [N] the vocabulary's token per position ([UNK] if unknown)
    ids: tuple[int, ...]  # [N]
    unknown: tuple[str, ...]  # distinct unknown characters, in order of appearance
    unknown_positions: tuple[int, ...]  # positions that became [UNK]


@dataclass(frozen=True)
class Batch:
    """Several texts left-padded to one length N."""

    ids: torch.Tensor  # [B, N] int64, PAD_ID on the left of shorter texts
    valid: torch.Tensor  # [B, N] bool, True = real token, False = padding
    tokens: tuple[tuple[str, ...], ...]  # [B][N] token strings, [PAD] included
    encodings: tuple[Encoding, ...]  # [B] each text's own encoding, unpadded

    @property
    def n_padding(self) -> int:
        """How many positions of the batch are padding."""
        return int((~self.valid).sum())


@dataclass(frozen=True)
class CharVocab:
    """Character vocabulary: ``tokens[i]`` is the token with ID i."""

    tokens: tuple[str, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tokens[: len(SPECIALS)] != SPECIALS:
            raise ParameterError(
                "tokens_specials_first",
                f"a vocabulary starts with {list(SPECIALS)}, got {list(self.tokens[:2])}",
            )
        if len(set(self.tokens)) != len(self.tokens):
            raise ParameterError("tokens_duplicate", "a vocabulary lists each token once")
        object.__setattr__(self, "_index", {tok: i for i, tok in enumerate(self.tokens)})

    @classmethod
    def from_corpus(cls, texts: str | Iterable[str]) -> CharVocab:
        """[PAD], [UNK], then every non-whitespace character in order of first appearance."""
        if isinstance(texts, str):
            texts = [texts]
        seen: dict[str, None] = {}
        for text in texts:
            for char in text:
                if not char.isspace():
                    seen.setdefault(char, None)
        return cls((*SPECIALS, *(c for c in seen if c not in SPECIALS)))

    def __len__(self) -> int:
        return len(self.tokens)

    def id_of(self, token: str) -> int:
        """The token's ID; UNK_ID if the vocabulary lacks it."""
        return self._index.get(token, UNK_ID)

    def __contains__(self, token: object) -> bool:
        return token in self._index

    def encode(self, text: str) -> Encoding:
        """One ID per character; characters outside the vocabulary become [UNK]."""
        ids = [self.id_of(char) for char in text]
        unknown_positions = tuple(i for i, char in enumerate(text) if char not in self._index)
        unknown = tuple(dict.fromkeys(text[i] for i in unknown_positions))
        tokens = tuple(self.tokens[i] for i in ids)
        return Encoding(text, tokens, tuple(ids), unknown, unknown_positions)

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special: bool = False) -> str:
        """IDs back to text. [UNK] cannot give back the lost character; it stays '[UNK]'."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        out = []
        for i in values:
            self._check_id(int(i))
            if skip_special and int(i) in (PAD_ID, UNK_ID):
                continue
            out.append(self.tokens[int(i)])
        return "".join(out)

    def batch_encode(self, texts: Sequence[str], length: int | None = None) -> Batch:
        """Encode several texts and left-pad them with [PAD] to a common length N.

        ``length`` None means the longest text's length; a text longer than ``length``
        is an error (a batch never silently cuts a text).
        """
        encodings = tuple(self.encode(text) for text in texts)
        longest = max((len(e.ids) for e in encodings), default=0)
        n = longest if length is None else length
        if longest > n:
            raise ShapeError(
                "tokens_batch_too_long",
                f"a text has {longest} tokens, more than the batch length {n}",
                n=longest,
                limit=n,
            )
        ids = torch.full((len(texts), n), PAD_ID, dtype=torch.int64)  # [B, N]
        valid = torch.zeros(len(texts), n, dtype=torch.bool)  # [B, N]
        for row, enc in enumerate(encodings):
            start = n - len(enc.ids)  # left padding: real tokens end at the last column
            if enc.ids:
                ids[row, start:] = torch.tensor(enc.ids, dtype=torch.int64)
            valid[row, start:] = True
        tokens = tuple(tuple(self.tokens[i] for i in row) for row in ids.tolist())
        return Batch(ids, valid, tokens, encodings)

    def _check_id(self, i: int) -> None:
        if not 0 <= i < len(self.tokens):
            raise ShapeError(
                "tokens_bad_id",
                f"ID {i} is outside the vocabulary (0..{len(self.tokens) - 1})",
                id=i,
                vocab=len(self.tokens),
            )


def find(tokens: Sequence[str], piece: Sequence[str]) -> int:
    """Index where ``piece`` (a run of tokens) first starts in ``tokens``; -1 if absent."""
    k = len(piece)
    for start in range(len(tokens) - k + 1):
        if tuple(tokens[start : start + k]) == tuple(piece):
            return start
    return -1


# --- Embedding lookup -------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddingTrace:
    """Every step of ``x_i = E[id_i] + P[i]``."""

    table: torch.Tensor  # [V, d] token embedding table E
    ids: torch.Tensor  # [..., N] int64
    rows: torch.Tensor  # [..., N, d] X: row ids[i] of E for each position i
    positions: torch.Tensor  # [N, d] P: rows 0..N-1 of the position table
    summed: torch.Tensor  # [..., N, d] X + P, the input of the first block


def random_table(
    n_rows: int, d: int, seed: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """A seeded N(0, 1) table [n_rows, d], as an untrained nn.Embedding starts."""
    _check_width(n_rows, d)
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n_rows, d, generator=gen, dtype=torch.float64).to(dtype)  # [n, d]


def position_table(
    kind: PositionKind, max_length: int, d: int, seed: int = 0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Position table [max_length, d]: a random 'learned' one (seeded) or sinusoidal.

    The learned table draws from seed + POSITION_SEED_OFFSET, so with the same seed its
    rows are not copies of the token table's rows.
    """
    if kind == "learned":
        return random_table(max_length, d, seed + POSITION_SEED_OFFSET, dtype)
    if kind == "sinusoidal":
        _check_width(max_length, d)
        return sinusoidal(max_length, d, dtype=dtype)
    raise ParameterError(
        "tokens_position_kind",
        f"position kind must be one of {POSITION_KINDS}, got {kind!r}",
        kind=str(kind),
    )


def embed(ids: torch.Tensor, table: torch.Tensor, positions: torch.Tensor) -> EmbeddingTrace:
    """Look ``ids`` [..., N] up in ``table`` [V, d], then add ``positions[:N]`` [N, d].

    The same ID gives the same row wherever it stands; only the added position row
    tells two occurrences apart. N = 0 and N beyond the position table are errors.
    """
    ids = torch.as_tensor(ids, dtype=torch.int64)
    if table.dim() != 2 or positions.dim() != 2 or table.shape[1] != positions.shape[1]:
        raise ShapeError(
            "tokens_table_shapes",
            f"need E [V, d] and P [L, d] of one width, got {list(table.shape)} and "
            f"{list(positions.shape)}",
            table=list(table.shape),
            positions=list(positions.shape),
        )
    if ids.dim() == 0:
        raise ShapeError("tokens_ids_shape", "ids must be [..., N], got a scalar")
    n = ids.shape[-1]
    if n == 0:  # nothing to look up: an empty text, or a batch of empty texts
        raise ShapeError("tokens_empty", "there are no tokens to embed")
    if n > positions.shape[0]:
        raise ShapeError(
            "tokens_too_long",
            f"{n} tokens, but the position table has only {positions.shape[0]} rows",
            n=n,
            limit=positions.shape[0],
        )
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= table.shape[0]):
        bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
        raise ShapeError(
            "tokens_bad_id",
            f"ID {bad} is outside the vocabulary (0..{table.shape[0] - 1})",
            id=bad,
            vocab=table.shape[0],
        )
    rows = table[ids]  # [..., N, d] a lookup: row ids[i] of E
    pos = positions[:n]  # [N, d]
    return EmbeddingTrace(table, ids, rows, pos, rows + pos)  # P broadcasts over the batch


@dataclass(frozen=True)
class SamePiece:
    """One run of tokens (e.g. 运费) in two texts: its rows before and after positions."""

    piece: tuple[str, ...]
    ids: tuple[int, ...]  # [k] the piece's IDs (the same in both texts)
    start_a: int  # where the piece starts in text a
    start_b: int  # where it starts in text b
    rows_a: torch.Tensor  # [k, d] E rows in text a
    rows_b: torch.Tensor  # [k, d] E rows in text b
    summed_a: torch.Tensor  # [k, d] rows + positions in text a
    summed_b: torch.Tensor  # [k, d] rows + positions in text b
    gap_rows: float  # max |rows_a - rows_b|: 0 for the same tokens
    gap_summed: float  # max |summed_a - summed_b|: > 0 unless the positions coincide

    @property
    def difference(self) -> torch.Tensor:
        """[k, d] summed_a - summed_b: with the same E rows, exactly the position rows'
        difference P[start_a + t] - P[start_b + t]."""
        return self.summed_a - self.summed_b

    def side_by_side(self) -> SideBySide:
        """Rows interleaved as (token 0 in a, token 0 in b, token 1 in a, ...)."""
        before, after, rows = [], [], []
        for k in range(len(self.piece)):
            for which, start, emb, summed in (
                ("a", self.start_a, self.rows_a, self.summed_a),
                ("b", self.start_b, self.rows_b, self.summed_b),
            ):
                before.append(emb[k])
                after.append(summed[k])
                rows.append((self.piece[k], self.ids[k], which, start + k))
        return SideBySide(torch.stack(before), torch.stack(after), tuple(rows))


class SideBySide(NamedTuple):
    before: torch.Tensor  # [2k, d] E rows, each token of the piece from text a then text b
    after: torch.Tensor  # [2k, d] the same rows with their positions added
    rows: tuple[tuple[str, int, str, int], ...]  # [2k] (token, ID, "a" or "b", position)


def same_piece(
    piece: Sequence[str],
    tokens_a: Sequence[str],
    trace_a: EmbeddingTrace,
    tokens_b: Sequence[str],
    trace_b: EmbeddingTrace,
) -> SamePiece:
    """Compare the rows of ``piece`` where it first occurs in two embedded texts."""
    piece = tuple(piece)
    start_a, start_b = find(tokens_a, piece), find(tokens_b, piece)
    if not piece or start_a < 0 or start_b < 0:
        raise ParameterError(
            "tokens_piece_missing",
            f"{''.join(piece)!r} is not in both texts",
            piece="".join(piece),
        )
    k = len(piece)
    rows_a, rows_b = trace_a.rows[start_a : start_a + k], trace_b.rows[start_b : start_b + k]
    sum_a, sum_b = trace_a.summed[start_a : start_a + k], trace_b.summed[start_b : start_b + k]
    ids = tuple(int(i) for i in trace_a.ids[start_a : start_a + k])
    return SamePiece(
        piece,
        ids,
        start_a,
        start_b,
        rows_a,
        rows_b,
        sum_a,
        sum_b,
        float((rows_a - rows_b).abs().max()),
        float((sum_a - sum_b).abs().max()),
    )


def _check_width(n_rows: int, d: int) -> None:
    if n_rows < 0 or d < 1:
        raise ShapeError(
            "tokens_bad_size",
            f"need rows >= 0 and d >= 1, got {n_rows} and {d}",
            rows=n_rows,
            d=d,
        )
