"""Stage 10.2's loop on text: the trained model continues a question in characters."""

from __future__ import annotations

import pytest

from tinyformer.errors import ParameterError
from tinyformer.lessons.checkpoint import load_model
from tinyformer.lessons.decoding import generate
from tinyformer.lessons.example import RUNNING_EXAMPLE, TWIN
from tinyformer.lessons.text_loop import labels, prompt_ids


def test_the_trained_model_writes_readable_answers() -> None:
    trained = load_model()
    for question, answer in ((RUNNING_EXAMPLE, "商家承担。"), (TWIN, "买家承担。")):
        ids = prompt_ids(trained.vocab, f" {question} ")
        assert trained.vocab.decode(ids) == question
        run = generate(trained.model, ids, 5)
        assert trained.vocab.decode(run.new) == answer


@pytest.mark.parametrize(("text", "key"), [("", "prompt_empty"), ("  ", "prompt_empty"),
                                           ("电脑坏了", "trained_question_unknown")])
def test_what_the_model_cannot_read(text: str, key: str) -> None:
    with pytest.raises(ParameterError) as error:
        prompt_ids(load_model().vocab, text)
    assert error.value.key == key


def test_labels_name_each_id_once() -> None:
    assert labels(("[PAD]", "[UNK]", "商"), [2, 0, 2, 1]) == ((2, "商"), (0, "[PAD]"),
                                                           (1, "[UNK]"))
