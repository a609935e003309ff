"""A page holds its lesson, and only its lesson (docs/architecture.md).

What a page file may not hold, checked on its syntax tree rather than its length
(a line cap only got pages packed to fit):

- model code: no class, no `torch.nn` or `torch.nn.functional`, no matrix product
  (`@`), no torch call that does maths; torch may only build, join and check tensors
  (TORCH_PLUMBING) on their way to tinyformer, which does the maths;
- figures of its own: no Plotly import (the kit in ui/figures.py and ui/charts.py
  builds every figure, with the one toolbar);
- headings of its own: no bold Markdown line standing for a heading (`ui.page.section`
  or `ui.headings.subsection`, which the printable handout also sees);
- packed lines: no assignment of several unrelated values on one line
  (`a, b = x, y`); one value per line reads as the lesson.

The overview (pages/overview.py) is the frame's landing page, not a lesson.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [page for page in sorted((ROOT / "pages").glob("*.py")) if page.name != "overview.py"]
# What a page may call on torch: build, join and check tensors; no maths.
TORCH_PLUMBING = {"tensor", "Tensor", "as_tensor", "stack", "cat", "zeros", "ones", "arange",
                  "Generator", "isfinite", "float", "float32", "float64", "int", "int64",
                  "long", "bool", "no_grad", "cuda"}
BOLD_LINE = re.compile(r"\*\*[^*]+\*\*")


def tree_of(page: Path) -> ast.Module:
    return ast.parse(page.read_text(encoding="utf-8"), filename=str(page))


def where(page: Path, node: ast.AST) -> str:
    return f"{page.name}:{node.lineno}"


def model_code(page: Path) -> list[str]:
    found = []
    for node in ast.walk(tree_of(page)):
        if isinstance(node, ast.ClassDef):
            found.append(f"{where(page, node)} class {node.name}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found.append(f"{where(page, node)} a matrix product (@)")
        elif isinstance(node, ast.Import):
            found += [f"{where(page, node)} import {alias.name}" for alias in node.names
                      if alias.name.startswith("torch.")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            found.append(f"{where(page, node)} from {node.module} import ...")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "torch" and node.attr not in TORCH_PLUMBING):
            found.append(f"{where(page, node)} torch.{node.attr}")
    return found


def own_figures(page: Path) -> list[str]:
    found = []
    for node in ast.walk(tree_of(page)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif (isinstance(node, ast.Attribute) and node.attr == "plotly_chart"):
            found.append(f"{where(page, node)} .plotly_chart")
        found += [f"{where(page, node)} import {name}" for name in names
                  if name.split(".")[0] == "plotly"]
    return found


def text_of(node: ast.expr) -> str | None:
    """A string literal or f-string with its placeholders as {}; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}"
                       for part in node.values)
    return None


def bold_headings(page: Path) -> list[str]:
    found = []
    for node in ast.walk(tree_of(page)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("markdown", "write") and node.args):
            text = text_of(node.args[0])
            if text is not None and BOLD_LINE.fullmatch(text.strip()):
                found.append(f"{where(page, node)} {text!r}")
    return found


def packed_lines(page: Path) -> list[str]:
    found = []
    for node in ast.walk(tree_of(page)):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
                and any(isinstance(target, ast.Tuple) for target in node.targets)):
            found.append(f"{where(page, node)} {len(node.value.elts)} values in one assignment")
    return found


def test_the_pages_are_found() -> None:
    assert len(PAGES) >= 24  # every stage page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_holds_no_model_code(page: Path) -> None:
    assert model_code(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_builds_no_figure_itself(page: Path) -> None:
    assert own_figures(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_titles_with_the_kit(page: Path) -> None:
    assert bold_headings(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_assigns_one_value_a_line(page: Path) -> None:
    assert packed_lines(page) == []


@pytest.mark.parametrize("source, problems", [
    ("import torch.nn as nn\nclass M: pass\ny = torch.softmax(x, -1) @ w\n", 4),
    ("from torch.nn import functional as F\nz = torch.tensor([1.0])\n", 1),
])
def test_the_model_code_check_sees_model_code(tmp_path: Path, source: str,
                                              problems: int) -> None:
    page = tmp_path / "page.py"
    page.write_text(source)
    assert len(model_code(page)) == problems


def test_the_other_checks_see_what_they_look_for(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text('import plotly.graph_objects as go\nst.plotly_chart(f)\n'
                    'st.markdown(f"**{t(\'x\')}**")\ncol.markdown("**Title**")\n'
                    'st.markdown(f"**1 ·** {t(\'y\')}")\na, b = 1, 2\nc, d = pair\n')
    assert len(own_figures(page)) == 2
    assert len(bold_headings(page)) == 2  # the bold lead-in with text after it is no heading
    assert len(packed_lines(page)) == 1  # unpacking one value is fine
