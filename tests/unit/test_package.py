"""The package stays a plain maths library: importing it pulls in no UI code, the core
imports nothing from its lessons, every module is listed, and an installed copy finds
its data."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest

import tinyformer
import tinyformer.lessons
from tinyformer.errors import ParameterError, ShapeError, TinyformerError
from tinyformer.lessons.checkpoint import MODEL_DIR, load_model


def test_errors_are_value_errors_with_key_and_values() -> None:
    for cls in (ShapeError, ParameterError):
        err = cls("some_key", "english message", width=8)
        assert isinstance(err, TinyformerError) and isinstance(err, ValueError)
        assert err.key == "some_key" and err.values == {"width": 8}
        assert str(err) == "english message"
    assert tinyformer.ShapeError is ShapeError


# --- the core and its lessons ---------------------------------------------------------

PACKAGE = Path(tinyformer.__file__).resolve().parent
ROOT = PACKAGE.parent


def _module_names(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("package", [tinyformer, tinyformer.lessons])
def test_the_docstring_names_every_module(package) -> None:
    folder = Path(package.__file__).parent
    names = _module_names(folder)
    assert names, folder
    missing = [n for n in names if not re.search(rf"^- {n}: ", package.__doc__, re.MULTILINE)]
    assert missing == [], f"{package.__name__}'s docstring does not list {missing}"
    listed = re.findall(r"^- (\w+): ", package.__doc__, re.MULTILINE)
    assert sorted(listed) == names  # and lists nothing that is not there


UI_LIBRARIES = ("streamlit", "plotly", "ui")


@pytest.fixture(scope="module")
def imported() -> dict[str, list[str]]:
    """What a fresh interpreter has loaded after importing tinyformer and its core
    modules ("core"), then every lessons module as well ("lessons"): one interpreter
    for the three checks below (each import of torch costs seconds)."""
    core = ["tinyformer", *(f"tinyformer.{name}" for name in _module_names(PACKAGE))]
    code = """if True:
        import importlib, json, pkgutil, sys
        core, ui = json.loads(sys.argv[1]), tuple(json.loads(sys.argv[2]))
        def loaded():
            return {"lessons": sorted(m for m in sys.modules
                                      if m.startswith("tinyformer.lessons")),
                    "ui": sorted(m for m in sys.modules if m.split(".")[0] in ui)}
        [importlib.import_module(m) for m in core]
        after_core = loaded()
        import tinyformer.lessons as lessons
        [importlib.import_module(m.name)
         for m in pkgutil.iter_modules(lessons.__path__, "tinyformer.lessons.")]
        print(json.dumps({"core": after_core, "lessons": loaded()}))
    """
    result = subprocess.run(
        [sys.executable, "-c", code, json.dumps(core), json.dumps(UI_LIBRARIES)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(result.stdout)


def test_import_does_not_load_ui_libraries(imported) -> None:
    assert imported["core"]["ui"] == []


def test_the_core_imports_nothing_from_the_lessons(imported) -> None:
    """The core is the library; the page models build on it, never the reverse."""
    assert imported["core"]["lessons"] == []


def test_every_lessons_module_imports_without_ui_libraries(imported) -> None:
    assert len(imported["lessons"]["lessons"]) > 1  # they were imported
    assert imported["lessons"]["ui"] == []


# --- installable, with its data ---------------------------------------------------------

MODEL_FILES = ("config.json", "model.safetensors")


def test_the_shipped_model_is_package_data() -> None:
    model_dir = resources.files("tinyformer.lessons") / "data" / "model"
    for name in MODEL_FILES:
        assert (model_dir / name).is_file(), name
    assert MODEL_DIR.resolve() == Path(str(model_dir)).resolve()
    assert MODEL_DIR.is_relative_to(PACKAGE)  # inside the package, not the checkout


def test_pyproject_installs_the_package_and_its_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    assert config["build-system"]["build-backend"] == "setuptools.build_meta"
    setuptools = config["tool"]["setuptools"]
    assert setuptools["packages"]["find"]["include"] == ["tinyformer*"]
    data = setuptools["package-data"]["tinyformer.lessons"]
    assert {f"data/model/{name}" for name in MODEL_FILES} <= set(data)
    wanted = {"torch", "safetensors", "tokenizers"}
    assert wanted <= {re.split(r"[<>=!~ \[]", d)[0] for d in config["project"]["dependencies"]}


def test_an_installed_copy_loads_the_shipped_model(tmp_path: Path) -> None:
    """pip installs the package (about 2 s: no network, no build isolation) into a folder
    outside the checkout, and the copy there finds its model as package data."""
    pytest.importorskip("setuptools")
    source, target = tmp_path / "source", tmp_path / "installed"
    shutil.copytree(PACKAGE, source / "tinyformer",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", source / "pyproject.toml")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--disable-pip-version-check", "--target", str(target),
         str(source)],
        capture_output=True, text=True, check=True, timeout=120,
    )
    installed = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    for name in MODEL_FILES:
        assert f"tinyformer/lessons/data/model/{name}" in installed
    code = (
        "import tinyformer, tinyformer.lessons.train as tr; "
        "m = tr.load_model(); "
        "print(tinyformer.__file__); print(m.model.layers, len(m.vocab))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {
        "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path, env=env, timeout=120)
    where, sizes = result.stdout.strip().splitlines()
    assert Path(where).resolve().is_relative_to(target.resolve())
    assert sizes == "2 " + str(len(load_model().vocab))
