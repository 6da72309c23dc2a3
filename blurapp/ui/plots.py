"""Small QPainter charts: the kernel heat-map, factor profiles, singular values and run times.

QPainter rather than a plotting library: these are a few dozen bars and lines, and it keeps the
application's dependencies to PySide6 alone.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from blurapp.core.strategies import STRATEGIES
from blurapp.ui.convert import signed_color, signed_rgb, to_qimage
from blurapp.ui.theme import chart_colors

AXIS = QColor(120, 120, 120)
TEXT = QColor(40, 40, 40)
ACCENT = QColor(33, 102, 172)
MUTED = QColor(170, 190, 215)


def strategy_color(name: str, background: QColor | None = None) -> QColor:
    """The strategy's colour from the registry (:attr:`StrategyInfo.colour`); unknown names get
    the accent colour. On a ``background`` too close to it (auto's dark grey on a dark theme)
    it is lightened or darkened until it reads."""
    info = STRATEGIES.get(name)
    color = QColor(info.colour) if info is not None else QColor(ACCENT)
    if background is not None:
        for _ in range(4):
            if abs(color.lightness() - background.lightness()) >= 90:
                break
            color = color.lighter(140) if background.lightness() < 128 else color.darker(140)
    return QColor(color.rgb())


def _small_font(widget: QWidget, delta: float = -1.0) -> QFont:
    font = QFont(widget.font())
    font.setPointSizeF(max(6.0, font.pointSizeF() + delta))
    return font


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100 or abs(v) < 0.01:
        return f"{v:.2g}"
    return f"{v:.3g}"


class WeightsHeatMap(QWidget):
    """The kernel's weights as coloured cells: blue negative, white zero, red positive.

    The colour scale is symmetric (±max|w|) so that zero is always white; the values are written
    in the cells when they are large enough to read.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._weights = np.zeros((1, 1))
        self._cells: QImage | None = None
        self.setMinimumSize(160, 160)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setToolTip("Kernel weights: red positive, blue negative, white zero")

    def set_weights(self, weights: np.ndarray) -> None:
        self._weights = np.asarray(weights, dtype=np.float64)
        self._cells = None
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(220, 220)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        rows, cols = self._weights.shape
        legend_h = 18
        side = min(self.width() / cols, (self.height() - legend_h) / rows)
        w, h = side * cols, side * rows
        x0, y0 = (self.width() - w) / 2, (self.height() - legend_h - h) / 2
        vmax = float(np.abs(self._weights).max()) or 1.0
        font = _small_font(self, -1.5)
        p.setFont(font)
        metrics = p.fontMetrics()
        show_numbers = side >= 30 and rows * cols <= 81
        if not show_numbers:
            # One image of the cells instead of a rectangle each: a 63×63 kernel is 3969 cells,
            # tens of milliseconds on the UI thread per paint when drawn one by one.
            if self._cells is None:
                self._cells = to_qimage(signed_rgb(self._weights / vmax))
            p.drawImage(QRectF(x0, y0, w, h), self._cells)
        for r in range(rows if show_numbers else 0):
            for c in range(cols):
                v = self._weights[r, c]
                rect = QRectF(x0 + c * side, y0 + r * side, side + 0.5, side + 0.5)
                p.fillRect(rect, signed_color(v / vmax))
                if show_numbers:
                    text = _fmt(v)
                    if metrics.horizontalAdvance(text) < side - 2:
                        p.setPen(QColor(255, 255, 255) if abs(v) > 0.6 * vmax else TEXT)
                        p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        p.setPen(QPen(AXIS, 1))
        p.drawRect(QRectF(x0, y0, w, h))
        # anchor marker
        ar, ac = rows // 2, cols // 2
        p.setPen(QPen(QColor(0, 0, 0), 1.5))
        p.drawRect(QRectF(x0 + ac * side, y0 + ar * side, side, side))
        # legend: -max .. 0 .. +max
        ly = self.height() - legend_h + 3
        lw = min(self.width() - 80.0, 200.0)
        lx = (self.width() - lw) / 2
        steps = 40
        for i in range(steps):
            t = -1.0 + 2.0 * (i + 0.5) / steps
            p.fillRect(QRectF(lx + i * lw / steps, ly, lw / steps + 0.5, 8), signed_color(t))
        p.setPen(chart_colors(self).text)
        p.drawText(QRectF(0, ly - 3, lx - 4, 14), Qt.AlignmentFlag.AlignRight, _fmt(-vmax))
        p.drawText(QRectF(lx + lw + 4, ly - 3, 80, 14), Qt.AlignmentFlag.AlignLeft, _fmt(vmax))
        p.end()


class ProfilePlot(QWidget):
    """A 1-D factor of a separable kernel as stems, with the zero line."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._title = title
        self._values = np.zeros(0)
        self.setMinimumSize(120, 70)

    def set_values(self, values: np.ndarray | None) -> None:
        self._values = np.zeros(0) if values is None else np.asarray(values, dtype=np.float64)
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(200, 90)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setFont(_small_font(self, -1.0))
        p.setPen(chart_colors(self).text)
        p.drawText(QRectF(4, 0, self.width() - 8, 16), Qt.AlignmentFlag.AlignLeft, self._title)
        n = len(self._values)
        if n == 0:
            p.end()
            return
        top, bottom = 18.0, self.height() - 4.0
        lo = min(0.0, float(self._values.min()))
        hi = max(0.0, float(self._values.max()))
        span = (hi - lo) or 1.0

        def y(v: float) -> float:
            return bottom - (v - lo) / span * (bottom - top)

        step = (self.width() - 8.0) / n
        p.setPen(QPen(AXIS, 1))
        p.drawLine(QPointF(4, y(0.0)), QPointF(self.width() - 4, y(0.0)))
        for i, v in enumerate(self._values):
            x = 4 + (i + 0.5) * step
            p.setPen(QPen(ACCENT, max(1.0, min(step * 0.5, 4.0))))
            p.drawLine(QPointF(x, y(0.0)), QPointF(x, y(float(v))))
        p.end()


class SingularValueChart(QWidget):
    """Singular values as bars (relative to the largest); those that count toward the rank
    are dark, the ones under the tolerance pale."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._values = np.zeros(0)
        self._rank = 0
        self.setMinimumSize(160, 90)

    def set_values(self, values: np.ndarray, rank: int) -> None:
        self._values = np.asarray(values, dtype=np.float64)
        self._rank = int(rank)
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(220, 110)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        p = QPainter(self)
        p.setFont(_small_font(self, -1.5))
        values = self._values[:32]
        if len(values) == 0:
            p.end()
            return
        left, top, bottom = 34.0, 6.0, self.height() - 16.0
        right = self.width() - 6.0
        s0 = float(values[0]) or 1.0
        p.setPen(QPen(AXIS, 1))
        p.drawLine(QPointF(left, bottom), QPointF(right, bottom))
        p.setPen(chart_colors(self).text)
        p.drawText(QRectF(0, top - 6, left - 4, 14), Qt.AlignmentFlag.AlignRight, "σ₁")
        p.drawText(QRectF(0, bottom - 8, left - 4, 14), Qt.AlignmentFlag.AlignRight, "0")
        step = (right - left) / len(values)
        for i, s in enumerate(values):
            h = max(0.0, float(s) / s0) * (bottom - top)
            rect = QRectF(left + i * step + step * 0.15, bottom - h, step * 0.7, h)
            p.fillRect(rect, ACCENT if i < self._rank else MUTED)
            if step >= 14:
                p.setPen(chart_colors(self).text)
                p.drawText(
                    QRectF(left + i * step, bottom + 1, step, 14),
                    Qt.AlignmentFlag.AlignHCenter,
                    str(i + 1),
                )
        p.end()


@dataclass
class Series:
    """One strategy's warm runs of one kernel, in the order they ran (x: run index)."""

    strategy: str
    kernel: str
    points: list[tuple[int, float]]


def use_log_axis(times: list[float]) -> bool:
    """A log time axis when the times span more than a decade (a linear one would flatten the
    fast strategies onto zero)."""
    positive = [t for t in times if t > 0 and math.isfinite(t)]
    return len(positive) >= 2 and max(positive) > 10 * min(positive)


def log_ticks(lo: float, hi: float) -> list[float]:
    """The powers of ten from just under ``lo`` to just over ``hi`` (both > 0)."""
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0**e for e in range(first, max(last, first + 1) + 1)]


