"""How live the live preview is: the real window, driven offscreen as a user would drive it,
each scenario in a fresh process with empty caches (Mesa's shader cache and the user cache
directory point at a new folder), so that nothing was compiled before.

``first_seconds`` — a new user on a 12-megapixel photo (4000×3000, the bundled rocket.jpg
upscaled), at fit zoom, from the moment the window opens: the photo is opened as soon as the
window shows (the adapter probe and the warm-up start as they do for anyone), and

- ``open``: how long until the first picture of the photo, and until its full result;
- ``steps``: five sigma steps on the spin box, the first as soon as the first picture is on
  screen, then one every 0.5 s, without waiting for any full result: each step's time to its
  updated image;
- ``typed``: eight sigmas typed into the spec field (select all, the text, Enter) 100 ms apart:
  the last one's image after the last Enter, and how many full results ran for the others;
- ``direct_to_auto``: strategy direct at sigma 5, back to auto after 0.2, 0.6, 1.0, 1.5 and
  2.5 s (every phase of direct's run: compile, first tiles, later tiles): auto's image after
  each switch.

``sample_cold`` — the 512×512 sample in a fresh window, five never-used sigmas one after the
other (each once the previous one's image is shown), while the warm-up is still running.

``settled`` — the older measurement: the photo's full result first, then one step, a burst of
20 spin-box steps 100 ms apart, direct → auto after 1.5 s, and a never-seen sigma on the
sample.

Through all of it, the longest gap of a 10 ms heartbeat QTimer (a UI stall). "An updated
image" is the first picture of the new settings on screen: a reduced preview where the window
shows one (``preview_ready``), else the full result (``result_ready``). JSON goes to stdout or
``--json FILE``. Timings describe this machine; they are not asserted anywhere::

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/live_preview.py --json out.json

``--dump-stalls MS`` finds what froze the process in a stall, which no thread inside it can
see (a thread that holds the GIL in C freezes them all, the sampler of ``--trace-stalls``
too): each tick of the heartbeat is also written to a shared page, and a watcher process
outside polls it every 10 ms; when the tick is MS late it reads every thread's state and
system call from /proc and runs ``py-spy dump --native`` (py-spy on PATH, or ``PY_SPY``),
once per stall, into the scenario's ``stall_dumps``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import itertools

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HEARTBEAT_MS = 10
TRACE_STALLS = False
DUMP_STALLS_MS: float | None = None
WAIT_S = 180.0


class Clock:
    """A 10 ms heartbeat and the window's update signals, timestamped."""

    def __init__(self, app, window) -> None:
        from PySide6.QtCore import QTimer

        self.app, self.window = app, window
        self.ticks: list[float] = []
        self.updates: list[tuple[float, str, object]] = []  # (time, kind, spec)
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))
        self.timer.start()
        self.watcher = _StallWatcher.current
        if self.watcher is not None:
            self.timer.timeout.connect(self.watcher.beat_now)
        window.result_ready.connect(lambda: self._update("result"))
        if hasattr(window, "preview_ready"):
            window.preview_ready.connect(lambda: self._update("preview"))

    def _update(self, kind: str) -> None:
        w = self.window
        spec = getattr(w, "shown_spec", None)
        if spec is None and w.result is not None:
            spec = w.result.spec
        self.updates.append((time.perf_counter(), kind, spec))

    def pump(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.app.processEvents()
            time.sleep(0.001)

    def wait_shown(self, since: float, want, timeout: float = WAIT_S, kind: str | None = None):
        """Pump events until an update after ``since`` shows a spec for which ``want(spec)``."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            for t, k, spec in self.updates:
                if t >= since and spec is not None and want(spec) and (kind in (None, k)):
                    return t
            self.app.processEvents()
            time.sleep(0.001)
        return None

    def trace_stalls(self, over_ms: float = 40.0, every_ms: float = 5.0) -> None:
        """Sample the UI thread's Python stack while the heartbeat is late (``--trace-stalls``):
        ``self.stalls`` gets one entry per stall, its samples' stacks counted."""
        import collections
        import threading
        import traceback

        main = threading.main_thread().ident
        main_tid = threading.main_thread().native_id
        self.stalls: list[dict] = []

        self.gil_waits: collections.Counter = collections.Counter()
        names = {}

        def top_of(frame) -> str:
            stack = traceback.extract_stack(frame)[-4:]
            return " < ".join(
                f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack)
            )

        def sample() -> None:
            current = None
            while True:
                t_sleep = time.perf_counter()
                time.sleep(every_ms / 1e3)
                waited = (time.perf_counter() - t_sleep) * 1e3 - every_ms
                if waited > 25:
                    # this thread waited for the GIL: whoever held it has just let it go, and
                    # its frame is at (or just after) the call that held it
                    for t in threading.enumerate():
                        names[t.ident] = t.name
                    for ident, frame in sys._current_frames().items():
                        if ident in (threading.get_ident(), main):
                            continue
                        key = f"{names.get(ident, ident)}: {top_of(frame)}"
                        self.gil_waits[key] += round(waited)
                last = self.ticks[-1] if self.ticks else None
                late = last is not None and (time.perf_counter() - last) * 1e3 > over_ms
                if not late:
                    if current is not None:
                        current["samples"] = dict(current["samples"].most_common(6))
                        current["running"] = dict(current["running"].most_common(8))
                        (c0, w0), (c1, w1) = current.pop("sched0"), current.pop("sched1")
                        # the UI thread's own time on a core, and waiting for one, in the stall
                        current["ui_on_cpu_ms"] = round((c1 - c0) / 1e6, 1)
                        current["ui_runqueue_ms"] = round((w1 - w0) / 1e6, 1)
                        self.stalls.append(current)
                        current = None
                    continue
                if current is None or current["tick"] != last:
                    current = {"tick": last, "samples": collections.Counter(),
                               "sched0": _schedstat(main_tid),
                               "running": collections.Counter()}  # fmt: skip
                current["sched1"] = _schedstat(main_tid)
                for comm in _running_threads():
                    current["running"][comm] += 1
                frame = sys._current_frames().get(main)
                stack = traceback.extract_stack(frame)[-8:] if frame is not None else []
                where = " < ".join(
                    f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack)
                )
                current["samples"][where or "(no Python frame)"] += 1

        threading.Thread(target=sample, daemon=True).start()

    def stall_report(self, min_ms: float = 50.0) -> list[dict]:
        out = [{"gil_waits_ms_by_other_thread": dict(self.gil_waits.most_common(12))}]
        for stall in getattr(self, "stalls", []):
            later = [t for t in self.ticks if t > stall["tick"]]
            gap = (later[0] - stall["tick"]) * 1e3 if later else None
            if gap is None or gap >= min_ms:
                out.append({"gap_ms": None if gap is None else round(gap, 1),
                            "at_s": round(stall["tick"] - self.ticks[0], 2),
                            "ui_on_cpu_ms": stall.get("ui_on_cpu_ms"),
                            "ui_runqueue_ms": stall.get("ui_runqueue_ms"),
                            "running_threads": stall.get("running"),
                            "samples": stall["samples"]})  # fmt: skip
        return out

    def stalls_over(self, ms: float) -> dict:
        """How many gaps of the heartbeat were over ``ms``, and when (seconds after the first
        tick, and the gap in ms)."""
        at = [
            (round(a - self.ticks[0], 2), round((b - a) * 1e3, 1))
            for a, b in itertools.pairwise(self.ticks)
            if (b - a) * 1e3 > ms
        ]
        return {f"stalls_over_{ms:g}ms": len(at), f"stalls_over_{ms:g}ms_at": at}

    def max_stall_ms(self, start: float, end: float) -> float:
        ticks = [t for t in self.ticks if start <= t <= end]
        if len(ticks) < 2:
            return float("nan")
        return round(max(b - a for a, b in itertools.pairwise(ticks)) * 1e3, 1)


