"""The "Conv layer" tab: run a Conv2D layer with each conv strategy and dtype, and compare.

The form sets the layer (shapes, stride, dilation, padding, groups, layout, strategy) and the
feature map (random data, or the loaded image with its colour channels as Cin). A run shows,
per strategy and layout, the GPU time, GFLOP/s, the memory used and the error against the
float64 reference; beside them the contiguous runs one window reads in NCHW and NHWC, and the
storage budget of the GEMM tile the engine chose. Work runs on the window's :class:`JobRunner`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from blurapp.conv.engine import DTYPES as CONV_DTYPES
from blurapp.conv.engine import GPU_STRATEGIES as CONV_GPU_STRATEGIES
from blurapp.conv.engine import STRATEGIES as CONV_STRATEGY_NAMES
from blurapp.conv.layout import spec_window_runs
from blurapp.conv.spec import LAYOUTS, ConvSpec
from blurapp.core.errors import BlurappError
from blurapp.ui.worker import JobRunner

__all__ = ["IMAGE_MAX_SIDE", "ConvLayerTab"]

CHANNEL = "conv-layer"
IMAGE_MAX_SIDE = 256  # the loaded image is subsampled to this, so a run stays interactive
_RESULT_COLUMNS = (
    "strategy",
    "layout",
    "GPU ms",
    "GFLOP/s",
    "memory",
    "column matrix",
    "error vs float64",
    "why / tiles",
)


def _image_feature_map(image: np.ndarray) -> tuple[np.ndarray, str]:
    """The image as a (1, C, H, W) float32 feature map in [0, 1], and a note on subsampling."""
    from blurapp.core.numbers import to_float

    x = to_float(image, np.float32)  # H×W×C
    step = max(1, -(-max(x.shape[:2]) // IMAGE_MAX_SIDE))
    note = f" (subsampled 1:{step})" if step > 1 else ""
    x = x[::step, ::step]
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None]), note


def _fmt_bytes(n: int) -> str:
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def run_layer_job(
    spec: ConvSpec,
    strategies: list[str],
    layouts: list[str],
    x_nchw: np.ndarray | None,
    seed: int,
    check: Callable[[], None] = lambda: None,
    dtype: str = "float32",
) -> dict[str, Any]:
    """Run ``spec`` with each strategy in each layout and compare with the reference.

    Arguments:
        spec: the layer (its ``layout`` is ignored: ``layouts`` says which to run).
        strategies, layouts: what to run; a strategy that cannot run a layer is listed with
            its reason instead of a time.
        x_nchw: the feature map (``(N, C, H, W)`` float32), or ``None`` for random data.
        seed: seed of the random weights (and data).
        check: raises when the request went stale (the job runner's ``check``).
        dtype: the conv engine's dtype (float32, fp16 or int8); strategies without it are
            listed with their reason.

    Returns:
        ``{"rows": [...], "budget": [(item, value), ...], "budget_title": str}``.
    """
    from blurapp.conv.data import random_layer, relative_error, to_layout
    from blurapp.conv.engine import CONV_STRATEGIES, ConvOptions, conv2d, get_runner, why_not
    from blurapp.conv.reference import conv2d_reference

    x, wt, bias = random_layer(
        spec.n, spec.cin, spec.h, spec.w, spec.cout, (spec.kh, spec.kw), spec.groups, seed=seed
    )
    if x_nchw is not None:
        x = x_nchw
    layer = {
        "stride": spec.stride,
        "dilation": spec.dilation,
        "padding": spec.padding,
        "groups": spec.groups,
    }
    runner = get_runner()
    rows: list[dict[str, Any]] = []
    budget_rows: list[tuple[str, str]] = []
    budget_title = ""
    for layout in layouts:
        xs = to_layout(x, layout)
        ref = conv2d_reference(xs, wt, bias, layout=layout, **layer)
        for strategy in strategies:
            check()
            row: dict[str, Any] = {"strategy": strategy, "layout": layout}
            problem = (
                None if strategy == "auto" else why_not(strategy, spec.with_layout(layout),
                                                        runner.limits, ConvOptions(dtype=dtype))
            )  # fmt: skip
            if problem:
                row["error"] = problem
                rows.append(row)
                continue
            try:
                r = conv2d(xs, wt, bias, strategy=strategy, layout=layout, repeats=2, dtype=dtype,
                           **layer)  # fmt: skip
            except BlurappError as err:  # e.g. fp16 on an adapter without shader-f16
                row["error"] = str(err)
                rows.append(row)
                continue
            row.update(
                ran=r.strategy,
                ms=r.gpu_ms,
                gflops=r.gflops,
                memory=r.memory.total_bytes,
                column=r.memory.column_bytes,
                blowup=r.memory.blowup,
                max_error=relative_error(r.y, ref),
                why=r.tiles.describe() if r.tiles is not None else r.reason,
            )
            rows.append(row)
            # the implicit GEMM's tile is the planner's conv tile itself: prefer its table
            if r.tiles is not None and (not budget_rows or r.strategy == "implicit-gemm"):
                if not budget_title.startswith("implicit-gemm"):
                    budget_rows = r.tiles.budget.rows()
                    budget_title = f"{r.strategy}: {r.tiles.describe()}"
    if not budget_rows and spec.groups == 1:
        # no GEMM ran: show the tile implicit GEMM would choose for this layer
        try:
            tiles = CONV_STRATEGIES["implicit-gemm"].tiles(spec, runner.limits)
        except BlurappError as err:
            budget_title = str(err)
        else:
            budget_rows = tiles.budget.rows()
            budget_title = f"implicit-gemm would use: {tiles.describe()}"
    elif not budget_rows:
        budget_title = "grouped layers run direct: no GEMM tile"
    return {"rows": rows, "budget": budget_rows, "budget_title": budget_title}


class ConvLayerTab(QWidget):
    """The conv-layer lab as one self-contained widget.

    Arguments:
        runner: the window's :class:`JobRunner` (the GPU is used from its one thread); a private
            one is made when ``None``.
        image: returns the loaded image (H×W or H×W×C, any blurapp dtype) or ``None``.
        parent: the Qt parent.
    """

    finished = Signal(object)  # the job's result dict, after the tables are filled
    failed = Signal(str)

    def __init__(
        self,
        runner: JobRunner | None = None,
        image: Callable[[], np.ndarray | None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("convLayerTab")
        self.runner = runner if runner is not None else JobRunner(self)
        self._image = image or (lambda: None)
        self._map_cache: tuple[int, np.ndarray, str] | None = None
        self.last_result: dict[str, Any] | None = None
        self._build()
        self.runner.finished.connect(self._on_finished)
        self.runner.failed.connect(self._on_failed)
        self._update_static()

    # -- widgets ---------------------------------------------------------------------------
    def _spin(self, name: str, lo: int, hi: int, value: int) -> QSpinBox:
        box = QSpinBox(objectName=name)
        box.setRange(lo, hi)
        box.setValue(value)
        box.valueChanged.connect(self._update_static)
        return box

    def _build(self) -> None:
        self.batch = self._spin("batch", 1, 64, 1)
        self.cin = self._spin("cin", 1, 1024, 16)
        self.height = self._spin("height", 1, 4096, 32)
        self.width = self._spin("width", 1, 4096, 32)
        self.cout = self._spin("cout", 1, 1024, 32)
        self.kernel = self._spin("kernel", 1, 15, 3)
        self.stride = self._spin("stride", 1, 8, 1)
        self.dilation = self._spin("dilation", 1, 8, 1)
        self.padding = self._spin("padding", 0, 16, 1)
        self.groups = self._spin("groups", 1, 1024, 1)
        self.seed = self._spin("seed", 0, 2**31 - 1, 0)
        self.layout_combo = QComboBox(objectName="layout")
        self.layout_combo.addItems(["both", *LAYOUTS])
        self.strategy_combo = QComboBox(objectName="strategy")
        self.strategy_combo.addItems(["all", *CONV_STRATEGY_NAMES])
        self.dtype_combo = QComboBox(objectName="dtype")
        self.dtype_combo.addItems(list(CONV_DTYPES))
        self.source_combo = QComboBox(objectName="source")
        self.source_combo.addItems(["random data", "loaded image"])
        self.source_combo.currentIndexChanged.connect(self._source_changed)
        for combo in (self.layout_combo, self.strategy_combo):
            combo.currentIndexChanged.connect(self._update_static)
        self.run_button = QPushButton("Run", objectName="runConv")
        self.run_button.clicked.connect(lambda: self.run())
        self.auto_run = QCheckBox("re-run on change", objectName="autoRun")

        form = QFormLayout()
        size_row = QHBoxLayout()
        for label, box in (("N", self.batch), ("H", self.height), ("W", self.width)):
            size_row.addWidget(QLabel(label))
            size_row.addWidget(box)
        form.addRow("feature map", self.source_combo)
        form.addRow("batch, size", size_row)
        chan_row = QHBoxLayout()
        for label, box in (("Cin", self.cin), ("Cout", self.cout), ("groups", self.groups)):
            chan_row.addWidget(QLabel(label))
            chan_row.addWidget(box)
        form.addRow("channels", chan_row)
        k_row = QHBoxLayout()
        for label, box in (
            ("K", self.kernel),
            ("stride", self.stride),
            ("dilation", self.dilation),
            ("padding", self.padding),
        ):
            k_row.addWidget(QLabel(label))
            k_row.addWidget(box)
        form.addRow("kernel", k_row)
        form.addRow("layout", self.layout_combo)
        form.addRow("strategy", self.strategy_combo)
        form.addRow("dtype", self.dtype_combo)
        form.addRow("weights seed", self.seed)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.auto_run)
        buttons.addStretch(1)
        form.addRow(buttons)

        self.shape_label = QLabel(objectName="shapeLabel")
        self.runs_label = QLabel(objectName="layoutRuns")
        self.runs_label.setWordWrap(True)
        self.status = QLabel(objectName="convStatus")
        self.status.setWordWrap(True)

        self.results = QTableWidget(0, len(_RESULT_COLUMNS), objectName="convResults")
        self.results.setHorizontalHeaderLabels(list(_RESULT_COLUMNS))
        self.results.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        self.results.horizontalHeader().setStretchLastSection(True)
        self.results.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)

        self.budget_title = QLabel(objectName="budgetTitle")
        self.budget_title.setWordWrap(True)
        self.budget = QTableWidget(0, 2, objectName="tileBudget")
        self.budget.setHorizontalHeaderLabels(["item", "bytes"])
        self.budget.horizontalHeader().setStretchLastSection(True)
        self.budget.verticalHeader().setVisible(False)
        self.budget.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)

        left = QVBoxLayout()
        box = QGroupBox("Layer")
        box.setLayout(form)
        left.addWidget(box)
        runs_box = QGroupBox("One window reads (contiguous runs)")
        rl = QVBoxLayout(runs_box)
        rl.addWidget(self.shape_label)
        rl.addWidget(self.runs_label)
        left.addWidget(runs_box)
        left.addStretch(1)
        right = QVBoxLayout()
        right.addWidget(self.status)
        right.addWidget(self.results, 3)
        budget_box = QGroupBox("Tile storage budget (same accounting as `blurapp conv plan`)")
        bl = QVBoxLayout(budget_box)
        bl.addWidget(self.budget_title)
        bl.addWidget(self.budget)
        right.addWidget(budget_box, 2)
        top = QHBoxLayout(self)
        top.addLayout(left, 0)
        top.addLayout(right, 1)

    # -- state -------------------------------------------------------------------------------
    def _source_changed(self) -> None:
        use_image = self.source_combo.currentIndex() == 1
        image = self._image() if use_image else None
        if use_image and image is None:
            self.status.setText("No image is loaded: using random data.")
        boxes = (self.batch, self.cin, self.height, self.width)
        if image is not None:
            x, _ = self._feature_map()
            assert x is not None
            for box, value in zip(boxes, x.shape, strict=True):
                box.blockSignals(True)  # the image sets them: no re-run per box
                box.setMaximum(max(box.maximum(), value))
                box.setValue(value)
                box.blockSignals(False)
        for box in boxes:
            box.setEnabled(image is None)
        self._update_static()

    def _feature_map(self) -> tuple[np.ndarray | None, str]:
        if self.source_combo.currentIndex() != 1:
            return None, ""
        image = self._image()
        if image is None:
            return None, ""
        # the form asks for the map on every change: convert each image once
        if self._map_cache is None or self._map_cache[0] != id(image):
            x, note = _image_feature_map(image)
            self._map_cache = (id(image), x, note)
        _, x, note = self._map_cache
        return x, f"the loaded image{note} as a {x.shape[1]}-channel feature map"

    def spec(self) -> ConvSpec:
        """The layer the form describes (the loaded image sets N, Cin, H and W)."""
        n, cin, h, w = (
            self.batch.value(),
            self.cin.value(),
            self.height.value(),
            self.width.value(),
        )
        x, _ = self._feature_map()
        if x is not None:
            n, cin, h, w = x.shape
        layout = self.layout_combo.currentText()
        k = self.kernel.value()
        return ConvSpec(
            n, cin, h, w, self.cout.value(), k, k, self.stride.value(), self.dilation.value(),
            self.padding.value(), self.groups.value(), "nchw" if layout == "both" else layout,
        )  # fmt: skip

    def _update_static(self) -> None:
        """Shapes and layout run counts: no GPU, updated as the form changes."""
        try:
            spec = self.spec()
        except BlurappError as err:
            self.shape_label.setText("")
            self.runs_label.setText("")
            self.status.setText(str(err))
            self.run_button.setEnabled(False)
            return
        self.run_button.setEnabled(True)
        self.shape_label.setText(
            f"{spec.describe()} → {spec.oh}×{spec.ow}; {spec.flops / 1e6:.2f} MFLOP"
        )
        runs = spec_window_runs(spec)
        self.runs_label.setText("\n".join(f"{k.upper()}: {v.describe()}" for k, v in runs.items()))
        if self.auto_run.isChecked():
            self.run(delay_ms=300)

    # -- running -----------------------------------------------------------------------------
    def run(self, *, delay_ms: int = 0) -> None:
        """Run the layer as the form says, off the UI thread; results arrive in the tables."""
        try:
            spec = self.spec()
            x, note = self._feature_map()
        except BlurappError as err:
            self.status.setText(str(err))
            return
        strategy = self.strategy_combo.currentText()
        strategies = list(CONV_GPU_STRATEGIES) if strategy == "all" else [strategy]
        layout = self.layout_combo.currentText()
        layouts = list(LAYOUTS) if layout == "both" else [layout]
        seed = self.seed.value()
        dtype = self.dtype_combo.currentText()
        self.status.setText(f"Running {spec.describe()}{'; ' + note if note else ''}…")

        def job(check: Callable[[], None], _report: Callable[[object], None]) -> dict[str, Any]:
            return run_layer_job(spec, strategies, layouts, x, seed, check, dtype)

        self.runner.submit(CHANNEL, job, delay_ms=delay_ms)

    def _on_finished(self, channel: str, result: object) -> None:
        if channel != CHANNEL or not isinstance(result, dict):
            return
        self.last_result = result
        rows = result["rows"]
        self.results.setRowCount(len(rows))
        for i, row in enumerate(rows):
            strategy = row["strategy"]
            if row.get("ran") and row["ran"] != strategy:
                strategy = f"{strategy} → {row['ran']}"
            if "error" in row:
                cells = [strategy, row["layout"].upper(), "—", "—", "—", "—", "—", row["error"]]
            else:
                column = (
                    f"{_fmt_bytes(row['column'])} ({row['blowup']:.1f}×)" if row["column"] else "—"
                )
                cells = [
                    strategy,
                    row["layout"].upper(),
                    f"{row['ms']:.3f}",
                    f"{row['gflops']:.3f}",
                    _fmt_bytes(row["memory"]),
                    column,
                    f"{row['max_error']:.1e}",
                    row["why"],
                ]
            for j, text in enumerate(cells):
                self.results.setItem(i, j, QTableWidgetItem(text))
        self.budget_title.setText(result["budget_title"])
        self.budget.setRowCount(len(result["budget"]))
        for i, (item, value) in enumerate(result["budget"]):
            self.budget.setItem(i, 0, QTableWidgetItem(item))
            self.budget.setItem(i, 1, QTableWidgetItem(value))
        ran = [r for r in rows if "ms" in r]
        if ran:
            best = min(ran, key=lambda r: r["ms"])
            self.status.setText(
                f"Fastest: {best['strategy']} {best['layout'].upper()} {best['ms']:.3f} ms "
                f"({best['gflops']:.3f} GFLOP/s); max error "
                f"{max(r['max_error'] for r in ran):.1e} vs the float64 reference."
            )
        else:
            self.status.setText("No strategy could run this layer (see the table).")
        self.finished.emit(result)

    def _on_failed(self, channel: str, message: str) -> None:
        if channel != CHANNEL:
            return
        self.status.setText(message)
        self.failed.emit(message)
