"""Both catalogues hold the same keys and the same placeholders."""

import re
import string
import tomllib

import pytest

from ui.i18n import _I18N_DIR, LANGS, catalogue, lang_from_locale


def test_same_keys_in_both_languages():
    zh, en = catalogue("zh"), catalogue("en")
    assert set(zh) - set(en) == set(), "keys only in zh"
    assert set(en) - set(zh) == set(), "keys only in en"
    assert len(zh) > 50


@pytest.mark.parametrize("lang", LANGS)
def test_each_file_holds_its_own_table(lang):
    """One file per top-level table, named after it: a key defined in two files would
    silently shadow the other when the folder is merged."""
    files = sorted((_I18N_DIR / lang).glob("*.toml"))
    assert [f.name for f in files] == sorted(f.name for f in (_I18N_DIR / "en").glob("*.toml"))
    for path in files:
        tables = list(tomllib.loads(path.read_text(encoding="utf-8")))
        assert tables == [path.stem], path


@pytest.mark.parametrize("lang", LANGS)
def test_no_empty_text(lang):
    assert [k for k, v in catalogue(lang).items() if not v.strip()] == []


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_same_placeholders():
    zh, en = catalogue("zh"), catalogue("en")
    mismatched = [k for k in en if _placeholders(en[k]) != _placeholders(zh[k])]
    assert mismatched == []


def test_chinese_catalogue_is_chinese():
    """A key copied over untranslated would show English to a Chinese class."""
    zh, en = catalogue("zh"), catalogue("en")
    han = re.compile(r"[\u4e00-\u9fff]")
    long_english = [k for k in en if len(en[k]) > 40 and zh[k] == en[k] and not han.search(zh[k])]
    assert long_english == []


@pytest.mark.parametrize(
    ("locale", "lang"),
    [("en-US", "en"), ("en", "en"), ("zh-CN", "zh"), ("fr-FR", "zh"), (None, "zh"), ("", "zh")],
)
def test_language_from_locale(locale, lang):
    assert lang_from_locale(locale) == lang