class _StallWatcher:
    """``--dump-stalls``: the heartbeat's ticks on a shared page, and the process that
    watches it (:func:`watch_heartbeat`), started and ready before the scenario's window."""

    current: _StallWatcher | None = None

    def __init__(self, late_ms: float) -> None:
        import mmap
        import struct

        folder = Path(tempfile.mkdtemp(prefix="blurapp-stalls-"))
        self.beat, self.out = folder / "beat", folder / "dumps.jsonl"
        self.beat.write_bytes(b"\0" * 8)
        self._file = open(self.beat, "r+b")  # held for the page's life
        self._page = mmap.mmap(self._file.fileno(), 8)
        self._pack = struct.Struct("d").pack
        argv = [sys.executable, __file__, "--watch-heartbeat", str(self.beat), str(os.getpid())]
        self.proc = subprocess.Popen([*argv, str(late_ms), str(self.out)])
        ready = self.out.with_suffix(".ready")
        end = time.perf_counter() + 30
        while not ready.exists() and time.perf_counter() < end and self.proc.poll() is None:
            time.sleep(0.01)

    def beat_now(self) -> None:
        self._page[0:8] = self._pack(time.perf_counter())

    def dumps(self, first_tick: float) -> list[dict]:
        self.proc.terminate()
        self.proc.wait()
        if not self.out.exists():
            return []
        found = [json.loads(line) for line in self.out.read_text().splitlines() if line]
        for dump in found:
            dump["at_s"] = round(dump.pop("tick") - first_tick, 2)
        return found


