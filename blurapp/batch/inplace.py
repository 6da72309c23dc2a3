"""An image decoded whole (a JPEG: Pillow gives it at once) filtered in band tiles into its own
array: the GPU holds one tile's textures instead of the whole image's (about 0.27 GB for a 4K
8-bit photo, in host memory on lavapipe), and no second image-sized array is made for the
result.

:class:`InPlaceBands` is both the source and the sink of
:func:`blurapp.pipeline.stream_pixels`: tiles are read from the array, and each finished row of
tiles waits in a band of its own until no later tile can read the rows it replaces (``look_back``
rows above the furthest row asked for: every later request of the grid starts within or below
that, as :class:`blurapp.io.bands.PngRowSource` relies on), then is written over them. After
:meth:`InPlaceBands.finish` the array holds the filtered image.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

__all__ = ["InPlaceBands"]


class InPlaceBands:
    """Tiles read from ``pixels`` and their results written back over it (see the module
    docstring). ``peak_rows`` is the most rows of results waiting at once, for tests."""

    def __init__(self, pixels: np.ndarray, look_back: int) -> None:
        self.pixels = pixels
        self.shape = pixels.shape
        self.dtype = pixels.dtype
        self._look_back = max(0, int(look_back))
        self._reach = 0  # the furthest row asked for (exclusive)
        self._lock = threading.Lock()
        self._band: np.ndarray | None = None  # the row of tiles being filled
        self._band_y0 = 0
        self._filled = 0
        self._waiting: deque[tuple[int, np.ndarray]] = deque()  # (y0, rows) done, not yet written
        self._spare: list[np.ndarray] = []
        self._written = 0  # rows [0, written) hold results
        self.peak_rows = 0

    def __getitem__(self, key: tuple[slice, slice]) -> np.ndarray:
        ys, xs = key
        r0, r1, step = ys.indices(self.shape[0])
        if step != 1:
            raise IndexError("an in-place band source reads runs of rows")
        with self._lock:
            if r0 < self._written:  # a second pass (--range normalize) cannot run in place
                raise ValueError(f"rows from {r0} were already replaced by results")
            if r0 < self._reach - self._look_back:  # a second pass before any result: again
                self._reach = 0
            self._reach = max(self._reach, r1)
        return self.pixels[r0:r1, xs]  # the caller copies (blurapp.core.tiling.gather)

    def __call__(self, window: tuple[int, int, int, int], pixels: np.ndarray) -> None:
        """The sink: the output pixels of ``window``, in the grid's order."""
        y0, y1, x0, x1 = window
        width = self.shape[1]
        if self._filled == 0:
            rows = y1 - y0
            spare = self._spare.pop() if self._spare else None
            if spare is None or spare.shape[0] < rows:
                spare = np.empty((rows, *self.shape[1:]), self.dtype)
            self._band, self._band_y0 = spare[:rows], y0
        assert self._band is not None
        if self.pixels.ndim == 3 and pixels.ndim == 2:
            pixels = pixels[:, :, np.newaxis]
        self._band[:, x0:x1] = pixels
        self._filled = x1
        if x1 < width:
            return
        self._filled = 0
        with self._lock:
            self._waiting.append((self._band_y0, self._band))
            self._band = None
            self.peak_rows = max(self.peak_rows, sum(b.shape[0] for _, b in self._waiting))
            self._write_back(self._reach - self._look_back)

    def _write_back(self, below: int) -> None:
        """Write the waiting rows that end at or above row ``below`` (under the lock)."""
        while self._waiting:
            y0, band = self._waiting[0]
            if y0 + band.shape[0] > below:
                return
            self._waiting.popleft()
            self.pixels[y0 : y0 + band.shape[0]] = band
            self._written = max(self._written, y0 + band.shape[0])
            self._spare.append(band if band.base is None else band.base)

    def finish(self) -> np.ndarray:
        """Write every waiting row: the array now holds the filtered image (returned)."""
        with self._lock:
            if self._filled or self._band is not None:
                raise ValueError("a row of tiles was not completed")
            self._write_back(self.shape[0])
            self._spare.clear()
        return self.pixels
