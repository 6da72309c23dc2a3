"""The main window: assembles the views around one :class:`FilterModel` and runs its filters.

Where things are:

- :mod:`blurapp.ui.model`: the state (the :class:`FilterSpec` and the image), with signals;
- :mod:`blurapp.ui.run_panel`: the Run box (strategy, tile, border, range, alpha, ...);
- :mod:`blurapp.ui.kernel_designer`, ``kernel_editor``, ``kernel_analysis``: the kernel side;
- :mod:`blurapp.ui.files`: open, save, recent files, kernel JSON;
- :mod:`blurapp.ui.actions`: menus, toolbar and shortcuts;
- :mod:`blurapp.ui.window_settings`: what is remembered between runs;
- :mod:`blurapp.ui.jobs`: the work itself, run on the worker thread (:class:`JobRunner`).

This module observes the model: a new spec or image reruns the live result and marks the
comparisons stale; it never decides pixels itself.
"""

from __future__ import annotations

import importlib.resources
import os
import shlex
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QDragEnterEvent, QDropEvent, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
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

from blurapp.core.errors import BlurappError, KernelSpecError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.io import ImageData
from blurapp.ui.actions import WindowActions
from blurapp.ui.compare import BORDERS_TAB, STRATEGIES_TAB, CompareView
from blurapp.ui.conv_tab import ConvLayerTab
from blurapp.ui.convert import to_qimage
from blurapp.ui.files import WindowFiles, sample_path
from blurapp.ui.jobs import (
    BordersResult,
    LiveResult,
    StrategiesResult,
    run_borders,
    run_live,
    run_strategies,
)
from blurapp.ui.kernel_analysis import KernelAnalysis
from blurapp.ui.kernel_designer import KernelDesigner
from blurapp.ui.kernel_editor import KernelGridEditor
from blurapp.ui.kernel_history import SetKernelCommand
from blurapp.ui.model import FilterModel
from blurapp.ui.run_panel import RunPanel
from blurapp.ui.timing_panel import TimingPanel
from blurapp.ui.window_settings import load_spec, restore_layout, store_layout, store_spec
from blurapp.ui.worker import JobRunner

__all__ = ["MainWindow", "sample_path"]

