"""One-line progress bars: batch's (files done/total, megapixels per second, ETA) and a long
apply's (the fraction of tiles or bands done).

Hand-written (thirty lines) rather than a dependency: it only has to redraw one line with ``\\r``
a few times a second, and only when standard output is a terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress", "WorkProgress", "format_duration"]


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` (or ``m:ss`` under an hour)."""
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class _Bar:
    """One line redrawn with ``\\r`` on ``stream`` when it is a terminal (``enabled=None``)."""

    def __init__(self, stream: TextIO | None, enabled: bool | None, min_interval: float) -> None:
        self.stream = stream or sys.stdout
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) if enabled is None else enabled
        self.min_interval = min_interval
        self.start = time.perf_counter()
        self._last = 0.0
        self._drawn = False
        self._lock = threading.Lock()

    def line(self, now: float | None = None) -> str:
        raise NotImplementedError

    def _draw(self, now: float) -> None:
        if not self.enabled:
            return
        self.stream.write("\r" + self.line(now) + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def _erase(self) -> None:
        self.stream.write("\r\x1b[K")
        self.stream.flush()


class Progress(_Bar):
    """Counts finished files and draws the bar on ``stream`` when it is a terminal.

    Arguments:
        total: files to do.
        stream: where to draw (default: standard output, the one whose TTY-ness decides).
        enabled: ``None`` draws only when ``stream`` is a terminal; False never draws.
        min_interval: seconds between redraws.
    """

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        min_interval: float = 0.1,
    ) -> None:
        super().__init__(stream, enabled, min_interval)
        self.total = total
        self.done = 0
        self.pixels = 0

    def advance(self, pixels: int = 0) -> None:
        """One more file done, of ``pixels`` pixels."""
        with self._lock:
            self.done += 1
            self.pixels += pixels
            now = time.perf_counter()
            if now - self._last >= self.min_interval or self.done == self.total:
                self._last = now
                self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The bar's text, e.g. ``[#####-----]  5/10 files  42.0 Mpix/s  ETA 0:07``."""
        now = time.perf_counter() if now is None else now
        elapsed = max(now - self.start, 1e-9)
        frac = self.done / self.total if self.total else 1.0
        width = max(10, min(40, shutil.get_terminal_size((80, 24)).columns - 50))
        filled = int(frac * width)
        rate = self.pixels / elapsed / 1e6
        if self.done and self.done < self.total:
            eta = f"ETA {format_duration(elapsed / self.done * (self.total - self.done))}"
        elif self.done >= self.total:
            eta = f"in {format_duration(elapsed)}"
        else:
            eta = "ETA --:--"
        digits = len(str(self.total))
        return (
            f"[{'#' * filled}{'-' * (width - filled)}] {self.done:{digits}d}/{self.total} files"
            f"  {rate:6.1f} Mpix/s  {eta}"
        )

    def message(self, text: str, stream: TextIO | None = None) -> None:
        """Print a line (an error, say) above the bar without garbling it."""
        out = stream or sys.stderr
        with self._lock:
            if self._drawn:
                self._erase()
            out.write(text + "\n")
            out.flush()
            if self._drawn:
                self._draw(time.perf_counter())

    def close(self) -> None:
        """End the bar's line."""
        with self._lock:
            if self._drawn:
                self._draw(time.perf_counter())
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False


class WorkProgress(_Bar):
    """One long piece of work (``blurapp apply`` on a large image or with a large kernel): a bar
    of the fraction done, drawn on ``stream`` when it is a terminal, from ``delay`` seconds on
    (a quick run draws nothing).

    :meth:`update` takes ``(done, total)`` from any thread (tiles, or the bands of a GPU pass).
    ``delay`` defaults to ``BLURAPP_PROGRESS_DELAY`` seconds when that is set (0 draws from the
    first update: for scripts and tests that watch the bar), else 1.
    """

    def __init__(
        self,
        label: str,
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        delay: float | None = None,
        min_interval: float = 0.2,
    ) -> None:
        if delay is None:
            try:
                delay = float(os.environ.get("BLURAPP_PROGRESS_DELAY", "1"))
            except ValueError:
                delay = 1.0
        super().__init__(stream, enabled, min_interval)
        self.label = label
        self.delay = delay
        self.fraction = 0.0

    def update(self, done: int, total: int) -> None:
        """``done`` of ``total`` pieces are finished."""
        with self._lock:
            self.fraction = min(1.0, done / total) if total > 0 else 1.0
            now = time.perf_counter()
            if self.fraction >= 1.0 and not self._drawn:
                return  # done before a bar was needed: none at all
            if now - self.start >= self.delay and now - self._last >= self.min_interval:
                self._last = now
                self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The bar's text, e.g. ``[########------------]  40 %  big.tif  ETA 0:12``."""
        now = time.perf_counter() if now is None else now
        elapsed = now - self.start
        width = max(10, min(40, shutil.get_terminal_size((80, 24)).columns - 40))
        filled = int(self.fraction * width)
        if 0 < self.fraction < 1:
            eta = f"ETA {format_duration(elapsed / self.fraction * (1 - self.fraction))}"
        else:
            eta = format_duration(elapsed)
        return (
            f"[{'#' * filled}{'-' * (width - filled)}] {self.fraction * 100:3.0f} %  "
            f"{self.label}  {eta}"
        )

    def close(self) -> None:
        """Erase the bar (the command's own lines follow)."""
        with self._lock:
            if self._drawn:
                self._erase()
                self._drawn = False
