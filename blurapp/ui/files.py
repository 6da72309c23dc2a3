"""The window's files: opening images (dialog, recent list, drag and drop), saving the result,
loading and saving kernel JSON, and the folders last used for each.

Saving goes through the pixel pipeline exactly as ``blurapp apply`` does (:func:`pixels_for_file`),
so a saved file and the exported command give the same pixels.

Opening and saving run off the UI thread: decoding and encoding on the window's CPU worker, the
pixels of a save on its GPU worker (channel ``save``), queued behind the live run in progress.
A save writes the settings on screen when it was asked for: the live result when it was made
with exactly that spec (also one finished while the save waited), else the image filtered again
with it; never an older result.

Every file the window writes follows the command line's rule (DESIGN.md, "Command line"): the
open image (compared by device and inode, as it was when opened) is never written by a save,
nor by *Save kernel*, even when the user answers "replace" (the dialog says it is the original
and offers another name); replacing it is the separate *Overwrite original* action with its own
confirmation; a folder, a FIFO or a device is never replaced; writes are atomic
(:mod:`blurapp.io.atomic`). A save in progress holds the window open until it is written or the
user stops it (:meth:`WindowFiles.may_close`).
"""

from __future__ import annotations

import importlib.resources
import itertools
import os
import re
import stat
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from blurapp import pipeline
from blurapp.batch.pipeline import file_dtype, linear_curves
from blurapp.core.colour import ChannelCurves
from blurapp.core.errors import BlurappError, OutputError, UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.io import (
    DEFAULT_MAX_PIXELS,
    ImageData,
    ImageInfo,
    check_name_length,
    check_writable,
    codecs,
    file_identity,
    format_from_path,
    probe_image,
    read_image,
    save_kernel,
    write_image,
)
from blurapp.memory import MEMORY_SHARE, available_memory
from blurapp.ui import file_dialogs
from blurapp.ui.frames import with_result
from blurapp.ui.jobs import RATES, LiveCache, LiveResult
from blurapp.ui.model import FilterModel
from blurapp.ui.window_settings import SettingsReader

