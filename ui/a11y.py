"""Accessibility that every page needs (WCAG 2.1 A/AA, checked by axe-core in the tests):
drawn once per run by the frame (ui/frame.py)."""

from __future__ import annotations


def page_chrome() -> None:
    """What the frame adds to every page for screen readers and keyboards."""
