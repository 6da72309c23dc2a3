"""The timing plot and table (issue 19, item 5): a colour per series and lines never filled,
groups per kernel, a log axis where times span decades, every column of the table in sight."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QPalette

from blurapp.core.timing import PassTiming, Timing
from blurapp.ui.plots import TimingPlot, log_ticks, strategy_color, use_log_axis
from blurapp.ui.theme import dark_palette
from blurapp.ui.timing_panel import COL, TimingPanel


def _timing(ms: float) -> Timing:
    return Timing(
        passes=(PassTiming("pass", ms, 1000),), timer="gpu", pixels=10_000, wall_ms=ms * 2
    )


@pytest.mark.parametrize(
    ("times", "log"),
    [([1.0, 2.0, 9.9], False), ([0.5, 6.0], True), ([3.0], False), ([0.0, 5.0], False)],
)
def test_log_axis_only_where_times_span_more_than_a_decade(times, log) -> None:
    assert use_log_axis(times) is log


def test_log_ticks_cover_the_times() -> None:
    assert log_ticks(0.3, 42.0) == [0.1, 1.0, 10.0, 100.0]
    assert log_ticks(1.0, 1.0) == [1.0, 10.0]


def test_series_are_grouped_by_kernel(qtbot) -> None:
    plot = TimingPlot()
    qtbot.addWidget(plot)
    for strategy, ms, kernel in [
        ("direct", 5.0, "box:3"),
        ("tiled", 2.0, "box:3"),
        ("direct", 4.0, "box:3"),
        ("direct", 50.0, "gaussian:sigma=8"),
    ]:
        plot.add_run(strategy, ms, kernel)
    assert plot.groups() == [("box:3", 0, 3), ("gaussian:sigma=8", 3, 4)]
    series = [(s.strategy, s.kernel, s.points) for s in plot.series()]
    assert series == [
        ("direct", "box:3", [(0, 5.0), (2, 4.0)]),
        ("tiled", "box:3", [(1, 2.0)]),
        ("direct", "gaussian:sigma=8", [(3, 50.0)]),
    ]
    assert plot.log_axis()


def _near(image, x: float, y: float, color: QColor, radius: int = 2) -> bool:
    for dx in range(-radius, radius + 1):
        for dy in range(-radius, radius + 1):
            c = image.pixelColor(int(x) + dx, int(y) + dy)
            if abs(c.red() - color.red()) + abs(c.green() - color.green()) < 60 and (
                abs(c.blue() - color.blue()) < 40
            ):
                return True
    return False


@pytest.mark.parametrize("dark", [False, True])
def test_each_series_in_its_own_colour_and_lines_not_filled(qtbot, dark) -> None:
    plot = TimingPlot()
    qtbot.addWidget(plot)
    if dark:
        plot.setPalette(dark_palette())
    plot.resize(600, 300)
    # direct is a flat line; tiled a tall V drawn after it: filled with direct's colour (the
    # old bug), the inside of the V would be direct's blue.
    for i, (a, b) in enumerate([(5.0, 1.0), (5.0, 9.0), (5.0, 1.0)]):
        plot.add_run("direct", a + 0.01 * i, "box:3")
        plot.add_run("tiled", b, "box:3")
    image = plot.grab().toImage()
    background = plot.palette().color(QPalette.ColorRole.Base)
    assert image.pixelColor(plot.width() - 3, 3) == background  # from the palette
    direct = strategy_color("direct", background)
    tiled = strategy_color("tiled", background)
    assert direct != tiled
    # Find the drawn points back through the plot's own geometry: sample the V's inside.
    found_direct = found_tiled = False
    for x in range(60, plot.width() - 10):
        for y in range(10, plot.height() - 20):
            c = image.pixelColor(x, y).rgb()
            found_direct |= c == direct.rgb()
            found_tiled |= c == tiled.rgb()
    assert found_direct and found_tiled
    # Inside the V, between its arms and above the flat line, only background or grid.
    xs = [x for x in range(60, plot.width() - 10) if _near(image, x, 150, tiled, 0)]
    assert xs, "the V's arms cross the middle row"
    inside = QPointF((min(xs) + max(xs)) / 2, 150)
    c = image.pixelColor(int(inside.x()), int(inside.y()))
    assert not _near(image, inside.x(), inside.y(), direct, 1), c.name()
    assert not _near(image, inside.x(), inside.y(), tiled, 1), c.name()


def test_auto_reads_on_a_dark_background() -> None:
    dark = dark_palette().color(QPalette.ColorRole.Base)
    assert abs(strategy_color("auto", dark).lightness() - dark.lightness()) >= 90
    assert abs(strategy_color("auto", dark).lightness() - dark.lightness()) < 200
    assert strategy_color("tiled", QColor("white")) == strategy_color("tiled")


def test_table_columns_fit_and_kernel_is_near_the_left(qtbot) -> None:
    panel = TimingPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 250)
    panel.show()
    long_spec = "matrix:5x5:" + ",".join(["0.04"] * 25)
    for name in ("direct", "tiled", "separable", "cpu"):
        panel.record(name, _timing(3.0), long_spec)
    assert COL["kernel"] == 1
    table = panel.table
    header = table.horizontalHeader()
    # Every column but the stretched pass list starts inside the table's viewport.
    for c in range(table.columnCount()):
        assert header.sectionViewportPosition(c) < table.viewport().width(), c
    item = table.item(0, COL["kernel"])
    assert item.text() == long_spec and item.toolTip() == long_spec
