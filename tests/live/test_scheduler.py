"""The live preview's scheduler (blurapp.live.scheduler), without Qt: newest request first, no
work on superseded requests, user work before refines before background work, preemption
between steps and inside them (the thread's installed check), and resumption where it stopped.
"""

from __future__ import annotations

import threading
import time

import pytest

from blurapp.core.checks import check_now
from blurapp.core.errors import KernelSpecError
from blurapp.live.scheduler import BACKGROUND, REFINE, USER, Preempted, Scheduler, Superseded

WAIT_S = 10.0


class Recorder:
    """The scheduler's deliveries, in order, with a way to wait for one."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.events: list[tuple[str, str, int, object]] = []

    def _add(self, kind: str, channel: str, gen: int, payload: object) -> None:
        with self.cond:
            self.events.append((kind, channel, gen, payload))
            self.cond.notify_all()

    def done(self, channel: str, gen: int, payload: object) -> None:
        self._add("done", channel, gen, payload)

    def failed(self, channel: str, gen: int, payload: object) -> None:
        self._add("failed", channel, gen, payload)

    def progress(self, channel: str, gen: int, payload: object) -> None:
        self._add("progress", channel, gen, payload)

    def wait_for(self, kind: str, channel: str) -> tuple[str, str, int, object]:
        end = time.monotonic() + WAIT_S
        with self.cond:
            while True:
                for event in self.events:
                    if event[0] == kind and event[1] == channel:
                        return event
                left = end - time.monotonic()
                assert left > 0, f"no {kind} of {channel}: {self.events}"
                self.cond.wait(left)

    def of(self, kind: str) -> list[tuple[str, int, object]]:
        with self.cond:
            return [(c, g, p) for k, c, g, p in self.events if k == kind]


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def make(rec):
    made: list[Scheduler] = []

    def make(lanes=("gpu", "first", "background")) -> Scheduler:
        s = Scheduler(lanes, on_done=rec.done, on_failed=rec.failed, on_progress=rec.progress)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close(2.0)


def hold(gate: threading.Event, started: threading.Event | None = None):
    """A step that holds its lane until ``gate`` is set."""

    def step(check, report):
        if started is not None:
            started.set()
        assert gate.wait(WAIT_S)
        return "held"

    return step


def test_superseded_before_it_starts_never_runs(make, rec) -> None:
    s = make()
    gate, started = threading.Event(), threading.Event()
    ran: list[int] = []
    s.submit("x", hold(gate, started))
    assert started.wait(WAIT_S)
    for n in range(1, 6):  # five keystrokes while the lane is busy
        s.submit("live", lambda check, report, n=n: ran.append(n) or n)
    gate.set()
    assert rec.wait_for("done", "live")[3] == 5
    assert s.wait_idle(WAIT_S)
    assert ran == [5]  # no work on the intermediate ones
    assert [c for c, _g, _p in rec.of("done")] == ["x", "live"]


def test_a_running_task_stops_at_its_next_check_and_is_not_delivered(make, rec) -> None:
    s = make()
    started, go_on = threading.Event(), threading.Event()
    reached: list[str] = []

    def long(check, report):
        started.set()
        assert go_on.wait(WAIT_S)
        check()  # superseded by now: raises
        reached.append("after the check")
        return "old"

    s.submit("live", long)
    assert started.wait(WAIT_S)
    s.submit("live", lambda check, report: "new")
    go_on.set()
    assert rec.wait_for("done", "live")[3] == "new"
    assert s.wait_idle(WAIT_S)
    assert reached == []
    assert [p for c, _g, p in rec.of("done") if c == "live"] == ["new"]


def test_the_engine_check_inside_a_step_is_the_tasks(make, rec) -> None:
    """Code below the step (the engine between bands, the reference between blocks of taps)
    calls core.checks.check_now: that is the task's check."""
    s = make()
    started, go_on = threading.Event(), threading.Event()
    bands: list[int] = []

    def engine_like(check, report):
        for band in range(1000):
            if band == 2:
                started.set()
                assert go_on.wait(WAIT_S)
            check_now()
            bands.append(band)
        return "finished"

    s.submit("live", engine_like)
    assert started.wait(WAIT_S)
    s.cancel("live")
    go_on.set()
    assert s.wait_idle(WAIT_S)
    assert bands == [0, 1]  # stopped at the first band after the cancel
    assert rec.of("done") == []


