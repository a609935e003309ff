"""The teacher's own sentence (ui/sentence.py): its bound, its cleaning and the part of it
a vocabulary knows. Its journey through the pages is tested in tests/app."""

from tinyformer.lessons.example import RUNNING_EXAMPLE
from tinyformer.lessons.probe import max_question_length
from tinyformer.lessons.train import load_model
from ui import sentence


def test_the_bound_is_what_the_shipped_model_reads_and_still_answers():
    assert sentence.MAX_CHARS == max_question_length(load_model()) == 28
    assert len(RUNNING_EXAMPLE) <= sentence.MAX_CHARS


def test_clean_keeps_a_sentence_and_explains_empty_and_long_ones():
    assert sentence.clean(" 鞋子破损了，运费谁承担？ ") == ("鞋子破损了，运费谁承担？", None)
    assert sentence.clean("   ") == (RUNNING_EXAMPLE, "kit.sentence.empty")
    assert sentence.clean(None) == (RUNNING_EXAMPLE, "kit.sentence.empty")
    long = "运" * 100
    assert sentence.clean(long) == ("运" * sentence.MAX_CHARS, "kit.sentence.cut")


def test_the_codec_refuses_a_forged_link_value():
    assert sentence.CODEC.valid("运费谁承担？")
    assert not sentence.CODEC.valid("")
    assert not sentence.CODEC.valid("运" * (sentence.MAX_CHARS + 1))
    assert not sentence.CODEC.valid(" 运费")  # never stored with blanks around it


def test_known_part_names_each_unknown_character_once():
    vocab = set(load_model().vocab.tokens)
    kept, unknown = sentence.known_part("我的猫猫坏了，运费谁承担？", vocab)
    assert unknown == ("猫",)
    assert kept == "我的坏了，运费谁承担？"
    assert sentence.known_part("ab", vocab) == ("", ("a", "b"))
