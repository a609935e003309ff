"""Moved to serving/training_slot.py (the server's infrastructure, no widgets).

Kept only so that code written against the old path (tests/app) still imports; new
code imports `serving.training_slot`. Remove once nothing imports this module.
"""

from serving.training_slot import (  # noqa: F401
    DIRECTORY_ENV,
    MAX_WAITING,
    POLL_S,
    QueueFull,
    Ticket,
    TrainingSlot,
    UnsafeDirectory,
    default_directory,
    training_slot,
)
