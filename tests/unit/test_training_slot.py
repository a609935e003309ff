"""serving.training_slot: one training at a time across processes, first come first served,
and a slot that frees itself when its holder dies.

Other processes are plain Python children running a few lines against the same
folder. Waits are bounded by LIMIT_S so a broken slot fails instead of hanging; no
test asserts how long anything took.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from serving.training_slot import (
    Queued,
    QueueFull,
    TrainingSlot,
    UnsafeDirectory,
    estimate_wait,
)

ROOT = Path(__file__).resolve().parent.parent.parent
LIMIT_S = 30.0

# A learner in another process: join, report the place, wait for the turn.
WAITER = """
import sys
from pathlib import Path
from serving.training_slot import TrainingSlot
ticket = TrainingSlot(Path(sys.argv[1])).join()
print("position", ticket.position(), flush=True)
ticket.wait()
print("turn; released before:", Path(sys.argv[2]).exists(), flush=True)
ticket.release()
"""
# A learner in another process that takes the slot and keeps it until killed or told.
HOLDER = """
import os, sys
from pathlib import Path
from serving.training_slot import TrainingSlot
ticket = TrainingSlot(Path(sys.argv[1])).join()
print("position", ticket.position(), flush=True)
if sys.stdin.readline().strip() == "exit without release":
    os._exit(0)