__all__ = [
    "MAX_RECENT",
    "OPEN_FILTER",
    "SAVE_FILTERS",
    "RecentFiles",
    "WindowFiles",
    "file_kind",
    "pixels_for_file",
    "sample_path",
    "with_filter_extension",
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


def file_kind(path: Path) -> str | None:
    """What ``path`` is when it is not a regular file an image can be read from ("a folder",
    "a FIFO", "a device", "a socket", "not there"), or ``None`` for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "not there" if not os.path.lexists(path) else "a link to nothing"
    except (OSError, ValueError) as err:
        return f"unreadable ({getattr(err, 'strerror', None) or err})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (a named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def with_filter_extension(path: str, chosen_filter: str) -> str:
    """``path`` with the first extension of the save dialog's chosen filter
    (``"PNG image (*.png)"``) added when its own extension names no format blurapp writes."""
    try:
        format_from_path(path)
        return path
    except BlurappError:
        pass
    found = re.search(r"\*(\.[A-Za-z0-9]+)", chosen_filter or "")
    return path + found.group(1) if found else path


def _free_name(path: Path) -> Path:
    """``path``, or ``stem-2.ext``, ``stem-3.ext``... : the first that does not exist."""
    if not os.path.lexists(path):
        return path
    stem = re.sub(r"-\d+$", "", path.stem)
    for n in itertools.count(2):
        candidate = path.with_name(f"{stem}-{n}{path.suffix}")
        if not os.path.lexists(candidate):
            return candidate
    raise AssertionError  # unreachable


def _bytes(n: float) -> str:
    """Memory for a message: ``"1.5 GiB"``, ``"12 MiB"``."""
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{max(1, round(n / 2**20))} MiB"


def _why_not(path: Path, err: BlurappError) -> str:
    """``"notes.txt (not a PNG, JPEG, ... file)"``: a dropped file's name and the reason."""
    reason = str(err).replace(f"cannot read {path}: ", "")
    return f"{path.name} ({reason})"


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
    curves: ChannelCurves | None = None,
) -> np.ndarray:
    """The pixels ``blurapp apply`` would write for ``image`` filtered by ``spec`` into ``fmt``
    (``curves``: ``--linear``'s, from the file's ICC profile, as apply takes them).

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
        image, spec, dtype=dtype, max_tile_side=side, check=check, progress=progress,
        curves=curves,
    ).image  # fmt: skip


@dataclass
class SaveRequest:
    """A save in progress: the settings on screen when it was asked for, and where to."""

    path: Path
    fmt: str
    data: ImageData
    image: np.ndarray
    image_key: Hashable
    spec: FilterSpec
    number: int = 0  # its channels are save:N (the pixels) and write:N (the file)
    overwrite: bool = False  # the user said "replace" for this file
    original: bool = False  # Overwrite original: the open image's own file, on purpose
    source: tuple[int, int] | None = None  # the open image's (device, inode): never written


@dataclass
class LargeImage:
    """An image over the megapixel limit, found from its header before decoding it."""

    path: Path
    info: ImageInfo
    max_pixels: int


@dataclass
class Opened:
    """A decoded image, and what else a drop of several files held."""

    path: Path
    data: ImageData
    others: list[Path] = field(default_factory=list)  # more images, not opened
    skipped: list[str] = field(default_factory=list)  # "notes.txt: not an image", ...


def _open_first(paths: Sequence[Path], max_pixels: int, check) -> Opened | LargeImage:
    """The CPU worker's open: the first of ``paths`` that is an image is decoded; the others
    are probed (headers only) to tell images from the rest."""
    opened: Opened | None = None
    large: LargeImage | None = None
    others: list[Path] = []
    skipped: list[str] = []
    first_error: BlurappError | None = None
    for path in paths:
        check()
        try:
            info = probe_image(path)
        except BlurappError as err:
            first_error = first_error or err
            skipped.append(_why_not(path, err))
            continue
        if opened is not None:
            others.append(path)
            continue
        limit = max_pixels
        if info.pixels > limit:
            # Asked about only when no other image of the drop opens: one question at most,
            # and the images after it are not lost behind a Cancel.
            large = large or LargeImage(path, info, limit)
            if len(paths) > 1:
                skipped.append(
                    f"{path.name} ({info.width}×{info.height}, over the limit of "
                    f"{limit / 1e6:g} megapixels: open it alone to be asked)"
                )
            continue
        try:
            opened = Opened(path, read_image(path, max_pixels=limit))
        except BlurappError as err:
            first_error = first_error or err
            skipped.append(_why_not(path, err))
    if opened is None and large is not None:
        return large
    if opened is None:
        if len(paths) == 1 and first_error is not None:
            raise first_error
        raise UsageError(
            f"none of the {len(paths)} files dropped is an image blurapp reads: "
            + "; ".join(skipped[:3])
            + (f"; and {len(skipped) - 3} more" if len(skipped) > 3 else "")
        )
    opened.others, opened.skipped = others, skipped
    return opened


def frames_for_file(request: SaveRequest, check, report) -> tuple[np.ndarray, ...]:
    """Every frame of the open animation or multi-page image filtered with the request's spec,
    into the pixel type of its format (the frame on screen is only the preview of one)."""
    frames = request.data.frames
    curves = linear_curves(request.spec, request.data.icc_profile)
    done = []
    for i, frame in enumerate(frames):
        done.append(
            pixels_for_file(frame, request.spec, request.fmt, None, check=check, curves=curves)
        )
        report((i + 1, len(frames)))
    return tuple(done)


def compute_for_save(
    request: SaveRequest, cache: LiveCache, check, report
) -> tuple[SaveRequest, np.ndarray]:
    """The GPU worker's half of a save: the live result of exactly ``request.spec`` when the
    worker holds one (it may have finished while this job waited), else the image filtered again
    (in tiles, with progress)."""
    if request.data.frame_count > 1:  # an animation or pages: every frame is saved
        return request, frames_for_file(request, check, report)  # type: ignore[return-value]
    dtype = file_dtype(request.spec, request.image.dtype, request.fmt)
    live = cache.result_for(request.image_key, request.spec, dtype)
    pixels = pixels_for_file(
        request.image,
        request.spec,
        request.fmt,
        live,
        check=check,
        progress=lambda done, total: report((done, total)),
        curves=linear_curves(request.spec, request.data.icc_profile),
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

    def close(self) -> bool: ...


class RecentFiles:
    """The "Open recent" menu, newest first, kept in ``files/recent``."""

    def __init__(
        self,
        settings: QSettings,
        menu: QMenu,
        open_path: Callable[[str], object],
        reader: SettingsReader | None = None,
    ) -> None:
        self.settings, self.menu, self._open = settings, menu, open_path
        self.reader = reader or SettingsReader(settings)
        self.refresh()

    def paths(self) -> list[str]:
        return self.reader.paths("files/recent")

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
        self,
        host: FilesHost,
        parent: QWidget,
        model: FilterModel,
        settings: QSettings,
        reader: SettingsReader | None = None,
    ) -> None:
        self.host, self.parent, self.model, self.settings = host, parent, model, settings
        self.reader = reader or SettingsReader(settings)
        self.recent: RecentFiles | None = None
        self._opening: Path | None = None
        self._saves = itertools.count(1)  # each save its own channels: none supersedes another
        self._pending: dict[int, SaveRequest] = {}  # saves asked for and not yet written
        self._source: tuple[int, int] | None = None  # the open image's file, as opened
        self.close_dialog: file_dialogs.CloseWhileSaving | None = None
        self._dropped_refused: list[str] = []  # why files of the last drop were not opened
        self.notice: QMessageBox | None = None
        self.last_notice = ""

    def attach_recent_menu(self, menu: QMenu) -> None:
        self.recent = RecentFiles(self.settings, menu, self.open_path, self.reader)

    def _folder(self, key: str) -> str:
        return self.reader.text(key) or str(Path.home())

    def show_notice(self, message: str) -> None:
        """Something the user should know that is not an error (what a drop did not open)."""
        self.last_notice = message
        if self.notice is not None:
            self.notice.close()
        self.notice = QMessageBox(
            QMessageBox.Icon.Information, "blurapp", message, parent=self.parent
        )
        self.notice.setObjectName("noticeDialog")
        self.notice.open()

    # ------------------------------------------------------------------ images

    def open_sample(self) -> bool:
        return self.open_path(sample_path())

    def _unopenable(self, path: Path) -> str | None:
        kind = file_kind(path)
        if kind is None:
            return None
        if kind == "not there":
            return f"{path}: no such file"
        if kind.startswith("unreadable"):
            return f"cannot open {path}: {kind[len('unreadable (') : -1]}"
        return f"cannot open {path}: it is {kind}, not an image file"

    def open_path(
        self, path: str | os.PathLike[str], *, max_pixels: int = DEFAULT_MAX_PIXELS
    ) -> bool:
        """Start opening an image file (decoded on the CPU worker; the model's
        ``image_changed`` says when it is there). A failure is a dialog and the current image
        stays. False when it cannot even start (no such file, a folder, a FIFO, a device).

        An image over ``max_pixels`` (the command line's ``--max-megapixels``) is not decoded:
        a dialog says its size and the memory it needs, and offers to open it anyway."""
        path = Path(path)
        problem = self._unopenable(path)
        if problem is not None:
            self.host.show_error(problem)
            return False
        self._dropped_refused = []
        return self._start_open([path], max_pixels)

    def open_dropped(self, paths: Sequence[str | os.PathLike[str]]) -> bool:
        """Files dropped on the window: kernel files (``.json``) are loaded, the first image
        is opened and the other images are put in *Open recent*; a notice says what was not
        opened and why. False when nothing could be opened."""
        files = [Path(p) for p in paths]
        kernels = [p for p in files if p.suffix.lower() == ".json" and file_kind(p) is None]
        for kernel in kernels:
            self.load_kernel(kernel)
        rest = [p for p in files if p not in kernels]
        usable = [p for p in rest if file_kind(p) is None]
        refused = [self._unopenable(p) or "" for p in rest if p not in usable]
        if not usable:
            if refused:
                self.host.show_error("; ".join(refused[:3]))
            return bool(kernels)
        self._dropped_refused = refused
        return self._start_open(usable, DEFAULT_MAX_PIXELS)

    def _start_open(self, paths: list[Path], max_pixels: int) -> bool:
        self._opening = paths[0]
        self.host.runner.cancel("live")  # the old image's result is of no use any more
        self.host.cpu_runner.submit(
            "open", lambda check, report: _open_first(paths, max_pixels, check)
        )
        return True

    def opened(self, result: object) -> None:
        if isinstance(result, LargeImage):
            self._opening = None
            self._ask_large(result)
            return
        if not isinstance(result, Opened):
            return
        path, data = result.path, result.data
        self._opening = None
        self._source = file_identity(path)
        self.model.set_image(data.pixels, data=data, path=path)
        self.settings.setValue("files/lastFolder", str(path.parent))
        if self.recent is not None:
            for other in reversed(result.others):
                self.recent.add(other)
            self.recent.add(path)
        skipped = [*self._dropped_refused, *result.skipped]
        self._dropped_refused = []
        if result.others or skipped:
            lines = [f"Opened {path.name}."]
            if result.others:
                names = ", ".join(p.name for p in result.others)
                lines.append(
                    f"blurapp shows one image at a time: the other images dropped ({names}) "
                    "are in File ▸ Open recent."
                )
            if skipped:
                lines.append("Not opened: " + "; ".join(skipped) + ".")
            self.show_notice(" ".join(lines))

    def _ask_large(self, large: LargeImage) -> None:
        info = large.info
        mp, limit = info.pixels / 1e6, large.max_pixels / 1e6
        spec = self.model.spec
        need = pipeline.working_bytes(
            info.width, info.height, info.channels, info.dtype, spec, spec.output_dtype(info.dtype)
        )
        free = available_memory()
        can_open = free is None or need <= free * MEMORY_SHARE
        text = (
            f"{large.path.name} is {info.width}×{info.height}, {mp:.1f} megapixels: over the "
            f"limit of {limit:g} megapixels."
        )
        memory = f"Opening and filtering it needs about {_bytes(need)} of memory"
        if free is not None:
            memory += f"; {_bytes(free * MEMORY_SHARE)} are free"
        if can_open:
            informative = (
                "The limit guards against decompression bombs: small files that declare huge "
                f"images. {memory}. Open it anyway (the limit is raised for this file only)?"
            )
        else:
            informative = f"{memory}: it cannot be opened on this machine."
        if file_dialogs.ask_large_image(self.parent, text, informative, can_open=can_open):
            self.open_path(large.path, max_pixels=max(info.pixels, large.max_pixels))

    def open_failed(self, message: str) -> None:
        self._opening = None
        self.host.show_error(message)

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.parent, "Open image", self._folder("files/lastFolder"), OPEN_FILTER
        )
        if path:
            self.open_path(path)

    # ------------------------------------------------------------------ where to write

    def is_source(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is the open image's file (by device and inode, as opened)."""
        return self._source is not None and file_identity(path) == self._source

    def _problem(self, path: Path, *, overwrite: bool, what: str) -> str | None:
        """Why ``path`` must not be written now, in the window's words, or ``None``."""
        if self.is_source(path):
            return (
                f"{path.name} is the original image open in this window: {what} never "
                "replaces it (File ▸ Overwrite original… does, on purpose)"
            )
        if os.path.lexists(path):
            kind = file_kind(path)
            if kind is not None and kind != "a link to nothing":
                return f"{path} is {kind}, not a file: it is never replaced"
            if not overwrite:
                return f"{path} exists: choose another name, or say Replace in the save dialog"
        folder = path.parent
        if not folder.is_dir():
            return f"cannot save {path.name}: the folder {folder} does not exist"
        try:
            check_name_length([path])
            check_writable(folder, str(path))
        except BlurappError as err:
            return str(err)
        return None

    def _choose(
        self, caption: str, suggested: str, filters: str, selected: str, what: str
    ) -> tuple[Path, bool] | None:
        """The save dialog, asked again until it names a file that may be written: the open
        image is refused (with another name offered), an existing file is replaced only when
        the user says so. Returns the path and whether to replace it, or ``None``."""
        options = QFileDialog.Option.DontConfirmOverwrite  # asked below, knowing the original
        while True:
            path, chosen = QFileDialog.getSaveFileName(
                self.parent, caption, suggested, filters, selected, options
            )
            if not path:
                return None
            if what == "a kernel":
                if not Path(path).suffix:
                    path += ".json"
            else:
                path = with_filter_extension(path, chosen)
            dest, selected = Path(path), chosen or selected
            suggested = str(_free_name(dest))
            if self.is_source(dest):
                answer = file_dialogs.refuse_destination(
                    self.parent,
                    f"{dest.name} is the original image open in this window.",
                    f"Saving {what} over it would replace the original. Choose another name "
                    "(File ▸ Overwrite original… replaces it on purpose).",
                )
                if answer == "another":
                    if dest.name == Path(suggested).name:
                        suggested = str(
                            _free_name(dest.with_name(f"{dest.stem}_filtered{dest.suffix}"))
                        )
                    continue
                return None
            kind = file_kind(dest) if os.path.lexists(dest) else None
            if kind is not None and kind != "a link to nothing":
                answer = file_dialogs.refuse_destination(
                    self.parent, f"{dest.name} is {kind}, not a file.", "It is never replaced."
                )
                if answer == "another":
                    continue
                return None
            if kind is None and os.path.lexists(dest):
                answer = file_dialogs.ask_replace(self.parent, dest)
                if answer == "another":
                    continue
                if answer != "replace":
                    return None
                return dest, True
            return dest, False

    # ------------------------------------------------------------------ saving

    def save_dialog(self) -> None:
        if self.model.image is None:
            self.host.show_error("There is no result to save yet.")
            return
        suggested, selected = self.save_suggestion()
        chosen = self._choose(
            "Save result", suggested, ";;".join(SAVE_FILTERS.values()), selected, "the result"
        )
        if chosen is not None:
            self.save_result(chosen[0], overwrite=chosen[1])

    def save_suggestion(self) -> tuple[str, str]:
        """The path the save dialog proposes and its file-type filter: the source's name with
        ``_filtered`` in the last folder used, in the source's own format (a JPEG stays a JPEG,
        with its own extension); PNG for the sample or a format blurapp cannot write. A name
        already taken gets ``-2``, ``-3``..."""
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
        return str(_free_name(path)), SAVE_FILTERS[fmt]

    def overwrite_original_dialog(self) -> None:
        """File ▸ Overwrite original…: replace the open image's file with the result, after a
        confirmation that names what is lost (GIMP's *Overwrite*)."""
        source, data = self.model.image_path, self.model.image_data
        if self.model.image is None or data is None:
            self.host.show_error("There is no result to save yet.")
            return
        if source is None or self._source is None or source == sample_path():
            self.host.show_error(
                "There is no original file to overwrite: the image was not opened from a file "
                "of yours (Save result… writes one)"
            )
            return
        if file_identity(source) != self._source:
            self.host.show_error(
                f"{source} is no longer the file that was opened (moved or replaced since): "
                "it is not overwritten; Save result… writes a copy"
            )
            return
        try:
            fmt = format_from_path(source)
        except BlurappError:
            self.host.show_error(
                f"blurapp cannot write {source.suffix or 'extensionless'} files: Save result… "
                "writes the result in another format"
            )
            return
        spec = self.model.spec
        h, w = self.model.image.shape[:2]
        dtype = file_dtype(spec, self.model.image.dtype, fmt)
        what = f"the result of {spec.kernel.spec} ({spec.border.name} border)"
        lost = (
            f"The original pixels of {source.name} ({w}×{h}, {self.model.image.dtype}) are "
            f"lost for good: the file will hold the filtered image ({dtype})."
        )
        if fmt in ("jpg", "webp"):
            lost += f" {'JPEG' if fmt == 'jpg' else 'WebP'} is lossy: it is encoded again."
        if file_dialogs.ask_overwrite_original(self.parent, source, what, lost):
            self.save_result(source, original=True)

    def save_result(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        original: bool = False,
    ) -> bool:
        """Start writing the current image filtered by the current spec, as ``blurapp apply``
        would (the pixel type the format holds; ICC profile and EXIF kept), off the UI thread.

        Arguments:
            path: the file to write.
            overwrite: replace ``path`` if it exists (the save dialog asked the user).
            original: ``path`` is the open image's own file and the user confirmed
                *Overwrite original*; otherwise that file is never written.

        The window's :attr:`saved` (the path) or :attr:`save_failed` (why) says how it ended.
        Returns False when it cannot start (no image, an unknown format, a destination that
        must not be written: the reason is shown).
        """
        image, data = self.model.image, self.model.image_data
        if image is None or data is None:
            self.host.show_error("There is no result to save yet.")
            return False
        path = Path(path)
        try:
            fmt = format_from_path(path)
        except BlurappError as err:
            self.host.show_error(str(err))
            return False
        if original:
            if not self.is_source(path):
                self.host.show_error(f"{path} is not the original image open in this window")
                return False
        else:
            problem = self._problem(path, overwrite=overwrite, what="a save")
            if problem is not None:
                self.host.show_error(problem)
                return False
        request = SaveRequest(
            path, fmt, data, image, self.model.image_key, self.model.spec,
            number=next(self._saves), overwrite=overwrite or original, original=original,
            source=self._source,
        )  # fmt: skip
        self._pending[request.number] = request
        cache = self.host.live_cache
        live = self.host.result
        if (
            live is not None
            and request.data.frame_count == 1  # the live result is one frame's
            and live.spec == request.spec
            and live.image_key == request.image_key
            and live.image.dtype == file_dtype(request.spec, image.dtype, fmt)
        ):
            self.computed((request, live.image))  # nothing to compute: straight to the writer
        else:
            self.host.runner.submit(
                f"save:{request.number}",
                lambda check, report: compute_for_save(request, cache, check, report),
            )
        self.host.show_status(f"Saving {path.name}…", 0)
        return True

    def computed(self, result: object) -> None:
        """The pixels of a save are ready: encode and write them on the CPU worker."""
        request, pixels = result  # type: ignore[misc]

        def write(check, report) -> SaveRequest:
            check()  # stopped before the encoder started: nothing is written
            dest = request.path
            if not request.original and request.source is not None:
                if file_identity(dest) == request.source:  # renamed or linked there meanwhile
                    raise OutputError(f"{dest.name} is the original image: it is not replaced")
            try:
                write_image(
                    dest, with_result(request.data, pixels), fmt=request.fmt,
                    overwrite=request.overwrite,
                )  # fmt: skip
            except OutputError:
                if not request.overwrite and os.path.lexists(dest):
                    raise OutputError(
                        f"{dest} appeared while the result was being saved: it was not replaced"
                    ) from None
                raise
            return request

        self.host.cpu_runner.submit(f"write:{request.number}", write)

    def written(self, result: object) -> None:
        request = result if isinstance(result, SaveRequest) else None
        path = request.path if request is not None else Path(str(result))
        if request is not None:
            self._pending.pop(request.number, None)
            if request.original:
                self._source = file_identity(path)  # the same file by name, a new inode
        self.settings.setValue("files/lastFolder", str(path.parent))
        self.host.show_status(f"Saved {path}", 5000)
        self.host.saved.emit(str(path))
        self._saves_changed()

    def failed(self, message: str, channel: str = "") -> None:
        number = channel.partition(":")[2]
        if number.isdigit():
            self._pending.pop(int(number), None)
        self.host.show_status("", 1)
        if self.close_dialog is not None:  # the window stays open: say why it did not close
            self.close_dialog.reject()
        self.host.show_error(message)
        self.host.save_failed.emit(message)
        self._saves_changed()

    def save_progress(self, done: int, total: int) -> None:
        if self.close_dialog is not None:
            self.close_dialog.set_progress(done, total)

    # ------------------------------------------------------------------ closing

    def saving(self) -> list[Path]:
        """The files being saved now."""
        return [r.path for r in self._pending.values()]

    def may_close(self) -> bool:
        """Whether the window may close now: not while a save is in progress. Then a dialog
        shows its progress and offers to stop it; the window closes by itself once every
        save is written (a failed save keeps it open, with its message)."""
        if not self._pending:
            return True
        names = [p.name for p in self.saving()]
        if self.close_dialog is None:
            self.close_dialog = file_dialogs.CloseWhileSaving(self.parent, names)
            self.close_dialog.stop_and_close.connect(self._stop_saves_and_close)
            self.close_dialog.rejected.connect(self._close_dialog_gone)
            self.close_dialog.open()
        else:
            self.close_dialog.set_names(names)
        return False

    def _close_dialog_gone(self) -> None:
        self.close_dialog = None

    def _stop_saves_and_close(self) -> None:
        for number in list(self._pending):
            self.host.runner.cancel(f"save:{number}")
            self.host.cpu_runner.cancel(f"write:{number}")
        self._pending.clear()
        self.close_dialog = None
        self.host.show_status("Save stopped", 3000)
        self.host.close()

    def _saves_changed(self) -> None:
        if self.close_dialog is not None and not self._pending:
            dialog, self.close_dialog = self.close_dialog, None
            dialog.accept()
            self.host.close()

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
        chosen = self._choose(
            "Save kernel", str(_free_name(suggested)), KERNEL_FILTER, "", "a kernel"
        )
        if chosen is not None:
            self.save_kernel(chosen[0], overwrite=chosen[1])

    def save_kernel(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> bool:
        """Write the current kernel as JSON (atomically). Never onto the open image, a folder
        or a FIFO; an existing file only with ``overwrite`` (the dialog asked)."""
        dest = Path(path).expanduser()
        problem = self._problem(dest, overwrite=overwrite, what="a kernel")
        if problem is not None:
            self.host.show_error(problem)
            return False
        try:
            save_kernel(self.model.kernel, dest, overwrite=overwrite)
        except BlurappError as err:
            self.host.show_error(str(err))
            return False
        self.settings.setValue("files/lastKernelFolder", str(dest.parent))
        self.host.show_status(f"Saved kernel to {dest}", 5000)
        return True