def test_background_yields_to_user_work_and_resumes_where_it_stopped(make, rec) -> None:
    s = make()
    in_step2, go_on = threading.Event(), threading.Event()
    runs: list[str] = []

    def step(name: str):
        def run(check, report):
            runs.append(name)
            if name == "b2" and runs.count("b2") == 1:
                in_step2.set()
                assert go_on.wait(WAIT_S)
                check()  # user work is waiting: preempted here
            return name

        return run

    s.submit("warm", [step("b1"), step("b2"), step("b3")], priority=BACKGROUND, lane="background")
    assert in_step2.wait(WAIT_S)
    user_started, user_go = threading.Event(), threading.Event()

    def user(check, report):
        runs.append("user")
        user_started.set()
        assert user_go.wait(WAIT_S)
        return "picture"

    s.submit("preview", user, lane="first")
    assert user_started.wait(WAIT_S)
    go_on.set()  # the background's check now sees the user's picture running
    end = time.monotonic() + WAIT_S
    while ("warm", 1, "preempted") not in s.log and time.monotonic() < end:
        time.sleep(0.01)
    user_go.set()
    assert rec.wait_for("done", "warm")[3] == "b3"
    # b1 is not run again; b2 runs again after the user's picture; then b3.
    assert runs == ["b1", "b2", "user", "b2", "b3"]
    assert s.log.index(("warm", 1, "preempted")) < s.log.index(("preview", 1, "done"))
    assert ("warm", 1, "preempted") in s.log


def test_background_does_not_start_while_user_work_runs_anywhere(make, rec) -> None:
    s = make()
    gate, started = threading.Event(), threading.Event()
    order: list[str] = []
    s.submit("preview", hold(gate, started), lane="first")
    assert started.wait(WAIT_S)
    s.submit("warm", lambda check, report: order.append("warm"), priority=BACKGROUND,
             lane="background")  # fmt: skip
    time.sleep(0.2)
    assert order == []  # the background lane is free, but the user's picture is running
    gate.set()
    rec.wait_for("done", "warm")
    assert order == ["warm"]


def test_refine_waits_for_the_first_picture_and_yields_to_user_work_in_its_lane(make, rec) -> None:
    s = make()
    gate, started = threading.Event(), threading.Event()
    order: list[str] = []
    s.submit("preview", hold(gate, started), lane="first")
    assert started.wait(WAIT_S)
    tile_started, tile_go = threading.Event(), threading.Event()

    def refine(check, report):
        order.append("refine")
        if order.count("refine") == 1:
            tile_started.set()
            assert tile_go.wait(WAIT_S)
            check()  # a save is waiting in the GPU's lane: yield
        return "full"

    s.submit("live", refine, priority=REFINE, lane="gpu")
    time.sleep(0.2)
    assert order == []  # the refine waits for the first picture (it would take its cores)
    gate.set()
    assert tile_started.wait(WAIT_S)
    s.submit("save:1", lambda check, report: order.append("save") or "saved", lane="gpu")
    tile_go.set()
    assert rec.wait_for("done", "live")[3] == "full"
    assert order == ["refine", "save", "refine"]


def test_refine_is_not_preempted_by_user_work_in_another_lane(make, rec) -> None:
    s = make()
    in_refine, go_on = threading.Event(), threading.Event()
    checks: list[str] = []

    def refine(check, report):
        in_refine.set()
        assert go_on.wait(WAIT_S)
        check()
        checks.append("passed")
        return "full"

    s.submit("live", refine, priority=REFINE, lane="gpu")
    assert in_refine.wait(WAIT_S)
    assert s.lane_running("gpu") and not s.lane_running("first")
    s.submit("display", lambda check, report: "copy", lane="first")
    rec.wait_for("done", "display")
    go_on.set()
    rec.wait_for("done", "live")
    assert checks == ["passed"]
    assert s.wait_idle(WAIT_S) and not s.lane_running("gpu")


