"""Finished trainings, kept for the learner who ran them and shared for reuse.

A learner's finished run must not vanish because other learners trained meanwhile
(a process-wide "last eight" store did exactly that). So each learner keeps their
own results on a `Shelf` that lives in their session (Streamlit frees it when the
session ends), at most `PER_LEARNER` of them; when a learner's own shelf is full,
their oldest result goes, and the shelf remembers that it went so that the page can
say so rather than silently show the untrained model.

Other learners may reuse a result while its owner still holds it: the process-wide
`Index` keeps weak references only, so it never keeps a result alive on its own.

    shelf = Shelf(index)                    # one per session
    shelf.keep(settings, result)            # after a finished training
    shelf.get(settings)                     # this learner's result, or None
    shelf.evicted(settings)                 # True: theirs, dropped for a newer one
    shelf.newest_first()                    # this learner's results, newest first
    index.find(settings)                    # anyone's result still held, or None

`StepTimes` remembers how long one training step of each model size took on this
machine, so that a learner waiting for the training slot can be told roughly how long
the trainings ahead will take.

No Streamlit here (ui/training.py puts a shelf in the session state).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, NamedTuple

PER_LEARNER = 4  # results one learner keeps at once; a few MB each at most


class Kept:
    """One finished result (any object) in a box that weak references can point to."""

    __slots__ = ("__weakref__", "value")

    def __init__(self, value: Any) -> None:
        self.value = value


class Index:
    """Every result some learner's shelf still holds, by its key (the settings);
    shared by the sessions of one process, safe to use from their threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: weakref.WeakValueDictionary[Hashable, Kept] = weakref.WeakValueDictionary()

    def add(self, key: Hashable, kept: Kept) -> None:
        with self._lock:
            self._kept[key] = kept

    def find(self, key: Hashable) -> Kept | None:
        with self._lock:
            return self._kept.get(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)


class Shelf:
    """One learner's finished results, oldest first, at most `limit`."""

    def __init__(self, index: Index, limit: int = PER_LEARNER) -> None:
        self.index = index
        self.limit = max(1, limit)
        self._kept: OrderedDict[Hashable, Kept] = OrderedDict()
        self._evicted: set[Hashable] = set()

    def keep(self, key: Hashable, value: Any) -> list[Hashable]:
        """Keep `value` under `key` (a newer result replaces an older one); returns the
        keys of this learner's results dropped to make room, oldest first."""
        kept = value if isinstance(value, Kept) else Kept(value)
        self._kept.pop(key, None)
        self._kept[key] = kept
        self._evicted.discard(key)
        self.index.add(key, kept)
        dropped = []
        while len(self._kept) > self.limit:
            old, _ = self._kept.popitem(last=False)
            self._evicted.add(old)
            dropped.append(old)
        return dropped

    def reuse(self, key: Hashable) -> bool:
        """Keep another learner's result for `key` as this learner's own, if one is
        still held anywhere; False if none is."""
        found = self.index.find(key)
        if found is None:
            return False
        self.keep(key, found)
        return True

    def get(self, key: Hashable) -> Any | None:
        kept = self._kept.get(key)
        return None if kept is None else kept.value

    def evicted(self, key: Hashable) -> bool:
        """Whether this learner had a result for `key` that made room for newer ones."""
        return key in self._evicted and key not in self._kept

    def newest_first(self) -> list[Hashable]:
        """The keys of this learner's results, newest first."""
        return list(reversed(self._kept))

    def __contains__(self, key: Hashable) -> bool:
        return key in self._kept

    def __len__(self) -> int:
        return len(self._kept)


class TimeEstimate(NamedTuple):
    train_s: float  # the training loop
    extra_s: float  # what follows it (answering the held-out questions)


class StepTimes:
    """How long trainings took on this machine, by model size (any hashable key: the
    settings that set a step's cost): seconds per step of the training loop, and the
    seconds around it (building the model, answering the held-out questions), from the
    latest training of each size. Shared by the sessions of one process, safe to use
    from their threads."""

    def __init__(self, limit: int = 256) -> None:
        self._lock = threading.Lock()
        self._times: OrderedDict[Hashable, TimeEstimate] = OrderedDict()  # per step, extra
        self.limit = max(1, limit)

    def record(self, size: Hashable, seconds: float, steps: int, extra: float = 0.0) -> None:
        """A training of this size ran `steps` steps in `seconds`, plus `extra` seconds
        around them (ignored when it ran no step)."""
        if steps < 1 or not seconds >= 0 or not extra >= 0:
            return
        with self._lock:
            self._times.pop(size, None)
            self._times[size] = TimeEstimate(seconds / steps, extra)
            while len(self._times) > self.limit:
                self._times.popitem(last=False)

    def estimate(self, size: Hashable, steps: int) -> TimeEstimate | None:
        """A training of `steps` steps of this size, as last measured; None if never."""
        with self._lock:
            found = self._times.get(size)
        return None if found is None else TimeEstimate(found.train_s * steps, found.extra_s)
