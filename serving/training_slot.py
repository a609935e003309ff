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

    with training_slot().turn(on_wait=lambda ahead: note.info(t(..., ahead=ahead))):
        train(...)

No Streamlit here: the training page (through ui/training.py) calls it, and tests
drive it from plain processes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

DIRECTORY_ENV = "TINYFORMER_TRAINING_DIR"  # share it between containers of one machine
MAX_WAITING = 64  # tickets at once, training one included
POLL_S = 0.25
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
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


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

    def join(self) -> Ticket:
        """Take a ticket at the end of the queue; raises QueueFull."""
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
            fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else knows it
                os.write(fd, f"{os.getpid()}\n".encode())  # for a curious administrator
                os.rename(draft, path)
            except BaseException:
                os.close(fd)
                raise
            return Ticket(self, number, path, fd)

    @contextlib.contextmanager
    def turn(self, on_wait: Callable[[int], None] | None = None,
             poll: float = POLL_S) -> Iterator[Ticket]:
        """Join, wait for this ticket's turn, yield it, release it whatever happens.

        `on_wait(ahead)` runs at every poll while others are ahead: a page shows the
        place in the queue there (a Streamlit call there also lets a rerun or a stop
        button end the wait)."""
        with self.join() as ticket:
            while (ahead := ticket.position()) > 0:
                if on_wait is not None:
                    on_wait(ahead)
                time.sleep(poll)
            yield ticket


class Ticket:
    """A place in the queue, held until `release` (or the process ends)."""

    def __init__(self, slot: TrainingSlot, number: int, path: Path, fd: int) -> None:
        self.slot = slot
        self.number = number
        self.path = path
        # Closing the descriptor drops the lock: also when the ticket is forgotten.
        self._closer = weakref.finalize(self, _close, fd, str(path))

    def position(self) -> int:
        """How many live tickets are ahead: 0 means it is this ticket's turn."""
        if not self._closer.alive:
            raise RuntimeError("this ticket was released")
        return sum(1 for number in self.slot.live() if number < self.number)

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


def _close(fd: int, path: str) -> None:
    """Remove the file, then drop the lock: nobody sees an unheld ticket of ours."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    os.close(fd)


@cache
def training_slot() -> TrainingSlot:
    """The machine's queue, shared by every session of this process."""
    return TrainingSlot()
