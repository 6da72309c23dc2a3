"""The window's view of the live preview's scheduler (:mod:`blurapp.live.scheduler`): it submits
work by channel, priority and lane, and turns what the scheduler's threads deliver into Qt
signals on the UI thread.

Every job carries a generation number per channel ("live", "preview", "strategies", ...). A
newer request of a channel supersedes the older one: waiting, it never runs; running, it stops
at its next check (between steps, tiles and the bands of a long GPU pass); its result is
dropped. Lanes are threads: ``gpu`` runs what uses the device (one thread at a time), the
others what must not wait for it. The scheduling rules (who waits for whom, who is preempted)
are the scheduler's; this module only relays.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal

from blurapp.live.scheduler import BACKGROUND, REFINE, USER, Preempted, Scheduler, Superseded

__all__ = ["BACKGROUND", "REFINE", "USER", "JobRunner", "Preempted", "StaleJobError"]

#: How much lower than the UI thread each lane runs (Linux ``nice``, per thread, inherited by
#: the threads it starts: the pipeline's tile threads, the Vulkan driver's, which the adapter
#: probe on the ``gpu`` lane creates). On a 2-core CPU running lavapipe the UI thread gets a
#: core whenever it has work and a change's first picture comes before the full result of the
#: one before. The background is not far lower: a warm-up compile holds the GPU's lock, and a
#: refine waiting for it would wait the longer (priority inversion).
LANE_NICE = {"first": 2, "files": 5, "gpu": 5, "background": 10}
#: Lanes not named above.
WORKER_NICE = 5

#: What a job raises (or lets through from ``check``) when a newer request has arrived.
StaleJobError = Superseded


def _lower_priority(lane: str = "") -> None:
    """Lower the calling thread's scheduling priority as :data:`LANE_NICE` says (once)."""
    if getattr(_lowered, "done", False):
        return
    _lowered.done = True
    step = LANE_NICE.get(lane, WORKER_NICE)
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + step)
    except (AttributeError, OSError):  # not Linux, or not allowed: run at the same priority
        pass


_lowered = threading.local()


def _hold_calibration(busy: bool) -> None:
    """The engine's background calibration (:mod:`blurapp.gpu.calibration`, its own thread)
    is background work too: held between its micro-runs while the user's work waits or runs.
    Nothing to hold when it was never imported."""
    calibration = sys.modules.get("blurapp.gpu.calibration")
    if calibration is not None:
        (calibration.pause if busy else calibration.resume)()


class _Relay(QObject):
    """Carries a job's outcome back to the UI thread (queued signal)."""

    done = Signal(str, int, object)  # channel, generation, result
    failed = Signal(str, int, str)  # channel, generation, one-line message
    progress = Signal(str, int, object)  # channel, generation, partial result


#: Counting reports of one channel (done of total) reach the UI thread at most this often.
PROGRESS_EVERY_S = 0.05


class _ProgressThrottle:
    """Lets a channel's counting reports (objects with ``done`` and ``total``, or a
    ``(done, total)`` pair) through at most every :data:`PROGRESS_EVERY_S`, the last (done ==
    total) always; every other report at once. A 12 MP full result in small tiles reported
    ~1200 times in a few seconds: each a queued call the UI thread runs in one batch of posted
    events, where the heartbeat's timer waits (stalls of 0.3-0.4 s measured)."""

    def __init__(self, emit: Callable[[str, int, object], None]) -> None:
        self._emit = emit
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def __call__(self, channel: str, generation: int, partial: object) -> None:
        count = _count_of(partial)
        if count is not None and count[0] < count[1]:
            now = time.monotonic()
            with self._lock:
                if now - self._last.get(channel, -math.inf) < PROGRESS_EVERY_S:
                    return
                self._last[channel] = now
        self._emit(channel, generation, partial)


def _count_of(partial: object) -> tuple[int, int] | None:
    if isinstance(partial, tuple) and len(partial) == 2:
        done, total = partial
    else:
        done, total = getattr(partial, "done", None), getattr(partial, "total", None)
    if isinstance(done, int) and isinstance(total, int):
        return done, total
    return None


