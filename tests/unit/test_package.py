"""The package stays a plain maths library: importing it pulls in no UI code."""

from __future__ import annotations

import subprocess
import sys

import tinyformer
from tinyformer.errors import ParameterError, ShapeError, TinyformerError


def test_import_does_not_load_ui_libraries() -> None:
    code = (
        "import sys, tinyformer, tinyformer.model; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly', 'ui')]; "
        "print(bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_errors_are_value_errors_with_key_and_values() -> None:
    for cls in (ShapeError, ParameterError):
        err = cls("some_key", "english message", width=8)
        assert isinstance(err, TinyformerError) and isinstance(err, ValueError)
        assert err.key == "some_key" and err.values == {"width": 8}
        assert str(err) == "english message"
    assert tinyformer.ShapeError is ShapeError
