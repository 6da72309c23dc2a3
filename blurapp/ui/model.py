"""The window's state in one place: the filter (a :class:`FilterSpec`) and the image it runs on.

Widgets never keep a setting of their own: they call a setter here, and show what the model says
through its signals (napari's way: the model is the truth, widgets observe it). Every change goes
through :meth:`FilterSpec.replace`, so the model can only ever hold a spec that ``blurapp apply``
would accept; a change it refuses leaves the state as it was and is reported as one line.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from blurapp.core.errors import BlurappError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.planner import TILE_SIDES
from blurapp.core.strategies import AUTO, get_info
from blurapp.io import ImageData

__all__ = ["DEFAULT_SPEC", "FilterModel"]

DEFAULT_SPEC = "gaussian:sigma=2"
_IMAGE_KEYS = itertools.count(1)  # see FilterModel.image_key


class FilterModel(QObject):
    """The current :class:`FilterSpec` and image, with signals for whoever shows them.

    Signals:
        spec_changed(FilterSpec): the spec changed (the new one).
        image_changed(): a new image is current (:attr:`image`, :attr:`image_path`, ...).
        rejected(str): a change was refused; one line saying why. Nothing changed.
        notice(str): a change had a consequence the user did not ask for (one line), e.g. a
            kernel the chosen strategy cannot run moved the strategy to ``auto``.
    """

    spec_changed = Signal(object)
    image_changed = Signal()
    rejected = Signal(str)
    notice = Signal(str)

    def __init__(self, spec: FilterSpec | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._spec = spec or FilterSpec.create(DEFAULT_SPEC)
        # The tile side the user picked, kept while a strategy that takes no tile is chosen (the
        # spec then holds None) so that going back to tiled brings it back.
        self._tile_choice: int | None = self._spec.tile
        self._image: np.ndarray | None = None
        self._image_key = 0
        self._image_data: ImageData | None = None
        self._image_path: Path | None = None

    # ------------------------------------------------------------------ the filter

    @property
    def spec(self) -> FilterSpec:
        """The filter as it is now: what the preview shows, save writes and Export CLI copies."""
        return self._spec

    @property
    def kernel(self) -> Kernel:
        return self._spec.kernel

    @property
    def tile_choice(self) -> int | None:
        """The tile side picked in the GUI (``None``: the planner's), whether or not the current
        strategy takes one."""
        return self._tile_choice

    def update(self, **changes: Any) -> str | None:
        """Change fields of the spec (the keywords of :meth:`FilterSpec.create`).

        Returns:
            ``None`` when the change was made (or changed nothing); otherwise the one-line
            reason it was refused, also emitted as :attr:`rejected`.
        """
        try:
            spec = self._spec.replace(**changes)
        except BlurappError as err:
            self.rejected.emit(str(err))
            return str(err)
        self.set_spec(spec)
        return None

    def set_spec(self, spec: FilterSpec) -> None:
        """Make an already checked ``spec`` current (settings, undo)."""
        if get_info(spec.strategy).takes_tile:
            self._tile_choice = spec.tile  # None too: the planner's choice, asked for
        if spec != self._spec:
            self._spec = spec
            self.spec_changed.emit(spec)

    def set_kernel(self, kernel: Kernel | str) -> str | None:
        """Make ``kernel`` current.

        A kernel is never refused because of the strategy: someone designing a kernel should not
        have to change the strategy first. When the chosen strategy cannot run it (a rank-2
        kernel on ``separable``) the strategy becomes ``auto`` and :attr:`notice` says so.
        """
        try:
            k = Kernel.parse(kernel)
        except BlurappError as err:
            self.rejected.emit(str(err))
            return str(err)
        problem = get_info(self._spec.strategy).why_not(k.flipped() if self._spec.convolve else k)
        changes: dict[str, Any] = {"kernel": k}
        if problem:
            changes.update(strategy=AUTO, tile=self._tile_choice)
        error = self.update(**changes)
        if error is None and problem:
            self.notice.emit(f"{problem}; the strategy is now auto")
        return error

    def set_strategy(self, name: str) -> str | None:
        """Choose a strategy (refused, with the reason, when it cannot run the kernel)."""
        return self.update(strategy=name, tile=self._tile_choice)

    def set_tile(self, side: int | None) -> str | None:
        """Choose the tile side for the strategies that take one (``None``: the planner's)."""
        if get_info(self._spec.strategy).takes_tile:
            problem = self.update(tile=side)
            if problem is None:
                self._tile_choice = side
            return problem
        if side is not None and side not in TILE_SIDES:  # kept for when one is chosen
            sides = ", ".join(map(str, sorted(TILE_SIDES)))
            message = f"tile size {side} is not one of {sides}"
            self.rejected.emit(message)
            return message
        self._tile_choice = side
        return None

    def set_border(self, border: str) -> str | None:
        """Choose the border mode by name (``mirror``, ``constant=0.25``, any alias)."""
        return self.update(border=border)

    def set_range(self, mode: str) -> str | None:
        """How signed results map into integer outputs (clamp, abs, offset, normalize)."""
        return self.update(range_mode=mode)

    def set_alpha(self, mode: str) -> str | None:
        """``premultiply`` (no fringes at transparent edges) or ``straight``."""
        return self.update(alpha=mode)

    def set_linear(self, on: bool) -> str | None:
        """Filter in linear light (sRGB decoded before, encoded after)."""
        return self.update(linear=bool(on))

    def set_convolve(self, on: bool) -> str | None:
        """Flip the kernel: true convolution instead of correlation."""
        return self.update(convolve=bool(on))

    def set_dtype(self, name: str | None) -> str | None:
        """The result's pixel type by name (``None``: the input's, as far as a format holds it)."""
        return self.update(dtype=name)

    # ------------------------------------------------------------------ the image

    @property
    def image(self) -> np.ndarray | None:
        """The input pixels (H×W or H×W×C), or ``None`` before an image is opened."""
        return self._image

    @property
    def image_key(self) -> int:
        """Names :attr:`image`'s pixels for the GPU: a new one per image shown, so that a rerun
        with other settings does not upload the same image again."""
        return self._image_key

    @property
    def image_data(self) -> ImageData | None:
        """The image as read (ICC profile, EXIF), which a save carries over."""
        return self._image_data

    @property
    def image_path(self) -> Path | None:
        return self._image_path

    def set_image(
        self,
        pixels: np.ndarray,
        *,
        data: ImageData | None = None,
        path: str | Path | None = None,
    ) -> None:
        """Make ``pixels`` the current image (``data``: the file it was read from, if any)."""
        self._image = np.ascontiguousarray(pixels)
        self._image_key = next(_IMAGE_KEYS)
        self._image_data = data or ImageData(self._image)
        self._image_path = Path(path) if path is not None else None
        self.image_changed.emit()
