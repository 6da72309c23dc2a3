"""How much auto's pick costs against the fastest strategy, on kernels the planner was not fitted
on (issue 24 item 3): calibrate this adapter, then time every GPU strategy and auto's pick on
held-out kernels, all in one run, and report the regret (pick's time / fastest time).

    .venv/bin/python benchmarks/auto_regret.py [--size 512x512] [--repeat 3] [--json F]
    .venv/bin/python benchmarks/auto_regret.py --three-adapters --json DIR/regret.json

``--three-adapters`` runs itself three times in child processes, on lavapipe through Vulkan,
through OpenGL (``BLURAPP_ADAPTER=OpenGL``) and through Vulkan with ``LP_NUM_THREADS=1``, each
calibrating afresh (``LP_NUM_THREADS`` is not part of the cache's key: a table of two threads
would otherwise serve one). Timings are whole runs as a caller sees them (upload, passes,
read-back), the fastest of ``--repeat`` after one that compiles; the pick and the times come
from the same run. A strategy predicted over 25× the predicted fastest, or already 8× slower
than the fastest measured on its first run, is timed once (it cannot be the fastest).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: Kernels no strategy's calibration runs and no test fits the planner on (the calibration
#: lists are in each blurapp/gpu/strategies module; the planner's tests use others).
HELD_OUT = (
    "gaussian:sigma=15",  # the example: 121x121, rank 1, looped 1-D passes
    "gaussian:sigma=4",
    "gaussian:sigma=3x9",
    "box:11",
    "box:1x41",
    "sobel:y,size=5",
    "disk:radius=6",
    "disk:radius=18",
    "bokeh:radius=10,blades=5",
    "motion:length=25,angle=20",
    "log:sigma=2.5",
    "unsharp:sigma=6,amount=1",
    "dog:sigma=3,6",
    "emboss",
    "disk:radius=45",
)
ADAPTERS = {
    "lavapipe Vulkan": {},
    "lavapipe OpenGL": {"BLURAPP_ADAPTER": "OpenGL"},
    "lavapipe Vulkan LP_NUM_THREADS=1": {"LP_NUM_THREADS": "1"},
}


def _time(engine, x, kernel, strategy: str, repeat: int, give_up_ms: float) -> float:
    engine.run(x, kernel, "clamp", strategy)  # compiles
    best = float("inf")
    for i in range(repeat):
        start = time.perf_counter()
        engine.run(x, kernel, "clamp", strategy)
        best = min(best, (time.perf_counter() - start) * 1e3)
        if i == 0 and best > give_up_ms:
            break
    return best


def measure(size: tuple[int, int], repeat: int, kernels: tuple[str, ...]) -> dict:
    from blurapp.core import planner
    from blurapp.core.kernel import Kernel
    from blurapp.gpu import calibration
    from blurapp.gpu.device import get_device
    from blurapp.gpu.engine import GpuFilter
    from blurapp.gpu.strategies import STRATEGIES

    ctx = get_device()
    start = time.perf_counter()
    cal = calibration.calibrate(ctx)
    table = cal.table()
    print(calibration.format_table(cal), file=sys.stderr, flush=True)
    engine = GpuFilter(ctx)
    width, height = size
    x = np.random.default_rng(0).random((height, width, 4), dtype=np.float32)
    rows = []
    for spec in kernels:
        kernel = Kernel.parse(spec)
        plan = planner.choose(kernel, ctx.limits, size=size, table=table)
        predicted = dict(plan.predicted)
        low = min(predicted.values())
        times: dict[str, float] = {}
        for name in STRATEGIES:
            if name not in predicted or predicted[name] > 25 * low:
                continue
            fastest = min(times.values(), default=float("inf"))
            times[name] = _time(engine, x, kernel, name, repeat, 8 * fastest)
        if plan.strategy not in times:  # auto's pick is always timed
            times[plan.strategy] = _time(engine, x, kernel, plan.strategy, repeat, float("inf"))
        best = min(times, key=times.__getitem__)
        regret = times[plan.strategy] / times[best]
        rows.append({
            "kernel": spec, "auto": plan.strategy, "fastest": best, "regret": regret,
            "ms": times, "predicted_ms": predicted,
        })  # fmt: skip
        shown = ", ".join(f"{n} {ms:.1f}" for n, ms in sorted(times.items(), key=lambda t: t[1]))
        print(f"{spec:28s} auto {plan.strategy:9s} {regret:5.2f}x  ({shown} ms)",
              file=sys.stderr, flush=True)  # fmt: skip
    regrets = [r["regret"] for r in rows]
    return {
        "adapter": f"{ctx.info['name']} ({ctx.info['backend']})",
        "lp_num_threads": os.environ.get("LP_NUM_THREADS"),
        "size": list(size),
        "table": cal.to_json(),
        "kernels": rows,
        "worst": max(regrets),
        "median": statistics.median(regrets),
        "seconds": time.perf_counter() - start,
        "load_average": os.getloadavg(),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="512x512", help="image WxH (RGBA float32)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--kernels", help="comma-separated kernel specs (default: the held-out set)")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--three-adapters", action="store_true", help="Vulkan, OpenGL, 1 thread")
    args = p.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    kernels = tuple(args.kernels.split(",")) if args.kernels else HELD_OUT
    if args.three_adapters:
        results = {}
        for label, env in ADAPTERS.items():
            print(f"== {label}", file=sys.stderr, flush=True)
            cmd = [sys.executable, __file__, "--size", args.size, "--repeat", str(args.repeat)]
            if args.kernels:
                cmd += ["--kernels", args.kernels]
            done = subprocess.run(
                cmd, env={**os.environ, **env}, capture_output=False, stdout=subprocess.PIPE,
                text=True, check=False,
            )  # fmt: skip
            if done.returncode == 0:
                results[label] = json.loads(done.stdout)
                r = results[label]
                print(f"{label}: worst {r['worst']:.2f}x, median {r['median']:.2f}x",
                      file=sys.stderr)  # fmt: skip
            else:
                results[label] = {"error": f"exit {done.returncode}"}
        text = json.dumps(results, indent=1)
    else:
        result = measure((width, height), args.repeat, kernels)
        print(f"worst {result['worst']:.2f}x, median {result['median']:.2f}x", file=sys.stderr)
        text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
