"""A large TIFF through ``blurapp apply`` into a TIFF: peak memory, wall time, and a check of the
output against the float64 reference (docs/PERFORMANCE.md "Images of any size", issue 15 item 3).

Makes a WIDTH×HEIGHT RGB 8-bit TIFF (the gradient of PERFORMANCE.md's 20000×15000 example,
optionally with sensor-like noise so that it compresses like a photo), written a band at a time
so that even 60000×20000 (3.6 GB) never sits in memory here, then runs

    /usr/bin/time -v blurapp apply big.tif -o out.tif --kernel gaussian:sigma=3 --timing

and reports the peak resident set (GNU time's "Maximum resident set size"), the wall time and
the ``--timing`` lines. Then it reads a few 64×64 windows of the output (corners, edges, centre)
and compares them with blurapp's float64 reference on the same windows plus their halo, clamped
at the image's edges as ``--border clamp`` (the default) does: every output within one level.

Usage::

    python benchmarks/stream_tiff.py --size 20000x15000 [--compression none|deflate]
        [--noise 0] [--dir /tmp/big] [--max-megapixels 400] [--blurapp 'blurapp']
        [--keep] [--json results.json]

``--blurapp`` is the command line that runs blurapp (for instance an older checkout:
``'env PYTHONPATH=/tmp/old .venv/bin/python -m blurapp'``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import tifffile

KERNEL = "gaussian:sigma=3"
WINDOW = 64


def gradient_band(y0: int, y1: int, height: int, width: int, noise: float) -> np.ndarray:
    """Rows y0..y1 of PERFORMANCE.md's test image (and noise of amplitude ``noise``)."""
    y = np.linspace(0, 200, height, dtype=np.float32)[y0:y1, None]
    x = np.linspace(0, 55, width, dtype=np.float32)[None, :]
    band = np.stack([y + x + 10 * c for c in range(3)], -1)
    if noise:
        rng = np.random.default_rng(y0)
        band += rng.normal(0, noise, band.shape).astype(np.float32)
        np.clip(band, 0, 255, out=band)
    return band.astype(np.uint8)


def make_image(path: Path, height: int, width: int, compression: str, noise: float) -> None:
    band = 512
    if compression == "none":
        out = tifffile.memmap(path, shape=(height, width, 3), dtype=np.uint8, photometric="rgb")
        for y0 in range(0, height, band):
            y1 = min(y0 + band, height)
            out[y0:y1] = gradient_band(y0, y1, height, width, noise)
        out.flush()
        del out
        return

    def tiles():
        for y0 in range(0, height, 256):
            rows = gradient_band(y0, min(y0 + 256, height), height, width, noise)
            for x0 in range(0, width, 256):
                yield rows[:, x0 : x0 + 256]

    raw = height * width * 3
    with tifffile.TiffWriter(path, bigtiff=raw > 2**32 - 2**25) as tw:
        tw.write(tiles(), shape=(height, width, 3), dtype=np.uint8, photometric="rgb",
                 tile=(256, 256), compression="zlib", metadata=None)  # fmt: skip


def run_apply(blurapp: list[str], src: Path, out: Path, extra: list[str]) -> dict:
    cmd = ["/usr/bin/time", "-v", *blurapp, "apply", str(src), "-o", str(out), "--kernel",
           KERNEL, "--timing", *extra]  # fmt: skip
    start = time.perf_counter()
    # Run from the data folder: with `python -m`, the working folder comes first on sys.path.
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=src.parent)
    wall = time.perf_counter() - start
    err = proc.stderr
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    lines = [ln for ln in err.splitlines() if re.match(r"(strategy|pass|timer|throughput)", ln)]
    return {
        "command": shlex.join(cmd),
        "exit": proc.returncode,
        "wall_s": round(wall, 1),
        "peak_rss_gb": round(int(rss.group(1)) * 1024 / 1e9, 3) if rss else None,
        "timing": lines,
        "errors": [ln for ln in err.splitlines() if "error" in ln.lower()][:3],
    }


def check_windows(src: Path, out: Path, height: int, width: int) -> dict:
    """The output against the float64 reference on a few windows: the largest difference."""
    from blurapp.core.kernel import Kernel
    from blurapp.core.reference import correlate_float
    from blurapp.io.tiffstream import open_tiff_source

    kernel = Kernel.parse(KERNEL)
    rows, cols = kernel.shape
    ar, ac = rows // 2, cols // 2
    w = WINDOW
    spots = [(0, 0), (0, width - w), (height - w, 0), (height - w, width - w),
             (height // 2, width // 2), (height // 3, 0), (0, width // 3)]  # fmt: skip
    worst = 0
    with open_tiff_source(src) as inp, open_tiff_source(out) as res:  # type: ignore[union-attr]
        for y0, x0 in spots:
            ys = np.clip(np.arange(y0 - ar, y0 + w + rows - 1 - ar), 0, height - 1)
            xs = np.clip(np.arange(x0 - ac, x0 + w + cols - 1 - ac), 0, width - 1)
            block = inp[int(ys.min()) : int(ys.max()) + 1, int(xs.min()) : int(xs.max()) + 1]
            region = block[ys - ys.min()][:, xs - xs.min()].astype(np.float64) / 255
            ref = correlate_float(region, kernel, "clamp")[ar : ar + w, ac : ac + w]
            expected = np.clip(np.rint(ref * 255), 0, 255)
            got = res[y0 : y0 + w, x0 : x0 + w].astype(np.float64)
            worst = max(worst, int(np.abs(got - expected).max()))
    return {"windows": len(spots), "window": w, "max_level_difference": worst}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="20000x15000", help="WIDTHxHEIGHT")
    ap.add_argument("--compression", choices=["none", "deflate"], default="none")
    ap.add_argument("--noise", type=float, default=0.0, help="sensor-like noise, in levels")
    ap.add_argument("--dir", default="/tmp/blurapp-stream-tiff")
    ap.add_argument("--max-megapixels", type=float, default=None)
    ap.add_argument("--blurapp", default=f"{sys.executable} -m blurapp")
    ap.add_argument("--extra", default="", help="more apply options, one string")
    ap.add_argument("--keep", action="store_true", help="keep the input and output files")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    tag = f"{width}x{height}-{args.compression}" + (f"-noise{args.noise:g}" if args.noise else "")
    src, out = folder / f"{tag}.tif", folder / f"{tag}-out.tif"
    if not src.exists():
        start = time.perf_counter()
        make_image(src, height, width, args.compression, args.noise)
        print(f"made {src} ({src.stat().st_size / 1e9:.2f} GB) in "
              f"{time.perf_counter() - start:.0f} s", file=sys.stderr)  # fmt: skip
    out.unlink(missing_ok=True)
    extra = shlex.split(args.extra)
    mp = args.max_megapixels or max(250, math.ceil(width * height / 1e6))
    extra += ["--max-megapixels", f"{mp:g}"]
    result = run_apply(shlex.split(args.blurapp), src, out, extra)
    result.update(size=[width, height], compression=args.compression, noise=args.noise,
                  input_gb=round(src.stat().st_size / 1e9, 3))  # fmt: skip
    if result["exit"] == 0:
        result["output_gb"] = round(out.stat().st_size / 1e9, 3)
        with tifffile.TiffFile(out) as tif:
            result["output_tiled"] = bool(tif.pages.first.is_tiled)
        result["check"] = check_windows(src, out, height, width)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if not args.keep:
        out.unlink(missing_ok=True)
        src.unlink(missing_ok=True)
    return 0 if result["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
