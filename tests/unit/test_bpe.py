"""Byte-level BPE from Hugging Face tokenizers: round trips, merges, readable bytes."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, pre_tokenizers

from tinyformer.bpe import (
    DEFAULT_VOCAB_SIZE,
    MAX_TEXT_CHARS,
    BPETokenizer,
    compare_cuts,
    display_bytes,
    display_token,
    merge_run,
    token_bytes,
    train_bpe,
)
from tinyformer.errors import ParameterError
from tinyformer.lessons.bpe_corpus import corpus_bpe, corpus_byte_entries, corpus_cuts, corpus_texts
from tinyformer.lessons.corpus import RUNNING_EXAMPLE, TWIN, all_examples, vocabulary
from tinyformer.tokenizer import UNK_ID

CHINESE = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
ANY_BUT_SURROGATES = st.characters(exclude_categories=("Cs",))  # surrogates have no UTF-8
MIXED = st.one_of(CHINESE, st.sampled_from("，。？！ 　\n\tabcAB12😀é"), ANY_BUT_SURROGATES)


@pytest.fixture(scope="module")
def bpe():
    return corpus_bpe()


@pytest.mark.parametrize("text", [RUNNING_EXAMPLE, TWIN, "运费", "", "我买的手机坏了 😀 ok\n"])
def test_decode_encode_gives_the_text_back(bpe, text: str) -> None:
    assert bpe.decode(bpe.encode(text).ids) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=CHINESE, max_size=40))
def test_round_trip_for_any_chinese_text(text: str) -> None:
    bpe = corpus_bpe()
    assert bpe.decode(bpe.encode(text).ids) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=MIXED, max_size=40))
def test_round_trip_for_mixed_text_and_the_bytes_add_up(text: str) -> None:
    bpe = corpus_bpe()
    enc = bpe.encode(text)
    assert bpe.decode(enc.ids) == text
    assert b"".join(token_bytes(t) for t in enc.tokens) == text.encode("utf-8")
    assert list(enc.n_bytes) == [len(token_bytes(t)) for t in enc.tokens]


def test_the_corpus_bpe_learns_every_question_and_answer(bpe) -> None:
    assert corpus_texts() == [ex.text for ex in all_examples()]
    assert corpus_bpe() is bpe  # built once per vocabulary size
    assert bpe.to_str() == train_bpe(corpus_texts()).to_str()


def test_every_corpus_text_round_trips(bpe) -> None:
    for ex in all_examples():
        assert bpe.decode(bpe.encode(ex.text).ids) == ex.text


def test_training_is_deterministic() -> None:
    a = train_bpe(corpus_texts(), vocab_size=DEFAULT_VOCAB_SIZE)
    b = train_bpe(corpus_texts(), vocab_size=DEFAULT_VOCAB_SIZE)
    assert a.to_str() == b.to_str()
    assert a.merges == b.merges


def test_merges_are_in_learning_order_and_build_the_vocabulary(bpe) -> None:
    merges = bpe.merges
    assert [m.rank for m in merges] == list(range(len(merges)))
    assert 0 < len(merges) <= DEFAULT_VOCAB_SIZE - 256
    vocab = {bpe.token(i) for i in range(bpe.vocab_size)}
    known = {bpe.token(i) for i in range(256)}  # the single bytes come first
    for m in merges:
        assert m.merged == m.left + m.right and m.merged in vocab
        assert m.left in known and m.right in known  # built only from earlier pieces
        known.add(m.merged)


def test_a_bytes_id_is_not_its_value(bpe) -> None:
    """Each byte is stored as a printable character (GPT-2's table), and the vocabulary
    numbers the 256 such characters in code-point order, then the merges as learned."""
    entries = corpus_byte_entries()
    assert [e.value for e in entries] == list(range(256))
    assert sorted(e.id for e in entries) == list(range(256))  # the bytes come first
    by_id = sorted(entries, key=lambda e: e.id)
    assert [e.char for e in by_id] == sorted(e.char for e in entries)  # code-point order
    assert (entries[0x41].char, entries[0x20].char) == ("A", "Ġ")  # printable kept, space moved
    assert [bpe.encode(chr(v)).ids for v in (0x41, 0x20)] == [(entries[0x41].id,),
                                                              (entries[0x20].id,)]
    assert (entries[0xE5].char, entries[0xE5].id) == ("å", 161)  # the first byte of 商
    assert all(e.id != e.value for e in entries)  # here no byte's ID is its value
    vocab = {bpe.token(i): i for i in range(bpe.vocab_size)}
    assert [vocab[m.merged] for m in bpe.merges] == [256 + m.rank for m in bpe.merges]


def _pair_counts(texts: list[str]) -> Counter:
    """Adjacent byte pairs inside the pre-tokenizer's words (where BPE may merge)."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    counts: Counter = Counter()
    for text in texts:
        for word, _ in pre.pre_tokenize_str(text):
            counts.update(pairwise(word))
    return counts


def test_first_merge_is_the_most_frequent_byte_pair(bpe) -> None:
    counts = _pair_counts([ex.text for ex in all_examples()])
    first = bpe.merges[0]
    assert counts[(first.left, first.right)] == max(counts.values())


def test_without_merges_every_byte_is_a_token() -> None:
    bytes_only = train_bpe(corpus_texts(), vocab_size=256)
    assert bytes_only.merges == ()
    assert len(bytes_only.encode(RUNNING_EXAMPLE).ids) == len(RUNNING_EXAMPLE.encode("utf-8"))


def test_learned_merges_shorten_the_running_example(bpe) -> None:
    assert len(bpe.encode(RUNNING_EXAMPLE).ids) < len(RUNNING_EXAMPLE.encode("utf-8"))


def test_token_bytes_follow_the_pre_tokenizers_byte_mapping() -> None:
    text = "运费 谁承担？ab!~\n"
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    ((raw, _),) = pre.pre_tokenize_str(text)
    assert token_bytes(raw) == text.encode("utf-8")


def test_partial_utf8_tokens_show_bytes_never_the_replacement_character(bpe) -> None:
    displays = [display_token(bpe.token(i)) for i in range(bpe.vocab_size)]
    assert all("\ufffd" not in d for d in displays)
    partial = [d for d in displays if d.startswith("<")]
    assert partial, "a byte-level vocabulary of Chinese text holds partial characters"
    enc = bpe.encode(RUNNING_EXAMPLE)
    assert "\ufffd" not in "".join(enc.display)


def test_display_bytes_groups_stray_bytes() -> None:
    yun = "运".encode()  # E8 BF 90
    assert display_bytes(yun[:2]) == "<E8 BF>"
    assert display_bytes(yun[:2] + yun) == "<E8 BF>运"
    assert display_bytes(b"a" + yun[2:] + "费".encode()) == "a<90>费"
    assert display_bytes("运费".encode()) == "运费"
    assert display_bytes(b"\n") == "<0A>"  # unprintable: shown as its byte


def test_merges_have_readable_display_forms(bpe) -> None:
    for m in bpe.merges:
        assert m.merged_display == display_token(m.merged)
        assert token_bytes(m.merged) == token_bytes(m.left) + token_bytes(m.right)


@pytest.mark.parametrize("size", [255, 5000, 300.0, True])
def test_bad_vocabulary_size_is_a_keyed_error(size: object) -> None:
    with pytest.raises(ParameterError) as err:
        train_bpe(["运费"], vocab_size=size)
    assert err.value.key == "bpe_vocab_size"


def test_bad_ids_and_long_texts_are_keyed_errors(bpe) -> None:
    with pytest.raises(ParameterError) as err:
        bpe.decode([bpe.vocab_size])
    assert err.value.key == "bpe_bad_id"
    with pytest.raises(ParameterError) as err:
        bpe.encode("运" * (MAX_TEXT_CHARS + 1))
    assert err.value.key == "bpe_text_too_long"
    with pytest.raises(ParameterError) as err:
        bpe.encode("运\ud800")  # a lone surrogate: no UTF-8 bytes exist for it
    assert err.value.key == "bpe_text_not_utf8" and err.value.values == {"position": 2}
    with pytest.raises(ParameterError) as err:
        bpe.encode(b"\xe8")
    assert err.value.key == "bpe_text_type"


# --- The merges one by one, and the two cuts side by side --------------------------------


def _replay(bpe, text: str, k: int) -> list[str]:
    """An independent reference: pre-tokenize as the tokenizer does, then apply merges
    0..k-1 one after another, each everywhere, left to right (the training order)."""
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    out: list[str] = []
    for word, _ in pre.pre_tokenize_str(text):
        pieces = list(word)
        for m in bpe.merges[:k]:
            i, merged = 0, []
            while i < len(pieces):
                if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == (m.left, m.right):
                    merged.append(m.merged)
                    i += 2
                else:
                    merged.append(pieces[i])
                    i += 1
            pieces = merged
        out.extend(pieces)
    return out


@pytest.mark.parametrize("k", [0, 1, 5, 17, 60, 143])
def test_first_merges_cut_like_replaying_the_merges_in_order(bpe, k: int) -> None:
    texts = [ex.text for ex in all_examples()[::7]] + ["猫 运费 ok"]
    short = bpe.first_merges(k)
    for text in texts:
        enc = short.encode(text)
        assert list(enc.tokens) == _replay(bpe, text, k)
        assert [bpe.token(i) for i in enc.ids] == list(enc.tokens)  # the same IDs as the full one
        assert bpe.decode(enc.ids) == text


@pytest.mark.parametrize("k", [0, 1, 60, 143])
def test_a_prefix_shares_what_its_own_json_says(bpe, k: int) -> None:
    """first_merges(k) shares the full tokenizer's vocabulary and merges: the same as a
    tokenizer read back from the prefix's own JSON."""
    short = bpe.first_merges(k)
    read_back = BPETokenizer(Tokenizer.from_str(short.to_str()))
    assert short.merges == read_back.merges == bpe.merges[:k]
    assert all(a is b for a, b in zip(short.merges, bpe.merges, strict=False))  # shared
    assert [short.token(i) for i in range(short.vocab_size)] == \
        [read_back.token(i) for i in range(read_back.vocab_size)]


def test_first_merges_ends_are_bytes_and_the_full_tokenizer(bpe) -> None:
    assert bpe.first_merges(len(bpe.merges)) is bpe
    assert bpe.first_merges(0).encode(RUNNING_EXAMPLE).n_bytes == (1,) * 42
    assert bpe.first_merges(3) is bpe.first_merges(3)  # built once


@pytest.mark.parametrize("k", [-1, 145, 2.0, True, "3"])
def test_first_merges_bounds_are_a_keyed_error(bpe, k) -> None:
    with pytest.raises(ParameterError) as err:
        bpe.first_merges(k)
    assert err.value.key == "bpe_merges_range" and err.value.values["high"] == 144


@pytest.mark.parametrize("text", [RUNNING_EXAMPLE, TWIN, "猫 ok"])
def test_merge_run_counts_the_tokens_after_every_merge(bpe, text: str) -> None:
    run = merge_run(bpe, text)
    assert len(run.counts) == len(bpe.merges) + 1 and len(run.uses) == len(bpe.merges)
    assert run.counts[0] == len(text.encode("utf-8"))
    assert run.counts[-1] == len(bpe.encode(text).ids)
    for k in (0, 1, 19, 20, 77, 144):
        assert run.counts[k] == len(bpe.first_merges(k).encode(text).ids)
    assert sum(run.uses) == run.counts[0] - run.counts[-1]
    assert all(n >= 0 for n in run.uses)
    assert run.used == tuple(k for k in range(len(bpe.merges)) if run.counts[k] > run.counts[k + 1])


def test_the_first_merge_applies_at_the_comma_and_the_question_mark(bpe) -> None:
    first = bpe.merges[0]
    assert token_bytes(first.merged) == b"\xef\xbc"
    assert "，".encode()[:2] == "？".encode()[:2] == b"\xef\xbc"
    assert merge_run(bpe, RUNNING_EXAMPLE).uses[0] == 2  # ，and ？


def test_compare_cuts_on_the_running_example(bpe) -> None:
    cuts = corpus_cuts(RUNNING_EXAMPLE)
    vocab = vocabulary()
    assert compare_cuts(RUNNING_EXAMPLE, vocab, bpe) == cuts  # the corpus's two tokenizers
    assert cuts.chars == vocab.encode(RUNNING_EXAMPLE) and cuts.bpe == bpe.encode(RUNNING_EXAMPLE)
    assert (cuts.char_vocab, cuts.bpe_vocab, cuts.n_bytes) == (len(vocab), 400, 42)
    assert cuts.char_round_trip and cuts.bpe_round_trip
    assert cuts.char_spans == tuple((3 * i, 3 * i + 3) for i in range(14))
    assert cuts.bpe.byte_spans[-1][1] == 42
    starts = [a for a, _ in cuts.bpe.byte_spans]
    assert starts == [sum(cuts.bpe.n_bytes[:i]) for i in range(len(starts))]


def test_unknown_characters_are_unk_for_characters_and_bytes_for_bpe(bpe) -> None:
    cuts = corpus_cuts("猫 运费")
    assert cuts.chars.unknown == ("猫", " ") and cuts.chars.ids[:2] == (UNK_ID, UNK_ID)
    assert not cuts.char_round_trip and cuts.char_decoded == "[UNK][UNK]运费"
    assert cuts.bpe_round_trip
    cat = [cuts.bpe.display[i] for i in cuts.bpe.covering(0)]
    assert cat == ["<E7>", "<8C>", "<AB>"]  # 猫 = E7 8C AB, one byte token each
    assert cuts.bpe.display[cuts.bpe.covering(1)[0]] == "<20>"  # a space shows as its byte
    assert cuts.char_spans == ((0, 3), (3, 4), (4, 7), (7, 10))


def test_split_characters_hex_and_partial_flags(bpe) -> None:
    enc = bpe.encode(RUNNING_EXAMPLE)
    assert enc.hex == tuple(token_bytes(t).hex(" ").upper() for t in enc.tokens)
    # The running example has no "<" of its own: a display with one is a partial token.
    assert enc.partial == tuple("<" in d for d in enc.display)
    assert sum(enc.partial) == 9 and not any(enc.partial[i] for i in (0, 3, 9, 12, 13, 14))
    split = dict(enc.split_chars())
    assert set(split) == {1, 3, 4, 6}  # 品 质 量 题: each cut over several tokens
    pin = b"".join(token_bytes(enc.tokens[i]) for i in split[1])
    assert pin == "品".encode()


@pytest.mark.parametrize("bad", ["", "运" * (MAX_TEXT_CHARS + 1)])
def test_compare_cuts_refuses_empty_and_overlong_text(bad: str) -> None:
    with pytest.raises(ParameterError) as err:
        corpus_cuts(bad)
    assert err.value.key == ("bpe_text_empty" if not bad else "bpe_text_too_long")
