"""Every error key tinyformer can raise has a translation in both languages.

The keys are collected from the source (every call to an ...Error class whose first
argument is a string), not from a hand-kept list, so a new key without a translation
fails here. An unknown key shows a translated generic message (tests/app)."""

import ast
from pathlib import Path

import pytest

from tinyformer import errors
from ui.i18n import LANGS, catalogue

SOURCE = Path(__file__).resolve().parents[2] / "tinyformer"
ERROR_CLASSES = {name for name, value in vars(errors).items()
                 if isinstance(value, type) and issubclass(value, errors.TinyformerError)}


def _error_calls():
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ERROR_CLASSES:
                yield path.name, node


def raised_keys() -> set[str]:
    return {node.args[0].value for _, node in _error_calls()
            if node.args and isinstance(node.args[0], ast.Constant)}


def test_every_key_is_a_literal():
    """A computed key could not be checked here."""
    computed = [(name, node.lineno) for name, node in _error_calls()
                if not node.args or not isinstance(node.args[0], ast.Constant)]
    assert computed == []


def test_keys_were_found():
    assert {"width_not_divisible", "top_p_invalid", "temperature_negative"} <= raised_keys()


@pytest.mark.parametrize("lang", LANGS)
def test_every_raised_key_is_translated(lang):
    missing = sorted(k for k in raised_keys() if f"errors.{k}" not in catalogue(lang))
    assert missing == []
