"""The icon and the sample ship as package data, and the application wears the icon."""

from __future__ import annotations

import importlib.resources
import io
import xml.etree.ElementTree as ET

from PIL import Image

from blurapp.ui.app import ICON_SIZES, app_icon, make_app


def _assets() -> importlib.resources.abc.Traversable:
    return importlib.resources.files("blurapp.assets")


def test_svg_icon_ships() -> None:
    svg = ET.fromstring(_assets().joinpath("blurapp.svg").read_text(encoding="utf-8"))
    assert svg.tag.endswith("svg") and svg.get("viewBox") == "0 0 128 128"


def test_png_icons_ship_in_every_size() -> None:
    for size in ICON_SIZES:
        data = _assets().joinpath("icons", f"blurapp-{size}.png").read_bytes()
        with Image.open(io.BytesIO(data)) as png:
            assert (png.format, png.size, png.mode) == ("PNG", (size, size), "RGBA")
            corner, centre = png.getpixel((0, 0)), png.getpixel((size // 2, size // 2))
        assert corner[3] == 0, f"{size} px: the rounded corner should be transparent"
        assert centre[3] == 255, f"{size} px: the centre should be opaque"


def test_application_has_the_icon(qapp) -> None:
    assert sorted(s.width() for s in app_icon().availableSizes()) == sorted(ICON_SIZES)
    app = make_app()
    assert app is qapp
    assert sorted(s.width() for s in app.windowIcon().availableSizes()) == sorted(ICON_SIZES)


def test_window_has_the_icon(window) -> None:
    make_app()  # as run_gui does; a window without an icon of its own shows the application's
    sizes = window.windowIcon().availableSizes()
    assert sorted(s.width() for s in sizes) == sorted(ICON_SIZES)


def test_sample_and_licence_ship() -> None:
    samples = _assets().joinpath("samples")
    assert samples.joinpath("astronaut.png").is_file()
    assert "astronaut.png" in samples.joinpath("LICENSES.md").read_text(encoding="utf-8")
