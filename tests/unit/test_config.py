"""The server settings docs/architecture.md asks for, read the way Streamlit reads them."""

import tomllib
from pathlib import Path

import pytest
from streamlit import config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def options():
    config.get_config_options(force_reparse=True)
    return config.get_option


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("runner.postScriptGC", False),  # ~230 ms of a ~260 ms rerun with torch loaded
        ("server.enableXsrfProtection", True),
        ("server.headless", True),
        ("server.fileWatcherType", "none"),
        ("browser.gatherUsageStats", False),
        ("client.showErrorDetails", "none"),
        ("client.showSidebarNavigation", True),  # it draws the frame's st.navigation
    ],
)
def test_server_setting(options, name, value):
    assert options(name) == value


def test_requirements_pin_torch_and_streamlit():
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in pins
    assert any(line.startswith("streamlit==1.67.") for line in pins)


def test_config_file_is_valid_toml():
    with open(ROOT / ".streamlit" / "config.toml", "rb") as handle:
        assert tomllib.load(handle)["runner"]["postScriptGC"] is False
