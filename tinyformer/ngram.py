"""n-gram language model: the next token from counts of the previous n-1 tokens.

n counts the whole window: n = 2 (a bigram) reads one token of context, n = 3 (a
trigram) reads two. A string is a sequence of characters, so "看动漫" is the tokens
看, 动, 漫; a list of strings is a sequence of word tokens. Only full windows of n tokens
are counted (no start padding), so a context shorter than n-1 tokens has no counts.

Also the small corpus helpers the n-gram stage needs (character sequences, phrase
counts, how many of the possible windows a corpus contains).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

from tinyformer.errors import ParameterError

Token = Hashable
MAX_TABLE_VOCAB = 1_000_000  # bounds V^n for the size calculator (10^60 at most)
MAX_TABLE_ORDER = 10


class Probability(NamedTuple):
    """P(token | context) = count / total, read from the table of counts."""

    context: tuple[Token, ...]  # the n-1 tokens the model reads
    ignored: tuple[Token, ...]  # earlier tokens, outside the window
    token: Token
    count: int  # C(context token): the numerator
    total: int  # C(context ·), every window that starts with the context: the denominator
    probability: float  # count / total; 0.0 when the context was never seen (total 0)

    @property
    def seen(self) -> bool:
        return self.total > 0


class Chain(NamedTuple):
    """P(x_2 .. x_T | x_1) as the product of one Probability per step."""

    steps: tuple[Probability, ...]
    probability: float


class NGramModel:
    """Counts of (n-1 tokens of context) -> next token; n = 2 is a bigram model."""

    def __init__(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ParameterError("ngram_order_invalid", f"n must be an integer >= 1, got {n}", n=n)
        self.n = n
        self._counts: dict[tuple[Token, ...], Counter[Token]] = defaultdict(Counter)

    def fit(self, sequences: Iterable[Sequence[Token]]) -> NGramModel:
        """Count every window of n tokens in every sequence (replacing earlier counts):
        training is this one counting pass."""
        self._counts = defaultdict(Counter)
        for seq in sequences:
            tokens = list(seq)
            for end in range(self.n - 1, len(tokens)):
                context = tuple(tokens[end - self.n + 1 : end])
                self._counts[context][tokens[end]] += 1
        return self

    def window(self, context: Sequence[Token]) -> tuple[tuple[Token, ...], tuple[Token, ...]]:
        """(read, ignored): the model reads only the last n-1 tokens of the context."""
        tokens = tuple(context)
        cut = max(0, len(tokens) - (self.n - 1))
        return tokens[cut:], tokens[:cut]

    def counts(self, context: Sequence[Token]) -> dict[Token, int]:
        """Next-token counts after the last n-1 tokens of ``context``, most frequent first."""
        read, _ = self.window(context)
        if len(read) < self.n - 1 or read not in self._counts:
            return {}  # never counted: windows shorter than n do not exist in fit
        return dict(self._counts[read].most_common())

    def next_token_probs(self, context: Sequence[Token]) -> dict[Token, float]:
        """P(token | last n-1 tokens of context); {} for an unseen context (sparsity)."""
        counts = self.counts(context)
        total = sum(counts.values())
        return {token: count / total for token, count in counts.items()}

    def explain(self, context: Sequence[Token], token: Token) -> Probability:
        """One probability with its counts: prediction is this one table lookup."""
        read, ignored = self.window(context)
        counts = self.counts(context)
        total, count = sum(counts.values()), counts.get(token, 0)
        return Probability(read, ignored, token, count, total, count / total if total else 0.0)

    def chain(self, tokens: Sequence[Token]) -> Chain:
        """P(tokens after the first n-1 | the first n-1): one step per later token. A step
        whose context was never seen gives 0, as does a step with count 0."""
        tokens = list(tokens)
        steps = tuple(self.explain(tokens[:end], tokens[end])
                      for end in range(self.n - 1, len(tokens)))
        product = 1.0
        for step in steps:
            product *= step.probability
        return Chain(steps, product)

    @staticmethod
    def table_size(vocab_size: int, n: int) -> int:
        """Possible n-gram entries, V^n, as an exact Python int (10^25 for V=1e5, n=5)."""
        return table_size(vocab_size, n).entries


class TableSize(NamedTuple):
    """V^n, exactly, and in scientific notation: entries ≈ mantissa × 10^exponent."""

    vocab_size: int
    n: int
    entries: int
    exponent: int
    mantissa: float  # in [1, 10)
    power_of_ten: bool  # entries == 10^exponent exactly


def table_size(vocab_size: int, n: int) -> TableSize:
    """How many n-token windows a vocabulary of V tokens allows: V^n, an exact int.

    Bounded (V <= MAX_TABLE_VOCAB, n <= MAX_TABLE_ORDER) so the number stays printable.
    """
    for name, value, limit in (("V", vocab_size, MAX_TABLE_VOCAB), ("n", n, MAX_TABLE_ORDER)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise ParameterError("ngram_table_size_invalid",
                                 f"{name} must be a whole number in [1, {limit}], got {value}",
                                 name=name, value=value, limit=limit)
    entries = vocab_size**n
    exponent = len(str(entries)) - 1
    return TableSize(vocab_size, n, entries, exponent, entries / 10**exponent,
                     entries == 10**exponent)


# --- Corpus helpers (character level) ------------------------------------------------
def char_sequences(text: str) -> list[str]:
    """One sequence per non-empty line; each character is one token."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def vocabulary(sequences: Iterable[str]) -> list[str]:
    """The distinct characters of the corpus, sorted."""
    return sorted({char for seq in sequences for char in seq})


def phrase_count(sequences: Iterable[str], phrase: str) -> int:
    """How often ``phrase`` occurs inside the sequences (overlaps count; never across lines)."""
    if not phrase:
        return 0
    size = len(phrase)
    return sum(
        seq[start : start + size] == phrase
        for seq in sequences
        for start in range(len(seq) - size + 1)
    )


class Coverage(NamedTuple):
    """How many of the V^n possible windows a corpus actually contains."""

    vocab_size: int
    n: int
    possible: int  # V^n
    seen: int  # distinct windows in the corpus
    share: float  # seen / possible


def coverage(sequences: Sequence[str], n: int) -> Coverage:
    """Distinct n-character windows of the corpus against the V^n it could hold."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_TABLE_ORDER:
        raise ParameterError("ngram_window_invalid",
                             f"n must be in [1, {MAX_TABLE_ORDER}], got {n}",
                             n=n, limit=MAX_TABLE_ORDER)
    vocab = len(vocabulary(sequences))
    seen = len({seq[i : i + n] for seq in sequences for i in range(len(seq) - n + 1)})
    possible = vocab**n
    return Coverage(vocab, n, possible, seen, seen / possible if possible else 0.0)
