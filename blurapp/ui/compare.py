"""The comparison area (objectName ``compareView``): the result, a before/after split, every
strategy side by side, and the five border modes on a corner crop, with views locked together.

The Strategies view compares the visible region of the result (its centre, up to 1024 pixels a
side) unless "Whole image" is ticked; both comparison views show their progress and can be
cancelled (``compareCancel``, ``bordersCancel``)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from blurapp.core.borders import BORDER_MODES
from blurapp.core.strategies import compared_names, get_info
from blurapp.ui.image_view import ImageView, ViewLink
from blurapp.ui.jobs import CORNERS, BordersResult, StrategiesResult

RESULT_TAB, SPLIT_TAB, STRATEGIES_TAB, BORDERS_TAB = range(4)


class Pane(QFrame):
    """A titled image view with a caption (or, instead of the image, why there is none)."""

    def __init__(
        self,
        title: str,
        *,
        smooth: bool = True,
        colour: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName(f"pane_{title}")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        # A strategy's pane wears its colour from the registry, as its line in the timing plot.
        swatch = f'<span style="color: {colour};">■</span> ' if colour else ""
        self.title = QLabel(f"{swatch}<b>{title}</b>")
        self.view = ImageView(smooth=smooth)
        self.view.setMinimumSize(120, 100)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setStyleSheet("color: #8a5a00; padding: 8px;")
        self.message.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.caption)
        self.filled = False

    def show_image(self, image: QImage, caption: str) -> None:
        self.message.hide()
        self.view.show()
        self.view.set_image(image)
        self.caption.setText(caption)
        self.filled = True

    def show_message(self, text: str) -> None:
        self.view.hide()
        self.message.setText(text)
        self.message.show()
        self.caption.clear()
        self.filled = False

    def clear(self, text: str = "") -> None:
        self.view.set_image(None)
        self.caption.setText(text)
        self.filled = False


def _progress_bar(name: str) -> QProgressBar:
    bar = QProgressBar(objectName=name)
    bar.setRange(0, 100)
    bar.setMaximumWidth(220)
    bar.hide()
    return bar


def _cancel_button(name: str) -> QPushButton:
    button = QPushButton("Cancel", objectName=name)
    button.setToolTip("Stop this comparison (what is done stays on screen)")
    button.hide()
    return button


def _first_run_text(run) -> str:
    """ " · first run 566 ms (compiling)" when the strategy's first run was timed apart."""
    if run.first_timing is None:
        return ""
    return f" · first run {run.first_timing.wall_ms:.0f} ms incl. compiling"