LIVE_DEBOUNCE_MS = 40
COMPARE_DEBOUNCE_MS = 150
CHANNELS = ("live", "strategies", "borders", "adapter")


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
        self.model = FilterModel(load_spec(self.settings), self)
        self.runner = JobRunner(self)
        self.undo_stack = QUndoStack(self)
        self.files = WindowFiles(self, self, self.model, self.settings)
        self.result: LiveResult | None = None
        self.before_qimage = None
        self.last_error = ""
        self.live_error = ""
        self.adapter_text = ""
        self.is_software_adapter = False
        self._strategies_dirty = True
        self._borders_dirty = True
        self._dialog: QMessageBox | None = None
        self._set_text = True  # see apply_kernel
        self._shown_kernel: Kernel | None = None

        self._build_widgets()
        self.menu_actions = WindowActions(self)
        self.files.attach_recent_menu(self.menu_actions.recent_menu)
        self._connect()
        restore_layout(self, self.settings, self.kernel_dock, self.timing_dock)
        self._show_kernel(self.model.kernel)
        self.runner.finished.connect(self._job_finished)
        self.runner.failed.connect(self._job_failed)
        self.runner.progress.connect(self._job_progress)
        self.runner.busy_changed.connect(self._busy_changed)
        if probe_adapter:
            self.runner.submit("adapter", _probe_adapter)

    # ------------------------------------------------------------------------------ the state
    # Read-only views of the model, for the window's callers and tests.
    @property
    def spec(self) -> FilterSpec:
        return self.model.spec

    @property
    def kernel(self) -> Kernel:
        return self.model.kernel

    @property
    def image(self) -> np.ndarray | None:
        return self.model.image

    @property
    def image_key(self) -> int:
        return self.model.image_key

    @property
    def image_data(self) -> ImageData | None:
        return self.model.image_data

    @property
    def image_path(self) -> Path | None:
        return self.model.image_path

    # ------------------------------------------------------------------------------ building
    def _build_widgets(self) -> None:
        self.compare = CompareView()
        self.compare.addTab(
            ConvLayerTab(runner=self.runner, image=lambda: self.model.image), "Conv layer"
        )
        self.setCentralWidget(self.compare)

        self.designer = KernelDesigner()
        self.run_panel = RunPanel(self.model)
        # The Run box's controls, under the names the window has always had.
        self.strategy_combo = self.run_panel.strategy_combo
        self.tile_combo = self.run_panel.tile_combo
        self.border_combo = self.run_panel.border_combo
        self.range_combo = self.run_panel.range_combo
        self.alpha_combo = self.run_panel.alpha_combo
        self.dtype_combo = self.run_panel.dtype_combo
        self.linear_check = self.run_panel.linear_check
        self.convolve_check = self.run_panel.convolve_check
        self.run_info = self.run_panel.run_info

        kernel_box = QGroupBox("Kernel")
        QVBoxLayout(kernel_box).addWidget(self.designer)
        self.analysis = KernelAnalysis()
        self.grid_editor = KernelGridEditor()
        self.kernel_tabs = QTabWidget(objectName="kernelTabs")
        self.kernel_tabs.addTab(self.analysis, "Weights && rank")
        self.kernel_tabs.addTab(self.grid_editor, "Grid")

        side = QWidget()
        sl = QVBoxLayout(side)
        sl.setContentsMargins(4, 4, 4, 4)
        sl.addWidget(kernel_box)
        sl.addWidget(self.run_panel)
        sl.addWidget(self.kernel_tabs, 1)
        # On a short screen the designer scrolls instead of squeezing its charts together.
        side_scroll = QScrollArea()
        side_scroll.setWidget(side)
        side_scroll.setWidgetResizable(True)
        side_scroll.setFrameShape(QFrame.Shape.NoFrame)
        side_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.kernel_dock = self._dock("Kernel designer", "kernelDock", side_scroll)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.kernel_dock)
        # The designer is tall: let it own the whole right edge, timing sits under the images.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)

        self.timing = TimingPanel()
        self.timing_dock = self._dock("Timing", "timingDock", self.timing)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.timing_dock)

        self.adapter_label = QLabel("Adapter: probing…", objectName="adapterLabel")
        self.image_label = QLabel()
        self.busy_label = QLabel()
        self.statusBar().addWidget(self.adapter_label, 1)
        self.statusBar().addPermanentWidget(self.busy_label)
        self.statusBar().addPermanentWidget(self.image_label)

    def _dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        dock = QDockWidget(title, self, objectName=name)
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        return dock

    def _connect(self) -> None:
        self.model.spec_changed.connect(self._spec_changed)
        self.model.image_changed.connect(self._image_changed)
        self.model.notice.connect(lambda message: self.show_status(message, 10000))
        self.designer.spec_edited.connect(self.request_spec)
        self.grid_editor.weights_edited.connect(self._grid_edited)
        self.grid_editor.offset_toggled.connect(self._offset_toggled)
        self.grid_editor.load_requested.connect(self.files.load_kernel_dialog)
        self.grid_editor.save_requested.connect(self.files.save_kernel_dialog)
        self.compare.currentChanged.connect(lambda _i: self._maybe_run_comparisons())
        self.compare.borders.settings_changed.connect(self._borders_settings_changed)
        self.timing.export_cli.clicked.connect(self.export_cli)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        store_layout(self, self.settings)
        store_spec(self.settings, self.model.spec)
        self.settings.sync()
        for channel in CHANNELS:
            self.runner.cancel(channel)
        self.runner.wait_idle(10000)
        super().closeEvent(event)

    # ------------------------------------------------------------------------------ images
    def open_sample(self) -> bool:
        return self.files.open_sample()

    def open_path(self, path: str | os.PathLike[str]) -> bool:
        """Open an image file; a failure is a dialog and the current image stays."""
        return self.files.open_path(path)

    def open_dialog(self) -> None:
        self.files.open_dialog()

    def set_image(
        self, pixels: np.ndarray, *, data: ImageData | None = None, path: Path | None = None
    ) -> None:
        """Show a new input image and filter it."""
        self.model.set_image(pixels, data=data, path=path)

    def _image_changed(self) -> None:
        image, path = self.model.image, self.model.image_path
        if image is None:
            return
        self.result = None
        self.before_qimage = to_qimage(image)
        self.compare.split_view.set_before(self.before_qimage)
        for view in (self.compare.result_view, self.compare.split_view):
            view.set_image(None)
            view.fit()
        h, w = image.shape[:2]
        channels = 1 if image.ndim == 2 else image.shape[2]
        name = path.name if path else "image"
        self.setWindowTitle(f"{name} — blurapp")
        self.image_label.setText(f"{name}  {w}×{h}×{channels} {image.dtype}")
        self._invalidate()

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
        self.designer.flush()  # what is typed is what is saved
        self.files.save_dialog()

    def save_result(self, path: str | os.PathLike[str]) -> bool:
        """Write what ``blurapp apply`` would write with the current spec (see
        :func:`blurapp.ui.files.pixels_for_file`), keeping ICC and EXIF."""
        return self.files.save_result(path)

    def copy_result(self) -> None:
        if self.result is None:
            self.show_error("There is no result to copy yet.")
            return
        QApplication.clipboard().setImage(self.result.qimage)
        self.show_status("Result copied to the clipboard", 3000)

    # ------------------------------------------------------------------------------ kernel
    def request_spec(self, text: str, source: str = "typed") -> bool:
        """Try a spec from the designer; invalid text is shown inline and changes nothing."""
        try:
            kernel = Kernel.parse(text)
        except BlurappError as err:
            self.designer.show_error(str(err))
            return False
        if kernel == self.model.kernel:
            self.designer.show_kernel(kernel, set_text=source != "typed")
            return True
        self.set_kernel(kernel, source)
        return True

    def set_kernel(self, kernel: Kernel, source: str = "code") -> None:
        """Make ``kernel`` current as one undoable step."""
        if kernel == self.model.kernel:
            return
        self.undo_stack.push(SetKernelCommand(self, self.model.kernel, kernel, source))

    def apply_kernel(self, kernel: Kernel, *, set_text: bool = True) -> None:
        """Hand ``kernel`` to the model (the undo commands call this); ``set_text=False`` leaves
        the spec field alone while the user is typing in it."""
        self._set_text = set_text
        try:
            problem = self.model.set_kernel(kernel)
        finally:
            self._set_text = True
        if problem:
            self.designer.show_error(problem)

    def load_kernel(self, path: str | os.PathLike[str]) -> bool:
        return self.files.load_kernel(path)

    def save_kernel(self, path: str | os.PathLike[str]) -> bool:
        return self.files.save_kernel(path)

    def _show_kernel(self, kernel: Kernel) -> None:
        self._shown_kernel = kernel
        self.designer.show_kernel(kernel, set_text=self._set_text)
        self.grid_editor.set_weights(kernel.weights)
        self.analysis.set_kernel(kernel)

    def _grid_edited(self, weights: np.ndarray) -> None:
        try:
            kernel = Kernel.from_weights(weights)
        except KernelSpecError as err:
            self.designer.show_error(str(err))
            return
        self.set_kernel(kernel, "grid")

    def _offset_toggled(self, on: bool) -> None:
        if on:
            self.model.set_range("offset")
        elif self.model.spec.range_mode == "offset":
            self.model.set_range("clamp")

    # ------------------------------------------------------------------------------ running
    def _spec_changed(self, spec: FilterSpec) -> None:
        if spec.kernel != self._shown_kernel:
            self._show_kernel(spec.kernel)
        offset = self.grid_editor.offset
        offset.blockSignals(True)
        offset.setChecked(spec.range_mode == "offset")
        offset.blockSignals(False)
        store_spec(self.settings, spec)
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
        image, key, spec = self.model.image, self.model.image_key, self.model.spec
        if image is None:
            return
        self.runner.submit(
            "live",
            lambda check, report: run_live(image, spec, check, report, key),
            delay_ms=delay_ms,
        )

    def _maybe_run_comparisons(self) -> None:
        image, key, spec = self.model.image, self.model.image_key, self.model.spec
        if image is None:
            return
        tab = self.compare.currentIndex()
        if tab == STRATEGIES_TAB and self._strategies_dirty:
            self._strategies_dirty = False
            self.runner.submit(
                "strategies",
                lambda check, report: run_strategies(image, spec, check, report, key),
                delay_ms=COMPARE_DEBOUNCE_MS,
            )
        if tab == BORDERS_TAB and self._borders_dirty:
            self._borders_dirty = False
            view = self.compare.borders
            corner, crop, ref = (
                view.corner.currentText(),
                view.crop.value(),
                view.reference.currentText(),
            )
            self.runner.submit(
                "borders",
                lambda check, report: run_borders(image, spec, corner, crop, ref, check, report),
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
            self.live_error = message
            self.run_panel.show_problem(message, prefix="Not run")
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
        self.run_panel.show_result(result)
        self.timing.record(result.strategy, result.timing, result.spec.kernel.spec)
        self.result_ready.emit()

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
        """The ``blurapp apply`` command that reproduces the current result: the spec's own
        options (:meth:`FilterSpec.to_argv`), so nothing is left out by construction."""
        src = self.model.image_path or sample_path()
        out = src.with_name(f"{src.stem}_filtered{src.suffix or '.png'}")
        return shlex.join(["blurapp", "apply", str(src), "-o", str(out), *self.spec.to_argv()])

    def export_cli(self) -> str:
        self.designer.flush()  # what is typed is what is exported
        command = self.cli_command()
        QApplication.clipboard().setText(command)
        self.show_status(f"Copied: {command}", 8000)
        return command

    def show_status(self, message: str, ms: int = 5000) -> None:
        self.statusBar().showMessage(message, ms)

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
