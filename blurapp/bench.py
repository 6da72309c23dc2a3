"""``blurapp bench``: time strategies × sizes × radii on this adapter, as tables, JSON, CSV, plots.

Each case runs warm-up iterations first (pipelines compiled, textures allocated), then
``--repeat`` timed ones; the figure is the median of the GPU timestamps when the adapter has
them (else of the wall clock around submit-and-wait, and the record says so).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from blurapp.core import strategies as registry
from blurapp.core.errors import UsageError
from blurapp.core.filterspec import add_tolerance_argument
from blurapp.io import atomic_output, check_output, write_text

# The GPU strategies by default; ``cpu`` on request (it is orders of magnitude slower).
DEFAULT_STRATEGIES = registry.gpu_names()
FORMATS = ("rgba8", "rgba16f", "rgba32f")


@dataclass(frozen=True)
class BenchRecord:
    """One strategy on one image size and radius."""

    strategy: str
    radius: int
    width: int
    height: int
    channels: int
    format: str
    kernel: str
    median_ms: float
    min_ms: float
    mpix_per_s: float
    bytes_modelled: int
    gbps_effective: float
    timer: str
    adapter: str
    backend: str
    repeat: int
    passes: dict[str, float]
    pct_of_copy: float | None = None  # gbps_effective as a share of the copy ceiling (--ceiling)
    # The first run of the case (before the warm-up runs): its compile time and whole wall
    # time, apart from the timed warm runs above, which never include a compile.
    first_compile_ms: float = 0.0
    first_wall_ms: float = 0.0
    timed_runs_compiled: int = 0  # timed runs that still compiled something (should be 0)


#: Host bytes per pixel while a benchmark image is made and run (coordinate grids, float
#: temporaries, the RGBA image and its result), and the most a --size may ask for.
BENCH_BYTES_PER_PIXEL = 96
MAX_BENCH_BYTES = 8 * 2**30


def parse_size(text: str) -> tuple[int, int]:
    """``"1920x1080"`` → ``(1920, 1080)`` (width, height)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"bad size {text!r}: expected WxH, e.g. 1024x1024") from None
    if w < 1 or h < 1:
        raise UsageError(f"bad size {text!r}: width and height must be at least 1")
    need = w * h * BENCH_BYTES_PER_PIXEL
    if need > MAX_BENCH_BYTES:  # refused before allocating: 100000x100000 asked for 149 GiB
        raise UsageError(
            f"--size {text} needs about {need / 2**30:,.0f} GiB of memory for its test image, "
            f"over the limit of {MAX_BENCH_BYTES / 2**30:g} GiB; choose a smaller size"
        )
    return w, h


def parse_int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"bad {what} {text!r}: expected comma-separated integers") from None
    if not values or min(values) < 0:
        raise UsageError(f"bad {what} {text!r}: expected non-negative integers")
    return values


#: ``--family``: the benchmark kernel of each radius. ``disk`` is not separable (rank ~R/1.4),
#: the case for direct, tiled and lowrank; separable and transpose cannot run it.
FAMILIES = ("gaussian", "disk")


def bench_kernel(radius: int, family: str = "gaussian") -> str:
    """The benchmark's kernel for a radius: a Gaussian of exactly that radius (rank 1), or
    with ``family="disk"`` a disk that fills the (2R+1)² grid (radius R + 0.5)."""
    if family == "disk":
        return f"disk:radius={radius + 0.5:g}"
    sigma = max(radius / 3.0, 0.5)
    return f"gaussian:sigma={sigma:g},radius={radius}"


