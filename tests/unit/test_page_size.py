"""One idea per page: every page file stays short enough to read on one screen or two
(DESIGN.md; the kit in ui/ holds what pages would otherwise repeat)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 150
PAGES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def test_the_pages_are_found() -> None:
    assert len(PAGES) >= 25  # the overview and every stage page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_file_is_at_most_150_lines(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"{page.name}: {len(lines)} lines"
