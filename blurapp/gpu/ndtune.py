"""Choices between :mod:`blurapp.gpu.ndpass`'s variants that give the same values bit for bit
but whose speed depends on the adapter and, for a software adapter, on the CPU under it:
measured once on the machine at hand and kept in the user's cache directory.

The one question asked so far: whether a fused pair (nd_plane.wgsl) reads its input from a
texture, which ``NdPasses.run`` fills with a copy of the input buffer just before it
(:data:`~blurapp.gpu.ndpass.TEXTURE_INPUT`), or from the storage buffer itself. On lavapipe
(Mesa 22.3, LLVM 15) a storage load is a loop over the SIMD lanes through the stack; on a Zen 3
CPU that loop stalls on every lane (its stores cannot be forwarded to the vector load that
follows) and the texture won by a third; on a Zen 4 CPU the same loads run without the stalls
and the copy into the texture costs more than it saves: 1080p ``uniform_filter`` 5.7 → 5.2 ms,
``sobel`` 5.0 → 4.0 (minima), 4K ``uniform_filter`` 21.9 → 16.6, 256³ ``gaussian_filter`` σ=2
113.8 → 96.2. Same driver, same adapter name: only a measurement tells them apart.

:func:`plane_textures` answers it for an :class:`~blurapp.gpu.ndpass.NdPasses`: from the
cache when a file there holds the answer for this adapter and CPU (its key: the calibration's
adapter key, :func:`blurapp.gpu.calibration.adapter_key`, plus :func:`cpu_identity` and this
module's :data:`FORMAT`), else by timing a 1080×1920 float32 ``uniform_filter`` 5 (a fused
pair) both ways, alternated, and keeping the faster (about 0.5 s once per machine, most of it
the four pipelines' compiles). ``BLURAPP_CALIBRATION`` switches it as it switches the planner's
calibration: ``auto`` measures where nothing is cached, ``cache`` only reads the cache, ``off``
(the test suite) keeps the built-in choice (textures); ``ndpass.TEXTURE_PLANES`` = True or
False forces either.

The question is asked only where it has two answers (:func:`applies`): a software adapter,
whose passes read textures at all, with the 32-byte accesses (``ndpass.WIDE_FEATURE``) that a
fused pair's texture reads are made of. Elsewhere (a hardware adapter; wgpu's OpenGL backend,
which has no 64-bit integers) fused pairs read the storage buffer, nothing is timed or cached,
and ``blurapp info`` says so.
"""

from __future__ import annotations

import json
import platform
import re
import statistics
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from blurapp.gpu.device import GpuContext
    from blurapp.gpu.ndpass import NdPasses

__all__ = [
    "FORMAT", "cache_path", "cpu_identity", "describe", "measure_plane_textures", "plane_textures",
    "tune",
]  # fmt: skip

FORMAT = 1
PROBE_SHAPE = (1080, 1920)
ROUNDS = 7
#: Storage loads are kept only where they beat the texture by this fraction of its time (the
#: built-in choice stands where the two are within the noise).
MARGIN = 0.05

_lock = threading.Lock()


