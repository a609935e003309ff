"""serving.results: a learner's finished training stays theirs, whatever others train;
only their own newer trainings push it out, and then the shelf says so."""

from __future__ import annotations

import gc

from serving.results import Index, Shelf, StepTimes


def test_other_learners_trainings_never_drop_a_learners_result() -> None:
    index = Index()
    mine = Shelf(index, limit=4)
    mine.keep("my settings", "my model")
    # Nine other learners finish trainings (the old shared store kept only eight).
    others = [Shelf(index, limit=4) for _ in range(9)]
    for number, other in enumerate(others):
        for run in range(4):
            other.keep(f"settings {number}.{run}", f"model {number}.{run}")
    assert mine.get("my settings") == "my model"
    assert not mine.evicted("my settings")


def test_a_learners_own_newer_trainings_drop_the_oldest_and_say_so() -> None:
    mine = Shelf(Index(), limit=2)
    assert mine.keep("a", 1) == []
    assert mine.keep("b", 2) == []
    assert mine.keep("c", 3) == ["a"]
    assert mine.get("a") is None
    assert mine.evicted("a")  # the page tells the learner (training.evicted)
    assert not mine.evicted("never trained")
    mine.keep("a", 4)  # trained again: kept, no longer reported dropped
    assert mine.get("a") == 4
    assert not mine.evicted("a")
    assert mine.newest_first() == ["a", "c"]  # what the model choice of 13.2 / 13.3 lists


def test_a_result_held_by_one_learner_is_reused_by_another() -> None:
    index = Index()
    first, second = Shelf(index), Shelf(index)
    first.keep("s", "model")
    assert second.reuse("s")
    assert second.get("s") == "model"
    # The second learner keeps it even after the first learner's session ends.
    del first
    gc.collect()
    assert second.get("s") == "model"
    assert index.find("s") is not None


def test_the_index_keeps_nothing_alive_by_itself() -> None:
    index = Index()
    shelf = Shelf(index)
    shelf.keep("s", ["a", "large", "model"])
    assert len(index) == 1
    del shelf  # the session ended
    gc.collect()
    assert index.find("s") is None
    assert not Shelf(index).reuse("s")


def test_step_times_estimate_a_training_from_the_last_of_its_size() -> None:
    times = StepTimes(limit=2)
    assert times.estimate("small", 100) is None  # never timed here
    times.record("small", 2.0, 10, extra=1.0)
    times.record("small", 3.0, 10, extra=0.5)  # the latest counts
    assert times.estimate("small", 100) == (30.0, 0.5)  # the loop scales, the rest not
    times.record("empty", 1.0, 0)  # stopped before its first step: nothing learned
    assert times.estimate("empty", 5) is None
    times.record("b", 1.0, 1)
    times.record("c", 1.0, 1)  # at most `limit` sizes: the oldest goes
    assert times.estimate("small", 1) is None and times.estimate("c", 1) == (1.0, 0.0)
