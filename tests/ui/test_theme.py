"""The dark theme (issue 19, item 4): a dark palette on request, and charts that follow it."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from blurapp.ui.plots import SingularValueChart, TimingPlot
from blurapp.ui.theme import apply_theme, chart_colors, dark_palette, is_dark


def test_apply_theme_dark_and_back(qtbot, monkeypatch) -> None:
    app = QApplication.instance()
    palette, style = app.palette(), app.style().name()
    try:
        assert apply_theme(app, "dark") == "dark"
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 80
        plot = TimingPlot()
        qtbot.addWidget(plot)
        assert is_dark(plot)
        monkeypatch.setenv("BLURAPP_THEME", "light")
        app.setPalette(palette)
        assert apply_theme(app) == "light"
    finally:
        app.setStyle(style)
        app.setPalette(palette)


def test_charts_take_their_colours_from_the_palette(qtbot) -> None:
    for widget in (TimingPlot(), SingularValueChart()):
        qtbot.addWidget(widget)
        widget.setPalette(dark_palette())
        widget.resize(300, 160)
        if isinstance(widget, SingularValueChart):
            widget.set_values(np.array([3.0, 1.0, 0.1]), 2)
        colors = chart_colors(widget)
        assert colors.background.lightness() < 60 and colors.text.lightness() > 180
        image = widget.grab().toImage()
        # Text on a dark chart is light: some pixel is near the palette's text colour.
        light = sum(
            1
            for x in range(0, widget.width(), 2)
            for y in range(0, widget.height(), 2)
            if image.pixelColor(x, y).lightness() > 150
        )
        assert light > 0
