"""What the live preview runs next: a queue of tasks by channel, priority and lane, in which a
newer request of a channel supersedes the older one and the user's work preempts the
background's between steps, bands and tiles. Plain threads, no Qt (the window observes it
through blurapp/ui/worker.py).

Three priorities:

- :data:`USER`: what the user just asked for (a change's first picture, a save, a comparison,
  the adapter probe). Never waits for lower priorities.
- :data:`REFINE`: the full-resolution result of the current settings. Starts only when no user
  work is waiting or running anywhere (it would take the cores the first picture needs), and
  is preempted by user work waiting in its own lane.
- :data:`BACKGROUND`: warm-up compiles, calibration. Starts only when nothing of a higher
  priority is waiting or running in any lane, and is preempted as soon as something is.

A lane is one thread; tasks of one lane run one after the other. The window has a ``first``
lane (first pictures on the CPU, which never wait for the GPU) and a ``gpu`` lane (everything
that uses the device). A task is a list of steps ``step(check, report)``; ``check()`` raises
:class:`Superseded` (a newer request of the channel, or a cancel: the task is dropped) or
:class:`Preempted` (higher-priority work is waiting: the task goes back to the queue and its
current step runs again later, the steps before it are kept). The check is also installed for
the step's thread with :func:`blurapp.core.checks.checking`, so the engine calls it between
the bands of a long GPU pass and the reference between its blocks of taps.
"""

from __future__ import annotations

import itertools
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from blurapp.core.checks import checking
from blurapp.core.errors import BlurappError

__all__ = ["BACKGROUND", "REFINE", "USER", "Preempted", "Scheduler", "Superseded"]

USER, REFINE, BACKGROUND = 0, 1, 2
PRIORITY_NAMES = {USER: "user", REFINE: "refine", BACKGROUND: "background"}

Check = Callable[[], None]
Report = Callable[[object], None]
Step = Callable[[Check, Report], object]
Deliver = Callable[[str, int, object], None]


class Superseded(Exception):  # noqa: N818 (a signal to stop, not an error)
    """Raised inside a task when a newer request of its channel (or a cancel) has arrived."""


class Preempted(Exception):  # noqa: N818
    """Raised inside a task when work of a higher priority is waiting for its cores."""


@dataclass(eq=False)
class _Task:
    channel: str
    generation: int
    priority: int
    lane: str
    steps: list[Step]
    due: float  # time.monotonic() before which it does not start
    seq: int
    finish: bool = False  # runs to its end once started, delivered although superseded
    index: int = 0  # the next step to run
    result: object = None
    preempted: int = 0
    started: list[float] = field(default_factory=list)


