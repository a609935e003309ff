"""n-gram language model: the next token from counts of the previous n-1 tokens.

A string is a sequence of characters, so "看动漫" is the tokens 看, 动, 漫; a list of
strings is a sequence of word tokens. Only full windows of n tokens are counted (no
start padding), so a context shorter than n-1 tokens has no counts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence

from tinyformer.errors import ParameterError

Token = Hashable


class NGramModel:
    """Counts of (n-1 tokens of context) -> next token; n = 2 is a bigram model."""

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ParameterError("ngram_order_invalid", f"n must be an integer >= 1, got {n}", n=n)
        self.n = n
        self._counts: dict[tuple[Token, ...], Counter[Token]] = defaultdict(Counter)

    def fit(self, sequences: Iterable[Sequence[Token]]) -> NGramModel:
        """Count every window of n tokens in every sequence (replacing earlier counts)."""
        self._counts = defaultdict(Counter)
        for seq in sequences:
            tokens = list(seq)
            for end in range(self.n - 1, len(tokens)):
                context = tuple(tokens[end - self.n + 1 : end])
                self._counts[context][tokens[end]] += 1
        return self

    def counts(self, context: Sequence[Token]) -> dict[Token, int]:
        """Next-token counts after the last n-1 tokens of ``context``, most frequent first."""
        key = self._context_key(context)
        if key is None or key not in self._counts:
            return {}
        return dict(self._counts[key].most_common())

    def next_token_probs(self, context: Sequence[Token]) -> dict[Token, float]:
        """P(token | last n-1 tokens of context); {} for an unseen context (sparsity)."""
        counts = self.counts(context)
        total = sum(counts.values())
        return {token: count / total for token, count in counts.items()}

    @staticmethod
    def table_size(vocab_size: int, n: int) -> int:
        """Possible n-gram entries, V^n, as an exact Python int (10^25 for V=1e5, n=5)."""
        return int(vocab_size) ** int(n)

    def _context_key(self, context: Sequence[Token]) -> tuple[Token, ...] | None:
        tokens = list(context)
        if len(tokens) < self.n - 1:
            return None  # never counted: windows shorter than n do not exist in fit
        return tuple(tokens[len(tokens) - (self.n - 1) :])