class StrategiesView(QWidget):
    """One pane per strategy: the image, its time and its maximum error, or why it cannot run.

    Times are warm runs (a strategy's first run in the session, which compiles its GPU
    pipelines, is made once more and shown apart); the cpu pane is the float64 reference the
    errors are measured against.
    """

    scope_changed = Signal()  # "Whole image" toggled

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("strategiesView")
        self.link = ViewLink()
        self.panes: dict[str, Pane] = {}
        self.header = QLabel("Every strategy on the current image and kernel.")
        self.header.setWordWrap(True)
        self.whole = QCheckBox("Whole image", objectName="compareWholeImage")
        self.whole.setToolTip(
            "Compare on the whole image instead of the visible region (up to 1024 px a side)"
        )
        self.progress = _progress_bar("compareProgress")
        self.cancel = _cancel_button("compareCancel")
        self.status = QLabel(objectName="compareStatus")
        bar = QHBoxLayout()
        bar.addWidget(self.whole)
        bar.addStretch(1)
        bar.addWidget(self.status)
        bar.addWidget(self.progress)
        bar.addWidget(self.cancel)
        self.whole.toggled.connect(lambda _on: self.scope_changed.emit())
        grid = QGridLayout()
        for i, name in enumerate(compared_names()):
            info = get_info(name)
            pane = Pane(name, colour=info.colour)
            pane.setToolTip(info.summary)
            self.panes[name] = pane
            self.link.add(pane.view)
            grid.addWidget(pane, i // 3, i % 3)
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addLayout(bar)
        layout.addLayout(grid, 1)
        self.result: StrategiesResult | None = None
        self.running = False

    def whole_image(self) -> bool:
        return self.whole.isChecked()

    def start(self, window: tuple[int, int, int, int] | None, shape: tuple[int, ...]) -> None:
        """A comparison of ``window`` (``None``: the whole image) has been asked for."""
        self.running = True
        self.progress.setValue(0)
        self.progress.show()
        self.cancel.show()
        h, w = int(shape[0]), int(shape[1])
        if window is None or window == (0, h, 0, w):
            self.status.setText(f"whole image, {w}×{h}")
        else:
            y0, y1, x0, x1 = window
            self.status.setText(f"visible region {x1 - x0}×{y1 - y0} at x {x0}, y {y0}")
        for pane in self.panes.values():
            if not pane.filled:
                pane.clear("waiting…")

    def show_cancelled(self, message: str = "") -> None:
        self.running = False
        self.progress.hide()
        self.cancel.hide()
        self.status.setText(message or "cancelled: what was done is shown")
        for pane in self.panes.values():
            if pane.caption.text() in ("running…", "waiting…"):
                pane.clear("cancelled")

    def show_result(self, result: StrategiesResult, *, final: bool = True) -> None:
        self.result = result
        done = {run.strategy for run in result.runs}
        for run in result.runs:
            pane = self.panes[run.strategy]
            if run.why_not:
                pane.show_message(f"cannot run: {run.why_not}")
            elif run.qimage is not None and run.timing is not None:
                t = run.timing
                tile = f", tile {run.tile}" if run.tile else ""
                if run.reference:
                    quality = "the float64 reference the others are compared with"
                else:
                    quality = f"max error {run.max_error:.2e}"
                pane.show_image(
                    run.qimage,
                    f"{t.total_ms:.2f} ms ({t.timer}){tile} · {t.mpix_per_s:.1f} Mpix/s · "
                    f"{quality}{_first_run_text(run)}",
                )
        running = True
        for name, pane in self.panes.items():
            if name not in done:
                pane.clear("running…" if running else "waiting…")
                running = False
        self.progress.setValue(round(100 * result.done / max(1, result.total)))
        if final:
            self.running = False
            self.progress.hide()
            self.cancel.hide()
        region = "the whole image" if result.whole else "the visible region"
        self.header.setText(
            f"Every strategy on {region} with <b>{result.kernel.spec}</b>, border "
            f"{result.border}; warm runs (a first run, which compiles, is timed apart); max "
            "error is against the float64 reference (the cpu pane)."
        )

    def applicable_count(self) -> int:
        return sum(1 for p in self.panes.values() if p.filled)


class BordersView(QWidget):
    """Five border modes side by side on a zoomable corner crop, and their differences."""

    settings_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("bordersView")
        self.link = ViewLink()
        self.corner = QComboBox(objectName="cornerCombo")
        self.corner.addItems(list(CORNERS))
        self.crop = QSpinBox(minimum=8, maximum=512, value=48, singleStep=8, objectName="cropSize")
        self.crop.setSuffix(" px")
        self.crop.setKeyboardTracking(False)
        self.reference = QComboBox(objectName="diffReference")
        self.reference.addItems(list(BORDER_MODES))
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.progress = _progress_bar("bordersProgress")
        self.cancel = _cancel_button("bordersCancel")
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Corner"))
        bar.addWidget(self.corner)
        bar.addWidget(QLabel("Crop"))
        bar.addWidget(self.crop)
        bar.addWidget(QLabel("Difference against"))
        bar.addWidget(self.reference)
        bar.addStretch(1)
        bar.addWidget(self.progress)
        bar.addWidget(self.cancel)
        grid = QGridLayout()
        self.panes: dict[str, Pane] = {}
        self.diff_panes: dict[str, Pane] = {}
        for i, mode in enumerate(BORDER_MODES):
            pane = Pane(mode, smooth=False)
            diff = Pane(f"|{mode} − ref|", smooth=False)
            self.panes[mode] = pane
            self.diff_panes[mode] = diff
            self.link.add(pane.view)
            self.link.add(diff.view)
            grid.addWidget(pane, 0, i)
            grid.addWidget(diff, 1, i)
        grid.setRowStretch(0, 3)
        grid.setRowStretch(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.info)
        layout.addLayout(grid, 1)
        self.result: BordersResult | None = None
        self.corner.currentTextChanged.connect(self.settings_changed)
        self.crop.valueChanged.connect(self.settings_changed)
        self.reference.currentTextChanged.connect(self.settings_changed)

    def start(self) -> None:
        self.progress.setValue(0)
        self.progress.show()
        self.cancel.show()

    def show_progress(self, done: int, total: int) -> None:
        self.progress.setValue(round(100 * done / max(1, total)))

    def show_cancelled(self, message: str = "") -> None:
        self.progress.hide()
        self.cancel.hide()
        self.info.setText(message or "cancelled")

    def show_result(self, result: BordersResult) -> None:
        self.result = result
        self.progress.hide()
        self.cancel.hide()
        for pane in result.panes:
            self.panes[pane.mode].show_image(pane.qimage, pane.mode)
            self.diff_panes[pane.mode].title.setText(
                f"<b>|{pane.mode} − {result.reference_mode}|</b>"
            )
            self.diff_panes[pane.mode].show_image(pane.diff, f"max |Δ| {pane.max_diff:.3g}")
        x, y, w, h = result.crop
        self.info.setText(
            f"{w}×{h} crop at the {result.corner} corner (x {x}, y {y}), run with "
            f"{result.strategy}; differences: black none, white the largest."
        )

    def filled_panes(self) -> int:
        return sum(1 for p in self.panes.values() if p.filled)


def scrolled(page: QWidget) -> QScrollArea:
    """``page`` in a scroll area: on a short screen (1366×768, or 200 % scaling) it scrolls
    instead of making the whole window taller than the screen."""
    area = QScrollArea()
    area.setWidget(page)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    return area


class CompareView(QTabWidget):
    """The tabbed comparison area; the window feeds it results, it never filters by itself."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compareView")
        self.result_view = ImageView()
        self.result_view.setObjectName("resultView")
        self.split_view = ImageView()
        self.split_view.setObjectName("splitView")
        self.split_view.set_split(True)
        self.result_link = ViewLink()
        self.result_link.add(self.result_view)
        self.result_link.add(self.split_view)
        self.strategies = StrategiesView()
        self.borders = BordersView()
        split_page = QWidget()
        split_layout = QVBoxLayout(split_page)
        split_layout.setContentsMargins(0, 0, 0, 0)
        hint = QLabel("  Before (left) and after (right): drag the white divider.")
        split_layout.addWidget(hint)
        split_layout.addWidget(self.split_view, 1)
        self.addTab(self.result_view, "Result")
        self.addTab(split_page, "Before / after")
        self.addTab(scrolled(self.strategies), "Strategies")
        self.addTab(scrolled(self.borders), "Border modes")

    def image_views(self) -> list[ImageView]:
        """Every image view of the area: the result, the split and each comparison pane."""
        panes = [*self.strategies.panes.values(), *self.borders.panes.values()]
        return [self.result_view, self.split_view, *(pane.view for pane in panes)]

    def current_view(self) -> ImageView:
        """The view that zoom actions apply to (the first pane of a comparison tab)."""
        index = self.currentIndex()
        if index == SPLIT_TAB:
            return self.split_view
        if index == STRATEGIES_TAB:
            return next(iter(self.strategies.panes.values())).view
        if index == BORDERS_TAB:
            return next(iter(self.borders.panes.values())).view
        return self.result_view