def cpu_identity() -> str:
    """The CPU a software adapter runs on: vendor, family, model, stepping and model name from
    /proc/cpuinfo (``platform.processor()`` elsewhere). Two CPUs that share a model name (a
    cloud's "AMD EPYC") differ in family or model."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block
                name, _, value = line.partition(":")
                fields[name.strip()] = value.strip()
    except OSError:
        pass
    parts = [fields.get(k, "") for k in ("vendor_id", "cpu family", "model", "stepping")]
    name = fields.get("model name") or platform.processor() or platform.machine()
    return " ".join(p for p in [*parts, name] if p)


def _key(ctx: GpuContext) -> dict[str, str]:
    from blurapp.gpu import calibration

    return {**calibration.adapter_key(ctx), "cpu": cpu_identity(), "ndtune": str(FORMAT)}


def cache_path(key: dict[str, str]) -> Path:
    """The file of the adapter and CPU ``key`` names."""
    from blurapp.gpu import calibration

    base = calibration.cache_path(key).stem
    cpu = re.sub(r"[^A-Za-z0-9]+", "-", key.get("cpu", "")).strip("-").lower()
    return calibration.cache_dir().parent / "ndtune" / f"{base}-{cpu[:60] or 'cpu'}.json"


def _load(key: dict[str, str]) -> dict[str, Any] | None:
    """The cached answers for ``key``; None where there are none, or the file is unreadable,
    not ours, or made for another adapter, CPU or version (measured afresh, then replaced)."""
    try:
        data = json.loads(cache_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    answers = data.get("answers")
    return answers if isinstance(answers, dict) else None


def _save(key: dict[str, str], answers: dict[str, Any]) -> None:
    from blurapp.io.atomic import write_text

    path = cache_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"key": key, "answers": answers, "created": time.time()}, indent=1)
        write_text(path, text, overwrite=True)
    except OSError:
        pass  # a read-only cache: measured again by the next process


def _mode() -> str:
    from blurapp.gpu import calibration

    return calibration._mode()


def applies(engine: NdPasses) -> bool:
    """Whether ``engine``'s fused pairs can read a texture at all: its passes read textures (a
    software adapter) and its pairs are the 32-byte ones, the only ones with a texture variant
    (``ndpass.WIDE_IO`` and the device's ``ndpass.WIDE_FEATURE``)."""
    from blurapp.gpu import ndpass

    # The feature first: on an adapter without it (OpenGL) this is asked on each fused call.
    features = engine.context.device.features
    return ndpass.WIDE_IO and ndpass.WIDE_FEATURE in features and engine.textures(1)


def measure_plane_textures(engine: NdPasses, rounds: int = ROUNDS) -> dict[str, Any]:
    """Time a fused pair on :data:`PROBE_SHAPE` reading its input from a texture and from the
    storage buffer, alternated, ``rounds`` whole runs each after two that compile; the
    answer (``"textures"``: whether the texture is kept) and the minima and medians, ms."""
    from blurapp.core.borders import Border
    from blurapp.gpu import ndpass

    features = engine.context.device.features
    wide = ndpass.WIDE_IO and ndpass.WIDE_FEATURE in features
    shuffle = ndpass.SHUFFLE and ndpass.SHUFFLE_FEATURE in features
    box = np.full(5, 0.2)
    lines = [ndpass.Line(axis, box, Border.parse("reflect")) for axis in (0, 1)]
    x = np.random.default_rng(0).random(PROBE_SHAPE, dtype=np.float32)
    variants = {}
    for textures in (True, False):
        dispatches, _ = ndpass._chain_dispatches(
            PROBE_SHAPE, lines, "f32", "fma", 0, (0, 0), wide, shuffle, True, textures
        )
        variants[textures] = dispatches
    times: dict[bool, list[float]] = {True: [], False: []}
    for dispatches in variants.values():  # compiles
        for _ in range(2):
            engine.run(x, dispatches, lend=True)
    for _ in range(rounds):
        for textures, dispatches in variants.items():
            start = time.perf_counter()
            engine.run(x, dispatches, lend=True)
            times[textures].append((time.perf_counter() - start) * 1e3)
    best = {k: min(v) for k, v in times.items()}
    keep = not best[False] < best[True] * (1 - MARGIN)
    return {
        "textures": keep,
        "shape": list(PROBE_SHAPE),
        "ms": {
            name: {"min": round(best[k], 3), "median": round(statistics.median(times[k]), 3)}
            for k, name in ((True, "texture"), (False, "storage"))
        },
    }


def plane_textures(engine: NdPasses) -> bool:
    """Whether ``engine``'s fused pairs read their input from a texture (module docstring)."""
    from blurapp.gpu import ndpass

    forced = ndpass.TEXTURE_PLANES
    if isinstance(forced, bool):
        return forced
    mode = _mode()
    if mode == "off":
        return True
    memo = engine._tuned
    if "plane_textures" in memo:
        return bool(memo["plane_textures"])
    if not applies(engine):
        return False  # no pair here has a texture variant: nothing to time
    with _lock:
        if "plane_textures" in memo:
            return bool(memo["plane_textures"])
        key = _key(engine.context)
        answers = _load(key) or {}
        found = answers.get("plane_textures")
        if not isinstance(found, dict) or not isinstance(found.get("textures"), bool):
            if mode != "auto":
                return True
            found = measure_plane_textures(engine)
            answers["plane_textures"] = found
            _save(key, answers)
        memo["plane_textures"] = found["textures"]
        return bool(found["textures"])


def tune(ctx: GpuContext, *, save: bool = True) -> dict[str, Any] | None:
    """Measure afresh on ``ctx``'s adapter (``blurapp tune``), keep the answer in the cache
    unless ``save`` is false, and return it; None where there is nothing to ask
    (:func:`applies`)."""
    from blurapp.gpu import ndpass

    engine = ndpass.get_passes() if ndpass.get_passes().context is ctx else ndpass.NdPasses(ctx)
    if not applies(engine):
        return None
    found = measure_plane_textures(engine)
    if save:
        with _lock:
            key = _key(ctx)
            answers = _load(key) or {}
            answers["plane_textures"] = found
            _save(key, answers)
            engine._tuned["plane_textures"] = found["textures"]
    return found


def describe(ctx: GpuContext) -> str:
    """One line for ``blurapp info``: what blurapp.ndimage's fused pairs read on ``ctx``'s
    adapter, and why."""
    from blurapp.gpu import ndpass

    engine = ndpass.NdPasses(ctx)
    if not engine.textures(1):
        return "fused pairs read the storage buffer (a hardware adapter)"
    if not applies(engine):
        return (
            f"fused pairs read the storage buffer (the device has no {ndpass.WIDE_FEATURE}, "
            "which their texture reads need)"
        )
    if isinstance(ndpass.TEXTURE_PLANES, bool):
        return f"fused pairs read {'a texture' if ndpass.TEXTURE_PLANES else 'the storage buffer'}"
    found = (_load(_key(ctx)) or {}).get("plane_textures")
    if isinstance(found, dict) and "ms" in found:
        return sentence(found)
    return "fused pairs read a texture (built-in: not measured on this machine yet)"


def sentence(found: dict[str, Any]) -> str:
    """:func:`measure_plane_textures`'s answer in words."""
    ms = found["ms"]
    what = "a texture" if found.get("textures") else "the storage buffer"
    return (
        f"fused pairs read {what} (measured: texture {ms['texture']['min']} ms, storage "
        f"{ms['storage']['min']} ms on {'×'.join(map(str, found.get('shape', [])))})"
    )