"""


class TrainingFailed(Exception):
    pass


def spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def read_line(process: subprocess.Popen) -> str:
    ready, _, _ = select.select([process.stdout], [], [], LIMIT_S)
    assert ready, f"no line from the child within {LIMIT_S} s"
    return process.stdout.readline().strip()


@pytest.fixture
def slot(tmp_path: Path) -> TrainingSlot:
    return TrainingSlot(tmp_path / "queue")


@pytest.fixture
def children():
    started: list[subprocess.Popen] = []
    yield started
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=LIMIT_S)


def test_first_ticket_trains_and_the_others_queue_in_order(slot: TrainingSlot) -> None:
    first, second, third = slot.join(), slot.join(), slot.join()
    assert [first.position(), second.position(), third.position()] == [0, 1, 2]
    assert slot.live() == [first.number, second.number, third.number]
    first.release()
    assert [second.position(), third.position()] == [0, 1]
    second.release()
    assert third.position() == 0
    third.release()
    assert slot.live() == []


def test_a_waiter_who_leaves_moves_those_behind_up(slot: TrainingSlot) -> None:
    holder, leaving, last = slot.join(), slot.join(), slot.join()
    leaving.release()
    assert last.position() == 1
    assert holder.position() == 0
    holder.release()
    last.release()


def test_a_second_process_waits_and_sees_its_place(slot: TrainingSlot, children,
                                                   tmp_path: Path) -> None:
    marker = tmp_path / "released"
    with slot.join() as mine:
        waiter = spawn(WAITER, str(slot.directory), str(marker))
        children.append(waiter)
        assert read_line(waiter) == "position 1"
        assert mine.position() == 0  # still ours: the other process only waits
        assert len(slot.live()) == 2
        marker.touch()
    # Only after the release does the other process get its turn.
    assert read_line(waiter) == "turn; released before: True"
    assert waiter.wait(timeout=LIMIT_S) == 0
    assert slot.live() == []


@pytest.mark.parametrize("end", ["killed", "exit without release"])
def test_the_slot_frees_when_its_holder_process_dies(slot: TrainingSlot, children,
                                                     end: str) -> None:
    holder = spawn(HOLDER, str(slot.directory))
    children.append(holder)
    assert read_line(holder) == "position 0"
    with slot.join() as mine:
        assert mine.position() == 1
        if end == "killed":
            holder.send_signal(signal.SIGKILL)
        else:
            holder.stdin.write(end + "\n")
            holder.stdin.flush()
        holder.wait(timeout=LIMIT_S)
        assert mine.wait(timeout=LIMIT_S)
        assert mine.position() == 0
    # The dead holder's ticket file is removed by the next learner who joins.
    with slot.join():
        assert len(list(slot.directory.glob("*.ticket"))) == 1


def test_a_waiter_process_that_dies_no_longer_counts(slot: TrainingSlot, children,
                                                     tmp_path: Path) -> None:
    with slot.join():
        waiter = spawn(WAITER, str(slot.directory), str(tmp_path / "unused"))
        children.append(waiter)
        assert read_line(waiter) == "position 1"
        with slot.join() as last:
            assert last.position() == 2
            waiter.send_signal(signal.SIGKILL)
            waiter.wait(timeout=LIMIT_S)
            assert last.position() == 1


def test_turn_reports_the_place_and_always_releases(slot: TrainingSlot) -> None:
    holder = slot.join()
    seen: list[int] = []

    def on_wait(place) -> None:
        seen.append(place.ahead)
        if len(seen) == 3:  # the other training ends while this learner waits
            threading.Thread(target=holder.release).start()

    with pytest.raises(TrainingFailed), slot.turn(on_wait, poll=0.01) as ticket:
        assert ticket.position() == 0
        assert "started" in slot.queued()[0].info  # when its turn came, for those behind
        raise TrainingFailed  # a training that fails still frees the slot
    assert seen[:3] == [1, 1, 1]
    assert slot.live() == []


def test_tickets_carry_what_others_estimate_their_wait_from(slot: TrainingSlot) -> None:
    running = slot.join({"key": "a", "train_s": 40.0, "extra_s": 2.0})
    waiting = slot.join({"key": "b", "train_s": 30.0})
    mine = slot.join()
    assert [q.info["key"] for q in slot.queued()[:2]] == ["a", "b"]
    assert slot.queued()[0].info["pid"] == os.getpid()
    assert mine.place(limit_s=90).seconds == pytest.approx(72.0)
    running.update(started=0.0, done=0.5, elapsed_s=10.0)  # at 10 s, half done
    place = mine.place(limit_s=90)
    assert (place.ahead, place.untimed) == (2, 0)
    assert place.seconds == pytest.approx(30.0)  # started long ago: only the waiting one
    waiting.update(key="b" * 200)
    waiting.update(key="c")  # shorter facts rewrite the longer ones whole
    assert slot.queued()[1].info["key"] == "c"
    (slot.directory / f"{waiting.number:012d}.ticket").write_text("12345\n")  # old kind
    assert slot.queued()[1].info == {}
    for ticket in (running, waiting, mine):
        ticket.release()


def test_the_estimated_wait() -> None:
    now = 1000.0
    running = Queued(1, {"pid": 7, "key": "a", "started": now - 10, "done": 0.25,
                         "elapsed_s": 10.0, "extra_s": 3.0})  # 40 s at its pace: 33 s left
    waiting = Queued(2, {"pid": 7, "key": "b", "train_s": 20.0, "extra_s": 1.0})
    same = Queued(3, {"pid": 7, "key": "b", "train_s": 20.0})  # reuses b's result
    elsewhere = Queued(4, {"pid": 8, "key": "b", "train_s": 20.0})  # another process
    unknown = Queued(5, {"pid": 8, "key": "c", "train_s": None})
    wait = estimate_wait([running, waiting, same, elsewhere, unknown], now, limit_s=90)
    assert (wait.ahead, wait.seconds, wait.untimed) == (5, 33 + 21 + 20 + 90, 1)
    # No training loop outlasts the limit: a slow one is stopped there.
    slow = Queued(1, {"started": now - 80, "done": 0.1, "elapsed_s": 80.0})
    assert estimate_wait([slow], now, limit_s=90).seconds == pytest.approx(10.0)
    over = Queued(1, {"started": now - 200, "train_s": 60.0})  # running late
    assert estimate_wait([over], now, limit_s=90).seconds == 0.0
    # A ticket's facts are not trusted: anything but a number >= 0 is unknown.
    for bad in (float("nan"), float("inf"), -5.0, True, "10", [1]):
        odd = Queued(1, {"train_s": bad, "extra_s": bad, "done": bad, "elapsed_s": bad,
                         "started": bad})
        assert estimate_wait([odd], now, limit_s=90) == estimate_wait(
            [Queued(1, {})], now, limit_s=90)
    assert estimate_wait([], now, limit_s=90).seconds == 0.0


def test_the_queue_is_bounded(tmp_path: Path) -> None:
    slot = TrainingSlot(tmp_path / "queue", max_waiting=2)
    first, second = slot.join(), slot.join()
    with pytest.raises(QueueFull):
        slot.join()
    first.release()
    third = slot.join()
    assert [second.position(), third.position()] == [0, 1]
    second.release()
    third.release()


def test_a_forgotten_ticket_frees_the_slot(slot: TrainingSlot) -> None:
    forgotten = slot.join()
    del forgotten
    gc.collect()
    with slot.join() as ticket:
        assert ticket.position() == 0


def test_a_released_ticket_has_no_place(slot: TrainingSlot) -> None:
    ticket = slot.join()
    ticket.release()
    ticket.release()  # twice is harmless
    with pytest.raises(RuntimeError):
        ticket.position()


def test_the_folder_must_be_private(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafeDirectory):
        TrainingSlot(shared).join()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(UnsafeDirectory):
        TrainingSlot(link).join()