def test_finish_tasks_run_to_their_end_and_are_delivered_although_superseded(make, rec) -> None:
    s = make()
    started, go_on = threading.Event(), threading.Event()

    def picture(n: int):
        def run(check, report):
            if n == 1:
                started.set()
                assert go_on.wait(WAIT_S)
            check()  # not stopped by the newer request
            report(f"picture {n}")
            return n

        return run

    g1 = s.submit("preview", picture(1), lane="first", finish=True)
    assert started.wait(WAIT_S)
    s.submit("preview", picture(2), lane="first", finish=True)
    s.submit("preview", picture(3), lane="first", finish=True)  # 2 never starts
    go_on.set()
    assert s.wait_idle(WAIT_S)
    assert [p for c, _g, p in rec.of("progress")] == ["picture 1", "picture 3"]
    assert rec.of("progress")[0][1] == g1


def test_failures_are_one_line(make, rec, capsys) -> None:
    s = make()

    def bad_spec(check, report):
        raise KernelSpecError("box size must be >= 1, got '0'")

    def bug(check, report):
        raise ZeroDivisionError("division by zero")

    s.submit("a", bad_spec)
    assert rec.wait_for("failed", "a")[3] == "box size must be >= 1, got '0'"
    s.submit("b", bug)
    assert rec.wait_for("failed", "b")[3] == "ZeroDivisionError: division by zero"


def test_cancel_drops_what_waits_and_delays_hold_a_task(make, rec) -> None:
    s = make()
    ran: list[str] = []
    s.submit("strategies", lambda check, report: ran.append("compare"), delay_s=0.3)
    assert s.is_waiting("strategies")
    s.cancel("strategies")
    s.submit("borders", lambda check, report: ran.append("borders") or "b", delay_s=0.05)
    rec.wait_for("done", "borders")
    assert s.wait_idle(WAIT_S)
    assert ran == ["borders"]


def test_preempted_is_what_check_raises_for_background_work(make) -> None:
    s = make()
    seen: list[type] = []
    in_bg, go_on = threading.Event(), threading.Event()

    def bg(check, report):
        if not seen:
            in_bg.set()
            assert go_on.wait(WAIT_S)
            try:
                check()
            except (Preempted, Superseded) as err:
                seen.append(type(err))
                raise
        return "ok"

    s.submit("warm", bg, priority=BACKGROUND, lane="background")
    assert in_bg.wait(WAIT_S)
    user_go = threading.Event()
    s.submit("save:1", hold(user_go), lane="gpu")  # waiting or running: either preempts
    go_on.set()
    end = time.monotonic() + WAIT_S
    while not seen and time.monotonic() < end:
        time.sleep(0.01)
    user_go.set()
    assert s.wait_idle(WAIT_S)
    assert seen == [Preempted]


def test_bad_lane_and_priority_are_refused(make) -> None:
    s = make(("only",))
    with pytest.raises(ValueError, match="no lane 'gpu'"):
        s.submit("x", lambda c, r: None, lane="gpu")
    with pytest.raises(ValueError, match="no priority"):
        s.submit("x", lambda c, r: None, priority=7)
    assert USER < REFINE < BACKGROUND


def test_on_foreground_says_when_work_above_the_background_comes_and_goes(rec) -> None:
    said: list[bool] = []
    s = Scheduler(("gpu", "first"), on_done=rec.done, on_foreground=said.append)
    try:
        gate, started = threading.Event(), threading.Event()
        s.submit("warm", lambda check, report: None, priority=BACKGROUND)
        rec.wait_for("done", "warm")
        assert said == []  # background work alone holds nothing
        s.submit("preview", hold(gate, started), lane="first")
        assert started.wait(WAIT_S)
        s.submit("live", lambda check, report: "full", priority=REFINE)
        assert said == [True]
        gate.set()
        rec.wait_for("done", "live")
        assert s.wait_idle(WAIT_S)
        end = time.monotonic() + WAIT_S
        while said != [True, False] and time.monotonic() < end:
            time.sleep(0.01)
        assert said == [True, False]
    finally:
        s.close(2.0)
