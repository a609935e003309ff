"""One training at a time on this machine, across every server process, first come
first served.

A training keeps the machine's cores busy for seconds; two at once would slow each
other and every other learner's page. The class server runs several Streamlit
processes (`dev.py class`), so a lock inside one process is not enough: the slot is a
queue of ticket files in one folder, each held under `flock` by its owner for as long
as it waits or trains. Ticket numbers grow, so the live ticket with the lowest number
trains and a learner's place in the queue is the number of live tickets before theirs.
The kernel drops a process's locks when it dies, so a process that crashes while
training or waiting holds nothing: its ticket no longer counts, and the next learner
to join removes the file.

A ticket file also holds a few facts its owner writes (JSON): which training it is
for ("key"), how long its owner expects it to take ("train_s" for the training loop,
"extra_s" for what follows, from earlier trainings of that size on this machine), and,
once it trains, when it started and how far it has got. From these `estimate_wait`
estimates a waiting learner's wait.

    with training_slot().turn(on_wait=lambda place: note.info(...place.ahead...),
                              info={"key": ..., "train_s": ...}, limit_s=90) as ticket:
        train(..., report=lambda p: ticket.update(done=p.step / p.steps, elapsed_s=p.seconds))

No Streamlit here: the training page (through ui/training.py) calls it, and tests
drive it from plain processes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import stat
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DIRECTORY_ENV = "TINYFORMER_TRAINING_DIR"  # share it between containers of one machine
MAX_WAITING = 64  # tickets at once, training one included
POLL_S = 0.25
MAX_INFO_BYTES = 4096  # a ticket's facts: a few short fields
_TICKET = re.compile(r"(\d{12})\.ticket")
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC


class QueueFull(RuntimeError):
    """MAX_WAITING learners already wait: ask again later."""


class UnsafeDirectory(RuntimeError):
    """The queue's folder is not a private folder of this user (someone else could
    forge or remove tickets)."""


def default_directory() -> Path:
    """$TINYFORMER_TRAINING_DIR, else a per-user folder in the system's temp folder:
    the same for every process of this user on this machine."""
    configured = os.environ.get(DIRECTORY_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"tinyformer-training-{os.getuid()}"


def _private_directory(path: Path) -> None:
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=True)
    info = os.lstat(path)
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        raise UnsafeDirectory(f"{path} must be a folder of user {os.getuid()} that only "
                              "it can write")


def _held(path: str) -> bool:
    """Whether another open ticket (any process, this one included) holds `path`."""
    return _held_info(path) is not None


def _held_info(path: str) -> dict[str, Any] | None:
    """The facts in a held ticket ({} when unreadable or old); None when none holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return _parse_info(os.pread(fd, MAX_INFO_BYTES, 0))
            raise
    finally:
        os.close(fd)
    return None


def _parse_info(raw: bytes) -> dict[str, Any]:
    """A ticket's facts; {} for anything else (a ticket of an older version holds its
    owner's pid alone; a file caught while its owner rewrites it may be cut short)."""
    try:
        info = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


@dataclass(frozen=True)
class Queued:
    """A live ticket as another learner sees it."""

    number: int
    info: Mapping[str, Any]  # what its owner wrote (see the module's docstring)


@dataclass(frozen=True)
class WaitEstimate:
    """How long until a ticket's turn, estimated from the tickets ahead of it."""

    ahead: int  # live tickets ahead
    seconds: float  # estimated seconds until this ticket's turn
    untimed: int  # trainings ahead with no estimate: each counted at the time limit


def estimate_wait(ahead: Sequence[Queued], now: float, limit_s: float) -> WaitEstimate:
    """The wait behind `ahead` (lowest number first), at wall-clock time `now`.

    Each training ahead takes its training loop ("train_s": from its progress, elapsed
    time / fraction done, once it reports one; else its owner's estimate) and what
    follows it ("extra_s": answering the held-out questions), less the time since it
    started if it has. No training loop lasts longer than `limit_s` (the page stops it
    there), so none counts for more; one with no estimate counts for exactly that. A
    ticket for the same training ("key") as an earlier one of the same process ("pid")
    takes no time: it reuses that one's result."""
    total, untimed, seen = 0.0, 0, set()
    for queued in ahead:
        info = queued.info
        key, pid = info.get("key"), info.get("pid")
        if key is not None and (pid, key) in seen:
            continue
        seen.add((pid, key))
        train = _seconds(info.get("train_s"))
        done, elapsed = _seconds(info.get("done")), _seconds(info.get("elapsed_s"))
        if done is not None and 0 < done <= 1 and elapsed is not None:
            train = elapsed / done  # the whole loop, at the pace it has kept
        if train is None:
            untimed += 1
            train = limit_s
        left = min(train, limit_s) + (_seconds(info.get("extra_s")) or 0.0)
        started = _seconds(info.get("started"))
        if started is not None:
            left = max(0.0, left - max(0.0, now - started))
        total += left
    return WaitEstimate(len(ahead), total, untimed)


