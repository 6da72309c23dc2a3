"""The main window: image, kernel designer, strategy and border pickers, comparisons and timing.

Every filter runs through :mod:`blurapp.engine` on the worker thread (:class:`JobRunner`); the
window only decides *what* to run and shows what comes back.
"""

from __future__ import annotations

import importlib.resources
import itertools
import os
import shlex
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QByteArray, QSettings, Qt, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QDesktopServices,
    QDragEnterEvent,
    QDropEvent,
    QKeySequence,
    QUndoCommand,
    QUndoStack,
)
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from blurapp import engine
from blurapp.core.borders import BORDER_MODES, Border
from blurapp.core.errors import BlurappError, KernelSpecError
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import RANGE_MODES, from_float, to_float
from blurapp.core.planner import TILE_SIDES
from blurapp.io import ImageData, output_dtype, read_image, save_kernel, write_image
from blurapp.ui.compare import BORDERS_TAB, STRATEGIES_TAB, CompareView
from blurapp.ui.conv_tab import ConvLayerTab
from blurapp.ui.convert import to_qimage
from blurapp.ui.jobs import (
    BordersResult,
    LiveRequest,
    LiveResult,
    StrategiesResult,
    run_borders,
    run_live,
    run_strategies,
)
from blurapp.ui.kernel_analysis import KernelAnalysis
from blurapp.ui.kernel_designer import KernelDesigner
from blurapp.ui.kernel_editor import KernelGridEditor
from blurapp.ui.timing_panel import TimingPanel
from blurapp.ui.worker import JobRunner

DEFAULT_SPEC = "gaussian:sigma=2"
MAX_RECENT = 8
_IMAGE_KEYS = itertools.count(1)  # see MainWindow.image_key
LIVE_DEBOUNCE_MS = 40
COMPARE_DEBOUNCE_MS = 150
PARAM_MERGE_S = 1.0  # spin-box steps within this many seconds are one undo step
SAMPLE = ("samples", "astronaut.png")
SAVE_FILTERS = {
    "png": "PNG image (*.png)",
    "jpg": "JPEG image (*.jpg *.jpeg)",
    "tiff": "TIFF image (*.tif *.tiff)",
    "webp": "WebP image (*.webp)",
    "bmp": "BMP image (*.bmp)",
    "npy": "NumPy array (*.npy)",
}
OPEN_FILTER = "Images (*.png *.jpg *.jpeg *.tif *.tiff *.webp *.bmp *.npy);;All files (*)"


def sample_path() -> Path:
    """The bundled sample photo (public domain; see assets/samples/LICENSES.md)."""
    res = importlib.resources.files("blurapp.assets").joinpath(*SAMPLE)
    return Path(str(res))


class SetKernelCommand(QUndoCommand):
    """One kernel edit; consecutive parameter tweaks of one family merge into one step."""

    ID = 1

    def __init__(self, window: MainWindow, old: Kernel, new: Kernel, source: str) -> None:
        super().__init__(f"kernel {new.spec if len(new.spec) < 40 else new.name}")
        self.window, self.old, self.new, self.source = window, old, new, source
        self.stamp = time.monotonic()
        self._first = True

    def id(self) -> int:
        return self.ID

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt override)
        if not isinstance(other, SetKernelCommand):
            return False
        if not (self.source == other.source == "params" and self.new.name == other.new.name):
            return False
        if other.stamp - self.stamp > PARAM_MERGE_S:
            return False
        self.new, self.stamp = other.new, other.stamp
        self.setText(other.text())
        return True

    def redo(self) -> None:
        # The first redo of a typed edit must not rewrite what the user is typing.
        self.window.apply_kernel(self.new, set_text=not (self._first and self.source == "typed"))
        self._first = False

    def undo(self) -> None:
        self.window.apply_kernel(self.old, set_text=True)


