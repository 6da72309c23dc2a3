"""The frames of an animation or a multi-page file in the window: a slider that picks the frame
previewed, and the frames of a save (every one filtered with the same settings)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

from blurapp.io import ImageData, with_frames, with_pixels

__all__ = ["FrameBar", "with_result"]


class FrameBar(QWidget):
    """A label ("Frame 2/12") and a slider, shown only for an image of several frames; moving it
    emits :attr:`frame_chosen` with the frame's index."""

    frame_chosen = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, objectName="frameBar")
        self.label = QLabel(objectName="frameLabel")
        self.slider = QSlider(Qt.Orientation.Horizontal, objectName="frameSlider")
        self.slider.setMinimumWidth(140)
        self.slider.setToolTip(
            "The frame previewed; a save writes every frame, filtered with the same settings"
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.slider)
        self._data: ImageData | None = None
        self.slider.valueChanged.connect(self._moved)
        self.hide()

    @property
    def frame(self) -> int:
        return self.slider.value()

    def show_for(self, data: ImageData | None) -> bool:
        """Follow the image now open: a new one starts at its first frame; the same one (a frame
        picked here) keeps the slider where it is. Returns whether ``data`` is a new image."""
        if data is self._data:
            return False
        self._data = data
        count = data.frame_count if data is not None else 1
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, count - 1))
        self.slider.setValue(0)
        self.slider.blockSignals(False)
        self._say(0, count)
        self.setVisible(count > 1)
        return True

    def _moved(self, index: int) -> None:
        count = self._data.frame_count if self._data is not None else 1
        self._say(index, count)
        self.frame_chosen.emit(index)

    def _say(self, index: int, count: int) -> None:
        self.label.setText(f"Frame {index + 1}/{count}")


def with_result(data: ImageData, pixels: np.ndarray | tuple[np.ndarray, ...]) -> ImageData:
    """``data`` with a save's pixels: one filtered image, or every frame of an animation."""
    if isinstance(pixels, tuple):
        return with_frames(data, pixels)
    return with_pixels(data, pixels)
