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

Nothing heavy runs on the UI thread. ``runner`` holds the live preview's lanes
(:mod:`blurapp.live.scheduler`, relayed by :mod:`blurapp.ui.worker`): ``first`` for a
change's first picture (:func:`blurapp.ui.jobs.first_picture`: what is visible, reduced as the
measured rates say, said on the view: "preview at 17 %…"), ``gpu`` for everything that uses
the device (the full result, :func:`blurapp.ui.jobs.run_full`, in tiles that a newer request
stops; comparisons; the pixels a save needs), ``background`` for the warm-up, which yields to
both. ``cpu_runner`` takes the rest (decoding and encoding files, display copies, kernel
analysis).
"""

from __future__ import annotations

import importlib.resources
import os
import shlex
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QDragEnterEvent, QDropEvent, QImage, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFrame,
    QGroupBox,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from blurapp import pipeline
from blurapp.batch.pipeline import linear_curves
from blurapp.core.errors import BlurappError, KernelSpecError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.io import ImageData
from blurapp.ui.actions import WindowActions
from blurapp.ui.compare import BORDERS_TAB, STRATEGIES_TAB, CompareView, scrolled
from blurapp.ui.conv_tab import ConvLayerTab
from blurapp.ui.convert import to_qimage
from blurapp.ui.files import WindowFiles, sample_path
from blurapp.ui.frames import FrameBar
from blurapp.ui.image_view import ImageView
from blurapp.ui.jobs import (
    BordersProgress,
    BordersResult,
    LiveCache,
    LivePreview,
    LiveProgress,
    LiveResult,
    StrategiesResult,
    Viewport,
    compare_window,
    display_of,
    first_picture,
    run_borders,
    run_full,
    run_strategies,
)
from blurapp.ui.kernel_analysis import KernelAnalysis
from blurapp.ui.kernel_designer import KernelDesigner
from blurapp.ui.kernel_editor import KernelGridEditor
from blurapp.ui.kernel_history import TYPED, SetKernelCommand, SetSpecCommand
from blurapp.ui.model import FilterModel
from blurapp.ui.run_panel import RunPanel
from blurapp.ui.settings_writer import BackgroundSettings
from blurapp.ui.timing_panel import TimingPanel
from blurapp.ui.window_settings import (
    SettingsReader,
    load_spec,
    restore_layout,
    store_layout,
    store_spec,
)
from blurapp.ui.worker import BACKGROUND, REFINE, JobRunner

__all__ = ["MainWindow", "sample_path"]

COMPARE_DEBOUNCE_MS = 150
REFINE_AFTER_MS = 150  # see schedule_live
VIEW_DEBOUNCE_MS = 120
#: The adapter is probed after the window's first paint, and at the latest this long after
#: the window is made (shown or not).
PROBE_UNSHOWN_MS = 300
#: The full result's progress (status bar, the view's note) is redrawn at most this often: a
#: 12 MP result reports every tile, and each redraw repaints the progress bar at once (Qt's
#: QProgressBar.setValue) and the picture under the note, on the UI thread.
PROGRESS_REFRESH_MS = 150
ANALYSIS_DEBOUNCE_MS = 60
CHANNELS = ("preview", "live", "strategies", "borders", "adapter", "warm")
CPU_CHANNELS = ("open", "write", "display", "before", "analysis")


class MainWindow(QMainWindow):
    """The blurapp desktop window."""

    result_ready = Signal()  # a live result is on screen (full resolution, the current spec)
    preview_ready = Signal()  # a preview of the current spec is on screen (see shown_spec)
    saved = Signal(str)  # a save finished: the path
    save_failed = Signal(str)
    strategies_ready = Signal()
    borders_ready = Signal()
    adapter_ready = Signal(str)
    error_shown = Signal(str)

    def __init__(self, settings: QSettings | None = None, *, probe_adapter: bool = True) -> None:
        super().__init__()
        self.setWindowTitle("blurapp")
        self.setObjectName("mainWindow")
        self.setAcceptDrops(True)
        # Written on a thread of its own: QSettings' own writes wait for the disk on this one.
        self.settings = BackgroundSettings(settings or QSettings())
        # Read defensively: a value of any type in any key is its default and one warning.
        self.settings_reader = SettingsReader(self.settings)
        self.model = FilterModel(load_spec(self.settings_reader), self)
        # The live preview's lanes: the GPU's one thread, first pictures (on the CPU, never
        # waiting for the GPU), background work (warm-up): blurapp.live.scheduler's rules.
        self.runner = JobRunner(self, holds_calibration=True)
        self.cpu_runner = JobRunner(self, lanes=("files",))  # files, display copies, analysis
        self.live_cache = LiveCache()
        self.undo_stack = QUndoStack(self)
        self.files = WindowFiles(self, self, self.model, self.settings, self.settings_reader)
        self.result: LiveResult | None = None
        self.shown_spec: FilterSpec | None = None  # what the result view shows, maybe reduced
        self.shown_note = ""  # what the result view says about it ("preview at 17 %…")
        self.before_qimage = None
        self.last_error = ""
        self.live_error = ""
        self.adapter_text = ""
        self.is_software_adapter = False
        self._strategies_dirty = True
        self._borders_dirty = True
        self._dialog: QMessageBox | None = None
        self._set_text = True  # see apply_kernel
        self._replaying = False  # an undo command is applying a spec: do not record it again
        self._shown_kernel: Kernel | None = None
        self._grid_kernel: Kernel | None = None
        self._analysis_kernel: Kernel | None = None
        self._live_progress: tuple[int, int] | None = None
        self._live_request = 0  # live requests made (each a first picture and a full result)
        self._shown_request = 0  # the request whose picture the result view shows
        self._save_progress: tuple[int, int] | None = None
        self._view_timer = QTimer(self, singleShot=True, interval=VIEW_DEBOUNCE_MS)
        self._view_timer.timeout.connect(self._view_settled)
        self._progress_timer = QTimer(self, singleShot=True, interval=PROGRESS_REFRESH_MS)
        self._progress_timer.timeout.connect(self._update_progress)

        self._undo_base = self.model.spec  # the spec the next recorded change starts from
        self._build_widgets()
        self.menu_actions = WindowActions(self)
        self.files.attach_recent_menu(self.menu_actions.recent_menu)
        self._connect()
        restore_layout(self, self.settings_reader, self.kernel_dock, self.timing_dock)
        if self.settings_reader.problems:
            problems = self.settings_reader.problems
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            self.show_status(f"Settings: {problems[0]}{more}", 15000)
        self._show_kernel(self.model.kernel)
        self._spec_shown_in_grid(self.model.spec)
        self.runner.finished.connect(self._job_finished)
        self.runner.failed.connect(self._job_failed)
        self.runner.progress.connect(self._job_progress)
        self.runner.partial.connect(self._job_partial)
        self.runner.busy_changed.connect(self._busy_changed)
        self.cpu_runner.finished.connect(self._cpu_finished)
        self.cpu_runner.failed.connect(self._cpu_failed)
        self._probe_pending = probe_adapter
        if probe_adapter:
            # After the window's first paint (showEvent), not beside it: creating the device
            # parses wgpu's C types in Python and took the GIL from the first paint (278 ms
            # measured); a window not painted by then probes after PROBE_UNSHOWN_MS all the same.
            QTimer.singleShot(PROBE_UNSHOWN_MS, self, self._probe)

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
        self.conv_tab = ConvLayerTab(runner=self.runner, image=lambda: self.model.image)
        self.compare.addTab(scrolled(self.conv_tab), "Conv layer")
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
        self.zoom_label = QLabel(objectName="zoomLabel")
        self.zoom_label.setToolTip("Zoom of the image shown: 100 % is one image pixel per pixel")
        self.busy_label = QLabel(objectName="busyLabel")
        self.progress = QProgressBar(objectName="jobProgress")
        self.progress.setMaximumWidth(160)
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.statusBar().addWidget(self.adapter_label, 1)
        self.statusBar().addPermanentWidget(self.busy_label)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.zoom_label)
        self.statusBar().addPermanentWidget(self.image_label)
        self.frame_bar = FrameBar()  # an animation's or pages' frame previewed; hidden otherwise
        self.statusBar().addPermanentWidget(self.frame_bar)

    def _dock(self, title: str, name: str, widget: QWidget) -> QDockWidget:
        dock = QDockWidget(title, self, objectName=name)
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetClosable
            | QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        # Closed, it comes back from View (its toggle action, named after the dock).
        dock.toggleViewAction().setObjectName(f"{name}Toggle")
        return dock

    def _connect(self) -> None:
        self.model.spec_changed.connect(self._spec_changed)
        self.model.image_changed.connect(self._image_changed)
        self.frame_bar.frame_chosen.connect(self._show_frame)
        self.model.notice.connect(lambda message: self.show_status(message, 10000))
        self.designer.spec_edited.connect(self.request_spec)
        self.grid_editor.weights_edited.connect(self._grid_edited)
        self.grid_editor.offset_toggled.connect(self._offset_toggled)
        self.grid_editor.alpha_weighting_toggled.connect(
            lambda on: self.model.set_alpha("premultiply" if on else "straight")
        )
        self.grid_editor.border_chosen.connect(self.model.set_border)
        self.grid_editor.channels_chosen.connect(self._channels_chosen)
        self.grid_editor.load_requested.connect(self.files.load_kernel_dialog)
        self.grid_editor.save_requested.connect(self.files.save_kernel_dialog)
        self.compare.currentChanged.connect(lambda _i: self._maybe_run_comparisons())
        self.compare.currentChanged.connect(lambda _i: self._update_zoom())
        for view in self.compare.image_views():
            view.zoom_changed.connect(lambda _scale: self._update_zoom())
        self.compare.borders.settings_changed.connect(self._borders_settings_changed)
        self.compare.strategies.cancel.clicked.connect(lambda: self._cancel_compare("strategies"))
        self.compare.borders.cancel.clicked.connect(lambda: self._cancel_compare("borders"))
        self.compare.strategies.scope_changed.connect(self._strategies_scope_changed)
        self.compare.result_view.view_changed.connect(self._view_moved)
        self.kernel_tabs.currentChanged.connect(self._kernel_page_changed)
        self.kernel_dock.visibilityChanged.connect(self._kernel_page_changed)
        self.timing.export_cli.clicked.connect(self.export_cli)

    def _probe(self) -> None:
        """Find the GPU adapter (once): the ``adapter`` channel's job."""
        if self._probe_pending:
            self._probe_pending = False
            self.runner.submit("adapter", _probe_adapter)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        if self._probe_pending:
            # Once the first expose has been handled (Qt paints the window inside it); the
            # timer started in __init__ probes all the same if none comes.
            handle = self.windowHandle()
            if handle is not None and not getattr(self, "_expose_watch", None):
                self._expose_watch = _AfterFirstExpose(handle, self._probe)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if not self.files.may_close():  # a save in progress: finished, or stopped, first
            event.ignore()
            return
        store_layout(self, self.settings)
        store_spec(self.settings, self.model.spec)
        self.settings.sync()
        for channel in CHANNELS:
            self.runner.cancel(channel)
        for channel in CPU_CHANNELS:
            self.cpu_runner.cancel(channel)
        self.runner.wait_idle(10000)
        self.cpu_runner.wait_idle(10000)
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
        self.shown_spec = None
        self.before_qimage = None
        h, w = image.shape[:2]
        # Every view paints in the screen's colour space from the file's own (its ICC profile).
        data = self.model.image_data
        for shown in self.findChildren(ImageView):
            shown.set_colour_profile(data.icc_profile if data is not None else None)
        self.compare.split_view.set_before(None)
        for view in (self.compare.result_view, self.compare.split_view):
            view.set_image(None, logical_size=(w, h))
            view.fit()
        self._set_note("")
        # The "before" picture at display resolution, made off the UI thread.
        factor, key, cache = (
            self.compare.result_view.display_factor(),
            self.model.image_key,
            self.live_cache,
        )
        colour = self.compare.split_view.colour()  # converted on the worker (to_qimage)
        self.cpu_runner.submit(
            "before", lambda check, report: to_qimage(cache.small(image, key, factor), colour)
        )  # the same downscaled copy as the first picture's (made once)
        channels = 1 if image.ndim == 2 else image.shape[2]
        name = path.name if path else "image"
        self.setWindowTitle(f"{name} — blurapp")
        read = self.model.image_data
        frames = read.frame_count if read is not None else 1
        if self.frame_bar.show_for(read) and read is not None and read.notes:
            self.show_status(" ".join(read.notes), 20000)  # what the decoder left out
        colour = self.compare.result_view.colour()  # the file's colour space, if converted
        space = f", {colour.description or 'ICC profile'} shown as the screen's"
        self.image_label.setText(
            f"{name}  {w}×{h}×{channels} {image.dtype}"
            + (f", {frames} frames" if frames > 1 else "")
            + (space if colour.managed else "")
        )
        self._invalidate()

    def _show_frame(self, index: int) -> None:
        """Preview another frame of the open animation (a save still writes them all)."""
        data = self.model.image_data
        if data is not None and 0 <= index < data.frame_count:
            self.model.set_image(data.frames[index], data=data, path=self.model.image_path)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt override)
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt override)
        """Every local file dropped: the first image opens, kernel files load, and a notice
        says what else was dropped (more images: in Open recent) and what was not opened."""
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            self.files.open_dropped(paths)
            event.acceptProposedAction()

    def save_dialog(self) -> None:
        self.designer.flush()  # what is typed is what is saved
        self.files.save_dialog()

    def save_result(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> bool:
        """Start writing what ``blurapp apply`` would write with the current spec (see
        :func:`blurapp.ui.files.pixels_for_file`), keeping ICC and EXIF, off the UI thread:
        :attr:`saved` or :attr:`save_failed` tells how it ended. False when it cannot start
        (an existing file without ``overwrite``; the open image's file, ever)."""
        return self.files.save_result(path, overwrite=overwrite)

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
            self.designer.show_kernel(kernel, set_text=source not in TYPED)
            return True
        self.set_kernel(kernel, source)
        return True

    def set_kernel(self, kernel: Kernel, source: str = "code") -> None:
        """Make ``kernel`` current as one undoable step."""
        if kernel == self.model.kernel:
            return
        self.undo_stack.push(
            SetKernelCommand(self, self.model.kernel, kernel, source, before=self.model.spec)
        )

    def apply_kernel(self, kernel: Kernel, *, set_text: bool = True) -> None:
        """Hand ``kernel`` to the model (the undo commands call this); ``set_text=False`` leaves
        the spec field alone while the user is typing in it."""
        self._set_text = set_text
        self._replaying = True
        try:
            problem = self.model.set_kernel(kernel)
        finally:
            self._set_text = True
            self._replaying = False
        if problem:
            self.designer.show_error(problem)

    def apply_spec(self, spec: FilterSpec) -> None:
        """Make ``spec`` current without recording it (the undo commands call this)."""
        self._replaying = True
        try:
            self.model.set_spec(spec)
        finally:
            self._replaying = False
        self._undo_base = self.model.spec

    def _record_spec(self, spec: FilterSpec) -> None:
        """A setting changed outside the undo stack (the Run box, the grid's offset): make it
        one undo step (a kernel edit is one already, through :class:`SetKernelCommand`)."""
        old, self._undo_base = self._undo_base, spec
        if self._replaying or old == spec:
            return
        self.undo_stack.push(SetSpecCommand(self, old, spec))

    def load_kernel(self, path: str | os.PathLike[str]) -> bool:
        return self.files.load_kernel(path)

    def save_kernel(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> bool:
        return self.files.save_kernel(path, overwrite=overwrite)

    def _show_kernel(self, kernel: Kernel) -> None:
        self._shown_kernel = kernel
        self.designer.show_kernel(kernel, set_text=self._set_text)
        self._show_kernel_views()

    def _kernel_page_visible(self, page: QWidget) -> bool:
        if self.isVisible():
            return page.isVisible()
        return self.kernel_tabs.currentWidget() is page  # not shown yet: the page that will be

    def _kernel_page_changed(self, *_args: object) -> None:
        try:
            self._show_kernel_views()
        except RuntimeError:  # the window is being destroyed
            pass

    def _show_kernel_views(self) -> None:
        """Rebuild the grid and the analysis of the current kernel, only the one on show: the
        grid (a table of up to 63×63 cells) here, the analysis (an SVD) on the CPU worker."""
        kernel = self._shown_kernel
        if kernel is None:
            return
        if kernel is not self._grid_kernel and self._kernel_page_visible(self.grid_editor):
            self._grid_kernel = kernel
            self.grid_editor.set_weights(kernel.weights)
        if kernel is not self._analysis_kernel and self._kernel_page_visible(self.analysis):
            self._analysis_kernel = kernel

            def analyse(check, report, k=kernel):
                k.separability  # noqa: B018 (computed once, cached on the kernel)
                return k

            self.cpu_runner.submit("analysis", analyse, delay_ms=ANALYSIS_DEBOUNCE_MS)

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

    def _spec_shown_in_grid(self, spec: FilterSpec) -> None:
        self.grid_editor.show_settings(
            offset=spec.range_mode == "offset",
            alpha_weighting=spec.alpha == "premultiply",
            border=spec.border.name,
            channels=spec.channels,
        )

    def _channels_chosen(self, channels: str | None) -> None:
        problem = self.model.update(channels=channels)
        if problem:  # no channel at all: the boxes go back to the spec's
            self.show_status(problem, 8000)
            self._spec_shown_in_grid(self.model.spec)

    # ------------------------------------------------------------------------------ running
    def _spec_changed(self, spec: FilterSpec) -> None:
        self._record_spec(spec)
        if spec.kernel != self._shown_kernel:
            self._show_kernel(spec.kernel)
        self._spec_shown_in_grid(spec)
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

    def viewport(self) -> Viewport | None:
        """What the result view shows of the image now (``None`` before an image)."""
        image = self.model.image
        if image is None:
            return None
        view = self.compare.result_view
        if not view.has_image() or view.viewport().width() < 2:
            return Viewport.whole(image.shape)
        return Viewport(view.visible_window(), view.display_factor())

    def schedule_live(self) -> None:
        """A first picture of the current settings at once (no debounce: a request that is
        superseded before it starts never runs), then the full result on the GPU's lane."""
        image, key, spec = self.model.image, self.model.image_key, self.model.spec
        data = self.model.image_data  # --linear decodes with the file's ICC transfer curve
        curves = linear_curves(spec, data.icc_profile if data is not None else None)
        if image is None:
            return
        viewport, cache = self.viewport(), self.live_cache
        # Pictures converted for the screen on the workers (littlecms lets the GIL go), not
        # by the view on the UI thread (140 ms for a 12 MP Display P3 photo).
        colour = self.compare.result_view.colour()
        self._live_request += 1
        request = self._live_request
        scheduler = self.runner.scheduler

        def shared() -> bool:
            # On a software adapter (or one not known yet: the probe runs), a full result or a
            # warm-up compile runs on the first picture's cores.
            return (self.is_software_adapter or not self.adapter_text) and (
                scheduler.lane_running("gpu") or scheduler.lane_running("background")
            )

        def first(check, report):
            idle = lambda: scheduler.lane_idle("gpu")  # noqa: E731
            report(first_picture(image, spec, check, key, viewport, cache, gpu_idle=idle,
                                 cores_shared=shared, request=request, curves=curves,
                                 colour=colour))  # fmt: skip

        self.runner.submit("preview", first, lane="first", finish=True)
        self.runner.submit(
            "live",
            lambda check, report: run_full(
                image,
                spec,
                check,
                report,
                key,
                viewport,
                cache,
                request=request,
                curves=curves,
                colour=colour,
            ),
            priority=REFINE,
            lane="gpu",
            # The first picture is at once; the full result waits for a pause this short, so
            # that a burst of edits (a drag, typing) does not start a full result per edit,
            # each a compile of its size on lavapipe (0.4-1.7 s) beside the next first picture.
            delay_ms=REFINE_AFTER_MS,
        )

    def _view_moved(self) -> None:
        self._view_timer.start()

    def _view_settled(self) -> None:
        """The user zoomed or panned: show the full result at the new resolution (made on the
        CPU worker), or render what is now visible when the result is not complete yet."""
        result, image = self.result, self.model.image
        viewport = self.viewport()
        if image is None or viewport is None:
            return
        if result is None or result.spec != self.model.spec:
            return  # the live job on its way shows it
        if viewport.factor != result.display_factor:
            factor, colour = viewport.factor, self.compare.result_view.colour()
            self.cpu_runner.submit(
                "display",
                lambda check, report: (result, factor, display_of(result, factor, colour)),
            )

    def _strategies_scope_changed(self) -> None:
        self._strategies_dirty = True
        self._maybe_run_comparisons()

    def _cancel_compare(self, channel: str) -> None:
        self.runner.cancel(channel)
        view = self.compare.strategies if channel == "strategies" else self.compare.borders
        view.show_cancelled()
        # Coming back to the tab (or a new setting) starts it again.
        if channel == "strategies":
            self._strategies_dirty = True
        else:
            self._borders_dirty = True

    def _maybe_run_comparisons(self) -> None:
        image, key, spec = self.model.image, self.model.image_key, self.model.spec
        if image is None:
            return
        data = self.model.image_data  # --linear decodes with the file's ICC transfer curve
        curves = linear_curves(spec, data.icc_profile if data is not None else None)
        tab = self.compare.currentIndex()
        if tab == STRATEGIES_TAB and self._strategies_dirty:
            self._strategies_dirty = False
            view = self.compare.strategies
            visible = None
            if not view.whole_image():
                vp = self.viewport()
                visible = vp.window if vp is not None else None
            window = compare_window(image.shape, visible) if not view.whole_image() else None
            view.start(window, image.shape)
            self.runner.submit(
                "strategies",
                lambda check, report: run_strategies(
                    image, spec, check, report, key, window, curves=curves
                ),
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
            view.start()
            self.runner.submit(
                "borders",
                lambda check, report: run_borders(
                    image, spec, corner, crop, ref, check, report, curves=curves
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
        elif channel.startswith("save:"):
            self.files.computed(result)
        self._update_progress()

    def _job_progress(self, channel: str, partial: object) -> None:
        if channel == "strategies" and isinstance(partial, StrategiesResult):
            self._show_strategies(partial, final=False)
        elif channel == "borders" and isinstance(partial, BordersProgress):
            self.compare.borders.show_progress(partial.done, partial.total)
        elif channel == "live" and isinstance(partial, LiveProgress):
            self._live_progress = (partial.done, partial.total)
            if not self._progress_timer.isActive():  # else the timer's end shows the latest
                self._update_progress()
                self._progress_timer.start()
        elif channel.startswith("save:") and isinstance(partial, tuple):
            self._save_progress = partial
            self.files.save_progress(*partial)
            self._update_progress()

    def _job_partial(self, channel: str, generation: int, partial: object) -> None:
        """First pictures, of superseded requests too, as long as they are newer than what is
        shown (a slider drag shows the settings it passes through)."""
        if channel == "preview" and isinstance(partial, LivePreview):
            if partial.request > self._shown_request and partial.image_key == self.model.image_key:
                self._shown_request = partial.request
                self._show_preview(partial)

    def _job_failed(self, channel: str, message: str) -> None:
        if channel == "live":
            self.live_error = message
            self.run_panel.show_problem(message, prefix="Not run")
        elif channel == "adapter":
            self._show_adapter({"error": message})
        elif channel.startswith("save:"):
            self.files.failed(message, channel)
        else:
            if channel == "strategies":
                self.compare.strategies.show_cancelled(message)
            elif channel == "borders":
                self.compare.borders.show_cancelled(message)
            self.show_error(message)
        self._update_progress()

    def _cpu_finished(self, channel: str, result: object) -> None:
        if channel == "open":
            self.files.opened(result)
        elif channel.startswith("write:"):
            self.files.written(result)
        elif channel == "before" and isinstance(result, QImage):
            self.before_qimage = result
            self.compare.split_view.set_before(result)
        elif channel == "display" and isinstance(result, tuple):
            live, factor, picture = result
            if live is self.result:
                live.display, live.display_factor = picture, factor
                self._present_result(live)
        elif channel == "analysis" and isinstance(result, Kernel):
            if result is self._shown_kernel:
                self.analysis.set_kernel(result)
        self._update_progress()

    def _cpu_failed(self, channel: str, message: str) -> None:
        if channel == "open":
            self.files.open_failed(message)
        elif channel.startswith("write:"):
            self.files.failed(message, channel)
        elif channel not in ("display", "before", "analysis"):
            self.show_error(message)
        self._update_progress()

    def _busy_changed(self, busy: bool) -> None:
        if not busy:
            self._live_progress = None
        self._update_progress()

    def _update_progress(self) -> None:
        """The status bar's busy text and progress bar, from what the workers are doing."""
        text, value = "", None
        if self.cpu_runner.is_busy("open"):
            text = "opening…"
        elif self.runner.is_busy("save:") or self.cpu_runner.is_busy("write:"):
            text = "saving…"
            done = self._save_progress
            if done and self.runner.is_busy("save:"):
                value = round(100 * done[0] / max(1, done[1]))
        elif self.runner.is_busy("live"):
            done = self._live_progress
            text = "filtering…"
            if done:
                value = round(100 * done[0] / max(1, done[1]))
                text = "refining…"
        elif self.runner.is_busy():
            text = "comparing…"
        self.busy_label.setText(text)
        busy = bool(text)
        self.progress.setVisible(busy)
        if value is None:
            self.progress.setRange(0, 0)  # busy, amount unknown
        else:
            self.progress.setRange(0, 100)
            self.progress.setValue(value)
        if self.shown_note and self.shown_spec is not None:
            self._set_note(self._note_text())

    def _note_text(self) -> str:
        note = self.shown_note
        done = self._live_progress
        if note and self.runner.is_busy("live") and done:
            note = f"{note} · full resolution {round(100 * done[0] / max(1, done[1]))} %"
        return note

    def _update_zoom(self) -> None:
        """The status bar's zoom readout, of the view the zoom actions act on."""
        view = self.compare.current_view()
        if not view.has_image():
            self.zoom_label.setText("")
            return
        percent = 100 * view.scale_factor()
        text = f"{percent:.0f} %" if percent >= 10 else f"{percent:.2g} %"
        self.zoom_label.setText(f"zoom {text}" + (" (fit)" if view.is_fitting() else ""))

    def _set_note(self, text: str) -> None:
        self.compare.result_view.set_note(text)
        self.compare.split_view.set_note(text)

    def _show_preview(self, preview: LivePreview) -> None:
        """Part of the result before the whole of it: reduced (said on the view) or exact."""
        y0, _y1, x0, _x1 = preview.window
        for view in (self.compare.result_view, self.compare.split_view):
            view.set_patch(preview.qimage, x0, y0, preview.factor)
        self.shown_spec = preview.spec
        self.shown_note = "" if preview.exact else f"preview at {100 / preview.factor:.0f} %…"
        self._set_note(self._note_text())
        self.preview_ready.emit()

    def _present_result(self, result: LiveResult) -> None:
        h, w = result.image.shape[:2]
        picture = result.display_image()
        for view in (self.compare.result_view, self.compare.split_view):
            view.set_image(picture, logical_size=(w, h))

    def _show_live(self, result: LiveResult) -> None:
        self.result = result
        self._shown_request = max(self._shown_request, result.request)
        self.live_error = ""
        self._live_progress = None
        self._present_result(result)
        self.shown_spec = result.spec
        self.shown_note = ""
        self._set_note("")
        self.run_panel.show_result(result)
        self.timing.record(
            result.strategy, result.timing, result.spec.kernel.spec, first=result.first_run
        )
        self.result_ready.emit()
        if self.viewport() is not None and self.viewport().factor != result.display_factor:
            self._view_settled()

    def _show_strategies(self, result: StrategiesResult, *, final: bool) -> None:
        self.compare.strategies.show_result(result, final=final)
        if final:
            for run in result.runs:
                if run.timing is not None:
                    self.timing.record(run.strategy, run.timing, result.kernel.spec)
                else:
                    self.timing.forget(run.strategy)
            self.strategies_ready.emit()

    def _show_adapter(self, info: dict) -> None:
        from blurapp.ui.app import freeze_heap

        freeze_heap("adapter")  # the start-up's objects, the device's included
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
        if "error" not in info:
            # Every separable size bucket compiled (and run once) in the background, so that a
            # never-seen sigma is not a compile on the critical path (512x512 sample on
            # lavapipe: 14-33 ms after, about 1 s before; the warm-up takes about 5 s).
            # Background work: it starts when nothing the user asked for waits or runs, and
            # yields between its runs (blurapp.live.scheduler). Even its list of runs is made
            # there: 22 kernels' SVDs took the UI thread 0.45-0.8 s.
            spec, scheduler = self.spec, self.runner.scheduler

            def plan_warm_up(check, report) -> None:
                steps = pipeline.warm_up_steps(spec)
                scheduler.submit("warm", steps, priority=BACKGROUND, lane="background")

            self.runner.submit("warm", plan_warm_up, priority=BACKGROUND, lane="background")

    # ------------------------------------------------------------------------------ misc
    def cli_command(self) -> str:
        """The ``blurapp apply`` command that reproduces the current result: the spec's own
        options (:meth:`FilterSpec.to_argv`), so nothing is left out by construction."""
        src = self.model.image_path or sample_path()
        out = src.with_name(f"{src.stem}_filtered{src.suffix or '.png'}")
        return shlex.join(["blurapp", "apply", str(src), "-o", str(out), *self.spec.to_argv()])

    def magick_command(self) -> tuple[str | None, str]:
        """The ImageMagick command closest to the current result, or ``None``, and a note on
        what to expect (:func:`blurapp.core.im_kernels.magick_argv`)."""
        from blurapp.core.im_kernels import magick_argv

        argv, note = magick_argv(self.spec)
        if argv is None:
            return None, note
        src = self.model.image_path or sample_path()
        out = src.with_name(f"{src.stem}_magick{src.suffix or '.png'}")
        return shlex.join(["magick", str(src), *argv, str(out)]), note

    def export_cli(self) -> str:
        """Copy the ``blurapp apply`` command to the clipboard, and ImageMagick's next to it
        (on a second line, as a comment) where its options can do the same."""
        self.designer.flush()  # what is typed is what is exported
        command = self.cli_command()
        magick, note = self.magick_command()
        text = command if magick is None else f"{command}\n# ImageMagick ({note}):\n{magick}"
        QApplication.clipboard().setText(text)
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


class _AfterFirstExpose(QObject):
    """Calls ``then`` once the window's first expose event has been handled (a zero timer
    started inside it fires after Qt's paint of the window), then watches no more."""

    def __init__(self, window: QObject, then: Callable[[], None]) -> None:
        super().__init__(window)
        self._then = then
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.Expose:
            watched.removeEventFilter(self)
            QTimer.singleShot(0, self, self._then)
        return False


def _probe_adapter(check, report) -> dict:
    """The adapter's name, backend and kind (creates the device, off the UI thread)."""
    from blurapp.gpu.device import get_device

    ctx = get_device()
    return {**ctx.info, "is_software": ctx.is_software}