def _seconds(value: Any) -> float | None:
    """A non-negative finite number from a ticket, else None (a ticket is not trusted)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


class TrainingSlot:
    """The queue in `directory` (default: `default_directory()`)."""

    def __init__(self, directory: Path | None = None, max_waiting: int = MAX_WAITING) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()
        self.max_waiting = max(1, max_waiting)

    @contextlib.contextmanager
    def _mutex(self) -> Iterator[None]:
        """Serialises joining (numbering, removing dead tickets) between processes."""
        _private_directory(self.directory)
        fd = os.open(self.directory / "queue.lock", os.O_RDWR | os.O_CREAT | _OPEN_FLAGS,
                     0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held for microseconds; dropped if we die
            yield
        finally:
            os.close(fd)

    def _tickets(self) -> list[tuple[int, str]]:
        with contextlib.suppress(FileNotFoundError), os.scandir(self.directory) as entries:
            found = [(int(m.group(1)), entry.path) for entry in entries
                     if (m := _TICKET.fullmatch(entry.name))]
            return sorted(found)
        return []

    def live(self) -> list[int]:
        """Numbers of the tickets whose owners are alive, lowest (training) first."""
        return [number for number, path in self._tickets() if _held(path)]

    def queued(self) -> list[Queued]:
        """The live tickets and their facts, lowest (training) first."""
        found = ((number, _held_info(path)) for number, path in self._tickets())
        return [Queued(number, info) for number, info in found if info is not None]

    def join(self, info: Mapping[str, Any] | None = None) -> Ticket:
        """Take a ticket at the end of the queue, with these facts (JSON-able; the
        owner's pid is added); raises QueueFull."""
        with self._mutex():
            live = []
            for number, path in self._tickets():
                if _held(path):
                    live.append(number)
                else:  # its owner died (or released): no stale ticket stays behind
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
            if len(live) >= self.max_waiting:
                raise QueueFull(f"{len(live)} trainings already queued")
            number = (live[-1] + 1) if live else 1
            path = self.directory / f"{number:012d}.ticket"
            # Locked under another name, then renamed: a ticket is never seen unheld.
            draft = self.directory / "draft.new"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(draft)  # left by a process that died here (we hold the mutex)
            facts = {**(info or {}), "pid": os.getpid()}  # the pid: for an administrator
            fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else knows it
                _write_info(fd, facts)
                os.rename(draft, path)
            except BaseException:
                os.close(fd)
                raise
            return Ticket(self, number, path, fd, facts)

    @contextlib.contextmanager
    def turn(self, on_wait: Callable[[WaitEstimate], None] | None = None,
             poll: float = POLL_S, info: Mapping[str, Any] | None = None,
             limit_s: float = math.inf) -> Iterator[Ticket]:
        """Join (with `info`), wait for this ticket's turn, note when it started, yield
        it, release it whatever happens.

        `on_wait(place)` runs at every poll while others are ahead, with the tickets
        ahead and the wait estimated behind them (`estimate_wait`, no training counted
        longer than `limit_s`): a page shows them there (a Streamlit call there also
        lets a rerun or a stop button end the wait)."""
        with self.join(info) as ticket:
            while (place := ticket.place(limit_s)).ahead > 0:
                if on_wait is not None:
                    on_wait(place)
                time.sleep(poll)
            ticket.update(started=time.time())
            yield ticket


class Ticket:
    """A place in the queue, held until `release` (or the process ends)."""

    def __init__(self, slot: TrainingSlot, number: int, path: Path, fd: int,
                 info: Mapping[str, Any] | None = None) -> None:
        self.slot = slot
        self.number = number
        self.path = path
        self.info = dict(info or {})
        self._fd = fd
        # Closing the descriptor drops the lock: also when the ticket is forgotten.
        self._closer = weakref.finalize(self, _close, fd, str(path))

    def position(self) -> int:
        """How many live tickets are ahead: 0 means it is this ticket's turn."""
        self._check_alive()
        return sum(1 for number in self.slot.live() if number < self.number)

    def place(self, limit_s: float = math.inf) -> WaitEstimate:
        """The tickets ahead and the wait estimated behind them (`estimate_wait`)."""
        self._check_alive()
        ahead = [q for q in self.slot.queued() if q.number < self.number]
        return estimate_wait(ahead, time.time(), limit_s)

    def update(self, **facts: Any) -> None:
        """Add to (or change) the facts others read in this ticket (JSON-able values)."""
        self._check_alive()
        self.info.update(facts)
        _write_info(self._fd, self.info)

    def _check_alive(self) -> None:
        if not self._closer.alive:
            raise RuntimeError("this ticket was released")

    def wait(self, timeout: float | None = None, poll: float = POLL_S) -> bool:
        """Wait until it is this ticket's turn; False if `timeout` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.position() > 0:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(poll if deadline is None
                       else max(0.0, min(poll, deadline - time.monotonic())))
        return True

    def release(self) -> None:
        """Leave the queue (or free the slot). Safe to call twice."""
        self._closer()

    def __enter__(self) -> Ticket:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _write_info(fd: int, info: Mapping[str, Any]) -> None:
    """Rewrite a ticket's facts in place, in one write: padded with spaces (which JSON
    ignores) to the file's length, so the file is never empty or cut short on the way.
    (A reader that still catches a mixture reads {}: unknown, until the next poll.)"""
    raw = json.dumps(info, sort_keys=True).encode("utf-8")[:MAX_INFO_BYTES]
    os.pwrite(fd, raw.ljust(os.fstat(fd).st_size), 0)


def _close(fd: int, path: str) -> None:
    """Remove the file, then drop the lock: nobody sees an unheld ticket of ours."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    os.close(fd)


@cache
def training_slot() -> TrainingSlot:
    """The machine's queue, shared by every session of this process."""
    return TrainingSlot()