class MainWindow(QMainWindow):
    """The blurapp desktop window."""

    result_ready = Signal()  # a live result is on screen
    strategies_ready = Signal()
    borders_ready = Signal()
    adapter_ready = Signal(str)
    error_shown = Signal(str)

    def __init__(self, settings: QSettings | None = None, *, probe_adapter: bool = True) -> None:
        super().__init__()
        self.setWindowTitle("blurapp")
        self.setObjectName("mainWindow")
        self.setAcceptDrops(True)
        self.settings = settings or QSettings()
        self.runner = JobRunner(self)
        self.undo_stack = QUndoStack(self)
        self.image: np.ndarray | None = None
        # Names the pixels of self.image for the GPU: a new one per image shown, so that a rerun
        # with other settings does not upload the same image again.
        self.image_key = 0
        self.image_data: ImageData | None = None
        self.image_path: Path | None = None
        self.before_qimage = None
        self.result: LiveResult | None = None
        self.kernel = Kernel.parse(DEFAULT_SPEC)
        self.last_error = ""
        self.live_error = ""
        self.adapter_text = ""
        self.is_software_adapter = False
        self._strategies_dirty = True
        self._borders_dirty = True
        self._dialog: QMessageBox | None = None

        self._build_widgets()
        self._build_actions()
        self._connect()
        self._restore_settings()
        self.runner.finished.connect(self._job_finished)
        self.runner.failed.connect(self._job_failed)
        self.runner.progress.connect(self._job_progress)
        self.runner.busy_changed.connect(self._busy_changed)
        if probe_adapter:
            self.runner.submit("adapter", _probe_adapter)

    # ------------------------------------------------------------------------------ building
    def _build_widgets(self) -> None:
        self.compare = CompareView()
        self.compare.addTab(
            ConvLayerTab(runner=self.runner, image=lambda: self.image), "Conv layer"
        )
        self.setCentralWidget(self.compare)

        self.designer = KernelDesigner()
        self.strategy_combo = QComboBox(objectName="strategyCombo")
        self.strategy_combo.addItems(list(engine.STRATEGIES))
        self.strategy_combo.setToolTip("auto lets the planner choose, and says why")
        self.tile_combo = QComboBox(objectName="tileCombo")
        self.tile_combo.addItem("auto", None)
        for side in sorted(TILE_SIDES):
            self.tile_combo.addItem(f"{side}×{side}", side)
        self.tile_combo.setToolTip("Tile side T for the tiled strategy (halo-tiled workgroups)")
        self.border_combo = QComboBox(objectName="borderCombo")
        self.border_combo.addItems([*BORDER_MODES, "constant=0.5"])
        self.range_combo = QComboBox(objectName="rangeCombo")
        self.range_combo.addItems(list(RANGE_MODES))
        self.range_combo.setToolTip(
            "How signed results (Sobel, emboss) map into the image's pixel range"
        )
        self.run_info = QLabel(objectName="runInfo")
        self.run_info.setWordWrap(True)
        self.run_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        run_box = QGroupBox("Run")
        form = QFormLayout(run_box)
        form.addRow("Strategy", self.strategy_combo)
        form.addRow("Tile", self.tile_combo)
        form.addRow("Border", self.border_combo)
        form.addRow("Range", self.range_combo)
        form.addRow(self.run_info)

        kernel_box = QGroupBox("Kernel")
        kb = QVBoxLayout(kernel_box)
        kb.addWidget(self.designer)

        self.analysis = KernelAnalysis()
        self.grid_editor = KernelGridEditor()
        self.kernel_tabs = QTabWidget(objectName="kernelTabs")
        self.kernel_tabs.addTab(self.analysis, "Weights && rank")
        self.kernel_tabs.addTab(self.grid_editor, "Grid")

        side = QWidget()
        sl = QVBoxLayout(side)
        sl.setContentsMargins(4, 4, 4, 4)
        sl.addWidget(kernel_box)
        sl.addWidget(run_box)
        sl.addWidget(self.kernel_tabs, 1)
        # On a short screen the designer scrolls instead of squeezing its charts together.
        side_scroll = QScrollArea()
        side_scroll.setWidget(side)
        side_scroll.setWidgetResizable(True)
        side_scroll.setFrameShape(QFrame.Shape.NoFrame)
        side_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.kernel_dock = QDockWidget("Kernel designer", self, objectName="kernelDock")
        self.kernel_dock.setWidget(side_scroll)
        self.kernel_dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.kernel_dock)
        # The designer is tall: let it own the whole right edge, timing sits under the images.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)

        self.timing = TimingPanel()
        self.timing_dock = QDockWidget("Timing", self, objectName="timingDock")
        self.timing_dock.setWidget(self.timing)
        self.timing_dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.timing_dock)

        self.adapter_label = QLabel("Adapter: probing…", objectName="adapterLabel")
        self.image_label = QLabel()
        self.busy_label = QLabel()
        self.statusBar().addWidget(self.adapter_label, 1)
        self.statusBar().addPermanentWidget(self.busy_label)
        self.statusBar().addPermanentWidget(self.image_label)

    def _build_actions(self) -> None:
        def action(text: str, slot, shortcut=None, tip: str = "") -> QAction:
            act = QAction(text, self)
            if shortcut is not None:
                act.setShortcut(shortcut)
            if tip:
                act.setStatusTip(tip)
            act.triggered.connect(slot)
            return act

        self.open_action = action("&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.save_action = action("&Save result…", self.save_dialog, QKeySequence.StandardKey.Save)
        self.copy_action = action("&Copy result", self.copy_result, QKeySequence.StandardKey.Copy)
        self.export_action = action(
            "&Export CLI", self.export_cli, "Ctrl+E", "Copy the blurapp apply command"
        )
        self.quit_action = action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        self.fit_action = action("&Fit", lambda: self.compare.current_view().fit(), "Ctrl+0")
        self.one_action = action(
            "&1:1", lambda: self.compare.current_view().actual_size(), "Ctrl+1"
        )
        self.zoom_in_action = action(
            "Zoom &in",
            lambda: self.compare.current_view().zoom_by(1.25),
            QKeySequence.StandardKey.ZoomIn,
        )
        self.zoom_out_action = action(
            "Zoom &out",
            lambda: self.compare.current_view().zoom_by(0.8),
            QKeySequence.StandardKey.ZoomOut,
        )
        self.load_kernel_action = action("&Load kernel JSON…", self.load_kernel_dialog)
        self.save_kernel_action = action("Save &kernel JSON…", self.save_kernel_dialog)
        self.undo_action = self.undo_stack.createUndoAction(self, "&Undo kernel edit")
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.redo_action = self.undo_stack.createRedoAction(self, "&Redo kernel edit")
        self.redo_action.setShortcut(QKeySequence.StandardKey.Redo)

        menu = self.menuBar().addMenu("&File")
        menu.addAction(self.open_action)
        self.recent_menu = menu.addMenu("Open &recent")
        menu.addAction(self.save_action)
        menu.addAction(self.copy_action)
        menu.addSeparator()
        menu.addAction(self.load_kernel_action)
        menu.addAction(self.save_kernel_action)
        menu.addSeparator()
        menu.addAction(self.quit_action)
        menu = self.menuBar().addMenu("&Edit")
        menu.addAction(self.undo_action)
        menu.addAction(self.redo_action)
        menu.addSeparator()
        menu.addAction(self.export_action)
        menu = self.menuBar().addMenu("&View")
        for act in (self.fit_action, self.one_action, self.zoom_in_action, self.zoom_out_action):
            menu.addAction(act)
        menu.addSeparator()
        menu.addAction(self.kernel_dock.toggleViewAction())
        menu.addAction(self.timing_dock.toggleViewAction())
        menu = self.menuBar().addMenu("&Help")
        menu.addAction(action("&About blurapp", self.about))
        menu.addAction(action("Sample &licences", self.show_licences))

        bar = self.addToolBar("Main")
        bar.setObjectName("mainToolbar")
        for act in (
            self.open_action,
            self.save_action,
            self.copy_action,
            None,
            self.undo_action,
            self.redo_action,
            None,
            self.fit_action,
            self.one_action,
            None,
            self.export_action,
        ):
            if act is None:
                bar.addSeparator()
            else:
                bar.addAction(act)

    def _connect(self) -> None:
        self.designer.spec_edited.connect(self.request_spec)
        self.grid_editor.weights_edited.connect(self._grid_edited)
        self.grid_editor.offset_toggled.connect(self._offset_toggled)
        self.grid_editor.load_requested.connect(self.load_kernel_dialog)
        self.grid_editor.save_requested.connect(self.save_kernel_dialog)
        self.strategy_combo.currentTextChanged.connect(self._settings_changed)
        self.tile_combo.currentIndexChanged.connect(self._settings_changed)
        self.border_combo.currentTextChanged.connect(self._settings_changed)
        self.range_combo.currentTextChanged.connect(self._range_changed)
        self.compare.currentChanged.connect(lambda _i: self._maybe_run_comparisons())
        self.compare.borders.settings_changed.connect(self._borders_settings_changed)
        self.timing.export_cli.clicked.connect(self.export_cli)

    def _restore_settings(self) -> None:
        s = self.settings
        geometry = s.value("window/geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:
            # First start: 1440×920, but never larger than 90 % of the screen (a laptop's
            # 1366×768 must show the whole window), the docks scaled alike.
            width, height = 1440, 920
            screen = self.screen() or QApplication.primaryScreen()
            if screen is not None:
                available = screen.availableGeometry()
                width = min(width, int(available.width() * 0.9))
                height = min(height, int(available.height() * 0.9))
            self.resize(width, height)
            self.resizeDocks([self.kernel_dock], [width * 440 // 1440], Qt.Orientation.Horizontal)
            self.resizeDocks([self.timing_dock], [height * 230 // 920], Qt.Orientation.Vertical)
        state = s.value("window/state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
        for key, combo in (
            ("run/strategy", self.strategy_combo),
            ("run/border", self.border_combo),
            ("run/range", self.range_combo),
        ):
            value = s.value(key)
            if isinstance(value, str) and combo.findText(value) >= 0:
                combo.setCurrentText(value)
        spec = s.value("kernel/last", DEFAULT_SPEC)
        try:
            kernel = Kernel.parse(str(spec))
        except BlurappError:
            kernel = Kernel.parse(DEFAULT_SPEC)
        self.apply_kernel(kernel, set_text=True)
        self._update_tile_enabled()
        self._refresh_recent_menu()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("kernel/last", self.kernel.spec)
        s.setValue("run/strategy", self.strategy_combo.currentText())
        s.setValue("run/border", self.border_combo.currentText())
        s.setValue("run/range", self.range_combo.currentText())
        s.sync()
        for channel in ("live", "strategies", "borders", "adapter"):
            self.runner.cancel(channel)
        self.runner.wait_idle(10000)
        super().closeEvent(event)

    # ------------------------------------------------------------------------------ images
    def open_sample(self) -> bool:
        return self.open_path(sample_path())

    def open_path(self, path: str | os.PathLike[str]) -> bool:
        """Open an image file; a failure is a dialog and the current image stays."""
        path = Path(path)
        try:
            data = read_image(path)
        except BlurappError as err:
            self.show_error(str(err))
            return False
        self.set_image(data.pixels, data=data, path=path)
        self.settings.setValue("files/lastFolder", str(path.parent))
        self._add_recent(path)
        return True

    def set_image(
        self, pixels: np.ndarray, *, data: ImageData | None = None, path: Path | None = None
    ) -> None:
        """Show a new input image and filter it."""
        self.image = np.ascontiguousarray(pixels)
        self.image_key = next(_IMAGE_KEYS)
        self.image_data = data or ImageData(self.image)
        self.image_path = path
        self.result = None
        self.before_qimage = to_qimage(self.image)
        self.compare.split_view.set_before(self.before_qimage)
        self.compare.result_view.set_image(None)
        self.compare.split_view.set_image(None)
        self.compare.result_view.fit()
        self.compare.split_view.fit()
        h, w = self.image.shape[:2]
        channels = 1 if self.image.ndim == 2 else self.image.shape[2]
        name = path.name if path else "image"
        self.setWindowTitle(f"{name} — blurapp")
        self.image_label.setText(f"{name}  {w}×{h}×{channels} {self.image.dtype}")
        self._invalidate()

    def open_dialog(self) -> None:
        folder = str(self.settings.value("files/lastFolder", str(Path.home())))
        path, _ = QFileDialog.getOpenFileName(self, "Open image", folder, OPEN_FILTER)
        if path:
            self.open_path(path)

    def _add_recent(self, path: Path) -> None:
        recent = [p for p in self._recent() if p != str(path)]
        recent.insert(0, str(path))
        self.settings.setValue("files/recent", recent[:MAX_RECENT])
        self._refresh_recent_menu()

    def _recent(self) -> list[str]:
        value = self.settings.value("files/recent", [])
        if isinstance(value, str):
            return [value]
        return [str(v) for v in (value or [])]

    def _refresh_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self._recent()
        for p in recent:
            act = self.recent_menu.addAction(p)
            act.triggered.connect(lambda _checked=False, p=p: self.open_path(p))
        self.recent_menu.setEnabled(bool(recent))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt override)
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt override)
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_path(url.toLocalFile())
                event.acceptProposedAction()
                return

    def save_dialog(self) -> None:
        if self.result is None:
            self.show_error("There is no result to save yet.")
            return
        folder = str(self.settings.value("files/lastFolder", str(Path.home())))
        stem = self.image_path.stem if self.image_path else "image"
        suggested = str(Path(folder) / f"{stem}_filtered.png")
        path, _ = QFileDialog.getSaveFileName(
            self, "Save result", suggested, ";;".join(SAVE_FILTERS.values())
        )
        if path:
            self.save_result(path)

    def save_result(self, path: str | os.PathLike[str]) -> bool:
        """Write the current result (in a type the format holds), keeping ICC and EXIF."""
        if self.result is None:
            self.show_error("There is no result to save yet.")
            return False
        try:
            from blurapp.io import format_from_path, with_pixels

            fmt = format_from_path(path)
            pixels = self.result.image
            target = output_dtype(pixels.dtype, fmt)
            if target != pixels.dtype:
                pixels = from_float(to_float(pixels), target, squeeze=pixels.ndim == 2)
            base = self.image_data or ImageData(pixels)
            write_image(path, with_pixels(base, pixels), fmt=fmt, overwrite=True)
        except BlurappError as err:
            self.show_error(str(err))
            return False
        self.settings.setValue("files/lastFolder", str(Path(path).parent))
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def copy_result(self) -> None:
        if self.result is None:
            self.show_error("There is no result to copy yet.")
            return
        QApplication.clipboard().setImage(self.result.qimage)
        self.statusBar().showMessage("Result copied to the clipboard", 3000)

    # ------------------------------------------------------------------------------ kernel
    def request_spec(self, text: str, source: str = "typed") -> bool:
        """Try a spec from the designer; invalid text is shown inline and changes nothing."""
        try:
            kernel = Kernel.parse(text)
        except BlurappError as err:
            self.designer.show_error(str(err))
            return False
        if kernel == self.kernel:
            self.designer.show_kernel(kernel, set_text=source != "typed")
            return True
        self.set_kernel(kernel, source)
        return True

    def set_kernel(self, kernel: Kernel, source: str = "code") -> None:
        """Make ``kernel`` current as one undoable step."""
        if kernel == self.kernel:
            return
        self.undo_stack.push(SetKernelCommand(self, self.kernel, kernel, source))

    def apply_kernel(self, kernel: Kernel, *, set_text: bool = True) -> None:
        """Show ``kernel`` everywhere and filter with it (the undo commands call this)."""
        self.kernel = kernel
        self.designer.show_kernel(kernel, set_text=set_text)
        self.grid_editor.set_weights(kernel.weights)
        self.analysis.set_kernel(kernel)
        self.settings.setValue("kernel/last", kernel.spec)
        self._invalidate()

    def _grid_edited(self, weights: np.ndarray) -> None:
        try:
            kernel = Kernel.from_weights(weights)
        except KernelSpecError as err:
            self.designer.show_error(str(err))
            return
        self.set_kernel(kernel, "grid")

    def _offset_toggled(self, on: bool) -> None:
        if on:
            self.range_combo.setCurrentText("offset")
        elif self.range_combo.currentText() == "offset":
            self.range_combo.setCurrentText("clamp")

    def _range_changed(self, mode: str) -> None:
        self.grid_editor.offset.blockSignals(True)
        self.grid_editor.offset.setChecked(mode == "offset")
        self.grid_editor.offset.blockSignals(False)
        self._settings_changed()

    def load_kernel_dialog(self) -> None:
        folder = str(self.settings.value("files/lastKernelFolder", str(Path.home())))
        path, _ = QFileDialog.getOpenFileName(self, "Load kernel", folder, "Kernel JSON (*.json)")
        if path:
            self.load_kernel(path)

    def load_kernel(self, path: str | os.PathLike[str]) -> bool:
        try:
            kernel = Kernel.load(path)
        except BlurappError as err:
            self.show_error(str(err))
            return False
        self.settings.setValue("files/lastKernelFolder", str(Path(path).parent))
        self.set_kernel(kernel, "file")
        return True

    def save_kernel_dialog(self) -> None:
        folder = str(self.settings.value("files/lastKernelFolder", str(Path.home())))
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Save kernel",
            str(Path(folder) / f"{self.kernel.name}.json"),
            "Kernel JSON (*.json)",
        )
        if path:
            self.save_kernel(path)

    def save_kernel(self, path: str | os.PathLike[str]) -> bool:
        try:
            save_kernel(self.kernel, path, overwrite=True)  # the dialog asked
        except BlurappError as err:
            self.show_error(str(err))
            return False
        self.settings.setValue("files/lastKernelFolder", str(Path(path).parent))
        self.statusBar().showMessage(f"Saved kernel to {path}", 5000)
        return True

    # ------------------------------------------------------------------------------ running
    def live_request(self) -> LiveRequest:
        strategy = self.strategy_combo.currentText()
        tile = self.tile_combo.currentData() if strategy == "tiled" else None
        return LiveRequest(
            self.kernel,
            self.border_combo.currentText(),
            strategy,
            tile,
            self.range_combo.currentText(),
        )

    def _update_tile_enabled(self) -> None:
        self.tile_combo.setEnabled(self.strategy_combo.currentText() == "tiled")

    def _settings_changed(self, *_args: object) -> None:
        self._update_tile_enabled()
        self._invalidate()

    def _borders_settings_changed(self) -> None:
        self._borders_dirty = True
        self._maybe_run_comparisons()

    def _invalidate(self) -> None:
        """Something the result depends on changed: rerun the live filter and, lazily, the
        comparison on show."""
        self._strategies_dirty = True
        self._borders_dirty = True
        self.schedule_live()
        self._maybe_run_comparisons()

    def schedule_live(self, delay_ms: int = LIVE_DEBOUNCE_MS) -> None:
        if self.image is None:
            return
        req = self.live_request()
        problem = engine.why_not(req.strategy, req.kernel)
        if problem:
            # Keep the last result on screen and say why, inline: the user is mid-edit.
            self.runner.cancel("live")
            self._show_live_error(problem)
            return
        image, key = self.image, self.image_key
        self.runner.submit(
            "live",
            lambda check, report: run_live(image, req, check, report, key),
            delay_ms=delay_ms,
        )

    def _maybe_run_comparisons(self) -> None:
        if self.image is None:
            return
        image, key, kernel = self.image, self.image_key, self.kernel
        border, rng = self.border_combo.currentText(), self.range_combo.currentText()
        tab = self.compare.currentIndex()
        if tab == STRATEGIES_TAB and self._strategies_dirty:
            self._strategies_dirty = False
            tile = self.tile_combo.currentData()
            self.runner.submit(
                "strategies",
                lambda check, report: run_strategies(
                    image, kernel, border, tile, rng, check, report, key
                ),
                delay_ms=COMPARE_DEBOUNCE_MS,
            )
        if tab == BORDERS_TAB and self._borders_dirty:
            self._borders_dirty = False
            view = self.compare.borders
            strategy = self.strategy_combo.currentText()
            if engine.why_not(strategy, kernel):
                strategy = "auto"
            corner, crop, ref = (
                view.corner.currentText(),
                view.crop.value(),
                view.reference.currentText(),
            )
            self.runner.submit(
                "borders",
                lambda check, report: run_borders(
                    image, kernel, strategy, corner, crop, ref, rng, check, report
                ),
                delay_ms=COMPARE_DEBOUNCE_MS,
            )

    def _job_finished(self, channel: str, result: object) -> None:
        if channel == "live" and isinstance(result, LiveResult):
            self._show_live(result)
        elif channel == "strategies" and isinstance(result, StrategiesResult):
            self._show_strategies(result, final=True)
        elif channel == "borders" and isinstance(result, BordersResult):
            self.compare.borders.show_result(result)
            self.borders_ready.emit()
        elif channel == "adapter" and isinstance(result, dict):
            self._show_adapter(result)

    def _job_progress(self, channel: str, partial: object) -> None:
        if channel == "strategies" and isinstance(partial, StrategiesResult):
            self._show_strategies(partial, final=False)

    def _job_failed(self, channel: str, message: str) -> None:
        if channel == "live":
            self._show_live_error(message)
        elif channel == "adapter":
            self._show_adapter({"error": message})
        else:
            self.show_error(message)

    def _busy_changed(self, busy: bool) -> None:
        self.busy_label.setText("filtering…" if busy else "")

    def _show_live(self, result: LiveResult) -> None:
        self.result = result
        self.live_error = ""
        self.compare.result_view.set_image(result.qimage)
        self.compare.split_view.set_image(result.qimage)
        t = result.timing
        passes = ", ".join(f"{p.name} {p.ms:.2f} ms" for p in t.passes)
        why = f" — auto: {result.reason}" if result.reason else ""
        self.run_info.setStyleSheet("")
        self.run_info.setText(
            f"<b>{result.strategy}</b>: {t.total_ms:.2f} ms ({t.timer}; {passes}); "
            f"{t.wall_ms:.0f} ms with transfers{why}"
        )
        self.timing.record(result.strategy, t, result.request.kernel.spec)
        self.result_ready.emit()

    def _show_live_error(self, message: str) -> None:
        self.live_error = message
        self.run_info.setStyleSheet("color: #b2182b;")
        self.run_info.setText(f"Not run: {message}")

    def _show_strategies(self, result: StrategiesResult, *, final: bool) -> None:
        self.compare.strategies.show_result(result)
        if final:
            for run in result.runs:
                if run.timing is not None:
                    self.timing.record(run.strategy, run.timing, result.kernel.spec)
                else:
                    self.timing.forget(run.strategy)
            self.strategies_ready.emit()

    def _show_adapter(self, info: dict) -> None:
        if "error" in info:
            self.adapter_text = f"No GPU adapter ({info['error']}): strategy cpu still works"
            self.adapter_label.setStyleSheet("color: #b2182b;")
        else:
            self.is_software_adapter = bool(info.get("is_software"))
            self.adapter_text = (
                f"Adapter: {info.get('name', '?')} · backend {info.get('backend', '?')}"
            )
            if self.is_software_adapter:
                self.adapter_text += "  ⚠ software adapter: timings describe the CPU, not a GPU"
                self.adapter_label.setStyleSheet("color: #8a5a00; font-weight: bold;")
        self.adapter_label.setText(self.adapter_text)
        self.adapter_label.setToolTip(str(info.get("summary", self.adapter_text)))
        self.adapter_ready.emit(self.adapter_text)

    # ------------------------------------------------------------------------------ misc
    def cli_command(self) -> str:
        """The ``blurapp apply`` command that reproduces the current result."""
        req = self.live_request()
        src = self.image_path or sample_path()
        out = src.with_name(f"{src.stem}_filtered{src.suffix if src.suffix else '.png'}")
        args = ["blurapp", "apply", str(src), "-o", str(out), "--kernel", req.kernel.spec]
        args += ["--border", Border.parse(req.border).name, "--strategy", req.strategy]
        if req.strategy == "tiled" and req.tile:
            args += ["--tile", str(req.tile)]
        if req.range_mode != "clamp":
            args += ["--range", req.range_mode]
        return shlex.join(args)

    def export_cli(self) -> str:
        command = self.cli_command()
        QApplication.clipboard().setText(command)
        self.statusBar().showMessage(f"Copied: {command}", 8000)
        return command

    def show_error(self, message: str) -> None:
        """A dialog with one clear sentence; it does not block (tests and the event loop go on)."""
        self.last_error = message
        if self._dialog is not None:
            self._dialog.close()
        self._dialog = QMessageBox(QMessageBox.Icon.Warning, "blurapp", message, parent=self)
        self._dialog.open()
        self.error_shown.emit(message)

    def about(self) -> None:
        QMessageBox.about(
            self,
            "About blurapp",
            "<b>blurapp</b> filters images with convolution kernels on the GPU through WebGPU "
            "compute shaders, and shows how each strategy runs them.",
        )

    def show_licences(self) -> None:
        licences = importlib.resources.files("blurapp.assets").joinpath("samples", "LICENSES.md")
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(licences)))


def _probe_adapter(check, report) -> dict:
    """The adapter's name, backend and kind (creates the device, off the UI thread)."""
    from blurapp.gpu.device import get_device

    ctx = get_device()
    return {**ctx.info, "is_software": ctx.is_software}
