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
    QSplitter,
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
    "kernel",
    "total ms",
    "wall ms",
    "Mpix/s",
    "GB/s",
    "bytes",
    "timer",
    "passes (ms)",
)
#: Where each figure is, by name (the order above is what fits: the long ones last).
COL = {name.split(" ")[0]: i for i, name in enumerate(COLUMNS)}
KERNEL_COLUMN_PX = 130


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
        bytes_header = self.table.horizontalHeaderItem(COL["bytes"])
        bytes_header.setToolTip("Global-memory bytes the passes read and write, halo included")
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        # The kernel spec and the pass list can be long: fixed widths, elided, the whole text in
        # the tooltip; the pass list last, where it takes what is left.
        header.setSectionResizeMode(COL["kernel"], QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(COL["kernel"], KERNEL_COLUMN_PX)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
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
        right = QWidget()
        right.setLayout(side)
        side.setContentsMargins(0, 0, 0, 0)
        # The user can give the table or the plot more room.
        self.splitter = QSplitter(Qt.Orientation.Horizontal, objectName="timingSplitter")
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.splitter)
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
            self.plot.add_run(strategy, timing.total_ms, kernel_spec)
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
            values = {
                "strategy": name,
                "kernel": spec,
                "total": f"{timing.total_ms:.3f}",
                "wall": f"{timing.wall_ms:.1f}",
                "Mpix/s": _finite(timing.mpix_per_s, ".1f"),
                "GB/s": _finite(timing.gbps_effective, ".2f") if timing.bytes_modelled else "—",
                "bytes": format_bytes(timing.bytes_modelled) if timing.bytes_modelled else "—",
                "timer": f"{timing.timer} · first run (compiles)" if first else timing.timer,
                "passes": passes,
            }
            for key, text in values.items():
                c = COL[key]
                item = QTableWidgetItem(text)
                if key not in ("strategy", "kernel", "timer", "passes"):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if key == "strategy":
                    item.setForeground(strategy_color(name, self.table.palette().base().color()))
                if key in ("kernel", "passes"):
                    item.setToolTip(text)
                if key == "timer" and first:
                    item.setToolTip(
                        "The first run of this kernel and strategy: its time includes compiling"
                        " the GPU pipelines. The next run shows the strategy's own time."
                    )
                self.table.setItem(r, c, item)
