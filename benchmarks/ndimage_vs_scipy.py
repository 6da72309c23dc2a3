"""blurapp.ndimage against scipy.ndimage, the same calls on the same arrays in one run (issue 23
item 7): 2-D float32 images from 1 MP to 4K (gaussian_filter σ 1-8, uniform_filter, sobel, a
9×9 correlate), and the same at 1001×1001 (sides not a multiple of 4, as arrays in Python often
have), a 256³ float32 gaussian_filter, the per-call cost on 64×64, the float64 path's cost
over float32, and a uint8 photo's Gaussians.

    .venv/bin/python benchmarks/ndimage_vs_scipy.py [--repeat 3] [--rounds 3] [--quick]
        [--json F] [--sizes 1080p,1000x1000,256] [--cases uniform,sobel] [--no-extras]
        [--ask-feature shader-int64]

Each timing is the median of ``--rounds`` × ``--repeat`` whole calls, blurapp's and scipy's
alternated (the 64×64 ones: median and minimum of 20), as a caller sees them (upload, passes,
read-back, the output array), after the calls that compile the GPU pipelines (the background
compile of a small array's unrolled pipeline included). The run goes over every case
``--rounds`` times, ``--repeat`` pairs of calls a case each time, so that a case's calls are
spread over the run rather than taken in one burst: on a shared VM the speed moves with the
host's load for seconds at a time, which a burst of calls takes whole (and which weighs more on
blurapp's two threads than on scipy's one). The table also gives the lowest ratio of any one
round. scipy runs single-threaded, as scipy.ndimage does. On lavapipe the GPU is the CPU:
compare ratios from one run, and note the load averages printed at the start and the end, and
the two-CPU probe beside them (:func:`_cpus_together`): how much longer a fixed piece of work
takes on two threads at once than on one, which is what a slow hour of a shared 2-vCPU VM
takes from blurapp (lavapipe's two threads) and not from scipy (one).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ASSETS = Path(__file__).resolve().parents[1] / "assets"
SIZES = {"1MP": (1024, 1024), "1001": (1001, 1001), "1080p": (1080, 1920), "4K": (2160, 3840)}


def _times(call: Callable[[], object], repeat: int) -> list[float]:
    call()  # compiles (GPU) / warms caches
    from blurapp.gpu import ndpass

    # A small array's first calls run looped shaders while its unrolled pipeline compiles on
    # a background thread: time the calls that come after it.
    ndpass.get_passes().wait_baked()
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _cpus_together(threads: int = 2, rounds: int = 7) -> dict[str, float]:
    """A fixed piece of work (numpy's exp over 64K float32 values, 200 times: in a core's own
    cache, without the GIL) on one thread, then on ``threads`` threads started together, the
    slowest of them; medians of ``rounds``, ms, and their ratio: 1.0 where the CPUs are free and
    as fast as each other, toward ``threads`` where only one is. A lavapipe dispatch splits its
    work evenly between its threads and ends with the slowest."""
    x = np.random.default_rng(1).random(1 << 16, dtype=np.float32)
    outs = [np.empty_like(x) for _ in range(threads)]

    def work(k: int) -> float:
        start = time.perf_counter()
        for _ in range(200):
            np.exp(x, out=outs[k])
        return (time.perf_counter() - start) * 1e3

    def together() -> float:
        barrier = threading.Barrier(threads)
        spans = [0.0] * threads

        def run(k: int) -> None:
            barrier.wait()
            spans[k] = work(k)

        pool = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return max(spans)

    work(0)  # warm
    one = statistics.median(work(0) for _ in range(rounds))
    many = statistics.median(together() for _ in range(rounds))
    return {"one_thread_ms": round(one, 3), "together_ms": round(many, 3),
            "ratio": round(many / one, 2)}  # fmt: skip


def _cpus_line(probe: dict[str, float]) -> str:
    return (
        f"two CPUs at once {probe['together_ms']:.2f} ms against one alone "
        f"{probe['one_thread_ms']:.2f} ({probe['ratio']:.2f}×)"
    )


def _time(call: Callable[[], object], repeat: int) -> float:
    return statistics.median(_times(call, repeat))


def _pairs(
    ours: Callable[[], object], theirs: Callable[[], object], repeat: int
) -> tuple[list[float], list[float]]:
    """``repeat`` calls of each, alternated: a shared machine's load then weighs on both alike
    (warm them first: :func:`_times` with 0)."""
    a, b = [], []
    for _ in range(repeat):
        for call, times in ((ours, a), (theirs, b)):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1e3)
    return a, b


def _cases_2d(weights9: np.ndarray) -> list[tuple[str, str, tuple, dict]]:
    cases = [(f"gaussian_filter σ={s}", "gaussian_filter", (s,), {}) for s in (1, 2, 4, 8)]
    cases += [
        ("uniform_filter 5", "uniform_filter", (5,), {}),
        ("sobel axis 0", "sobel", (), {"axis": 0}),
        ("correlate 9×9", "correlate", (weights9,), {}),
    ]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="pairs of calls a case a round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="passes over all the cases (default 3)"
    )
    parser.add_argument("--quick", action="store_true", help="1 MP and 128³ only")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument(
        "--sizes", help="comma-separated sizes to run (1MP, 1001, 1080p, 4K, any other 2-D "
        "shape as HxW, e.g. 1000x1000, and the cube's side: 128, 256); default: all (--quick: "
        "1MP and 128)",
    )  # fmt: skip
    parser.add_argument(
        "--cases", help="comma-separated substrings of the case labels to run (e.g. 'σ=1,uniform,"
        "sobel'); default: all",
    )  # fmt: skip
    parser.add_argument(
        "--no-extras", action="store_true",
        help="skip the 64×64 per-call, float64 and uint8 sections",
    )  # fmt: skip
    parser.add_argument(
        "--ask-feature", action="append", default=[], metavar="NAME",
        help="also ask the device for this wgpu feature where the adapter has it (an experiment: "
        "'shader-int64' turns on ndpass's 32-byte accesses on an adapter where blurapp.gpu.device "
        "does not ask for it: it does on software adapters)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.ask_feature:
        from blurapp.gpu import device as device_module

        device_module._WANTED_FEATURES = (*device_module._WANTED_FEATURES, *args.ask_feature)
    wanted_sizes = (
        None if args.sizes is None else {v.strip().lower() for v in args.sizes.split(",")}
    )
    wanted_cases = None if args.cases is None else [v.strip() for v in args.cases.split(",")]

    def chosen(label: str) -> bool:
        return wanted_cases is None or any(c in label for c in wanted_cases)

    import scipy.ndimage as sn

    import blurapp.ndimage as bn
    from blurapp.gpu.device import get_device

    rng = np.random.default_rng(0)
    weights9 = rng.random((9, 9))
    info = get_device().info
    load = os.getloadavg()
    features = sorted(get_device().features)
    cpus = _cpus_together()
    print(f"adapter: {info['name']} ({info['backend']}); load average {load[0]:.1f}; "
          f"{_cpus_line(cpus)}; device features {', '.join(features)}")  # fmt: skip
    rows: list[dict] = []
    # (label, shape name, array, function name, args, kwargs)
    cases: list[tuple[str, str, np.ndarray, str, tuple, dict]] = []
    sizes = {"1MP": SIZES["1MP"]} if args.quick else SIZES
    if wanted_sizes is not None:
        sizes = {k: v for k, v in SIZES.items() if k.lower() in wanted_sizes}
        for v in sorted(wanted_sizes):
            if re.fullmatch(r"[1-9][0-9]*x[1-9][0-9]*", v):
                sizes[v] = tuple(int(n) for n in v.split("x"))
    for shape_name, shape in sizes.items():
        x = rng.random(shape, dtype=np.float32)
        for label, name, a, kw in _cases_2d(weights9):
            if chosen(label):
                cases.append((label, shape_name, x, name, a, kw))
    sides = [128] if args.quick else [256]
    if wanted_sizes is not None:
        sides = [int(s) for s in ("128", "256") if s in wanted_sizes]
    for side in sides:
        cube = rng.random((side,) * 3, dtype=np.float32)
        for sigma in (1, 2, 4):
            if chosen(f"gaussian_filter σ={sigma}"):
                cases.append((f"gaussian_filter σ={sigma}", f"{side}³", cube, "gaussian_filter",
                              (sigma,), {}))  # fmt: skip

    def calls(case: tuple) -> tuple[Callable[[], object], Callable[[], object]]:
        _, _, x, name, a, kw = case
        return (lambda: getattr(bn, name)(x, *a, **kw)), (lambda: getattr(sn, name)(x, *a, **kw))

    for case in cases:  # compiles, warms
        for call in calls(case):
            _times(call, 0)
    samples = [([], [], []) for _ in cases]  # blurapp's, scipy's, each round's ratio
    for _ in range(max(1, args.rounds)):
        for case, (ours, theirs, ratios) in zip(cases, samples, strict=True):
            a, b = _pairs(*calls(case), args.repeat)
            ours += a
            theirs += b
            ratios.append(statistics.median(b) / statistics.median(a))
    from blurapp.gpu import ndpass

    stats = ndpass.get_passes().stats
    # A pipeline or an array's buffers dropped between rounds would be built again in a timed
    # call: say so.
    print(f"pipelines {stats['pipelines']} (evicted {stats['pipelines_evicted']}), array "
          f"buffers evicted {stats['arrays_evicted']}")  # fmt: skip
    for (label, shape_name, x, *_), (a, b, ratios) in zip(cases, samples, strict=True):
        ours, theirs = statistics.median(a), statistics.median(b)
        rows.append({
            "case": label, "shape": shape_name, "dtype": x.dtype.name,
            "blurapp_ms": round(ours, 2), "scipy_ms": round(theirs, 2),
            "speedup": round(theirs / ours, 2), "lowest_round": round(min(ratios), 2),
            "blurapp_samples_ms": [round(v, 3) for v in a],
            "scipy_samples_ms": [round(v, 3) for v in b],
        })  # fmt: skip
        print(f"{shape_name:>8} {x.dtype.name:>7} {label:<22} blurapp {ours:9.1f} ms   "
              f"scipy {theirs:9.1f} ms   {theirs / ours:6.2f}×  (lowest round "
              f"{min(ratios):.2f}×)", flush=True)  # fmt: skip

    # per-call cost: a 64×64 array, where the arithmetic is negligible; 20 calls, whose
    # median and minimum are reported (one call is a millisecond: a loaded machine's
    # scheduling shows in single calls, not in the median of 20)
    small = rng.random((64, 64), dtype=np.float32)
    overhead: dict = {}
    f64: dict = {}
    extras = not args.no_extras
    for label, name, a, kw in (_cases_2d(weights9)[:1] + _cases_2d(weights9)[4:]) * extras:
        times = _times(functools.partial(getattr(bn, name), small, *a, **kw), 20)
        ms, best = statistics.median(times), min(times)
        overhead[label] = {"median_ms": round(ms, 3), "min_ms": round(best, 3)}
        print(f"   64×64 float32 {label:<22} blurapp {ms:6.2f} ms a call (median of 20; "
              f"min {best:.2f})", flush=True)  # fmt: skip

    # the float64 (double-float) path against float32 on the same 1 MP image
    x32 = rng.random(SIZES["1MP"], dtype=np.float32)
    x64 = x32.astype(np.float64)
    for label, name, a, kw in _cases_2d(weights9) * extras:
        t32 = _time(functools.partial(getattr(bn, name), x32, *a, **kw), args.repeat)
        t64 = _time(functools.partial(getattr(bn, name), x64, *a, **kw), args.repeat)
        s64 = _time(functools.partial(getattr(sn, name), x64, *a, **kw), args.repeat)
        f64[label] = {"float32_ms": round(t32, 2), "float64_ms": round(t64, 2),
                      "cost": round(t64 / t32, 2), "scipy_float64_ms": round(s64, 2)}  # fmt: skip
        print(f"     1MP float64 {label:<22} blurapp {t64:9.1f} ms = {t64 / t32:5.2f}× float32; "
              f"scipy {s64:8.1f} ms", flush=True)  # fmt: skip

    # integer images: the bundled photo (its flat regions too) as uint8 at 1 MP, a Gaussian
    # cast to uint8 after each pass as scipy's is (docs/NDIMAGE.md: float32 passes, with the
    # sums near an integer summed again on the host as scipy sums them)
    from PIL import Image

    photo = np.asarray(Image.open(ASSETS / "samples" / "camera.png").convert("L"))
    u8 = np.ascontiguousarray(np.tile(photo, (2, 2))[:1024, :1024])
    ints: dict = {}
    for sigma in (1, 2, 4) if extras else ():
        ours, theirs = (functools.partial(m.gaussian_filter, u8, sigma) for m in (bn, sn))
        _times(ours, 0)
        a, b = _pairs(ours, theirs, max(3, args.repeat * args.rounds))
        mine, scipys = statistics.median(a), statistics.median(b)
        ints[f"gaussian_filter σ={sigma}"] = {"blurapp_ms": round(mine, 2),
                                              "scipy_ms": round(scipys, 2),
                                              "speedup": round(scipys / mine, 2)}  # fmt: skip
        print(f"  1MP uint8 photo gaussian_filter σ={sigma:<10} blurapp {mine:9.1f} ms   scipy "
              f"{scipys:9.1f} ms   {scipys / mine:6.2f}×", flush=True)  # fmt: skip

    load_end = os.getloadavg()
    cpus_end = _cpus_together()
    print(f"load average at the end {load_end[0]:.1f}; {_cpus_line(cpus_end)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"adapter": info["name"], "device_features": features,
                       "repeat": args.repeat, "rounds": args.rounds,
                       "load_average": load[0], "load_average_end": load_end[0],
                       "cpus_together": cpus, "cpus_together_end": cpus_end, "rows": rows,
                       "overhead_64x64_ms": overhead, "float64": f64, "uint8_photo": ints}, f,
                      indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
