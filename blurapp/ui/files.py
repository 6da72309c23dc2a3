"""The window's files: opening images (dialog, recent list, drag and drop), saving the result,
loading and saving kernel JSON, and the folders last used for each.

Saving goes through the pixel pipeline exactly as ``blurapp apply`` does (:func:`pixels_for_file`),
so a saved file and the exported command give the same pixels.

Opening and saving run off the UI thread: decoding and encoding on the window's CPU worker, the
pixels of a save on its GPU worker (channel ``save``), queued behind the live run in progress.
A save writes the settings on screen when it was asked for: the live result when it was made
with exactly that spec (also one finished while the save waited), else the image filtered again
with it; never an older result.
"""

from __future__ import annotations

import importlib.resources
import itertools
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
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
from blurapp.io import (
    ImageData,
    codecs,
    format_from_path,
    read_image,
    save_kernel,
    with_pixels,
    write_image,
)
from blurapp.ui.jobs import RATES, LiveCache, LiveResult
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
#: The save dialog's file types and the open dialog's filter, from the codec registry.
SAVE_FILTERS = {name: c.dialog_filter() for name, c in codecs.CODECS.items() if c.writes}
OPEN_FILTER = ";;".join(
    [
        f"Images ({' '.join(c.patterns() for c in codecs.CODECS.values())})",
        *(c.dialog_filter() for c in codecs.CODECS.values()),
        "All files (*)",
    ]
)
KERNEL_FILTER = "Kernel JSON (*.json)"


def sample_path() -> Path:
    """The bundled sample photo (public domain; see assets/samples/LICENSES.md)."""
    res = importlib.resources.files("blurapp.assets").joinpath(*SAMPLE)
    return Path(str(res))


