"""Time the same kernel on the same image through blurapp's GPU strategies and CPU peers.

Peers (each where installed; ``pip install -e '.[bench]'``): OpenCV ``sepFilter2D`` and
``filter2D``, ``scipy.ndimage.correlate1d`` along both axes (what ``gaussian_filter`` runs) and
Pillow's ``GaussianBlur``. Every figure comes from one run of this script on one machine and is
reported as a ratio to OpenCV's ``sepFilter2D``; the outputs are compared with ours so that the
table cannot time different filters by accident.

The large-kernel case (``--kernel`` with a non-separable kernel, e.g. ``disk:radius=30``)
compares with OpenCV ``filter2D`` (which switches to a DFT for large kernels) and
``scipy.signal.oaconvolve`` (overlap-add FFT), and reports ratios to ``filter2D``.

Usage::

    .venv/bin/python benchmarks/peers.py --size 3840x2160 --radius 8 --repeat 3 [--json F]
    .venv/bin/python benchmarks/peers.py --size 1024x1024 --channels 3 \
        --kernel disk:radius=30 --strategies fft
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from blurapp.bench import bench_kernel, make_image, parse_size


@dataclass(frozen=True)
class PeerRecord:
    """One implementation on the benchmark image."""

    name: str
    median_ms: float
    min_ms: float
    timer: str  # "gpu" (timestamps), "wall"
    wall_ms: float  # the whole call as the caller sees it (upload and readback included)
    max_abs_diff: float | None  # against our first strategy's output
    note: str = ""


def _time(fn: Callable[[], object], repeat: int, warmup: int) -> tuple[list[float], object]:
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times, out


def _ours(
    x: np.ndarray, spec: str, strategy: str, repeat: int, warmup: int, storage: str
) -> tuple[PeerRecord, np.ndarray]:
    from blurapp.engine import as_kernel, filter_float

    kernel = as_kernel(spec)
    runs = []
    out = None
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        out, timing, _, _ = filter_float(x, kernel, "clamp", strategy, storage=storage)
        wall = (time.perf_counter() - t0) * 1e3
        if i >= warmup:
            runs.append((timing.total_ms, wall, timing.timer))
    totals = [r[0] for r in runs]
    name = f"blurapp {strategy}" + ("" if storage == "rgba32f" else f" ({storage} in)")
    rec = PeerRecord(
        name=name,
        median_ms=statistics.median(totals),
        min_ms=min(totals),
        timer=runs[0][2],
        wall_ms=statistics.median(r[1] for r in runs),
        max_abs_diff=None,
    )
    return rec, np.asarray(out)


def _peers(x: np.ndarray, spec: str) -> dict[str, tuple[Callable[[], np.ndarray], str]]:
    """name -> (a call that filters x like clamp-border correlation with spec, note)."""
    from blurapp.engine import as_kernel

    kernel = as_kernel(spec)
    separable = kernel.separability.rank == 1
    col = np.asarray(kernel.separability.column, np.float32) if separable else None
    row = np.asarray(kernel.separability.row, np.float32) if separable else None
    w2 = np.asarray(kernel.weights, np.float32)
    calls: dict[str, tuple[Callable[[], np.ndarray], str]] = {}
    try:
        import cv2

        threads = cv2.getNumThreads()
        if separable:
            calls["OpenCV sepFilter2D"] = (
                lambda: cv2.sepFilter2D(x, -1, row, col, borderType=cv2.BORDER_REPLICATE),
                f"cv2 {cv2.__version__}, {threads} threads",
            )
        calls["OpenCV filter2D"] = (
            lambda: cv2.filter2D(x, -1, w2, borderType=cv2.BORDER_REPLICATE),
            f"cv2 {cv2.__version__}, {threads} threads (2-D kernel)",
        )
    except ImportError:
        pass
    if not separable:
        try:
            import scipy
            from scipy import signal

            kh, kw = w2.shape
            pad = ((kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2), (0, 0))
            flipped = w2[::-1, ::-1, None]  # correlation is convolution with the flipped kernel

            def oaconvolve() -> np.ndarray:
                padded = np.pad(x, pad, mode="edge")  # the clamp border
                return signal.oaconvolve(padded, flipped, mode="valid", axes=(0, 1))

            calls["scipy.signal oaconvolve"] = (
                oaconvolve,
                f"scipy {scipy.__version__}, 1 thread, overlap-add FFT",
            )
        except ImportError:
            pass
        return calls
    try:
        import scipy
        from scipy import ndimage

        def scipy_sep() -> np.ndarray:
            y = ndimage.correlate1d(x, col, axis=0, mode="nearest")
            return ndimage.correlate1d(y, row, axis=1, mode="nearest")

        calls["scipy.ndimage correlate1d ×2"] = (scipy_sep, f"scipy {scipy.__version__}, 1 thread")
    except ImportError:
        pass
    try:
        import PIL
        from PIL import Image, ImageFilter

        if x.shape[2] == 4:
            u8 = Image.fromarray(np.rint(np.clip(x, 0, 1) * 255).astype(np.uint8), "RGBA")
            sigma = float(spec.split("sigma=")[1].split(",")[0])

            def pillow() -> np.ndarray:
                out = u8.filter(ImageFilter.GaussianBlur(radius=sigma))
                return np.asarray(out, np.float32) / 255.0

            calls["Pillow GaussianBlur"] = (
                pillow,
                f"Pillow {PIL.__version__}, uint8 RGBA only, box-blur approximation",
            )
    except ImportError:
        pass
    return calls


BASES = ("OpenCV sepFilter2D", "OpenCV filter2D")  # the ratios' base: the first one timed


def format_table(records: list[PeerRecord], base_name: str = BASES[0]) -> str:
    """Markdown table: each implementation's median and its time relative to OpenCV's."""
    base = next((r.median_ms for r in records if r.name == base_name), None)
    lines = [
        f"| implementation | median ms | min ms | timer | × {base_name} time "
        "| max abs diff vs ours | note |",
        "|---|---:|---:|---|---:|---:|---|",
    ]
    for r in records:
        ratio = f"{r.median_ms / base:.2f}" if base else "–"
        diff = "–" if r.max_abs_diff is None else f"{r.max_abs_diff:.1e}"
        timer = r.timer if r.timer == "wall" else f"gpu (wall {r.wall_ms:.0f} ms)"
        lines.append(
            f"| {r.name} | {r.median_ms:.1f} | {r.min_ms:.1f} | {timer} | {ratio} | {diff} | "
            f"{r.note} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="3840x2160", help="image WxH (default 4K UHD)")
    p.add_argument("--radius", type=int, default=8, help="Gaussian radius (sigma = R/3)")
    p.add_argument(
        "--kernel", help="a kernel spec instead of the Gaussian of --radius (e.g. disk:radius=30)"
    )
    p.add_argument("--channels", type=int, default=4, help="image channels (default 4)")
    p.add_argument("--strategies", default="separable,transpose", help="our GPU strategies to time")
    p.add_argument(
        "--storage", default="rgba32f", help="also time our first strategy with this input format"
    )
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--json", type=Path, help="write the records and the machine as JSON")
    args = p.parse_args(argv)

    from blurapp.gpu.device import get_device

    width, height = parse_size(args.size)
    spec = args.kernel or bench_kernel(args.radius)
    x = make_image(width, height, args.channels, "rgba32f")
    ctx = get_device()
    machine = {
        "adapter": ctx.info["summary"],
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    print(
        f"{width}×{height}×{args.channels} float32, {spec}, clamp border; "
        f"adapter {machine['adapter']}"
    )
    records: list[PeerRecord] = []
    ours_out = None
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    for i, strategy in enumerate(strategies):
        print(f"  blurapp {strategy} …", file=sys.stderr, flush=True)
        rec, out = _ours(x, spec, strategy, args.repeat, args.warmup, "rgba32f")
        if ours_out is None:
            ours_out = out
        else:
            rec = PeerRecord(**{**asdict(rec), "max_abs_diff": float(np.abs(out - ours_out).max())})
        records.append(rec)
        if i == 0 and args.storage != "rgba32f":
            rec, out = _ours(x, spec, strategy, args.repeat, args.warmup, args.storage)
            diff = float(np.abs(out - ours_out).max())
            records.append(PeerRecord(**{**asdict(rec), "max_abs_diff": diff}))
    for name, (call, note) in _peers(x, spec).items():
        print(f"  {name} …", file=sys.stderr, flush=True)
        times, out = _time(call, args.repeat, args.warmup)
        diff = float(np.abs(np.asarray(out, np.float32) - ours_out).max())
        med = statistics.median(times)
        records.append(PeerRecord(name, med, min(times), "wall", med, diff, note))
    names = {r.name for r in records}
    print(format_table(records, next((b for b in BASES if b in names), BASES[0])))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "size": [width, height],
                    "kernel": spec,
                    "machine": machine,
                    "records": [asdict(r) for r in records],
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