def watch_heartbeat(beat: Path, pid: int, late_ms: float, out: Path) -> int:
    """Poll the heartbeat's page every 10 ms; when its tick is ``late_ms`` old, write every
    thread's state and ``py-spy dump --native`` of the process to ``out`` (one JSON line a
    stall) while it is still frozen."""
    import mmap
    import shutil
    import struct

    spy = os.environ.get("PY_SPY") or shutil.which("py-spy")
    with open(beat, "rb") as f, open(out, "a") as sink:
        page = mmap.mmap(f.fileno(), 8, access=mmap.ACCESS_READ)
        out.with_suffix(".ready").touch()
        dumped = None
        while Path(f"/proc/{pid}").exists():
            (tick,) = struct.unpack("d", page[:8])
            late = (time.perf_counter() - tick) * 1e3  # CLOCK_MONOTONIC, system-wide
            if tick and late > late_ms and tick != dumped:
                dumped = tick
                threads = {}
                for task in Path(f"/proc/{pid}/task").iterdir():
                    try:
                        stat = (task / "stat").read_text()
                        call = (task / "syscall").read_text().split()[:2]
                        wchan = (task / "wchan").read_text()
                    except OSError:
                        continue
                    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
                    threads[task.name] = [comm, stat[stat.rindex(")") + 2], " ".join(call), wchan]
                stacks = "py-spy not found (PATH or PY_SPY)"
                if spy:
                    run = [spy, "dump", "--native", "--pid", str(pid)]
                    done = subprocess.run(run, capture_output=True, text=True, timeout=30)
                    stacks = done.stdout + done.stderr
                record = {"tick": tick, "late_ms": round(late, 1), "threads": threads}
                sink.write(json.dumps({**record, "py_spy": stacks}) + "\n")
                sink.flush()
            time.sleep(0.01)
    return 0


def _schedstat(tid: int) -> tuple[int, int]:
    """A thread's time on a CPU and waiting on a run queue, ns (Linux's schedstat)."""
    try:
        on_cpu, waiting, _ = Path(f"/proc/self/task/{tid}/schedstat").read_text().split()
        return int(on_cpu), int(waiting)
    except (OSError, ValueError):
        return 0, 0


def _running_threads() -> list[str]:
    """The names of this process's threads that are running or runnable now."""
    names = []
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        if stat[stat.rindex(")") + 2] == "R":
            names.append(comm)
    return names


def _ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((a - b) * 1e3, 1)


def make_photo(path: Path) -> Path:
    from PIL import Image

    im = Image.open(ROOT / "assets" / "samples" / "rocket.jpg").convert("RGB")
    im.resize((4000, 3000), Image.Resampling.BICUBIC).save(path, quality=92)
    return path


def sigma_of(spec) -> float | None:
    text = spec.kernel.spec
    if not text.startswith("gaussian:sigma="):
        return None
    try:
        return float(text.split("=", 1)[1].split(",")[0])
    except ValueError:
        return None


