"""blurapp.gpu.ndpass against scipy.ndimage.gaussian_filter: one 1-D pass per axis, chained on
the GPU, in f32 (float32 data) and double-float (float64 data), timed in one run.

    python benchmarks/ndpass_chain.py [--size 256] [--sigma 2] [--repeat 3] [--skip-df64]

Prints wall and process CPU times (the minimum of ``--repeat`` runs after a warm-up that
compiles the pipelines) and the ratios. lavapipe runs in this process on the CPU's cores, so
the CPU time is the work both sides do; the wall time is what a user waits. Under other load
the two diverge: quote ratios measured in one run.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import scipy.ndimage as ndi

from blurapp.core.borders import Border, BorderMode
from blurapp.gpu import ndpass


def gaussian_weights(sigma: float, truncate: float = 4.0) -> np.ndarray:
    """scipy's gaussian_filter1d weights (order 0), as correlation weights."""
    radius = int(truncate * sigma + 0.5)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * (x / sigma) ** 2)
    return w / w.sum()


def best(fn, repeat: int) -> tuple[float, float, np.ndarray]:
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls) * 1e3, min(cpus) * 1e3, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="side of the cube (default 256)")
    parser.add_argument("--ndim", type=int, default=3)
    parser.add_argument("--sigma", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-df64", action="store_true")
    args = parser.parse_args()
    shape = (args.size,) * args.ndim
    x32 = np.random.default_rng(0).random(shape, dtype=np.float32)
    w = gaussian_weights(args.sigma)
    lines = [ndpass.Line(a, w, Border(BorderMode.REFLECT)) for a in range(args.ndim)]
    print(f"load average {os.getloadavg()[0]:.1f}; {shape} sigma {args.sigma} ({w.size} taps)")
    print(ndpass.df64_status()[1])
    rows = [("float32", x32, "f32")]
    if not args.skip_df64:
        rows.append(("float64", x32.astype(np.float64), "df64"))
    for name, x, precision in rows:
        ndpass.correlate1d_chain(x, lines, precision=precision)  # compile, allocate
        s_wall, s_cpu, want = best(lambda x=x: ndi.gaussian_filter(x, args.sigma), args.repeat)
        g_wall, g_cpu, got = best(
            lambda x=x, p=precision: ndpass.correlate1d_chain(x, lines, precision=p), args.repeat
        )
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        print(
            f"{name}: scipy {s_wall:.0f} ms wall / {s_cpu:.0f} ms CPU; ndpass {precision} "
            f"{g_wall:.0f} ms wall / {g_cpu:.0f} ms CPU: {s_wall / g_wall:.2f}x scipy's wall, "
            f"{s_cpu / g_cpu:.2f}x its CPU; max |difference| {err:.2g}"
        )


if __name__ == "__main__":
    main()