class JobRunner(QObject):
    """Superseding job submission on the scheduler's lanes.

    ``fn(check, report)`` runs on a lane's thread; it may call ``check()`` between steps
    (raises :class:`StaleJobError` when superseded, :class:`Preempted` when it must yield) and
    ``report(partial)`` for progress.
    """

    finished = Signal(str, object)  # channel, result (only the newest generation)
    failed = Signal(str, str)  # channel, message
    progress = Signal(str, object)  # channel, partial result
    # channel, generation, partial result: every report, of finished-although-superseded jobs
    # too (the window decides what is newer than what it shows)
    partial = Signal(str, int, object)
    busy_changed = Signal(bool)

    LANES: tuple[str, ...] = ("gpu", "first", "background")

    def __init__(
        self,
        parent: QObject | None = None,
        lanes: Sequence[str] | None = None,
        *,
        holds_calibration: bool = False,
    ) -> None:
        """``holds_calibration``: this runner's user work holds the engine's background
        calibration (the window's GPU runner)."""
        super().__init__(parent)
        self.relay = _Relay()
        self.relay.done.connect(self._on_done)
        self.relay.failed.connect(self._on_failed)
        self.relay.progress.connect(self._on_progress)
        self._running: set[str] = set()
        self.scheduler = Scheduler(
            tuple(lanes or self.LANES),
            on_done=self.relay.done.emit,
            on_failed=self.relay.failed.emit,
            on_progress=_ProgressThrottle(self.relay.progress.emit),
            thread_start=_lower_priority,
            on_foreground=_hold_calibration if holds_calibration else None,
        )
        self.destroyed.connect(lambda *_: self.scheduler.close(0.0))

    def is_current(self, channel: str, generation: int) -> bool:
        return self.scheduler.is_current(channel, generation)

    def generation(self, channel: str) -> int:
        return self.scheduler.generation(channel)

    def submit(
        self,
        channel: str,
        fn: Callable | Sequence[Callable],
        *,
        delay_ms: int = 0,
        priority: int = USER,
        lane: str | None = None,
        finish: bool = False,
    ) -> int:
        """Supersede what ``channel`` is doing and run ``fn`` (or its steps, in order) after
        ``delay_ms``, at ``priority`` (:data:`USER`, :data:`REFINE`, :data:`BACKGROUND`) in
        ``lane`` (the first lane, ``gpu``, by default). ``finish``: see
        :meth:`blurapp.live.scheduler.Scheduler.submit`.

        Returns:
            The new generation number of the channel.
        """
        gen = self.scheduler.submit(
            channel, fn, priority=priority, lane=lane, delay_s=max(0, delay_ms) / 1e3,
            finish=finish,
        )  # fmt: skip
        if priority != BACKGROUND:  # the status bar says what the user waits for
            self._set_running(channel, True)
        return gen

    def cancel(self, channel: str) -> None:
        """Drop whatever ``channel`` has queued or running."""
        self.scheduler.cancel(channel)
        self._set_running(channel, False)

    def is_busy(self, channel: str | None = None) -> bool:
        """Whether ``channel`` (``None``: any; ``"save:"``: any channel of that prefix) has work
        queued or running (background work is not counted)."""
        if channel is None:
            return bool(self._running)
        if channel.endswith(":"):
            return any(c.startswith(channel) for c in self._running)
        return channel in self._running

    def wait_idle(self, msecs: int = 30000) -> bool:
        """Block until no job waits or runs (for shutdown and tests)."""
        return self.scheduler.wait_idle(msecs / 1e3)

    def _set_running(self, channel: str, running: bool) -> None:
        was = bool(self._running)
        if running:
            self._running.add(channel)
        else:
            self._running.discard(channel)
        if was != bool(self._running):
            self.busy_changed.emit(bool(self._running))

    def _on_done(self, channel: str, generation: int, result: Any) -> None:
        if self.is_current(channel, generation):
            self._set_running(channel, False)
            self.finished.emit(channel, result)

    def _on_failed(self, channel: str, generation: int, message: str) -> None:
        if self.is_current(channel, generation):
            self._set_running(channel, False)
            self.failed.emit(channel, message)

    def _on_progress(self, channel: str, generation: int, partial: Any) -> None:
        self.partial.emit(channel, generation, partial)
        if self.is_current(channel, generation):
            self.progress.emit(channel, partial)