def run_settled(photo: Path, size: tuple[int, int]) -> dict:
    from PySide6.QtCore import QSettings

    from blurapp.ui.app import make_app
    from blurapp.ui.main_window import MainWindow

    app = make_app()
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "bench.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings)
    window.resize(*size)
    window.show()
    clock = Clock(app, window)
    designer = window.designer
    out: dict = {}

    def set_sigma(value: float) -> None:
        designer.sigma.setValue(value)

    # --- open the photo (the window opens it; then wait for its first full result)
    window.strategy_combo.setCurrentText("auto")
    set_sigma(5.0)
    clock.pump(0.3)
    t0 = time.perf_counter()
    window.open_path(photo)
    t_open = time.perf_counter()
    shown = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0)
    done = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0, kind="result")
    out["open"] = {
        "call_ms": _ms(t_open, t0),
        "first_image_ms": _ms(shown, t0),
        "full_result_ms": _ms(done, t0),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(1.0)
    view = window.compare.result_view
    out["fit_scale"] = round(view.scale_factor(), 4)

    # --- one step
    t0 = time.perf_counter()
    set_sigma(5.1)
    shown = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.1)
    done = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.1, kind="result")
    out["one_step"] = {
        "updated_image_ms": _ms(shown, t0),
        "full_result_ms": _ms(done, t0),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(0.5)

    # --- a burst of 20 steps, 100 ms apart
    sigmas = [round(5.2 + 0.1 * i, 1) for i in range(20)]
    t0 = time.perf_counter()
    last_input = t0
    for s in sigmas:
        last_input = time.perf_counter()
        set_sigma(s)
        clock.pump(0.1)
    shown = clock.wait_shown(last_input, lambda s: sigma_of(s) == sigmas[-1])
    done = clock.wait_shown(last_input, lambda s: sigma_of(s) == sigmas[-1], kind="result")
    during = [u for u in clock.updates if t0 <= u[0] <= last_input]
    out["burst"] = {
        "steps": len(sigmas),
        "updates_during_burst": len(during),
        "last_shown_after_last_input_ms": _ms(shown, last_input),
        "last_full_result_after_last_input_ms": _ms(done, last_input),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(0.5)

    # --- direct, then back to auto after 1.5 s
    set_sigma(5.0)
    clock.wait_shown(time.perf_counter() - 0.01, lambda s: sigma_of(s) == 5.0)
    t0 = time.perf_counter()
    window.strategy_combo.setCurrentText("direct")
    clock.pump(1.5)
    t_switch = time.perf_counter()
    window.strategy_combo.setCurrentText("auto")
    shown = clock.wait_shown(
        t_switch, lambda s: s.strategy == "auto" and sigma_of(s) == 5.0, timeout=WAIT_S
    )
    out["direct_to_auto"] = {
        "auto_shown_after_switch_ms": _ms(shown, t_switch),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(0.5)

    # --- the 512×512 sample, a never-seen separable sigma
    from PIL import Image

    sample = np.asarray(Image.open(ROOT / "assets" / "samples" / "astronaut.png").convert("RGB"))
    t0 = time.perf_counter()
    window.set_image(sample)
    clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0, kind="result")
    clock.pump(0.5)
    t0 = time.perf_counter()
    set_sigma(3.37)
    shown = clock.wait_shown(t0, lambda s: sigma_of(s) == 3.37)
    done = clock.wait_shown(t0, lambda s: sigma_of(s) == 3.37, kind="result")
    out["sample_new_sigma"] = {
        "updated_image_ms": _ms(shown, t0),
        "full_result_ms": _ms(done, t0),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    out["max_stall_ms_overall"] = clock.max_stall_ms(clock.ticks[0], clock.ticks[-1])
    out["first_tick_monotonic_s"] = clock.ticks[0]  # to line up with perf -k CLOCK_MONOTONIC
    out.update(clock.stalls_over(50))
    if clock.watcher is not None:
        out["stall_dumps"] = clock.watcher.dumps(clock.ticks[0])
    window.close()
    return out


def _window(size: tuple[int, int]):
    from PySide6.QtCore import QSettings

    from blurapp.ui.app import make_app
    from blurapp.ui.main_window import MainWindow

    app = make_app()
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "bench.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings)
    window.resize(*size)
    window.show()
    return app, window


def _type_spec(window, text: str) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    field = window.designer.spec
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, text)
    QTest.keyClick(field, Qt.Key.Key_Return)


def _what_ran(window, start: float, end: float | None) -> list[str]:
    """The scheduler's events between a change (perf_counter ``start``) and its picture
    (``--trace-stalls``): "+ms channel event" lines, what a slow step waited behind."""
    scheduler = getattr(window.runner, "scheduler", None)
    if scheduler is None or end is None:
        return []
    shift = time.monotonic() - time.perf_counter()  # the timeline is time.monotonic()'s
    lo, hi = start + shift - 0.05, end + shift
    return [
        f"{(t - start - shift) * 1e3:+.0f} ms {channel}#{gen} {event}"
        for t, channel, gen, event in list(scheduler.timeline)
        if lo <= t <= hi
    ]


def _full_results(window, since_generation: int) -> int | None:
    """Full-resolution runs of the live channel that were started since a generation
    (``None`` for a window without the scheduler's log, such as an older blurapp's)."""
    scheduler = getattr(window.runner, "scheduler", None)
    if scheduler is None:
        return None
    log = list(scheduler.log)
    return sum(1 for c, g, e in log if c == "live" and e == "start" and g > since_generation)


def run_first_seconds(photo: Path, size: tuple[int, int]) -> dict:
    t_start = time.perf_counter()
    app, window = _window(size)
    clock = Clock(app, window)
    if TRACE_STALLS:
        clock.trace_stalls()
    designer = window.designer
    out: dict = {"window_ms": _ms(time.perf_counter(), t_start)}
    window.strategy_combo.setCurrentText("auto")
    designer.sigma.setValue(5.0)
    app.processEvents()

    # --- open at once
    t0 = time.perf_counter()
    window.open_path(photo)
    first = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0)
    out["open"] = {"first_picture_ms": _ms(first, t0)}
    if TRACE_STALLS:
        out["open_ran"] = _what_ran(window, t0, first)

    # --- five steps, 0.5 s apart, from the first picture on
    steps = []
    sigma = 5.0
    for _ in range(5):
        sigma = round(sigma + 0.1, 1)
        t = time.perf_counter()
        designer.sigma.setValue(sigma)
        shown = clock.wait_shown(t, lambda s, v=sigma: sigma_of(s) == v)
        steps.append(_ms(shown, t))
        if TRACE_STALLS:
            out.setdefault("steps_ran", []).append(_what_ran(window, t, shown))
        clock.pump(max(0.0, 0.5 - (time.perf_counter() - t)))
    out["steps_ms"] = steps
    full = clock.wait_shown(t0, lambda s: sigma_of(s) == sigma, kind="result")
    out["open"]["first_full_result_ms"] = _ms(full, t0)
    clock.pump(0.3)

    # --- typed edits, 100 ms apart
    typed = [round(3.0 + 0.37 * i, 2) for i in range(8)]
    gen0 = window.runner.generation("live")
    t_first = time.perf_counter()
    last = t_first
    for value in typed:
        last = time.perf_counter()
        _type_spec(window, f"gaussian:sigma={value:g}")
        clock.pump(max(0.0, 0.1 - (time.perf_counter() - last)))
    shown = clock.wait_shown(last, lambda s: sigma_of(s) == typed[-1])
    done = clock.wait_shown(last, lambda s: sigma_of(s) == typed[-1], kind="result")
    out["typed"] = {
        "edits": len(typed),
        "last_shown_after_last_enter_ms": _ms(shown, last),
        "last_full_result_after_last_enter_ms": _ms(done, last),
        "full_results_started": _full_results(window, gen0),
        "max_stall_ms": clock.max_stall_ms(t_first, time.perf_counter()),
    }
    clock.pump(0.3)

    # --- direct, back to auto at several phases of its run
    designer.sigma.setValue(5.0)
    clock.wait_shown(time.perf_counter() - 0.01, lambda s: sigma_of(s) == 5.0, kind="result")
    phases = {}
    for after in (0.2, 0.6, 1.0, 1.5, 2.5):
        window.strategy_combo.setCurrentText("direct")
        clock.pump(after)
        t = time.perf_counter()
        window.strategy_combo.setCurrentText("auto")
        shown = clock.wait_shown(t, lambda s: s.strategy == "auto" and sigma_of(s) == 5.0)
        phases[f"{after:g}s"] = _ms(shown, t)
        clock.wait_shown(t, lambda s: s.strategy == "auto", kind="result")
        clock.pump(0.2)
    out["direct_to_auto_ms"] = phases
    out["max_stall_ms_overall"] = clock.max_stall_ms(clock.ticks[0], clock.ticks[-1])
    out["first_tick_monotonic_s"] = clock.ticks[0]  # to line up with perf -k CLOCK_MONOTONIC
    out.update(clock.stalls_over(50))
    if clock.watcher is not None:
        out["stall_dumps"] = clock.watcher.dumps(clock.ticks[0])
    if TRACE_STALLS:
        out["stall_traces"] = clock.stall_report()
    window.close()
    return out


def run_sample_cold(size: tuple[int, int]) -> dict:
    from PIL import Image

    app, window = _window(size)
    clock = Clock(app, window)
    if TRACE_STALLS:
        clock.trace_stalls()
    window.strategy_combo.setCurrentText("auto")
    window.designer.sigma.setValue(5.0)
    sample = np.asarray(Image.open(ROOT / "assets" / "samples" / "astronaut.png").convert("RGB"))
    t0 = time.perf_counter()
    window.set_image(sample)
    first = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0)
    out: dict = {"first_picture_ms": _ms(first, t0), "fit_scale": None}
    times = []
    for sigma in (3.37, 1.23, 7.71, 2.46, 11.3):
        t = time.perf_counter()
        window.designer.sigma.setValue(sigma)
        shown = clock.wait_shown(t, lambda s, v=sigma: sigma_of(s) == v)
        times.append(_ms(shown, t))
        if TRACE_STALLS:
            out.setdefault("sigmas_ran", []).append(_what_ran(window, t, shown))
        clock.pump(0.3)
    out["fit_scale"] = round(window.compare.result_view.scale_factor(), 4)
    out["never_used_sigmas_ms"] = times
    out["max_stall_ms_overall"] = clock.max_stall_ms(clock.ticks[0], clock.ticks[-1])
    out["first_tick_monotonic_s"] = clock.ticks[0]  # to line up with perf -k CLOCK_MONOTONIC
    out.update(clock.stalls_over(50))
    if clock.watcher is not None:
        out["stall_dumps"] = clock.watcher.dumps(clock.ticks[0])
    if TRACE_STALLS:
        out["stall_traces"] = clock.stall_report()
    window.close()
    return out


