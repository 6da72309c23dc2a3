"""The window's files: opening images (dialog, recent list, drag and drop), saving the result,
loading and saving kernel JSON, and the folders last used for each.

Saving goes through the pixel pipeline exactly as ``blurapp apply`` does (:func:`pixels_for_file`),
so a saved file and the exported command give the same pixels.
"""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from blurapp import pipeline
from blurapp.batch.pipeline import file_dtype
from blurapp.core.errors import BlurappError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.io import format_from_path, read_image, save_kernel, with_pixels, write_image
from blurapp.ui.jobs import LiveResult
from blurapp.ui.model import FilterModel

__all__ = [
    "MAX_RECENT",
    "OPEN_FILTER",
    "SAVE_FILTERS",
    "RecentFiles",
    "WindowFiles",
    "pixels_for_file",
    "sample_path",
]

MAX_RECENT = 8
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
KERNEL_FILTER = "Kernel JSON (*.json)"


def sample_path() -> Path:
    """The bundled sample photo (public domain; see assets/samples/LICENSES.md)."""
    res = importlib.resources.files("blurapp.assets").joinpath(*SAMPLE)
    return Path(str(res))


def pixels_for_file(
    image: np.ndarray, spec: FilterSpec, fmt: str, live: LiveResult | None = None
) -> np.ndarray:
    """The pixels ``blurapp apply`` would write for ``image`` filtered by ``spec`` into ``fmt``.

    The live result is reused when it was made with ``spec`` in the pixel type the format takes;
    otherwise the image is filtered again straight into that type, from the stored pixels: a
    16-bit result converted to 8 bits would be rounded twice, and a result of an older spec
    would not be what the window shows now.
    """
    dtype = file_dtype(spec, image.dtype, fmt)
    if live is not None and live.spec == spec and live.image.dtype == dtype:
        return live.image
    return pipeline.filter_pixels(image, spec, dtype=dtype).image


class FilesHost(Protocol):
    """What :class:`WindowFiles` needs from the window."""

    result: LiveResult | None

    def show_error(self, message: str) -> None: ...

    def show_status(self, message: str, ms: int) -> None: ...

    def set_kernel(self, kernel: Kernel, source: str = "code") -> None: ...


class RecentFiles:
    """The "Open recent" menu, newest first, kept in ``files/recent``."""

    def __init__(
        self, settings: QSettings, menu: QMenu, open_path: Callable[[str], object]
    ) -> None:
        self.settings, self.menu, self._open = settings, menu, open_path
        self.refresh()

    def paths(self) -> list[str]:
        value = self.settings.value("files/recent", [])
        if isinstance(value, str):
            return [value]
        return [str(v) for v in (value or [])]

    def add(self, path: str | os.PathLike[str]) -> None:
        recent = [p for p in self.paths() if p != str(path)]
        recent.insert(0, str(path))
        self.settings.setValue("files/recent", recent[:MAX_RECENT])
        self.refresh()

    def refresh(self) -> None:
        self.menu.clear()
        recent = self.paths()
        for p in recent:
            act = self.menu.addAction(p)
            act.triggered.connect(lambda _checked=False, p=p: self._open(p))
        self.menu.setEnabled(bool(recent))


class WindowFiles:
    """Open, save and the kernel files for one window; failures are one-sentence dialogs."""

    def __init__(
        self, host: FilesHost, parent: QWidget, model: FilterModel, settings: QSettings
    ) -> None:
        self.host, self.parent, self.model, self.settings = host, parent, model, settings
        self.recent: RecentFiles | None = None

    def attach_recent_menu(self, menu: QMenu) -> None:
        self.recent = RecentFiles(self.settings, menu, self.open_path)

    def _folder(self, key: str) -> str:
        return str(self.settings.value(key, str(Path.home())))

    # ------------------------------------------------------------------ images

    def open_sample(self) -> bool:
        return self.open_path(sample_path())

    def open_path(self, path: str | os.PathLike[str]) -> bool:
        """Open an image file; a failure is a dialog and the current image stays."""
        path = Path(path)
        try:
            data = read_image(path)
        except BlurappError as err:
            self.host.show_error(str(err))
            return False
        self.model.set_image(data.pixels, data=data, path=path)
        self.settings.setValue("files/lastFolder", str(path.parent))
        if self.recent is not None:
            self.recent.add(path)
        return True

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.parent, "Open image", self._folder("files/lastFolder"), OPEN_FILTER
        )
        if path:
            self.open_path(path)

    def save_dialog(self) -> None:
        if self.model.image is None:
            self.host.show_error("There is no result to save yet.")
            return
        source = self.model.image_path
        stem = source.stem if source else "image"
        suggested = str(Path(self._folder("files/lastFolder")) / f"{stem}_filtered.png")
        path, _ = QFileDialog.getSaveFileName(
            self.parent, "Save result", suggested, ";;".join(SAVE_FILTERS.values())
        )
        if path:
            self.save_result(path)

    def save_result(self, path: str | os.PathLike[str]) -> bool:
        """Write the current image filtered by the current spec, as ``blurapp apply`` would
        (the pixel type the format holds; ICC profile and EXIF kept)."""
        image, data = self.model.image, self.model.image_data
        if image is None or data is None:
            self.host.show_error("There is no result to save yet.")
            return False
        try:
            fmt = format_from_path(path)
            pixels = pixels_for_file(image, self.model.spec, fmt, self.host.result)
            write_image(path, with_pixels(data, pixels), fmt=fmt, overwrite=True)
        except BlurappError as err:
            self.host.show_error(str(err))
            return False
        self.settings.setValue("files/lastFolder", str(Path(path).parent))
        self.host.show_status(f"Saved {path}", 5000)
        return True

    # ------------------------------------------------------------------ kernels

    def load_kernel_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.parent, "Load kernel", self._folder("files/lastKernelFolder"), KERNEL_FILTER
        )
        if path:
            self.load_kernel(path)

    def load_kernel(self, path: str | os.PathLike[str]) -> bool:
        try:
            kernel = Kernel.load(path)
        except BlurappError as err:
            self.host.show_error(str(err))
            return False
        self.settings.setValue("files/lastKernelFolder", str(Path(path).parent))
        self.host.set_kernel(kernel, "file")
        return True

    def save_kernel_dialog(self) -> None:
        suggested = Path(self._folder("files/lastKernelFolder")) / f"{self.model.kernel.name}.json"
        path, _ = QFileDialog.getSaveFileName(
            self.parent, "Save kernel", str(suggested), KERNEL_FILTER
        )
        if path:
            self.save_kernel(path)

    def save_kernel(self, path: str | os.PathLike[str]) -> bool:
        try:
            # The dialog has asked before replacing a file.
            save_kernel(self.model.kernel, path, overwrite=True)
        except BlurappError as err:
            self.host.show_error(str(err))
            return False
        self.settings.setValue("files/lastKernelFolder", str(Path(path).parent))
        self.host.show_status(f"Saved kernel to {path}", 5000)
        return True
