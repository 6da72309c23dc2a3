"""The desktop integration files ship as package data and are well formed."""

from __future__ import annotations

import configparser
import importlib.resources
import xml.etree.ElementTree as ET


def _asset(name: str) -> str:
    return importlib.resources.files("blurapp.assets").joinpath(name).read_text(encoding="utf-8")


def test_desktop_entry() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive in desktop entries
    parser.read_string(_asset("blurapp.desktop"))
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application"
    assert entry["Exec"].split()[0] == "blurapp"
    assert entry["Icon"] == "blurapp"
    assert "image/png" in entry["MimeType"].split(";")


def test_metainfo_and_icon() -> None:
    root = ET.fromstring(_asset("blurapp.metainfo.xml"))
    assert root.get("type") == "desktop-application"
    assert root.findtext("launchable") == "blurapp.desktop"
    assert root.findtext("id") == "blurapp"
    svg = ET.fromstring(_asset("blurapp.svg"))
    assert svg.tag.endswith("svg") and svg.get("viewBox") == "0 0 128 128"


def test_sample_and_licence_ship() -> None:
    samples = importlib.resources.files("blurapp.assets").joinpath("samples")
    assert samples.joinpath("astronaut.png").is_file()
    assert "astronaut.png" in samples.joinpath("LICENSES.md").read_text(encoding="utf-8")
