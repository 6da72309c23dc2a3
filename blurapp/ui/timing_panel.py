"""Live timing: a table with one row per strategy run (objectName ``timingTable``), a plot of
the last runs' times and the "Export CLI" button.

A first run of a kernel and strategy compiles its GPU pipelines: its row says "first run" and it
stays out of the plot, which compares warm runs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from blurapp.core.strategies import compared_names
from blurapp.core.timing import Timing
from blurapp.ui.plots import TimingPlot, strategy_color

COLUMNS = (
    "strategy",
    "passes (ms)",
    "total ms",
    "wall ms",
    "Mpix/s",
    "bytes modelled",
    "GB/s",
    "timer",
    "kernel",
)


def format_bytes(n: int) -> str:
    """``12_582_912`` -> ``"12.6 MB"`` (decimal units, as GB/s is)."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def _finite(v: float, fmt: str) -> str:
    return format(v, fmt) if v == v and v not in (float("inf"), float("-inf")) else "—"


class TimingPanel(QWidget):
    """Rows keyed by strategy: a new run of a strategy replaces its row, newest figures win."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, len(COLUMNS), objectName="timingTable")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        # Pass lists grow with the strategy (transpose has four): a fixed, elided column.
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(1, 220)
        self.table.setWordWrap(False)
        self.plot = TimingPlot()
        self.export_cli = QPushButton("Export CLI", objectName="exportCli")
        self.export_cli.setToolTip("Copy the blurapp apply command that reproduces this result")
        side = QVBoxLayout()
        side.addWidget(self.plot, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.export_cli)
        buttons.addStretch(1)
        side.addLayout(buttons)
        layout = QHBoxLayout(self)
        layout.addWidget(self.table, 3)
        layout.addLayout(side, 2)
        self._rows: dict[str, tuple[Timing, str, bool]] = {}

    def record(
        self,
        strategy: str,
        timing: Timing,
        kernel_spec: str,
        *,
        plot: bool = True,
        first: bool = False,
    ) -> None:
        """Show ``timing`` as ``strategy``'s row (and add it to the plot unless ``first``: a
        first run includes compiling, and would rank the strategy by its compile time)."""
        self._rows[strategy] = (timing, kernel_spec, first)
        if plot and not first:
            self.plot.add_run(strategy, timing.total_ms)
        self._refill()

    def is_first_run(self, strategy: str) -> bool:
        return self._rows.get(strategy, (None, "", False))[2]

    def forget(self, strategy: str) -> None:
        self._rows.pop(strategy, None)
        self._refill()

    def strategies(self) -> list[str]:
        return [s for s in compared_names() if s in self._rows]

    def _refill(self) -> None:
        names = self.strategies()
        self.table.setRowCount(len(names))
        for r, name in enumerate(names):
            timing, spec, first = self._rows[name]
            passes = " · ".join(f"{p.name} {p.ms:.2f}" for p in timing.passes)
            cells = (
                name,
                passes,
                f"{timing.total_ms:.3f}",
                f"{timing.wall_ms:.1f}",
                _finite(timing.mpix_per_s, ".1f"),
                format_bytes(timing.bytes_modelled) if timing.bytes_modelled else "—",
                _finite(timing.gbps_effective, ".2f") if timing.bytes_modelled else "—",
                f"{timing.timer} · first run (compiles)" if first else timing.timer,
                spec if len(spec) <= 40 else spec[:37] + "…",
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c not in (0, 1, 7, 8):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if c == 0:
                    item.setForeground(strategy_color(name))  # as its line in the plot
                if c == 8:
                    item.setToolTip(spec)
                if c == 7 and first:
                    item.setToolTip(
                        "The first run of this kernel and strategy: its time includes compiling"
                        " the GPU pipelines. The next run shows the strategy's own time."
                    )
                if c == 1:
                    item.setToolTip(passes)
                self.table.setItem(r, c, item)
