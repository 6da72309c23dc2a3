"""The job runner: work happens off the UI thread, newer requests supersede older ones."""

from __future__ import annotations

import threading

from blurapp.core.errors import KernelSpecError
from blurapp.ui.worker import JobRunner


def test_only_the_newest_request_is_delivered(qtbot) -> None:
    runner = JobRunner()
    gate = threading.Event()
    ran: list[int] = []
    delivered: list[object] = []
    runner.finished.connect(lambda _c, r: delivered.append(r))

    def job(n: int):
        def fn(check, report):
            if n == 0:
                gate.wait(5)  # hold the pool so 1 and 2 queue up behind it
            ran.append(n)
            check()
            return n

        return fn

    runner.submit("live", job(0))
    qtbot.waitUntil(lambda: runner.scheduler.is_running("live"), timeout=5000)
    runner.submit("live", job(1))
    with qtbot.waitSignal(runner.finished, timeout=5000):
        runner.submit("live", job(2))
        gate.set()
    runner.wait_idle()
    assert delivered == [2]
    assert 1 not in ran  # superseded before it started: skipped
    assert not runner.is_busy()


def test_work_runs_off_the_ui_thread_and_errors_are_one_line(qtbot) -> None:
    runner = JobRunner()
    main = threading.get_ident()
    with qtbot.waitSignal(runner.finished, timeout=5000) as blocker:
        runner.submit("x", lambda check, report: threading.get_ident())
    assert blocker.args[1] != main

    def bad(check, report):
        raise KernelSpecError("box size must be >= 1, got '0'")

    with qtbot.waitSignal(runner.failed, timeout=5000) as blocker:
        runner.submit("x", bad)
    assert blocker.args == ["x", "box size must be >= 1, got '0'"]


def test_debounce_runs_once(qtbot) -> None:
    runner = JobRunner()
    calls: list[int] = []
    for i in range(5):
        runner.submit("live", lambda check, report, i=i: calls.append(i) or i, delay_ms=30)
    with qtbot.waitSignal(runner.finished, timeout=5000) as blocker:
        pass
    runner.wait_idle()
    assert calls == [4]
    assert blocker.args == ["live", 4]
