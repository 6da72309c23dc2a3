"""Light and dark themes: the system's choice by default, or one asked for.

Qt's platform styles do not all follow a dark desktop, so a dark scheme gets the Fusion style
with a dark palette; every widget and chart of the window takes its colours from the palette
(the charts through :func:`chart_colors`), so nothing stays dark on dark or glaring white.
``BLURAPP_THEME=light|dark|auto`` (or ``screenshot --theme``) overrides the system.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

__all__ = ["THEMES", "ChartColors", "apply_theme", "chart_colors", "dark_palette", "is_dark"]

Theme = Literal["auto", "light", "dark"]
THEMES: tuple[Theme, ...] = ("auto", "light", "dark")


def dark_palette() -> QPalette:
    """A dark palette for the Fusion style, with a readable disabled state and links."""
    p = QPalette()
    roles = QPalette.ColorRole
    colours = {
        roles.Window: QColor(45, 45, 48),
        roles.WindowText: QColor(230, 230, 230),
        roles.Base: QColor(30, 30, 32),
        roles.AlternateBase: QColor(52, 52, 56),
        roles.ToolTipBase: QColor(60, 60, 64),
        roles.ToolTipText: QColor(235, 235, 235),
        roles.PlaceholderText: QColor(150, 150, 150),
        roles.Text: QColor(230, 230, 230),
        roles.Button: QColor(58, 58, 62),
        roles.ButtonText: QColor(230, 230, 230),
        roles.BrightText: QColor(255, 120, 120),
        roles.Light: QColor(80, 80, 86),
        roles.Midlight: QColor(66, 66, 70),
        roles.Mid: QColor(110, 110, 116),
        roles.Dark: QColor(25, 25, 27),
        roles.Shadow: QColor(10, 10, 10),
        roles.Highlight: QColor(58, 120, 200),
        roles.HighlightedText: QColor(255, 255, 255),
        roles.Link: QColor(110, 170, 255),
        roles.LinkVisited: QColor(180, 140, 255),
    }
    for role, colour in colours.items():
        p.setColor(role, colour)
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(disabled, role, QColor(125, 125, 125))
    return p


def _system_is_dark(app: QApplication) -> bool:
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication, theme: str | None = None) -> str:
    """Give ``app`` the light or dark look.

    Arguments:
        app: the application.
        theme: ``light``, ``dark`` or ``auto`` (the system's scheme); ``None`` reads
            ``BLURAPP_THEME`` (default ``auto``).

    Returns:
        The theme applied: ``light`` or ``dark``.
    """
    theme = (theme or os.environ.get("BLURAPP_THEME") or "auto").lower()
    if theme not in THEMES:
        theme = "auto"
    dark = theme == "dark" or (theme == "auto" and _system_is_dark(app))
    if dark:
        app.setStyle("Fusion")
        app.setPalette(dark_palette())
        return "dark"
    if theme == "light" and _system_is_dark(app):
        app.setStyle("Fusion")
        app.setPalette(app.style().standardPalette())
    return "light"


def is_dark(widget: QWidget) -> bool:
    """Whether ``widget`` is drawn on a dark background."""
    return widget.palette().color(QPalette.ColorRole.Window).lightness() < 128


@dataclass(frozen=True)
class ChartColors:
    """The colours a chart draws with, from a widget's palette."""

    background: QColor
    text: QColor
    axis: QColor
    grid: QColor


def chart_colors(widget: QWidget) -> ChartColors:
    """The chart colours of ``widget``'s palette: its base, text and a mid-tone axis."""
    pal = widget.palette()
    base = pal.color(QPalette.ColorRole.Base)
    text = pal.color(QPalette.ColorRole.Text)
    axis = QColor(
        (base.red() + 2 * text.red()) // 3,
        (base.green() + 2 * text.green()) // 3,
        (base.blue() + 2 * text.blue()) // 3,
    )
    grid = QColor(
        (3 * base.red() + text.red()) // 4,
        (3 * base.green() + text.green()) // 4,
        (3 * base.blue() + text.blue()) // 4,
    )
    return ChartColors(background=base, text=text, axis=axis, grid=grid)
