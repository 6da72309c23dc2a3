"""The "Run" box: strategy, tile, border, range, alpha, output type, linear light and convolve,
and a line on the last run. Each control writes the :class:`FilterModel` and shows what it holds.

The controls keep no state of their own: a choice goes to the model's setter, and the model's
:attr:`~FilterModel.spec_changed` sets every control back from the spec. A choice the model
refuses (a strategy that cannot run the kernel) snaps back and says why on the info line.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel

from blurapp.core.borders import BORDER_MODES
from blurapp.core.filterspec import ALPHA_MODES, DTYPES, FilterSpec
from blurapp.core.numbers import RANGE_MODES
from blurapp.core.planner import TILE_SIDES
from blurapp.core.strategies import STRATEGIES, get_info
from blurapp.ui.jobs import LiveResult
from blurapp.ui.model import FilterModel

__all__ = ["RunPanel"]

#: Border choices beyond the five modes; another constant (from settings or code) is added to
#: the list when the model holds it.
EXTRA_BORDERS = ("constant=0.5",)
ERROR_STYLE = "color: #b2182b;"
ALPHA_TIPS = {
    "premultiply": "Filter colour weighted by alpha: no dark or coloured fringes at edges",
    "straight": "Filter colour and alpha separately (fringes where alpha changes)",
}


class RunPanel(QGroupBox):
    """The Run group box, bound to ``model``."""

    def __init__(self, model: FilterModel, parent=None) -> None:
        super().__init__("Run", parent)
        self.model = model

        self.strategy_combo = QComboBox(objectName="strategyCombo")
        for i, info in enumerate(STRATEGIES.values()):
            self.strategy_combo.addItem(info.name)
            self.strategy_combo.setItemData(i, info.summary, Qt.ItemDataRole.ToolTipRole)
        self.strategy_combo.setToolTip("auto lets the planner choose, and says why")
        self.tile_combo = QComboBox(objectName="tileCombo")
        self.tile_combo.addItem("auto", None)
        for side in sorted(TILE_SIDES):
            self.tile_combo.addItem(f"{side}×{side}", side)
        self.tile_combo.setToolTip("Tile side T for the tiled strategy (halo-tiled workgroups)")
        self.border_combo = QComboBox(objectName="borderCombo")
        self.border_combo.addItems([*BORDER_MODES, *EXTRA_BORDERS])
        self.border_combo.setToolTip("How the image extends beyond its edges")
        self.range_combo = QComboBox(objectName="rangeCombo")
        self.range_combo.addItems(list(RANGE_MODES))
        self.range_combo.setToolTip(
            "How signed results (Sobel, emboss) map into the image's pixel range"
        )
        self.alpha_combo = QComboBox(objectName="alphaCombo")
        for i, mode in enumerate(ALPHA_MODES):
            self.alpha_combo.addItem(mode)
            self.alpha_combo.setItemData(i, ALPHA_TIPS.get(mode, ""), Qt.ItemDataRole.ToolTipRole)
        self.alpha_combo.setToolTip("Images with transparency: premultiplied alpha or straight")
        self.dtype_combo = QComboBox(objectName="dtypeCombo")
        self.dtype_combo.addItem("as input", None)
        for name in DTYPES:
            self.dtype_combo.addItem(name, name)
        self.dtype_combo.setToolTip(
            "Pixel type of the result; a saved file holds it where its format can"
        )
        self.linear_check = QCheckBox("Linear light", objectName="linearCheck")
        self.linear_check.setToolTip("Filter in linear light: sRGB decoded before, encoded after")
        self.convolve_check = QCheckBox("Convolve", objectName="convolveCheck")
        self.convolve_check.setToolTip("Flip the kernel: convolution instead of correlation")
        self.run_info = QLabel(objectName="runInfo")
        self.run_info.setWordWrap(True)
        self.run_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        checks = QHBoxLayout()
        checks.addWidget(self.linear_check)
        checks.addWidget(self.convolve_check)
        checks.addStretch(1)
        form = QFormLayout(self)
        form.addRow("Strategy", self.strategy_combo)
        form.addRow("Tile", self.tile_combo)
        form.addRow("Border", self.border_combo)
        form.addRow("Range", self.range_combo)
        form.addRow("Alpha", self.alpha_combo)
        form.addRow("Output", self.dtype_combo)
        form.addRow(checks)
        form.addRow(self.run_info)

        self.show_spec(model.spec)
        model.spec_changed.connect(self.show_spec)
        # Each control and the model's setter it writes (combos by text, or by item data).
        for combo, setter, by_data in (
            (self.strategy_combo, model.set_strategy, False),
            (self.tile_combo, model.set_tile, True),
            (self.border_combo, model.set_border, False),
            (self.range_combo, model.set_range, False),
            (self.alpha_combo, model.set_alpha, False),
            (self.dtype_combo, model.set_dtype, True),
        ):
            combo.currentIndexChanged.connect(
                lambda _i, c=combo, s=setter, d=by_data: self._apply(
                    s, c.currentData() if d else c.currentText()
                )
            )
        self.linear_check.toggled.connect(lambda on: self._apply(model.set_linear, on))
        self.convolve_check.toggled.connect(lambda on: self._apply(model.set_convolve, on))

    def _apply(self, setter, value: object) -> None:
        problem = setter(value)
        if problem:
            self.show_spec(self.model.spec)  # the refused choice snaps back
            self.show_problem(problem)

    def show_spec(self, spec: FilterSpec) -> None:
        """Set every control from ``spec`` (without writing back to the model)."""
        border = spec.border.name
        if self.border_combo.findText(border) < 0:
            self.border_combo.blockSignals(True)
            self.border_combo.addItem(border)
            self.border_combo.blockSignals(False)
        tile = spec.tile if spec.tile is not None else self.model.tile_choice
        values = (
            (self.strategy_combo, self.strategy_combo.findText(spec.strategy)),
            (self.tile_combo, 0 if tile is None else self.tile_combo.findData(tile)),
            (self.border_combo, self.border_combo.findText(border)),
            (self.range_combo, self.range_combo.findText(spec.range_mode)),
            (self.alpha_combo, self.alpha_combo.findText(spec.alpha)),
            (self.dtype_combo, 0 if spec.dtype is None else self.dtype_combo.findData(spec.dtype)),
        )
        for combo, index in values:
            combo.blockSignals(True)
            combo.setCurrentIndex(max(index, 0))
            combo.blockSignals(False)
        for check, on in ((self.linear_check, spec.linear), (self.convolve_check, spec.convolve)):
            check.blockSignals(True)
            check.setChecked(on)
            check.blockSignals(False)
        self.tile_combo.setEnabled(get_info(spec.strategy).takes_tile)

    def show_result(self, result: LiveResult) -> None:
        """The info line for a finished run: strategy, GPU time, passes and auto's reason."""
        t = result.timing
        passes = ", ".join(f"{p.name} {p.ms:.2f} ms" for p in t.passes)
        why = f" — auto: {result.reason}" if result.reason else ""
        first = (
            f" — <i>first run: {t.compile_ms:.0f} ms compiling GPU pipelines, and the passes "
            "include the driver's own compile</i>"
            if getattr(result, "first_run", False)
            else ""
        )
        self.run_info.setStyleSheet("")
        self.run_info.setText(
            f"<b>{result.strategy}</b>: {t.total_ms:.2f} ms ({t.timer}; {passes}); "
            f"{t.wall_ms:.0f} ms with transfers{first}{why}"
        )

    def show_problem(self, message: str, *, prefix: str = "Not changed") -> None:
        """One line in red on the info line; the last result stays on screen."""
        self.run_info.setStyleSheet(ERROR_STYLE)
        self.run_info.setText(f"{prefix}: {message}")