SCENARIOS = ("first_seconds", "sample_cold", "settled")


def _one(scenario: str, photo: Path, size: tuple[int, int]) -> dict:
    if scenario == "first_seconds":
        return run_first_seconds(photo, size)
    if scenario == "sample_cold":
        return run_sample_cold(size)
    return run_settled(photo, size)


def _fresh_process(scenario: str, photo: Path, size: str) -> dict:
    """``scenario`` in a new process with empty caches (nothing compiled before)."""
    cache = tempfile.mkdtemp(prefix="blurapp-cold-")
    env = {**os.environ, "XDG_CACHE_HOME": cache, "MESA_SHADER_CACHE_DIR": cache}
    out = Path(cache) / "out.json"
    argv = [sys.executable, __file__, "--scenario", scenario, "--photo", str(photo)]
    if TRACE_STALLS:
        argv.append("--trace-stalls")
    if DUMP_STALLS_MS:
        argv += ["--dump-stalls", str(DUMP_STALLS_MS)]
    subprocess.run([*argv, "--size", size, "--json", str(out)], env=env, check=True)
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures here (else stdout)")
    parser.add_argument("--photo", type=Path, help="a photo to use instead of the 12 MP one")
    parser.add_argument("--size", default="1600x1000", help="window size WxH (1600x1000)")
    parser.add_argument("--scenario", choices=SCENARIOS, action="append",
                        help="run only these (each in this process when one is given)")  # fmt: skip
    parser.add_argument("--trace-stalls", action="store_true",
                        help="sample the UI thread's stack in each stall over 50 ms")  # fmt: skip
    parser.add_argument("--dump-stalls", type=float, metavar="MS",
                        help="py-spy dumps (from outside) in stalls over MS")  # fmt: skip
    parser.add_argument("--watch-heartbeat", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.watch_heartbeat:  # the watcher process of --dump-stalls
        beat, pid, late_ms, out = args.watch_heartbeat
        return watch_heartbeat(Path(beat), int(pid), float(late_ms), Path(out))
    global TRACE_STALLS, DUMP_STALLS_MS
    TRACE_STALLS = args.trace_stalls
    DUMP_STALLS_MS = args.dump_stalls
    width, height = (int(v) for v in args.size.lower().split("x"))
    photo = args.photo or make_photo(Path(tempfile.mkdtemp()) / "photo12mp.jpg")
    chosen = args.scenario or list(SCENARIOS)
    if len(chosen) == 1:
        if DUMP_STALLS_MS:
            _StallWatcher.current = _StallWatcher(DUMP_STALLS_MS)
        figures = _one(chosen[0], photo, (width, height))
    else:
        figures = {
            "machine": f"{platform.machine()} · {os.cpu_count()} CPUs · "
            f"{platform.python_version()}",
            "load_average": os.getloadavg(),
            "window": [width, height],
            "photo": str(photo),
        }
        for scenario in chosen:
            figures[scenario] = _fresh_process(scenario, photo, args.size)
    text = json.dumps(figures, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