def make_image(width: int, height: int, channels: int, fmt: str, seed: int = 0) -> np.ndarray:
    """A photo-like test image: smooth gradients plus noise, in the benchmark's storage format."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    base = 0.5 + 0.25 * np.sin(xx / 37.0) * np.cos(yy / 23.0)
    img = base[..., None] + 0.1 * rng.standard_normal((height, width, channels), np.float32)
    img = np.clip(img, 0.0, 1.0)
    if fmt == "rgba8":
        return np.rint(img * 255).astype(np.uint8)
    if fmt == "rgba16f":
        return img.astype(np.float16)
    return img.astype(np.float32)


def run_case(
    image: np.ndarray,
    strategy: str,
    radius: int,
    *,
    border: str,
    repeat: int,
    warmup: int,
    fmt: str,
    kernel_spec: str | None = None,
    label: str | None = None,
    max_tile_side: int | None = None,
    family: str = "gaussian",
    tolerance: float | None = None,
) -> BenchRecord:
    """Time one strategy on one image with the benchmark kernel of ``radius``.

    ``kernel_spec`` replaces the benchmark kernel and ``label`` the strategy's name in the
    record (the copy ceiling is ``direct`` with ``matrix:1x1:1``, labelled ``copy``).
    ``max_tile_side`` runs the image in tiles (the pixel pipeline's tile loop, float input),
    timing the sum of the tiles' passes. ``family`` picks the benchmark kernel
    (:func:`bench_kernel`), ``tolerance`` is lowrank's.
    """
    from blurapp.engine import as_kernel, filter_float
    from blurapp.gpu.device import get_device

    ctx = get_device()
    kernel = as_kernel(kernel_spec or bench_kernel(radius, family))
    # Normalised floats that the GPU stores back exactly in the ``fmt`` texture (rgba8unorm,
    # rgba16float or rgba32float): the format changes what the shaders read, not the pixels.
    x = image.astype(np.float32) / (255.0 if image.dtype == np.uint8 else 1.0)
    runs = []
    first: Any = None
    for i in range(warmup + repeat):
        if max_tile_side is None:
            _, timing, _, _ = filter_float(
                x, kernel, border, strategy, storage=fmt, tolerance=tolerance
            )
        else:
            from blurapp.core.filterspec import FilterSpec
            from blurapp.pipeline import filter_pixels

            spec = FilterSpec.create(
                kernel, border, strategy, alpha="straight", tolerance=tolerance
            )
            timing = filter_pixels(x, spec, max_tile_side=max_tile_side).timing
        if i == 0:
            first = timing
        if i >= warmup:
            runs.append(timing)
    totals = [t.total_ms for t in runs]
    med = statistics.median(totals)
    h, w = image.shape[:2]
    passes = {
        p.name: statistics.median(t.passes[i].ms for t in runs)
        for i, p in enumerate(runs[0].passes)
    }
    moved = runs[0].bytes_modelled
    return BenchRecord(
        strategy=label or strategy,
        radius=radius,
        width=w,
        height=h,
        channels=image.shape[2],
        format=fmt,
        kernel=kernel.spec,
        median_ms=med,
        min_ms=min(totals),
        mpix_per_s=w * h / (med * 1e3) if med > 0 else float("inf"),
        bytes_modelled=moved,
        gbps_effective=moved / (med * 1e6) if med > 0 else float("inf"),
        timer=runs[0].timer,
        adapter=str(ctx.info.get("device") or ctx.info.get("name") or "?"),
        backend=str(ctx.info.get("backend_type") or ctx.info.get("backend") or "?"),
        repeat=repeat,
        first_compile_ms=first.compile_ms,
        first_wall_ms=first.wall_ms,
        timed_runs_compiled=sum(1 for t in runs if t.first_run),
        passes=passes,
    )


COPY = "copy"
COPY_KERNEL = "matrix:1x1:1"  # one texel read and one written per pixel: the bandwidth ceiling


def with_copy_share(records: list[BenchRecord]) -> list[BenchRecord]:
    """Each record's effective GB/s as a percentage of the copy run on the same image."""
    ceiling = {
        (r.width, r.height, r.format): r.gbps_effective for r in records if r.strategy == COPY
    }
    out = []
    for r in records:
        top = ceiling.get((r.width, r.height, r.format))
        share = 100.0 * r.gbps_effective / top if top and r.strategy != COPY else None
        out.append(replace(r, pct_of_copy=share))
    return out


def format_table(records: list[BenchRecord]) -> str:
    """An aligned text table, with each strategy's speed-up over direct for the same case."""
    direct = {(r.width, r.height, r.radius): r.median_ms for r in records if r.strategy == "direct"}
    head = (
        f"{'strategy':<10} {'size':>11} {'R':>3} {'median ms':>10} {'min ms':>9} "
        f"{'Mpix/s':>9} {'GB/s':>7} {'vs direct':>9} {'% copy':>7} timer"
    )
    lines = [head, "-" * len(head)]
    for r in records:
        base = direct.get((r.width, r.height, r.radius))
        ratio = f"{base / r.median_ms:8.2f}×" if base and r.median_ms > 0 else f"{'':>9}"
        share = f"{r.pct_of_copy:6.1f}%" if r.pct_of_copy is not None else f"{'':>7}"
        lines.append(
            f"{r.strategy:<10} {r.width:>5}x{r.height:<5} {r.radius:>3} {r.median_ms:>10.3f} "
            f"{r.min_ms:>9.3f} {r.mpix_per_s:>9.1f} {r.gbps_effective:>7.2f} {ratio} {share} "
            f"{r.timer}"
        )
    return "\n".join(lines)


def _draw_guides(
    ax_r: Any,
    ax_s: Any,
    records: list[BenchRecord],
    largest: tuple[int, int],
    radii: list[int],
) -> None:
    """Grey dashed slopes to read the curves against: ∝ R and ∝ R² (through the fastest and
    the slowest strategy at the largest radius) and ∝ pixels (through the slowest at R_ref)."""
    at_largest = [r for r in records if (r.width, r.height) == largest and r.radius > 0]
    r_vals = [r for r in radii if r > 0]
    if len(r_vals) >= 2 and at_largest:
        r_max = max(r_vals)
        ends = [r.median_ms for r in at_largest if r.radius == r_max]
        for power, t_end in ((1, min(ends)), (2, max(ends))):
            ys = [t_end * (r / r_max) ** power for r in r_vals]
            ax_r.plot(r_vals, ys, ls="--", color="grey", lw=0.8)
            ax_r.annotate(f"∝ R{'²' if power == 2 else ''}", (r_vals[0], ys[0]), fontsize=7)
    r_ref = radii[len(radii) // 2]
    at_ref = [r for r in records if r.radius == r_ref]
    pixels = sorted({r.width * r.height / 1e6 for r in at_ref})
    if len(pixels) >= 2:
        top = max(at_ref, key=lambda r: (r.width * r.height, r.median_ms))
        p_max = top.width * top.height / 1e6
        ys = [top.median_ms * p / p_max for p in pixels]
        ax_s.plot(pixels, ys, ls="--", color="grey", lw=0.8)
        ax_s.annotate("∝ pixels", (pixels[0], ys[0]), fontsize=7)


def write_plot(records: list[BenchRecord], path: Path, *, overwrite: bool = False) -> None:
    """Time against radius per strategy (log scale) and time against pixel count, written
    atomically (an existing ``path`` is replaced only with ``overwrite``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'blurapp[bench]'") from None
    records = [r for r in records if r.strategy != COPY]  # radius 0: not on a log axis
    if not records:
        return
    fig, (ax_r, ax_s) = plt.subplots(1, 2, figsize=(11, 4.5))
    sizes = sorted({(r.width, r.height) for r in records}, key=lambda s: s[0] * s[1])
    radii = sorted({r.radius for r in records})
    largest = sizes[-1]
    for strategy in dict.fromkeys(r.strategy for r in records):
        mine = [r for r in records if r.strategy == strategy]
        pts = sorted((r.radius, r.median_ms) for r in mine if (r.width, r.height) == largest)
        if pts:
            ax_r.plot(*zip(*pts, strict=True), marker="o", label=strategy)
        r_ref = radii[len(radii) // 2]
        pts = sorted((r.width * r.height / 1e6, r.median_ms) for r in mine if r.radius == r_ref)
        if pts:
            ax_s.plot(*zip(*pts, strict=True), marker="o", label=f"{strategy} (R={r_ref})")
    _draw_guides(ax_r, ax_s, records, largest, radii)
    adapter = records[0].adapter if records else ""
    ax_r.set(
        xscale="log",
        yscale="log",
        xlabel="kernel radius R",
        ylabel="median ms",
        title=f"time vs radius, {largest[0]}×{largest[1]}",
    )
    ax_s.set(
        xscale="log",
        yscale="log",
        xlabel="megapixels",
        ylabel="median ms",
        title="time vs image size",
    )
    for ax in (ax_r, ax_s):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"blurapp bench on {adapter}", fontsize=10)
    fig.tight_layout()
    try:
        with atomic_output(path, overwrite=overwrite) as fh:
            fig.savefig(fh, dpi=110, format=path.suffix.lstrip(".").lower() or "png")
    finally:
        plt.close(fig)


def add_options(p: argparse.ArgumentParser) -> None:
    """The options of ``blurapp bench``."""
    p.add_argument("--size", action="append", metavar="WxH", help="image size (repeatable)")
    p.add_argument(
        "--radii",
        default="1,2,4,8,16,32",
        help="comma-separated kernel radii (up to 256; direct at R=64 takes minutes on a CPU)",
    )
    p.add_argument(
        "--family",
        default="gaussian",
        choices=FAMILIES,
        help="benchmark kernel: gaussian (rank 1, default) or disk (not separable: direct, "
        "tiled, lowrank); a strategy that cannot run it is skipped and says why",
    )
    add_tolerance_argument(p)
    p.add_argument(
        "--strategies",
        default=",".join(DEFAULT_STRATEGIES),
        help=f"comma-separated, of {', '.join(registry.compared_names())} "
        f"(default: {','.join(DEFAULT_STRATEGIES)})",
    )
    p.add_argument("--channels", type=int, default=4, choices=(1, 2, 3, 4))
    p.add_argument(
        "--format",
        default="rgba32f",
        choices=FORMATS,
        help="input texture format: rgba8unorm, rgba16float or rgba32float (f32 accumulation)",
    )
    p.add_argument("--border", default="clamp", help="border mode")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per case (median)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs per case first")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the records as JSON")
    p.add_argument("--csv", type=Path, metavar="FILE", help="write the records as CSV")
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="draw the scaling curves")
    p.add_argument(
        "--overwrite", action="store_true", help="replace existing --json, --csv or --plot files"
    )
    p.add_argument(
        "--ceiling",
        action="store_true",
        help="also time a plain copy (direct, 1×1 kernel) per size: the bandwidth ceiling, "
        "and each strategy's effective GB/s as a share of it",
    )
    p.add_argument(
        "--max-tile-side",
        type=int,
        metavar="N",
        help="run each case in tiles of at most N×N pixels, halo included (float input)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run_bench(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args``; returns the exit code."""
    sizes = [parse_size(s) for s in (args.size or ["1024x1024"])]
    radii = parse_int_list(args.radii, "radii")
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    timed = registry.compared_names()  # auto is not a strategy of its own to time
    unknown = [s for s in strategies if s not in timed]
    if unknown:
        raise UsageError(f"unknown strategy {unknown[0]!r}: choose from {', '.join(timed)}")
    if args.repeat < 1 or args.warmup < 0:
        raise UsageError("--repeat must be at least 1 and --warmup at least 0")
    _check_outputs(args)
    records: list[BenchRecord] = []
    for w, h in sizes:
        image = make_image(w, h, args.channels, args.format)
        if args.ceiling:
            if not args.quiet:
                print(f"  {COPY} {w}x{h} …", file=sys.stderr, flush=True)
            records.append(
                run_case(
                    image,
                    "direct",
                    0,
                    border=args.border,
                    repeat=args.repeat,
                    warmup=args.warmup,
                    fmt=args.format,
                    kernel_spec=COPY_KERNEL,
                    label=COPY,
                )
            )
        for radius in radii:
            for strategy in strategies:
                problem = _why_not(strategy, radius, args)
                if problem:
                    print(f"  {strategy} {w}x{h} R={radius}: skipped, {problem}", file=sys.stderr)
                    continue
                if not args.quiet:
                    print(f"  {strategy} {w}x{h} R={radius} …", file=sys.stderr, flush=True)
                records.append(
                    run_case(
                        image,
                        strategy,
                        radius,
                        border=args.border,
                        repeat=args.repeat,
                        warmup=args.warmup,
                        fmt=args.format,
                        max_tile_side=args.max_tile_side,
                        family=args.family,
                        tolerance=args.tolerance,
                    )
                )
    records = with_copy_share(records)
    if records:
        print(f"adapter: {records[0].adapter} ({records[0].backend}), timer: {records[0].timer}")
        from blurapp.gpu.calibration import ensure_table, status
        from blurapp.gpu.device import get_device

        ensure_table(get_device(), background=False)
        print(f"auto's cost table: {status()}")
    print(format_table(records))
    if args.json:
        text = json.dumps([asdict(r) for r in records], indent=2) + "\n"
        write_text(args.json, text, overwrite=args.overwrite)
    if args.csv:
        write_text(args.csv, records_csv(records), overwrite=args.overwrite)
    if args.plot and records:
        write_plot(records, args.plot, overwrite=args.overwrite)
    return 0


def _why_not(strategy: str, radius: int, args: argparse.Namespace) -> str | None:
    """Why ``strategy`` cannot run the benchmark kernel of ``radius`` here, or ``None``."""
    from blurapp.core.kernel import Kernel
    from blurapp.core.planner import choose_tile
    from blurapp.engine import gpu_limits

    kernel = Kernel.parse(bench_kernel(radius, args.family))
    problem = registry.why_not(strategy, kernel, args.tolerance)
    if problem is None and strategy == "tiled":
        limits = gpu_limits()
        try:
            if limits is not None:
                choose_tile(kernel.shape, limits)
        except UsageError as e:
            problem = str(e)
    return problem


def records_csv(records: list[BenchRecord]) -> str:
    """The records as CSV text, one row each (the per-pass times left out)."""
    buf = io.StringIO(newline="")
    fields = [k for k in asdict(records[0]) if k != "passes"] if records else []
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(asdict(r) for r in records)
    return buf.getvalue()


def _check_outputs(args: argparse.Namespace) -> None:
    """``--json``, ``--csv`` and ``--plot`` refused before any timing: an existing file without
    ``--overwrite``, something that is not a file, a missing folder, or one file given twice."""
    seen: dict[str, str] = {}
    for flag, path in (("--json", args.json), ("--csv", args.csv), ("--plot", args.plot)):
        if path is None:
            continue
        check_output(path, overwrite=args.overwrite)
        key = os.path.normcase(os.path.abspath(path))
        if key in seen:
            raise UsageError(f"{seen[key]} and {flag} name the same file {path}")
        seen[key] = flag
