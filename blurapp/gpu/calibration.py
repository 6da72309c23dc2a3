"""Calibrate the planner's cost table on the adapter at hand: time each strategy's micro-runs,
fit its cost model's coefficients, keep the table in the user's cache directory.

Every registered strategy lists the ``(width, height, kernel)`` micro-runs that move the
features of its cost model (:attr:`blurapp.gpu.strategies.base.Strategy.calibration`: pixels,
taps, passes, dispatches, fft's block sides...). :func:`calibrate` runs them on a
:class:`~blurapp.gpu.engine.GpuFilter` of its own (the user's caches stay the user's), takes the
fastest of a few runs of each, and fits, by non-negative least squares on the relative error,
one scale of the built-in coefficients per strategy and the few features a strategy names in
``fitted`` (fixed costs of a run, long 1-D passes' looped taps). The times are the whole run
as a caller sees it (upload, passes, read-back), in nanoseconds: the table's unit.

The table is kept as JSON in ``platformdirs.user_cache_dir("blurapp")/calibration/``, one file
per adapter, holding its key: adapter name, vendor, backend, driver, blurapp's version and a
hash of the shaders. A file whose key differs (a new driver, edited shaders) is stale, and a
file that does not parse is corrupt: either is ignored with one warning and replaced by the
next calibration. :func:`ensure_table` (called whenever ``auto`` plans on a GPU) installs the
cached table, or, on an unknown adapter, starts a quick calibration (at most
:data:`QUICK_BUDGET_S`) on a background thread while the built-in table serves; the thread
yields to user work between micro-runs (:func:`pause`, :func:`resume`, and any GPU run on
another thread holds it off for :data:`YIELD_S`). ``BLURAPP_CALIBRATION`` switches it:
``auto`` (the default), ``cache`` (use a cached table, never calibrate in the background) or
``off`` (the built-in table only; the test suite runs so unless a test asks otherwise).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from blurapp import __version__
from blurapp.core import planner
from blurapp.core.errors import BlurappError
from blurapp.core.kernel import Kernel
from blurapp.gpu.strategies import STRATEGIES

if TYPE_CHECKING:
    from blurapp.gpu.device import GpuContext
    from blurapp.gpu.engine import GpuFilter

__all__ = [
    "ENV",
    "Calibration",
    "cache_path",
    "calibrate",
    "ensure_table",
    "format_table",
    "load_table",
    "pause",
    "resume",
    "status",
]

ENV = "BLURAPP_CALIBRATION"
FORMAT = 1
QUICK_BUDGET_S = 10.0  # the background calibration on an unknown adapter
YIELD_S = 0.5  # a user's GPU run holds the background calibration off this long


@dataclass
class Calibration:
    """A fitted table and how it was made."""

    key: dict[str, str]
    coefficients: dict[str, dict[str, float]]
    runs: dict[str, int] = field(default_factory=dict)  # micro-runs timed per strategy
    error: dict[str, float] = field(default_factory=dict)  # rms relative error of the fit
    quick: bool = False
    created: float = field(default_factory=time.time)
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return f"calibrated for {self.key['name']} ({self.key['backend']})"

    def table(self) -> planner.CostTable:
        return planner.CostTable(self.name, 1.0, self.coefficients)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "key": self.key, "coefficients": self.coefficients,
            "runs": self.runs, "error": self.error, "quick": self.quick,
            "created": self.created, "seconds": self.seconds,
        }  # fmt: skip


# -- the key and the cache ---------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def shader_hash() -> str:
    """SHA-256 (16 hex digits) of every shader file: an edited shader recalibrates."""
    h = hashlib.sha256()
    files = sorted(
        (f for f in resources.files("blurapp.shaders").iterdir() if f.name.endswith(".wgsl")),
        key=lambda f: f.name,
    )
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def host_threads() -> str:
    """The threads a software adapter computes with: ``LP_NUM_THREADS`` (Mesa's llvmpipe and
    lavapipe) where it is set, else the CPUs this process may run on. One thread ranks the
    strategies differently from two (tiled is faster than direct with two, slower with one)."""
    wanted = os.environ.get("LP_NUM_THREADS", "").strip()
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    if wanted.isdigit():
        return str(min(int(wanted), cpus) if int(wanted) > 0 else 0)
    return str(cpus)


def adapter_key(ctx: GpuContext) -> dict[str, str]:
    """What a table is valid for: the adapter, its driver, blurapp's version, the shaders, and
    for a software adapter (one that runs on the CPU) the threads it computes with."""
    info = ctx.info
    key = {
        "name": str(info.get("name", "")),
        "vendor": str(info.get("vendor", "")),
        "backend": str(info.get("backend", "")),
        "driver": str(info.get("driver", "")),
        "blurapp": __version__,
        "shaders": shader_hash(),
    }
    if str(info.get("type", "")).lower() == "cpu":
        key["threads"] = host_threads()
    return key


def cache_dir() -> Path:
    """Where tables are kept: the user's cache directory (``XDG_CACHE_HOME`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("blurapp", appauthor=False)) / "calibration"


