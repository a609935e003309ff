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


def test_tab_icon_is_passed_as_a_data_url_streamlit_keeps_as_it_is():
    """A path would be read, opened as an image and filed on every full run."""
    import base64

    from streamlit.commands.page_config import _get_favicon_string

    from ui.frame import ICON, icon_url

    url = icon_url()
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == ICON.read_bytes()
    assert _get_favicon_string(url) == url
