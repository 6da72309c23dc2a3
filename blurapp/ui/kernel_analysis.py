"""What a kernel is made of: weight heat-map, factor profiles when rank 1, rank and singular
values, and what separability buys, in plain words."""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from blurapp.core.kernel import Kernel
from blurapp.ui.plots import ProfilePlot, SingularValueChart, WeightsHeatMap


def separability_text(kernel: Kernel) -> str:
    """One line on rank and taps, e.g. "rank 1: 2×17 taps instead of 17×17 — 8.5× fewer".

    Arguments:
        kernel: the kernel.

    Returns:
        The sentence shown under the singular values.
    """
    rows, cols = kernel.shape
    sep = kernel.separability
    direct = f"{cols}×{rows}"
    if rows * cols == 1:
        return f"rank {sep.rank}: a single tap, nothing to separate"
    if sep.rank == 0:
        return "rank 0: all weights are zero"
    if sep.rank == 1:
        two = f"2×{rows}" if rows == cols else f"{cols}+{rows}"
        ratio = rows * cols / (rows + cols)
        if ratio <= 1.0:
            return f"rank 1: {two} taps vs {direct}: separating saves nothing at this size"
        return f"rank 1: {two} taps instead of {direct} — {ratio:.3g}× fewer"
    pairs = sep.rank * (rows + cols)
    err = sep.relative_error(1)
    verdict = (
        f"as {sep.rank} separable pairs {pairs} taps instead of {rows * cols}"
        if pairs < rows * cols
        else f"{sep.rank} separable pairs would need {pairs} taps, more than {rows * cols} direct"
    )
    return f"rank {sep.rank}: not separable; {verdict}; best rank-1 error {err:.2%}"


class KernelAnalysis(QWidget):
    """Heat-map, factor profiles (rank 1), singular-value chart and the separability sentence."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.heatmap = WeightsHeatMap()
        self.column_profile = ProfilePlot("column factor (vertical)")
        self.row_profile = ProfilePlot("row factor (horizontal)")
        self.sv_chart = SingularValueChart()
        self.summary = QLabel(objectName="kernelSummary")
        self.summary.setWordWrap(True)
        self.rank_text = QLabel(objectName="rankText")
        self.rank_text.setWordWrap(True)
        font = self.rank_text.font()
        font.setBold(True)
        self.rank_text.setFont(font)

        profiles = QGridLayout()
        profiles.addWidget(self.row_profile, 0, 0)
        profiles.addWidget(self.column_profile, 0, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.heatmap, 3)
        layout.addLayout(profiles, 1)
        layout.addWidget(QLabel("Singular values"))
        layout.addWidget(self.sv_chart, 1)
        layout.addWidget(self.rank_text)

    def set_kernel(self, kernel: Kernel) -> None:
        rows, cols = kernel.shape
        sep = kernel.separability
        self.heatmap.set_weights(kernel.weights)
        self.summary.setText(
            f"{kernel.name}, {cols}×{rows} (W×H), sum {float(kernel.weights.sum()):.6g}"
        )
        rank1 = sep.rank == 1 and sep.column is not None and sep.row is not None
        self.row_profile.set_values(sep.row if rank1 else None)
        self.column_profile.set_values(sep.column if rank1 else None)
        self.row_profile.setVisible(rank1)
        self.column_profile.setVisible(rank1)
        self.sv_chart.set_values(sep.singular_values, sep.rank)
        self.rank_text.setText(separability_text(kernel))
