"""Render assets/blurapp.svg into the PNG icon sizes of assets/icons/ (hicolor's usual sizes).

Run it after changing the SVG, with the project's venv (blurapp installed; no screen needed):

    .venv/bin/python packaging/render-icons.py           # rewrite assets/icons/blurapp-<n>.png
    .venv/bin/python packaging/render-icons.py --check   # exit 1 if a PNG is missing or stale
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from blurapp.ui.app import ICON_SIZES as SIZES  # the sizes the application loads

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "assets" / "blurapp.svg"
ICONS = ROOT / "assets" / "icons"
# Antialiasing may differ by a few levels between Qt versions; a changed drawing does not.
CHECK_TOLERANCE = 8


def icon_path(size: int, folder: Path = ICONS) -> Path:
    """Where the PNG of one size lives: ``assets/icons/blurapp-<size>.png``."""
    return folder / f"blurapp-{size}.png"


def render(renderer: QSvgRenderer, size: int) -> QImage:
    """The SVG painted on a transparent ``size``×``size`` ARGB image."""
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    return image


def max_difference(a: QImage, b: QImage) -> int:
    """The largest difference of one channel of one pixel (256 when the sizes differ)."""
    if a.size() != b.size():
        return 256
    a = a.convertToFormat(QImage.Format.Format_ARGB32)
    b = b.convertToFormat(QImage.Format.Format_ARGB32)
    da, db = bytes(a.constBits()), bytes(b.constBits())
    return max((abs(x - y) for x, y in zip(da, db, strict=True)), default=0)


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every size; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare instead of writing; exit 1 when stale"
    )
    args = parser.parse_args(argv)
    # Qt needs a platform plugin even to paint into an image; offscreen needs no display server.
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        print(f"render-icons: {SVG} is not a valid SVG", file=sys.stderr)
        return 1
    stale = []
    for size in SIZES:
        image = render(renderer, size)
        path = icon_path(size)
        if args.check:
            diff = max_difference(image, QImage(str(path)))
            if diff > CHECK_TOLERANCE:
                stale.append(f"{path.relative_to(ROOT)} (max difference {diff})")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not image.save(str(path), "PNG", 0):  # quality 0: smallest file
                print(f"render-icons: cannot write {path}", file=sys.stderr)
                return 1
    if stale:
        print(
            "render-icons: stale or missing, run packaging/render-icons.py: " + ", ".join(stale),
            file=sys.stderr,
        )
        return 1
    verb = "match" if args.check else "written"
    print(f"{len(SIZES)} icons {verb}: {', '.join(str(s) for s in SIZES)} px in {ICONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
