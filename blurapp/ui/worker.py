"""Runs engine calls off the UI thread, debounced, with newer requests superseding older ones.

Every job carries a generation number per channel ("live", "compare", ...). A job whose
generation is no longer the newest is skipped when it starts, may stop between steps, and its
result is dropped on arrival, so the window always shows the last thing the user asked for.
All engine work runs on one pool thread: the GPU device is used by one thread at a time.
"""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal

from blurapp.core.errors import BlurappError

#: How much lower than the UI thread the workers run (Linux ``nice``, per thread, inherited by
#: the threads they start: the pipeline's tile threads, the Vulkan driver's). On a 2-core CPU
#: running lavapipe, the UI thread then gets a core whenever it has work: no UI stalls behind
#: a filter.
WORKER_NICE = 5


def _lower_priority() -> None:
    """Lower the calling thread's scheduling priority by :data:`WORKER_NICE` (once)."""
    if getattr(_lowered, "done", False):
        return
    _lowered.done = True
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + WORKER_NICE)
    except (AttributeError, OSError):  # not Linux, or not allowed: run at the same priority
        pass


_lowered = threading.local()


class StaleJobError(Exception):
    """Raised inside a job when a newer request of its channel has arrived."""


class _Relay(QObject):
    """Carries a job's outcome back to the UI thread (queued signal)."""

    done = Signal(str, int, object)  # channel, generation, result
    failed = Signal(str, int, str)  # channel, generation, one-line message
    progress = Signal(str, int, object)  # channel, generation, partial result


class _Job(QRunnable):
    def __init__(self, runner: JobRunner, channel: str, generation: int, fn: Callable) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._runner, self._channel, self._gen, self._fn = runner, channel, generation, fn

    def run(self) -> None:
        runner, channel, gen = self._runner, self._channel, self._gen
        _lower_priority()
        if not runner.is_current(channel, gen):
            return

        def check() -> None:
            if not runner.is_current(channel, gen):
                raise StaleJobError

        def report(partial: object) -> None:
            runner.relay.progress.emit(channel, gen, partial)

        try:
            result = self._fn(check, report)
        except StaleJobError:
            return
        except BlurappError as err:
            self._deliver(runner.relay.failed, str(err))
        except Exception as err:  # a bug, not a user error: one line in the UI, details on stderr
            traceback.print_exc()
            self._deliver(runner.relay.failed, f"{type(err).__name__}: {err}")
        else:
            self._deliver(runner.relay.done, result)

    def _deliver(self, signal, payload: object) -> None:
        try:
            signal.emit(self._channel, self._gen, payload)
        except RuntimeError:
            pass  # the window closed while this job ran: nobody is left to tell


class JobRunner(QObject):
    """Debounced, superseding job submission on a private one-thread pool.

    ``fn(check, report)`` runs in the pool; it may call ``check()`` between steps (raises
    :class:`StaleJobError` when stale) and ``report(partial)`` for progress.
    """

    finished = Signal(str, object)  # channel, result (only the newest generation)
    failed = Signal(str, str)  # channel, message
    progress = Signal(str, object)  # channel, partial result
    # channel, generation, partial result: every report, of superseded jobs too (a live preview
    # of a setting the user has already moved past is still better than none while dragging)
    partial = Signal(str, int, object)
    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self.relay = _Relay()
        self.relay.done.connect(self._on_done)
        self.relay.failed.connect(self._on_failed)
        self.relay.progress.connect(self._on_progress)
        self._lock = threading.Lock()
        self._generation: dict[str, int] = {}
        self._pending: dict[str, Callable] = {}
        self._timers: dict[str, QTimer] = {}
        self._running: set[str] = set()

    def is_current(self, channel: str, generation: int) -> bool:
        with self._lock:
            return self._generation.get(channel, 0) == generation

    def generation(self, channel: str) -> int:
        with self._lock:
            return self._generation.get(channel, 0)

    def submit(self, channel: str, fn: Callable, *, delay_ms: int = 0) -> int:
        """Supersede what ``channel`` is doing and run ``fn`` after ``delay_ms`` of quiet.

        Returns:
            The new generation number of the channel.
        """
        with self._lock:
            gen = self._generation.get(channel, 0) + 1
            self._generation[channel] = gen
        self._pending[channel] = fn
        self._set_running(channel, True)
        timer = self._timers.get(channel)
        if timer is None:
            timer = QTimer(self)
            timer.setSingleShot(True)
            timer.timeout.connect(lambda c=channel: self._start(c))
            self._timers[channel] = timer
        timer.start(max(0, delay_ms))
        return gen

    def cancel(self, channel: str) -> None:
        """Drop whatever ``channel`` has queued or running."""
        with self._lock:
            self._generation[channel] = self._generation.get(channel, 0) + 1
        self._pending.pop(channel, None)
        if channel in self._timers:
            self._timers[channel].stop()
        self._set_running(channel, False)

    def is_busy(self, channel: str | None = None) -> bool:
        """Whether ``channel`` (``None``: any; ``"save:"``: any channel of that prefix) has work
        queued or running."""
        if channel is None:
            return bool(self._running)
        if channel.endswith(":"):
            return any(c.startswith(channel) for c in self._running)
        return channel in self._running

    def wait_idle(self, msecs: int = 30000) -> bool:
        """Block until the pool is empty (for shutdown and tests)."""
        return self.pool.waitForDone(msecs)

    def _start(self, channel: str) -> None:
        fn = self._pending.pop(channel, None)
        if fn is None:
            return
        self.pool.start(_Job(self, channel, self.generation(channel), fn))

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