def pixels_for_file(
    image: np.ndarray,
    spec: FilterSpec,
    fmt: str,
    live: LiveResult | None = None,
    *,
    check: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
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
    side = RATES.tile_side(image.shape, spec) if check is not None else None
    return pipeline.filter_pixels(
        image, spec, dtype=dtype, max_tile_side=side, check=check, progress=progress
    ).image


@dataclass
class SaveRequest:
    """A save in progress: the settings on screen when it was asked for, and where to."""

    path: Path
    fmt: str
    data: ImageData
    image: np.ndarray
    image_key: Hashable
    spec: FilterSpec


def compute_for_save(
    request: SaveRequest, cache: LiveCache, check, report
) -> tuple[SaveRequest, np.ndarray]:
    """The GPU worker's half of a save: the live result of exactly ``request.spec`` when the
    worker holds one (it may have finished while this job waited), else the image filtered again
    (in tiles, with progress)."""
    dtype = file_dtype(request.spec, request.image.dtype, request.fmt)
    live = cache.result_for(request.image_key, request.spec, dtype)
    pixels = pixels_for_file(
        request.image,
        request.spec,
        request.fmt,
        live,
        check=check,
        progress=lambda done, total: report((done, total)),
    )
    return request, pixels


class FilesHost(Protocol):
    """What :class:`WindowFiles` needs from the window."""

    result: LiveResult | None
    runner: object  # JobRunner for the GPU
    cpu_runner: object  # JobRunner for files
    live_cache: LiveCache
    saved: object  # Signal(str)
    save_failed: object  # Signal(str)

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
        self._opening: Path | None = None
        self._saves = itertools.count(1)  # each save its own channels: none supersedes another

    def attach_recent_menu(self, menu: QMenu) -> None:
        self.recent = RecentFiles(self.settings, menu, self.open_path)

    def _folder(self, key: str) -> str:
        return str(self.settings.value(key, str(Path.home())))

    # ------------------------------------------------------------------ images

    def open_sample(self) -> bool:
        return self.open_path(sample_path())

    def open_path(self, path: str | os.PathLike[str]) -> bool:
        """Start opening an image file (decoded on the CPU worker; the model's
        ``image_changed`` says when it is there). A failure is a dialog and the current image
        stays. False when it cannot even start (no such file)."""
        path = Path(path)
        if not path.is_file():
            self.host.show_error(f"{path}: no such file")
            return False
        self._opening = path
        self.host.runner.cancel("live")  # the old image's result is of no use any more
        self.host.cpu_runner.submit("open", lambda check, report: (path, read_image(path)))
        return True

    def opened(self, result: object) -> None:
        path, data = result  # type: ignore[misc]
        if path != self._opening:
            return
        self._opening = None
        self.model.set_image(data.pixels, data=data, path=path)
        self.settings.setValue("files/lastFolder", str(path.parent))
        if self.recent is not None:
            self.recent.add(path)

    def open_failed(self, message: str) -> None:
        self._opening = None
        self.host.show_error(message)

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
        suggested, selected = self.save_suggestion()
        path, _ = QFileDialog.getSaveFileName(
            self.parent, "Save result", suggested, ";;".join(SAVE_FILTERS.values()), selected
        )
        if path:
            self.save_result(path)

    def save_suggestion(self) -> tuple[str, str]:
        """The path the save dialog proposes and its file-type filter: the source's name with
        ``_filtered`` in the last folder used, in the source's own format (a JPEG stays a JPEG,
        with its own extension); PNG for the sample or a format blurapp cannot write."""
        source = self.model.image_path
        stem = source.stem if source else "image"
        suffix, fmt = ".png", "png"
        if source is not None:
            try:
                fmt = format_from_path(source)
                suffix = source.suffix
            except BlurappError:
                pass
        if fmt not in SAVE_FILTERS:
            suffix, fmt = ".png", "png"
        path = Path(self._folder("files/lastFolder")) / f"{stem}_filtered{suffix}"
        return str(path), SAVE_FILTERS[fmt]

    def save_result(self, path: str | os.PathLike[str]) -> bool:
        """Start writing the current image filtered by the current spec, as ``blurapp apply``
        would (the pixel type the format holds; ICC profile and EXIF kept), off the UI thread.

        The window's :attr:`saved` (the path) or :attr:`save_failed` (why) says how it ended.
        Returns False when it cannot start (no image, an unknown format).
        """
        image, data = self.model.image, self.model.image_data
        if image is None or data is None:
            self.host.show_error("There is no result to save yet.")
            return False
        try:
            fmt = format_from_path(path)
        except BlurappError as err:
            self.host.show_error(str(err))
            return False
        request = SaveRequest(Path(path), fmt, data, image, self.model.image_key, self.model.spec)
        cache = self.host.live_cache
        live = self.host.result
        if (
            live is not None
            and live.spec == request.spec
            and live.image_key == request.image_key
            and live.image.dtype == file_dtype(request.spec, image.dtype, fmt)
        ):
            self.computed((request, live.image))  # nothing to compute: straight to the writer
        else:
            self.host.runner.submit(
                f"save:{next(self._saves)}",
                lambda check, report: compute_for_save(request, cache, check, report),
            )
        self.host.show_status(f"Saving {Path(path).name}…", 0)
        return True

    def computed(self, result: object) -> None:
        """The pixels of a save are ready: encode and write them on the CPU worker."""
        request, pixels = result  # type: ignore[misc]

        def write(check, report) -> Path:
            write_image(
                request.path, with_pixels(request.data, pixels), fmt=request.fmt, overwrite=True
            )
            return request.path

        self.host.cpu_runner.submit(f"write:{next(self._saves)}", write)

    def written(self, path: object) -> None:
        self.settings.setValue("files/lastFolder", str(Path(str(path)).parent))
        self.host.show_status(f"Saved {path}", 5000)
        self.host.saved.emit(str(path))

    def failed(self, message: str) -> None:
        self.host.show_status("", 1)
        self.host.show_error(message)
        self.host.save_failed.emit(message)

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
