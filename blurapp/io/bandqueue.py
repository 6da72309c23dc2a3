"""The hand-over between a streamed filter and its encoder's thread: windows of a tile grid in,
complete bands of rows out through a bounded queue (the PNG and the TIFF band writers share it).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import numpy as np

from blurapp.core.errors import OutputError

_END = object()


class AbortedError(Exception):
    """The streaming stopped (an error or Ctrl-C in the pipeline): the writer gives up."""


class BandQueue:
    """What a band sink shares: the grid-order check of the windows it is called with, a
    bounded queue of bands to the encoder, the count of rows held (``peak_rows``, for tests),
    the encoder's ``error`` and the pipeline's ``abort``.

    Arguments:
        shape: the image's (H, W) or (H, W, C).
        dtype: its pixel type.
        backlog: how many bands may wait for the encoder.
        writer: the format named in "the PNG writer stopped: ...".
    """

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, backlog: int, writer: str) -> None:
        self.shape = shape
        self.dtype = dtype
        self._height, self._width = shape[0], shape[1]
        self._channels = 1 if len(shape) == 2 else shape[2]
        self._row_y0 = self._row_y1 = 0  # the row of windows being filled
        self._filled = 0  # columns of that row received
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, backlog))
        self._held = 0
        self._count_lock = threading.Lock()
        self._writer = writer
        self.peak_rows = 0
        self.error: BaseException | None = None
        self.abort = threading.Event()

    def _accept(self, window: tuple[int, int, int, int]) -> bool:
        """Check that ``window`` comes next in grid order; whether it starts a row of windows."""
        self._raise_if_stopped()
        y0, y1, x0, _ = window
        if self._filled == 0:
            if y0 != self._row_y1 or x0 != 0 or y1 <= y0:
                raise ValueError(f"window {window} out of the grid's order")
            self._row_y0, self._row_y1 = y0, y1
            return True
        if (y0, y1) != (self._row_y0, self._row_y1) or x0 != self._filled:
            raise ValueError(f"window {window} out of the grid's order")
        return False

    def _raise_if_stopped(self) -> None:
        if self.error is not None:
            raise OutputError(f"the {self._writer} writer stopped: {self.error}")

    def _count(self, rows: int) -> None:
        with self._count_lock:
            self._held += rows
            self.peak_rows = max(self.peak_rows, self._held)

    def _put(self, item: object) -> None:
        while True:
            self._raise_if_stopped()
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _finish(self, handed_over: int) -> None:
        """All windows were given (``handed_over`` rows went to the encoder): tell the encoder,
        which then completes the file."""
        if handed_over != self._height or self._filled:
            given = self._row_y0 if self._filled else self._row_y1
            raise ValueError(f"only {given} of {self._height} rows were given to the writer")
        self._put(_END)

    def _received(self) -> Iterator[np.ndarray]:
        """The bands, in order, on the encoder's thread; each band's rows are no longer counted
        once the consumer asks for the next one."""
        while True:
            try:
                band = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self.abort.is_set():
                    raise AbortedError from None
                continue
            if band is _END:
                return
            assert isinstance(band, np.ndarray)
            yield band
            self._count(-band.shape[0])
            del band