def cache_path(key: Mapping[str, str]) -> Path:
    """The file of the adapter ``key`` names (one per adapter, backend and, for a software
    adapter, thread count)."""
    name = f"{key['name']}-{key['backend']}" + (f"-{key['threads']}t" if "threads" in key else "")
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()
    return cache_dir() / f"{slug[:80] or 'adapter'}.json"


_warned: set[str] = set()


def _warn_once(path: Path, why: str) -> None:
    if str(path) in _warned:
        return
    _warned.add(str(path))
    print(f"blurapp: warning: ignoring the calibration cache {path}: {why}", file=sys.stderr)


def load_table(key: Mapping[str, str], path: Path | None = None) -> Calibration | None:
    """The cached calibration for ``key``, or ``None`` (none yet; or a corrupt or stale file,
    ignored with one warning)."""
    path = path or cache_path(key)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        _warn_once(path, err.strerror or str(err))
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, not {FORMAT}")
        coefficients = {
            str(s): {str(f): float(v) for f, v in feats.items()}
            for s, feats in data["coefficients"].items()
        }
        if not all(math.isfinite(v) and v >= 0 for f in coefficients.values() for v in f.values()):
            raise ValueError("a coefficient is negative or not finite")
        stored = {str(k): str(v) for k, v in data["key"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as err:  # UnicodeError too
        _warn_once(path, f"not a calibration table ({err})")
        return None
    if stored != dict(key):
        changed = ", ".join(k for k in key if stored.get(k) != key[k]) or "its key"
        _warn_once(path, f"stale: made for another {changed}")
        return None
    return Calibration(
        stored, coefficients, dict(data.get("runs", {})), dict(data.get("error", {})),
        bool(data.get("quick", False)), float(data.get("created", 0.0)),
        float(data.get("seconds", 0.0)),
    )  # fmt: skip


def save_table(cal: Calibration, path: Path | None = None) -> Path:
    """Write ``cal`` into the cache (atomically, replacing the adapter's previous table)."""
    from blurapp.io.atomic import write_text

    path = path or cache_path(cal.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(cal.to_json(), indent=1, sort_keys=True), overwrite=True)
    return path


# -- yielding to user work ------------------------------------------------------------------

_pause = threading.Event()  # set: the background calibration waits
_last_user_run = 0.0
_calibrating = threading.local()


def pause() -> None:
    """Hold the background calibration before its next micro-run (e.g. while the window's
    preview works), until :func:`resume`."""
    _pause.set()


def resume() -> None:
    """Let the background calibration go on."""
    _pause.clear()


def note_user_run() -> None:
    """A GPU run on behalf of the user started (the engine calls this): the background
    calibration waits :data:`YIELD_S` after the last one before its next micro-run."""
    global _last_user_run
    if not getattr(_calibrating, "on", False):
        _last_user_run = time.monotonic()


def wait_for_quiet(stop: threading.Event | None = None) -> None:
    """Block the calling thread (background GPU work: this calibration, the engine's baking of
    pipelines) while user work holds it: while :func:`pause` is in force and for
    :data:`YIELD_S` after the last user run; returns at once when ``stop`` is set."""
    _wait_for_quiet(stop or threading.Event())


def _wait_for_quiet(stop: threading.Event) -> None:
    while not stop.is_set():
        quiet = time.monotonic() - _last_user_run
        if not _pause.is_set() and quiet >= YIELD_S:
            return
        stop.wait(0.05 if _pause.is_set() else max(0.01, YIELD_S - quiet))


# -- calibrating ------------------------------------------------------------------------------


def _runs(quick: bool) -> list[tuple[str, int, int, str]]:
    """(strategy, width, height, kernel) of every micro-run, interleaved across strategies so
    that a time budget cut short still measures each of them."""
    per = []
    for name, strat in STRATEGIES.items():
        runs = []
        for w, h, spec in strat.calibration:
            if quick:  # a quarter of the pixels: the same features, smaller amounts
                w, h = max(32, w // 2), max(32, h // 2)
            runs.append((name, w, h, spec))
        per.append(runs)
    out = []
    for i in range(max((len(r) for r in per), default=0)):
        out.extend(r[i] for r in per if i < len(r))
    return out


def _time_run(engine: GpuFilter, x: np.ndarray, kernel: Kernel, strategy: str,
              repeats: int) -> float:  # fmt: skip
    """Milliseconds of the fastest of ``repeats`` runs (after one that compiles)."""
    engine.run(x, kernel, "clamp", strategy)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        engine.run(x, kernel, "clamp", strategy)
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best


def _fit(
    model: planner.CostModel,
    rows: list[tuple[Mapping[str, float], float]],
) -> tuple[dict[str, float], float]:
    """Coefficients (ns) of ``model``'s features fitted to ``(features, ns)`` rows, and the rms
    relative error.

    A few micro-runs timed on a shared machine cannot pin a coefficient per feature (one
    calibration here put a 21×21 kernel's whole cost in its halo). So the built-in
    coefficients keep their proportions and get one scale for this adapter, and only the
    features the strategy names in ``fitted`` (a run's fixed costs, the looped taps of long 1-D
    passes: what the built-in table does not know) get coefficients of their own;
    non-negative least squares on the relative error.
    """
    free = [f for f in getattr(model, "fitted", ()) if any(feats.get(f) for feats, _ in rows)]
    shaped = {f: v for f, v in model.builtin.items() if f not in free and v > 0}
    names = ["*scale*", *free]
    a = np.array(
        [[sum(v * feats.get(f, 0.0) for f, v in shaped.items())] + [feats.get(f, 0.0) for f in free]
         for feats, _ in rows],
        dtype=np.float64,
    )  # fmt: skip
    t = np.array([ns for _, ns in rows], dtype=np.float64)
    rel = a / t[:, None]
    keep = [j for j in range(len(names)) if np.any(a[:, j] > 0)]
    coef = np.zeros(len(names))
    while keep:
        sol, *_ = np.linalg.lstsq(rel[:, keep], np.ones(len(t)), rcond=None)
        if np.all(sol >= 0):
            coef[keep] = sol
            break
        keep = [j for j, v in zip(keep, sol, strict=True) if v > 0]
    err = float(np.sqrt(np.mean(((a @ coef) - t) ** 2 / t**2))) if len(t) else math.nan
    scale = coef[0]
    out = {f: float(scale * v) for f, v in model.builtin.items()}
    out.update({f: float(c) for f, c in zip(free, coef[1:], strict=True)})
    return out, err


def calibrate(
    ctx: GpuContext | None = None,
    *,
    quick: bool = False,
    budget_s: float | None = None,
    repeats: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    stop: threading.Event | None = None,
    yielding: bool = False,
) -> Calibration:
    """Time every strategy's micro-runs on ``ctx``'s adapter and fit its cost table.

    Arguments:
        ctx: the GPU context (``None``: the process's device).
        quick: a quarter of the pixels per run and one timed repeat (the background run).
        budget_s: seconds of micro-runs in all (time spent waiting for the user's work does
            not count): a micro-run starts only if it should end within it, judged by the
            longest run so far (compiles included) and its strategy's last. What was
            measured is fitted; an unmeasured strategy keeps its built-in coefficients.
        repeats: timed runs per micro-run (the fastest counts; default 1 quick, else 3).
        progress: called with (runs done, runs in all, what runs next).
        stop: set to abandon the calibration between micro-runs (raises BlurappError).
        yielding: wait between micro-runs while user work runs (:func:`pause`, user runs).

    Returns:
        The :class:`Calibration` (not yet saved; see :func:`save_table`).
    """
    from blurapp.gpu.device import get_device
    from blurapp.gpu.engine import GpuFilter

    ctx = ctx or get_device()
    engine = GpuFilter(ctx)
    repeats = repeats or (1 if quick else 3)
    stop = stop or threading.Event()
    runs = _runs(quick)
    rows: dict[str, list[tuple[Mapping[str, float], float]]] = {n: [] for n in STRATEGIES}
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    waited = 0.0  # seconds spent waiting for the user's work to end: not the budget's
    took: dict[str, float] = {}  # the last micro-run of each strategy, compile included
    _calibrating.on = True
    try:
        for i, (name, w, h, spec) in enumerate(runs):
            if budget_s is not None:
                # a run starts only if it should end within the budget: as long as the longest
                # run so far (a new pipeline's compile dominates on a software adapter and is
                # not known before), or half as long again as its strategy's last
                guess = max(1.5 * took.get(name, 0.0), max(took.values(), default=0.0))
                if time.perf_counter() - start - waited + guess > budget_s:
                    continue
            if yielding:
                began = time.perf_counter()
                _wait_for_quiet(stop)
                waited += time.perf_counter() - began
            if stop.is_set():
                raise BlurappError("calibration stopped")
            if progress is not None:
                progress(i, len(runs), f"{name} {w}×{h} {spec}")
            kernel = Kernel.parse(spec)
            strat = STRATEGIES[name]
            if strat.why_not(kernel) is not None:
                continue
            est = strat.estimate(kernel, ctx.limits, (w, h))
            if est is None:
                continue
            x = rng.random((h, w, 4), dtype=np.float32)
            began = time.perf_counter()
            try:
                ms = _time_run(engine, x, kernel, name, repeats)
            except BlurappError:
                continue  # this adapter cannot run it (a limit): the fit does without
            finally:
                took[name] = time.perf_counter() - began
            rows[name].append((est.features, ms * 1e6))
        if progress is not None:
            progress(len(runs), len(runs), "fitting")
    finally:
        _calibrating.on = False
        engine.clear()
    coefficients, counts, errors = {}, {}, {}
    for name, found in rows.items():
        if found:
            coefficients[name], errors[name] = _fit(STRATEGIES[name], found)
            counts[name] = len(found)
    return Calibration(
        adapter_key(ctx), coefficients, counts, errors, quick,
        seconds=time.perf_counter() - start - waited,
    )  # fmt: skip


def format_table(cal: Calibration) -> str:
    """The table as aligned text: per strategy its coefficients (ns) and the fit."""
    lines = [f"cost table {cal.name}" + ("  (quick)" if cal.quick else "")]
    lines.append(
        f"  driver {cal.key['driver'] or '-'}, blurapp {cal.key['blurapp']}, "
        f"shaders {cal.key['shaders']}, {cal.seconds:.1f} s"
    )
    for name, coefs in cal.coefficients.items():
        fit = f"{cal.runs.get(name, 0)} runs, rms error {cal.error.get(name, math.nan):.0%}"
        lines.append(f"  {name:<10} {fit}")
        for feature, value in sorted(coefs.items()):
            lines.append(f"    {feature:<16} {value:>12.4g} ns")
    return "\n".join(lines)


# -- the table auto uses ---------------------------------------------------------------------

_state_lock = threading.Lock()
_state: dict[str, Any] = {"key": None, "status": "built-in", "thread": None}


def _mode() -> str:
    mode = os.environ.get(ENV, "auto").strip().lower() or "auto"
    return mode if mode in ("auto", "cache", "off") else "auto"


def ensure_table(ctx: GpuContext, *, background: bool = True) -> planner.CostTable:
    """The table ``auto`` should use on ``ctx``'s adapter, installed with
    :func:`blurapp.core.planner.use_table`: the cached calibration, else the built-in table
    while (``BLURAPP_CALIBRATION=auto`` and ``background``) a quick calibration runs in the
    background."""
    mode = _mode()
    if mode == "off":
        with _state_lock:
            _state.update(key=None, status="built-in (calibration off)")
        planner.use_table(None)
        return planner.BUILTIN_TABLE
    key = adapter_key(ctx)
    with _state_lock:
        if _state["key"] == key:
            return planner.active_table()
        _state["key"] = key
    cal = load_table(key)
    if cal is not None:
        planner.use_table(cal.table())
        with _state_lock:
            _state["status"] = cal.name + (" (quick)" if cal.quick else "")
        return planner.active_table()
    planner.use_table(None)
    if mode == "auto" and background:
        _start_background(ctx, key)
    else:
        with _state_lock:
            _state["status"] = "built-in (this adapter is not calibrated: run blurapp tune)"
            if mode == "auto":
                _state["key"] = None  # the next use with background=True starts it
    return planner.BUILTIN_TABLE


_stop_background = threading.Event()


def _stop_at_exit() -> None:
    """Stop the background calibration between micro-runs before the interpreter goes (a
    thread still inside the GPU driver at shutdown could crash the exit of a command that
    succeeded); what it measured is dropped."""
    thread = _state["thread"]
    if thread is not None and thread.is_alive():
        _stop_background.set()
        resume()
        thread.join(10.0)


def _start_background(ctx: GpuContext, key: dict[str, str]) -> threading.Thread:
    def work() -> None:
        try:
            cal = calibrate(
                ctx, quick=True, budget_s=QUICK_BUDGET_S, yielding=True, stop=_stop_background
            )
            save_table(cal)
            planner.use_table(cal.table())
            with _state_lock:
                _state["status"] = cal.name + " (quick)"
        except Exception as err:  # the built-in table keeps serving
            with _state_lock:
                _state["status"] = f"built-in (calibration failed: {err})"

    with _state_lock:
        _state["status"] = "built-in (calibrating this adapter in the background)"
    thread = threading.Thread(target=work, name="blurapp-calibrate", daemon=True)
    _state["thread"] = thread
    _stop_background.clear()
    if not _state.get("atexit"):
        atexit.register(_stop_at_exit)
        _state["atexit"] = True
    thread.start()
    return thread


def background_thread() -> threading.Thread | None:
    """The background calibration's thread, if one was started (tests join it)."""
    return _state["thread"]


def status() -> str:
    """Which cost table ``auto`` uses, in words (``blurapp info``, ``kernel``, bench, the
    window): ``"calibrated for ADAPTER (BACKEND)"``, or ``"built-in (...)"`` and why."""
    with _state_lock:
        return str(_state["status"])


def reset() -> None:
    """Forget the installed table and what was loaded (tests; a new device)."""
    with _state_lock:
        _state.update(key=None, status="built-in", thread=None)
    planner.use_table(None)
