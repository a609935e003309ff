"""Character vocabulary, left-padded batches and the embedding lookup."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from tinyformer.errors import ParameterError, ShapeError
from tinyformer.masks import padding_mask, position_ids
from tinyformer.positional import sinusoidal
from tinyformer.tokenizer import (
    PAD,
    PAD_ID,
    UNK,
    UNK_ID,
    CharVocab,
    embed,
    find,
    position_table,
    random_table,
    same_piece,
)

CORPUS = Path(__file__).resolve().parents[2] / "assets" / "corpus" / "classroom.txt"
Q1 = "商品有质量问题，运费谁承担？"
Q2 = "无理由退货，运费谁承担？"


@pytest.fixture(scope="module")
def vocab() -> CharVocab:
    return CharVocab.from_corpus(CORPUS.read_text(encoding="utf-8"))


def test_specials_come_first_then_characters_in_order_of_first_appearance() -> None:
    v = CharVocab.from_corpus(["ab a", "\ncb"])
    assert v.tokens == (PAD, UNK, "a", "b", "c")
    assert (PAD_ID, UNK_ID) == (0, 1) and len(v) == 5


def test_running_example_ids_come_from_the_classroom_corpus(vocab: CharVocab) -> None:
    # The corpus opens with Q1, then Q2: their characters get the first IDs.
    assert vocab.encode(Q1).ids == tuple(range(2, 16))
    assert vocab.encode(Q2).ids == (16, 17, 18, 19, 20, 9, 10, 11, 12, 13, 14, 15)
    assert vocab.id_of("运") == 10 and vocab.id_of("费") == 11
    assert len(vocab) == 72  # 2 specials + 70 distinct characters


def test_encode_marks_unknown_characters(vocab: CharVocab) -> None:
    enc = vocab.encode("运x费 x")
    assert enc.tokens == ("运", UNK, "费", UNK, UNK)
    assert enc.ids == (10, UNK_ID, 11, UNK_ID, UNK_ID)
    assert enc.unknown == ("x", " ")
    assert enc.unknown_positions == (1, 3, 4)


def test_decode_inverts_encode_for_known_text(vocab: CharVocab) -> None:
    assert vocab.decode(vocab.encode(Q1).ids) == Q1
    assert vocab.decode(torch.tensor([0, 0, 10, 11])) == "[PAD][PAD]运费"
    assert vocab.decode([0, 10, 1, 11], skip_special=True) == "运费"


def test_decode_rejects_ids_outside_the_vocabulary(vocab: CharVocab) -> None:
    with pytest.raises(ShapeError) as err:
        vocab.decode([2, len(vocab)])
    assert err.value.key == "tokens_bad_id" and err.value.values["id"] == len(vocab)


def test_vocab_must_start_with_the_specials() -> None:
    with pytest.raises(ParameterError):
        CharVocab(("a", PAD, UNK))
    with pytest.raises(ParameterError):
        CharVocab((PAD, UNK, "a", "a"))


def test_batch_is_left_padded_with_valid_flags(vocab: CharVocab) -> None:
    batch = vocab.batch_encode([Q1, Q2])
    assert batch.ids.shape == (2, 14) and batch.ids.dtype == torch.int64
    assert batch.ids[0].tolist() == list(range(2, 16))
    assert batch.ids[1].tolist() == [0, 0, 16, 17, 18, 19, 20, 9, 10, 11, 12, 13, 14, 15]
    assert batch.valid.dtype == torch.bool
    assert batch.valid[0].all()
    assert batch.valid[1].tolist() == [False, False] + [True] * 12
    assert batch.tokens[1][:3] == (PAD, PAD, "无")
    # The valid flags are exactly what the padding mask of stage 4 consumes.
    assert torch.equal(padding_mask(batch.valid)[1, 5], batch.valid[1])


def test_batch_to_a_fixed_length_and_too_long_text(vocab: CharVocab) -> None:
    batch = vocab.batch_encode(["运费", ""], length=4)
    assert batch.ids.tolist() == [[0, 0, 10, 11], [0, 0, 0, 0]]
    assert batch.valid.tolist() == [[False, False, True, True], [False] * 4]
    with pytest.raises(ShapeError) as err:
        vocab.batch_encode([Q1], length=4)
    assert err.value.key == "tokens_batch_too_long"


@given(st.lists(st.text(alphabet="运费谁承担abc ", max_size=8), min_size=1, max_size=4))
def test_batch_rows_end_with_each_text(texts: list[str]) -> None:
    v = CharVocab.from_corpus(["运费谁承担"])
    batch = v.batch_encode(texts)
    for row, text in enumerate(texts):
        n = len(text)
        assert int(batch.valid[row].sum()) == n
        assert batch.ids[row, batch.ids.shape[1] - n :].tolist() == list(v.encode(text).ids)
        assert (batch.ids[row][~batch.valid[row]] == PAD_ID).all()
        # position IDs count the real tokens only: 0..n-1 however much padding comes first
        assert position_ids(batch.valid)[row][batch.valid[row]].tolist() == list(range(n))


def test_position_ids_follow_the_valid_flags(vocab: CharVocab) -> None:
    ids = position_ids(vocab.batch_encode([Q1, Q2]).valid)
    assert ids.tolist() == [list(range(14)), [0, 0, *range(12)]]  # row 1: two [PAD] first
    assert ids.dtype == torch.int64
    right = torch.tensor([[True, True, False], [True, False, False]])  # right padding
    assert position_ids(right).tolist() == [[0, 1, 0], [0, 0, 0]]  # the column itself
    with pytest.raises(ShapeError) as err:
        position_ids(torch.ones(3, dtype=torch.bool))
    assert err.value.key == "valid_not_2d"


def test_lookup_matches_torch_embedding(vocab: CharVocab) -> None:
    table = random_table(len(vocab), 8, seed=0)
    ids = torch.tensor(vocab.encode(Q1).ids)
    trace = embed(ids, table, position_table("sinusoidal", 32, 8))
    assert trace.rows.shape == (14, 8)  # X [N, d]
    assert torch.equal(trace.rows, F.embedding(ids, table))
    layer = torch.nn.Embedding.from_pretrained(table)
    assert torch.equal(trace.rows, layer(ids))
    assert torch.equal(trace.positions, sinusoidal(14, 8))
    assert torch.equal(trace.summed, trace.rows + trace.positions)


def test_lookup_in_a_batch_adds_the_same_positions_to_every_row(vocab: CharVocab) -> None:
    batch = vocab.batch_encode([Q1, Q2])
    table, pos = random_table(len(vocab), 4, 3), position_table("learned", 32, 4, 3)
    trace = embed(batch.ids, table, pos)
    assert trace.rows.shape == (2, 14, 4) and trace.positions.shape == (14, 4)
    assert torch.equal(trace.summed[1], trace.rows[1] + pos[:14])
    assert torch.equal(trace.rows[1, 0], table[PAD_ID])


def test_same_token_same_row_until_positions_are_added(vocab: CharVocab) -> None:
    table, pos = random_table(len(vocab), 8, 0), position_table("learned", 32, 8, 0)
    a, b = vocab.encode(Q1), vocab.encode(Q2)
    ta, tb = embed(torch.tensor(a.ids), table, pos), embed(torch.tensor(b.ids), table, pos)
    same = same_piece("运费", a.tokens, ta, b.tokens, tb)
    assert (same.start_a, same.start_b) == (8, 6)
    assert same.gap_rows == 0.0 and torch.equal(same.rows_a, table[[10, 11]])
    assert same.gap_summed > 0.1
    torch.testing.assert_close(same.summed_a - same.summed_b, pos[8:10] - pos[6:8])
    with pytest.raises(ParameterError):
        same_piece("退货", a.tokens, ta, b.tokens, tb)


def test_tables_are_seeded_and_learned_positions_differ_from_tokens() -> None:
    assert torch.equal(random_table(5, 4, 1), random_table(5, 4, 1))
    assert not torch.equal(random_table(5, 4, 1), random_table(5, 4, 2))
    assert not torch.equal(position_table("learned", 5, 4, 1), random_table(5, 4, 1))
    assert position_table("learned", 32, 16, 0).shape == (32, 16)


def test_embed_errors_carry_keys(vocab: CharVocab) -> None:
    table, pos = random_table(len(vocab), 4, 0), position_table("sinusoidal", 4, 4)
    with pytest.raises(ShapeError) as err:
        embed(torch.tensor([2, 3, 4, 5, 6]), table, pos)
    assert err.value.key == "tokens_too_long" and err.value.values == {"n": 5, "limit": 4}
    with pytest.raises(ShapeError) as err:
        embed(torch.tensor([len(vocab)]), table, pos)
    assert err.value.key == "tokens_bad_id"
    with pytest.raises(ShapeError) as err:
        embed(torch.tensor([1]), table, sinusoidal(4, 6))
    assert err.value.key == "tokens_table_shapes"
    with pytest.raises(ParameterError) as err:
        position_table("rotary", 4, 4)  # type: ignore[arg-type]
    assert err.value.key == "tokens_position_kind"
    with pytest.raises(ShapeError):
        random_table(4, 0, 0)


def test_find_locates_a_run_of_tokens() -> None:
    assert find(list("运费运费"), "费运") == 1
    assert find(list("运费"), "谁") == -1


def test_same_piece_difference_is_the_position_rows_difference(vocab: CharVocab) -> None:
    # 运 stands at 8 in Q1 and at 6 in Q2: E cancels and only P[8] - P[6] is left.
    table, pos = random_table(len(vocab), 8, 0), position_table("sinusoidal", 32, 8)
    a, b = vocab.encode(Q1), vocab.encode(Q2)
    same = same_piece("运费", a.tokens, embed(torch.tensor(a.ids), table, pos),
                      b.tokens, embed(torch.tensor(b.ids), table, pos))
    assert torch.equal(same.difference, same.summed_a - same.summed_b)
    torch.testing.assert_close(same.difference, sinusoidal(10, 8)[8:10] - sinusoidal(8, 8)[6:8])
    # sin(8) - sin(6) = 0.989 - (-0.279) = 1.269: the stage 1 exercise with sinusoidal positions
    assert float(same.difference[0, 0]) == pytest.approx(1.2687, abs=1e-4)


def test_an_empty_text_has_nothing_to_embed(vocab: CharVocab) -> None:
    table, pos = random_table(len(vocab), 4, 0), position_table("learned", 32, 4, 0)
    with pytest.raises(ShapeError) as err:
        embed(torch.tensor(vocab.encode("").ids, dtype=torch.int64), table, pos)
    assert err.value.key == "tokens_empty"
    with pytest.raises(ShapeError):
        embed(vocab.batch_encode(["", ""]).ids, table, pos)  # [2, 0]