def _ms_label(v: float) -> str:
    if v >= 10:
        return f"{v:.0f} ms"
    return f"{v:.2g} ms"


class TimingPlot(QWidget):
    """The total time of the last warm runs, newest on the right, grouped by kernel.

    Each strategy is a line and dots in its own colour (the registry's); runs of another kernel
    start a new group (a divider with the kernel's name), and lines do not join across groups.
    The time axis is logarithmic where the times span more than a decade.
    """

    def __init__(self, capacity: int = 60, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runs: deque[tuple[str, float, str]] = deque(maxlen=capacity)
        self.setMinimumSize(220, 110)
        self.setObjectName("timingPlot")

    def add_run(self, strategy: str, ms: float, kernel: str = "") -> None:
        if math.isfinite(ms) and ms >= 0:
            self._runs.append((strategy, float(ms), kernel))
            self.update()

    def runs(self) -> list[tuple[str, float]]:
        return [(strategy, ms) for strategy, ms, _k in self._runs]

    def groups(self) -> list[tuple[str, int, int]]:
        """Consecutive runs of one kernel: (kernel, first index, last index + 1)."""
        out: list[tuple[str, int, int]] = []
        for i, (_s, _ms, kernel) in enumerate(self._runs):
            if out and out[-1][0] == kernel:
                out[-1] = (kernel, out[-1][1], i + 1)
            else:
                out.append((kernel, i, i + 1))
        return out

    def series(self) -> list[Series]:
        """One series per strategy and kernel group, in the order they first ran."""
        found: dict[tuple[str, int], Series] = {}
        for g, (kernel, start, stop) in enumerate(self.groups()):
            for i in range(start, stop):
                strategy, ms, _k = self._runs[i]
                key = (strategy, g)
                if key not in found:
                    found[key] = Series(strategy, kernel, [])
                found[key].points.append((i, ms))
        return list(found.values())

    def log_axis(self) -> bool:
        return use_log_axis([ms for _s, ms, _k in self._runs])

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt override)
        return QSize(320, 160)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        colors = chart_colors(self)
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), colors.background)
        p.setFont(_small_font(self, -1.5))
        line_h = p.fontMetrics().height()
        left, top = 58.0, 6.0 + line_h
        right, bottom = self.width() - 8.0, self.height() - 6.0 - line_h
        p.setPen(QPen(colors.axis, 1))
        p.drawLine(QPointF(left, top), QPointF(left, bottom))
        p.drawLine(QPointF(left, bottom), QPointF(right, bottom))
        if not self._runs:
            p.setPen(colors.text)
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "run times appear here")
            p.end()
            return
        times = [ms for _s, ms, _k in self._runs]
        if self.log_axis():
            ticks = log_ticks(min(t for t in times if t > 0), max(times))
            lo, hi = math.log10(ticks[0]), math.log10(ticks[-1])

            def y(ms: float) -> float:
                v = math.log10(max(ms, ticks[0]))
                return bottom - (v - lo) / (hi - lo) * (bottom - top)

        else:
            vmax = max(times) * 1.1 or 1.0
            ticks = [0.0, vmax / 2, vmax]

            def y(ms: float) -> float:
                return bottom - ms / vmax * (bottom - top)

        for tick in ticks:
            ty = y(tick)
            p.setPen(QPen(colors.grid, 1, Qt.PenStyle.DotLine))
            p.drawLine(QPointF(left + 1, ty), QPointF(right, ty))
            p.setPen(colors.text)
            label = "0" if tick == 0 else _ms_label(tick)
            p.drawText(
                QRectF(0, ty - line_h / 2, left - 4, line_h), Qt.AlignmentFlag.AlignRight, label
            )
        # Few runs spread over the width; once there are many the oldest scroll off the left.
        cap = max(len(self._runs), 12)
        step = (right - left - 8) / max(1, cap - 1)
        offset = cap - len(self._runs)

        def x(i: int) -> float:
            return left + 4 + (offset + i) * step

        # Kernel groups: a divider and the kernel's name over its runs.
        for kernel, start, stop in self.groups():
            x0 = x(start) - step / 2 if start else left
            x1 = x(stop - 1) + step / 2
            if start:
                p.setPen(QPen(colors.axis, 1, Qt.PenStyle.DashLine))
                p.drawLine(QPointF(x0, top - line_h), QPointF(x0, bottom))
            p.setPen(colors.text)
            width = max(0.0, min(x1, right) - x0 - 4)
            name = p.fontMetrics().elidedText(kernel, Qt.TextElideMode.ElideRight, int(width))
            p.drawText(QRectF(x0 + 3, 2, width, line_h), Qt.AlignmentFlag.AlignLeft, name)
        legend_x = left + 4
        legend: list[str] = []
        for series in self.series():
            color = strategy_color(series.strategy, colors.background)
            points = [QPointF(x(i), y(ms)) for i, ms in series.points]
            path = QPainterPath(points[0])
            for pt in points[1:]:
                path.lineTo(pt)
            p.setBrush(Qt.BrushStyle.NoBrush)  # a line, not a filled shape
            p.setPen(QPen(color, 1.5))
            p.drawPath(path)
            p.setBrush(color)
            for pt in points:
                p.drawEllipse(pt, 2.5, 2.5)
            if series.strategy not in legend:
                legend.append(series.strategy)
        p.setBrush(Qt.BrushStyle.NoBrush)
        metrics = p.fontMetrics()
        gap = 14
        room = max(0.0, self.width() - legend_x - 2)
        # A narrow plot (a 200 % screen) elides each name to an equal share rather than
        # cutting the last ones off at the edge.
        share = None
        if sum(metrics.horizontalAdvance(n) + gap for n in legend) > room and legend:
            gap = 6
            share = max(8, int(room / len(legend)) - gap)
        for strategy in legend:
            shown = strategy
            if share is not None:
                shown = metrics.elidedText(strategy, Qt.TextElideMode.ElideRight, share)
            p.setPen(strategy_color(strategy, colors.background))
            width = metrics.horizontalAdvance(shown)
            p.drawText(
                QRectF(legend_x, bottom + 3, width + 2, line_h), Qt.AlignmentFlag.AlignLeft, shown
            )
            legend_x += width + gap
        if self.log_axis():  # said over the time labels, clear of the legend and the groups
            p.setPen(colors.axis)
            p.drawText(QRectF(0, 2, left - 4, line_h), Qt.AlignmentFlag.AlignRight, "log")
        p.end()