class Scheduler:
    """Runs tasks on one thread per lane, by priority, newest request first.

    Arguments:
        lanes: the lanes' names; the first is the default lane of :meth:`submit`.
        on_done, on_failed, on_progress: called on the lane's thread with (channel,
            generation, payload): a task's last step's result; a one-line message (a
            :class:`BlurappError`'s text, else the exception's type and text, with the
            traceback on stderr); what a step passed to ``report``. Never for a superseded
            task.
        thread_start: called first on each lane's thread with the lane's name (to lower its
            scheduling priority).
        on_foreground: called with ``True`` when work above the background starts waiting or
            running and with ``False`` when none is left (to hold background work that runs
            outside the scheduler, such as the engine's calibration).
    """

    def __init__(
        self,
        lanes: Sequence[str] = ("main",),
        *,
        on_done: Deliver | None = None,
        on_failed: Deliver | None = None,
        on_progress: Deliver | None = None,
        thread_start: Callable[[str], None] | None = None,
        on_foreground: Callable[[bool], None] | None = None,
        name: str = "blurapp-live",
    ) -> None:
        if not lanes:
            raise ValueError("a scheduler needs at least one lane")
        self.lanes = tuple(lanes)
        self._on_done = on_done or _ignore
        self._on_failed = on_failed or _ignore
        self._on_progress = on_progress or _ignore
        self._thread_start = thread_start
        self._on_foreground = on_foreground
        self._foreground = False
        self._cond = threading.Condition()
        self._generation: dict[str, int] = {}
        self._pending: dict[str, _Task] = {}  # one per channel: the newest request
        self._running: dict[str, _Task] = {}  # lane -> task
        self._seq = itertools.count()
        self._closing = False
        #: (channel, generation, event) in order, for tests and the benchmark: "start",
        #: "step", "preempted", "superseded", "done", "failed" (the last 2000).
        self.log: deque[tuple[str, int, str]] = deque(maxlen=2000)
        #: The same events with their time.monotonic() (the benchmark's timeline).
        self.timeline: deque[tuple[float, str, int, str]] = deque(maxlen=2000)
        self._threads = [
            threading.Thread(target=self._loop, args=(lane,), name=f"{name}-{lane}", daemon=True)
            for lane in self.lanes
        ]
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------------ requests
    def submit(
        self,
        channel: str,
        steps: Step | Sequence[Step],
        *,
        priority: int = USER,
        lane: str | None = None,
        delay_s: float = 0.0,
        finish: bool = False,
    ) -> int:
        """Supersede what ``channel`` has waiting or running and queue ``steps``.

        ``finish``: once started, the task is not stopped by a newer request, and what it
        reports and returns is delivered all the same (a short first picture of a setting the
        user has just moved past is better than no picture while a slider moves); superseded
        before it starts, it never runs.

        Returns:
            The channel's new generation number.
        """
        lane = lane or self.lanes[0]
        if lane not in self.lanes:
            raise ValueError(f"no lane {lane!r} (lanes: {', '.join(self.lanes)})")
        if priority not in PRIORITY_NAMES:
            raise ValueError(f"no priority {priority!r}")
        listed = [steps] if callable(steps) else list(steps)
        with self._cond:
            gen = self._generation.get(channel, 0) + 1
            self._generation[channel] = gen
            due = time.monotonic() + max(0.0, delay_s)
            self._pending[channel] = _Task(
                channel, gen, priority, lane, listed, due, next(self._seq), finish
            )
            self._cond.notify_all()
        self._tell_foreground()
        return gen

    def cancel(self, channel: str) -> None:
        """Drop what ``channel`` has waiting; what it runs stops at its next check."""
        with self._cond:
            self._generation[channel] = self._generation.get(channel, 0) + 1
            self._pending.pop(channel, None)
            self._cond.notify_all()
        self._tell_foreground()

    def generation(self, channel: str) -> int:
        with self._cond:
            return self._generation.get(channel, 0)

    def is_current(self, channel: str, generation: int) -> bool:
        with self._cond:
            return self._generation.get(channel, 0) == generation

    def is_waiting(self, channel: str) -> bool:
        with self._cond:
            return channel in self._pending

    def is_running(self, channel: str | None = None) -> bool:
        with self._cond:
            if channel is None:
                return bool(self._running)
            return any(t.channel == channel for t in self._running.values())

    def lane_idle(self, lane: str) -> bool:
        """Nothing runs in ``lane`` and nothing waits for it (due or not)."""
        with self._cond:
            return lane not in self._running and not any(
                t.lane == lane for t in self._pending.values()
            )

    def lane_running(self, lane: str) -> bool:
        """Something runs in ``lane`` now (what only waits does not count)."""
        with self._cond:
            return lane in self._running

    def wait_idle(self, timeout_s: float = 30.0) -> bool:
        """Block until nothing waits or runs (``False`` when ``timeout_s`` passed first)."""
        end = time.monotonic() + timeout_s
        with self._cond:
            while self._pending or self._running:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout_s: float = 10.0) -> None:
        """Cancel everything and stop the lanes' threads (waiting up to ``timeout_s``)."""
        with self._cond:
            self._closing = True
            for channel in list(self._generation):
                self._generation[channel] += 1
            self._pending.clear()
            self._cond.notify_all()
        end = time.monotonic() + timeout_s
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, end - time.monotonic()))

    # ------------------------------------------------------------------------ the rules
    def _blocked(self, task: _Task, now: float) -> bool:
        """Whether ``task`` must not start now: user work never waits for other lanes; a
        refine waits for user work anywhere; the background for anything above it anywhere.
        (Called with the lock held.)"""
        if task.due > now:
            return True
        for other in itertools.chain(self._pending.values(), self._running.values()):
            if other is task or other.priority >= task.priority or other.due > now:
                continue
            if other.lane == task.lane or task.priority > USER:
                return True
        return False

    def _outranked(self, task: _Task) -> bool:
        """Whether running ``task`` must yield: a refine to user work waiting in its lane, the
        background to anything above it waiting or running anywhere. (Lock held.)"""
        if task.priority == USER:
            return False
        now = time.monotonic()
        for other in itertools.chain(self._pending.values(), self._running.values()):
            if other is task or other.priority >= task.priority or other.due > now:
                continue
            if other.lane == task.lane or task.priority == BACKGROUND:
                return True
        return False

    def _next(self, lane: str) -> tuple[_Task | None, float | None]:
        """The task ``lane`` runs next, or how long to wait before looking again. (Lock held.)"""
        now = time.monotonic()
        best: _Task | None = None
        wake: float | None = None
        for task in self._pending.values():
            if task.lane != lane:
                continue
            if task.due > now:
                wake = task.due - now if wake is None else min(wake, task.due - now)
                continue
            if self._blocked(task, now):
                continue
            if best is None or (task.priority, task.seq) < (best.priority, best.seq):
                best = task
        return best, wake

    # ------------------------------------------------------------------------ the lanes
    def _loop(self, lane: str) -> None:
        if self._thread_start is not None:
            try:
                self._thread_start(lane)
            except Exception:  # a nicety (nice), never a reason not to run
                traceback.print_exc()
        while True:
            with self._cond:
                while True:
                    if self._closing:
                        return
                    task, wake = self._next(lane)
                    if task is not None:
                        break
                    self._cond.wait(wake)
                del self._pending[task.channel]
                self._running[lane] = task
                self._note(task.channel, task.generation, "start")
            self._tell_foreground()
            try:
                self._run(task)
            finally:
                with self._cond:
                    del self._running[lane]
                    self._cond.notify_all()
                self._tell_foreground()

    def _tell_foreground(self) -> None:
        """Call ``on_foreground`` when work above the background appears or is all gone."""
        if self._on_foreground is None:
            return
        with self._cond:
            busy = any(
                t.priority < BACKGROUND
                for t in itertools.chain(self._pending.values(), self._running.values())
            )
            if busy == self._foreground:
                return
            self._foreground = busy
        try:
            self._on_foreground(busy)
        except Exception:  # a hold on others' work, never a reason to fail ours
            traceback.print_exc()

    def _note(self, channel: str, gen: int, event: str) -> None:
        self.log.append((channel, gen, event))
        self.timeline.append((time.monotonic(), channel, gen, event))

    def _check_for(self, task: _Task) -> Check:
        def check() -> None:
            with self._cond:
                if self._closing:
                    raise Superseded
                if self._generation.get(task.channel, 0) != task.generation and not task.finish:
                    raise Superseded
                if self._outranked(task):
                    raise Preempted

        return check

    def _run(self, task: _Task) -> None:
        check = self._check_for(task)
        channel, gen = task.channel, task.generation

        def report(partial: object) -> None:
            if task.finish or self.is_current(channel, gen):
                self._on_progress(channel, gen, partial)

        try:
            while task.index < len(task.steps):
                check()
                with checking(check):
                    task.result = task.steps[task.index](check, report)
                task.index += 1
                self._note(channel, gen, "step")
        except Superseded:
            self._note(channel, gen, "superseded")
            return
        except Preempted:
            task.preempted += 1
            self._note(channel, gen, "preempted")
            with self._cond:
                # Back in the queue with its place (seq) kept, unless superseded meanwhile.
                if self._generation.get(channel, 0) == gen and channel not in self._pending:
                    self._pending[channel] = task
            return
        except BlurappError as err:
            self._note(channel, gen, "failed")
            self._deliver(self._on_failed, channel, gen, str(err))
            return
        except Exception as err:  # a bug, not a user error: one line to show, details on stderr
            traceback.print_exc()
            self._note(channel, gen, "failed")
            self._deliver(self._on_failed, channel, gen, f"{type(err).__name__}: {err}")
            return
        self._note(channel, gen, "done")
        self._deliver(self._on_done, channel, gen, task.result, always=task.finish)

    def _deliver(
        self, callback: Deliver, channel: str, gen: int, payload: object, *, always: bool = False
    ) -> None:
        if not always and not self.is_current(channel, gen):
            return
        try:
            callback(channel, gen, payload)
        except RuntimeError:
            pass  # the window closed while this task ran: nobody is left to tell


def _ignore(channel: str, generation: int, payload: object) -> None:
    return None
