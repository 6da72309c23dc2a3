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


def test_counting_reports_are_thinned_but_the_last_always_arrives() -> None:
    # A full result in small tiles reports each tile; the UI thread gets at most one counting
    # report per PROGRESS_EVERY_S of a channel, the last (done == total) and others always.
    from blurapp.ui import worker

    got: list[tuple[str, object]] = []
    throttle = worker._ProgressThrottle(lambda c, g, p: got.append((c, p)))
    for done in range(1, 1001):
        throttle("live", 1, (done, 1000))
    throttle("preview", 1, "a picture")
    counts = [p for c, p in got if c == "live"]
    assert counts[0] == (1, 1000) and counts[-1] == (1000, 1000)
    assert len(counts) < 50  # a thousand reports in far less than 2.5 s
    assert ("preview", "a picture") in got
