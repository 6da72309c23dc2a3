"""The window's settings, written to disk on a thread of their own.

QSettings writes its file on the thread that changed it, at the next turn of that thread's
event loop, through QLockFile and QSaveFile: two ``fdatasync`` calls a write. On this machine's
disk those took 15–170 ms each time, on the UI thread, and the window wrote after every edit of
the spec (it is remembered for the next session) and every open (the recent files): they were
the UI stalls over 50 ms of a 12 MP session (issue 24, item 6; ``perf sched timehist`` showed
the UI thread in ``io_schedule`` under ``QSettings::event``).

:class:`BackgroundSettings` is what the window reads and writes instead. A change is kept in
memory (reads see it at once) and handed, once the changes pause for :data:`DELAY_MS`, to a
QThread whose event loop owns a QSettings on the same file: Qt writes it there, in C++, with
the GIL free (a ``QSettings.sync()`` called from Python holds the GIL for the whole write, so a
Python thread would not do). Both QSettings share Qt's in-process copy of the file, so the
window's reads see what the writer applied. :meth:`BackgroundSettings.sync` (the window's
close) writes everything on the calling thread before it returns.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading

from PySide6.QtCore import QObject, QSettings, QThread, QTimer, Signal, Slot

__all__ = ["DELAY_MS", "BackgroundSettings"]

log = logging.getLogger("blurapp.ui.settings")

DELAY_MS = 500  # changes closer together than this are written once
_REMOVED = object()  # a pending removal
_TOKENS = itertools.count(1)  # one sequence for every window: the writer reports to all


class _Writer(QObject):
    """Lives in the writer thread: applies changes to its own QSettings per file; Qt's own
    update event then writes the file in this thread's event loop."""

    apply = Signal(str, object, int, object)  # file name, format, token, {key: value}
    _after = Signal(object, int)
    written = Signal(int, str)  # token, problem ("" when written)

    def __init__(self) -> None:
        super().__init__()
        self._files: dict[tuple[str, object], QSettings] = {}
        self.apply.connect(self._apply)
        # Queued on this thread's loop, it runs after the update event the changes posted,
        # so after the file is written.
        self._after.connect(self._report)

    @Slot(str, object, int, object)
    def _apply(self, name: str, fmt: object, token: int, items: dict) -> None:
        settings = self._files.get((name, fmt))
        if settings is None:
            settings = self._files[(name, fmt)] = QSettings(name, fmt)
        for key, value in items.items():
            if value is _REMOVED:
                settings.remove(key)
            else:
                settings.setValue(key, value)
        self._after.emit(settings, token)

    @Slot(object, int)
    def _report(self, settings: QSettings, token: int) -> None:
        status = settings.status()
        problem = "" if status == QSettings.Status.NoError else status.name
        self.written.emit(token, problem)


class _Thread:
    """One writer thread for the process, started on first use, stopped at exit."""

    lock = threading.Lock()
    thread: QThread | None = None
    writer: _Writer | None = None

    @classmethod
    def writer_object(cls) -> _Writer:
        with cls.lock:
            if cls.writer is None:
                thread = QThread()
                thread.setObjectName("blurapp-settings")
                writer = _Writer()
                writer.moveToThread(thread)
                thread.start()
                cls.thread, cls.writer = thread, writer
                atexit.register(cls.stop)
            return cls.writer

    @classmethod
    def stop(cls) -> None:
        with cls.lock:
            thread, cls.thread, cls.writer = cls.thread, None, None
        if thread is not None:
            thread.quit()
            thread.wait(5000)


class BackgroundSettings(QObject):
    """A QSettings' reads and writes for the UI thread, its file written on another thread.

    Offers what the window uses of QSettings: :meth:`value`, :meth:`setValue`, :meth:`remove`,
    :meth:`sync`, :meth:`fileName`, :meth:`status`; :attr:`settings` is the wrapped QSettings.
    """

    def __init__(self, settings: QSettings, delay_ms: int = DELAY_MS) -> None:
        super().__init__()
        self.settings = settings
        self._name = settings.fileName()
        self._format = settings.format()
        self._pending: dict[str, object] = {}  # changed, not yet handed to the writer
        self._in_flight: dict[int, dict[str, object]] = {}  # handed, not yet on disk
        self._problem = ""
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(delay_ms)
        self._timer.timeout.connect(self._hand_over)
        # The thread is made now, with the window: a thread started later on the UI thread
        # waits in pthread_create for the dynamic loader's lock while a worker loads a
        # library (the Vulkan driver as the adapter is probed: 676 ms once, perf sched).
        self._writer: _Writer | None = None
        if self._name:
            self._writer = _Thread.writer_object()
            self._writer.written.connect(self._written)

    # ----------------------------------------------------------------------------- reading
    def value(self, key: str, defaultValue: object = None, type: object = None) -> object:  # noqa: N803 (QSettings' names)
        value = self._pending.get(key, self)
        if value is self:
            for items in reversed(self._in_flight.values()):
                if key in items:
                    value = items[key]
                    break
        if value is _REMOVED:
            return defaultValue
        if value is not self:
            return value
        if type is not None:
            return self.settings.value(key, defaultValue, type)
        return self.settings.value(key, defaultValue)

    def fileName(self) -> str:  # noqa: N802 (QSettings' name)
        return self._name

    def status(self) -> QSettings.Status:
        if self._problem:
            return QSettings.Status.AccessError
        return self.settings.status()

    # ----------------------------------------------------------------------------- writing
    def setValue(self, key: str, value: object) -> None:  # noqa: N802 (QSettings' name)
        self._pending[key] = value
        self._timer.start()  # restarted by each change: a burst is written once

    def remove(self, key: str) -> None:
        self._pending[key] = _REMOVED
        self._timer.start()

    def sync(self) -> None:
        """Write every change now, on this thread (the window's close)."""
        self._timer.stop()
        items: dict[str, object] = {}
        for handed in self._in_flight.values():
            items.update(handed)  # the writer may not have applied them yet: again, here
        items.update(self._pending)
        self._pending.clear()
        for key, value in items.items():
            if value is _REMOVED:
                self.settings.remove(key)
            else:
                self.settings.setValue(key, value)
        self.settings.sync()
        self._in_flight.clear()

    def _hand_over(self) -> None:
        if not self._pending:
            return
        if self._writer is None:  # not a file (no writer can open it): Qt writes it here
            self.sync()
            return
        token = next(_TOKENS)
        items, self._pending = self._pending, {}
        self._in_flight[token] = items
        self._writer.apply.emit(self._name, self._format, token, items)

    @Slot(int, str)
    def _written(self, token: int, problem: str) -> None:
        if self._in_flight.pop(token, None) is None:
            return  # another window's, or already written by sync()
        if problem and problem != self._problem:
            log.warning("settings not saved to %s (%s)", self._name, problem)
        self._problem = problem
