"""The goals of issue 16, measured: blurapp on Dask (docs/PERFORMANCE.md "Beyond one machine").

Three measurements, each a subcommand (``all`` runs them in turn):

- ``correlate``: ``blurapp.dask.correlate`` on an 8192×8192 float32 array in 2048² chunks
  against ``blurapp.filter_image`` on the whole array: equal bit for bit, and both timed.
- ``batch``: ``blurapp batch --scheduler local:2`` against a plain ``blurapp batch`` over 12
  photo-like 4K PNGs (benchmarks/batch_vs_peers.py's images): the same bytes, and the ratio
  of the wall times (each command timed as a whole, cluster start-up included; rounds
  alternate the two).
- ``zarr``: a SIDE×SIDE uint8 zarr array (made here, chunked in 4000² blocks, compressed)
  filtered out of core into another zarr store on a LocalCluster of two workers with a
  2 GB memory limit each; wall time, Mpix/s and each worker's peak resident memory. A spot
  check compares one window of the output with ``filter_image`` on the same window plus
  its halo.

Usage: ``python benchmarks/dask_goals.py all [--json results.json]``;
``zarr --side 40000 --disk DIR`` needs about 2 × SIDE² bytes of disk at worst (the test image
compresses well; random pixels would not).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def goal_correlate(kernel: str, strategy: str) -> dict:
    import dask
    import dask.array as da

    import blurapp
    from blurapp.dask import correlate

    rng = np.random.default_rng(16)
    image = rng.random((8192, 8192), dtype=np.float32)
    start = time.perf_counter()
    whole = blurapp.filter_image(image, kernel, border="mirror", strategy=strategy)
    whole_s = time.perf_counter() - start
    lazy = correlate(da.from_array(image, chunks=2048), kernel, "mirror", strategy)
    start = time.perf_counter()
    with dask.config.set(scheduler="threads", num_workers=2):
        chunked = lazy.compute()
    chunked_s = time.perf_counter() - start
    equal = bool(np.array_equal(chunked, whole.image))
    return {
        "goal": "correlate 8192x8192 float32 in 2048^2 chunks equals the whole-array result",
        "kernel": kernel,
        "strategy": whole.strategy,
        "bit_identical": equal,
        "max_abs_diff": float(np.max(np.abs(chunked - whole.image))),
        "whole_s": whole_s,
        "dask_threads_s": chunked_s,
    }


def _blurapp(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([str(ROOT / ".venv" / "bin" / "blurapp"), *args], check=True)
    return time.perf_counter() - start


def goal_batch(count: int, rounds: int, kernel: str, workers: int) -> dict:
    from batch_vs_peers import photo_like
    from PIL import Image

    folder = Path(tempfile.mkdtemp(prefix="blurapp-dask-batch-"))
    try:
        inputs = folder / "in"
        inputs.mkdir()
        for i in range(count):
            Image.fromarray(photo_like(3840, 2160, seed=i)).save(inputs / f"p{i:02d}.png")
        times: dict[str, list[float]] = {"plain": [], "dask": []}
        same = True
        for r in range(rounds):
            order = ["plain", "dask"] if r % 2 == 0 else ["dask", "plain"]
            for kind in order:
                out = folder / f"{kind}-{r}"
                extra = ["--scheduler", f"local:{workers}"] if kind == "dask" else []
                times[kind].append(
                    _blurapp("batch", str(inputs), "-o", str(out), "-k", kernel, "-q", *extra)
                )
            a, b = folder / f"plain-{r}", folder / f"dask-{r}"
            for p in sorted(a.iterdir()):
                same &= p.read_bytes() == (b / p.name).read_bytes()
        plain, dask_s = min(times["plain"]), min(times["dask"])
        return {
            "goal": f"batch --scheduler local:{workers} over {count} 4K PNGs vs plain batch",
            "kernel": kernel,
            "same_bytes": same,
            "plain_s": times["plain"],
            "dask_s": times["dask"],
            "ratio_best": dask_s / plain,
            "ratio_median": statistics.median(times["dask"]) / statistics.median(times["plain"]),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _test_image(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
    """Smooth shading with edges and a little texture: compresses like a real scan, and is
    cheap to make (outer products and integer patterns, no per-pixel transcendentals)."""
    (y0, y1), (x0, x1) = block_info[None]["array-location"]
    y = np.arange(y0, y1, dtype=np.float32)[:, None]
    x = np.arange(x0, x1, dtype=np.float32)[None, :]
    v = 128 + 60 * np.sin(y / 700.0) * np.cos(x / 900.0)
    v += 40 * (((y // 997) + (x // 1231)) % 2) + ((y * 7 + x * 13) % 11)
    return np.clip(v, 0, 255).astype(np.uint8)


def goal_zarr(
    side: int, chunk: int, kernel: str, strategy: str, disk: Path, memory_limit: str
) -> dict:
    import dask.array as da
    import zarr
    from distributed import Client, LocalCluster

    import blurapp
    from blurapp.dask import correlate

    folder = Path(tempfile.mkdtemp(prefix="blurapp-dask-zarr-", dir=disk))
    try:
        src, dst = folder / "in.zarr", folder / "out.zarr"
        with LocalCluster(
            n_workers=2, threads_per_worker=1, memory_limit=memory_limit,
            dashboard_address=":0", host="127.0.0.1",
        ) as cluster, Client(cluster) as client:  # fmt: skip
            blank = da.zeros((side, side), dtype=np.uint8, chunks=chunk)
            start = time.perf_counter()
            da.map_blocks(_test_image, blank, dtype=np.uint8).to_zarr(str(src))
            make_s = time.perf_counter() - start
            client.run(_reset_peak)
            base = client.run(_peak_rss)
            start = time.perf_counter()
            lazy = correlate(da.from_zarr(str(src)), kernel, "mirror", strategy)
            lazy.to_zarr(str(dst))
            filter_s = time.perf_counter() - start
            peaks = client.run(_peak_rss)
        inp, out = zarr.open_array(str(src), mode="r"), zarr.open_array(str(dst), mode="r")
        # Spot check: a window across a chunk corner, filtered whole with its halo.
        y, x, w, halo = chunk - 300, chunk - 300, 600, 64
        window = inp[y - halo : y + w + halo, x - halo : x + w + halo]
        want = blurapp.filter_image(window, kernel, border="mirror", strategy=strategy).image
        want = want[halo:-halo, halo:-halo]
        got = out[y : y + w, x : x + w]
        used = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        return {
            "goal": f"{side}x{side} uint8 zarr filtered out of core, memory per worker <= 2 GB",
            "kernel": kernel,
            "strategy": strategy,
            "chunks": chunk,
            "workers": 2,
            "memory_limit": memory_limit,
            "make_input_s": make_s,
            "filter_s": filter_s,
            "mpix_per_s": side * side / 1e6 / filter_s,
            "worker_peak_rss_mb": {str(k): v / 2**20 for k, v in peaks.items()},
            "worker_rss_before_mb": {str(k): v / 2**20 for k, v in base.items()},
            "spot_check_equal": bool(np.array_equal(got, want)),
            "output_chunks_written": sum(1 for f in (dst / "c").rglob("*") if f.is_file()),
            "disk_mb": used / 2**20,
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reset_peak() -> None:
    # Linux: writing 5 to clear_refs resets the peak resident size (VmHWM).
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_rss() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("goal", choices=["correlate", "batch", "zarr", "all"])
    p.add_argument("--kernel", default="gaussian:sigma=3")
    p.add_argument("--strategy", default="separable")
    p.add_argument("--count", type=int, default=12)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--side", type=int, default=40000)
    p.add_argument("--chunk", type=int, default=4000)
    p.add_argument("--memory-limit", default="2GB")
    p.add_argument("--disk", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="blurapp-runtime-"))
    results = {"machine": f"{platform.node()} {os.cpu_count()} cores", "results": []}
    if args.goal in ("correlate", "all"):
        results["results"].append(goal_correlate(args.kernel, args.strategy))
        print(json.dumps(results["results"][-1]), flush=True)
    if args.goal in ("batch", "all"):
        results["results"].append(
            goal_batch(args.count, args.rounds, "gaussian:sigma=2", args.workers)
        )
        print(json.dumps(results["results"][-1]), flush=True)
    if args.goal in ("zarr", "all"):
        results["results"].append(
            goal_zarr(
                args.side, args.chunk, args.kernel, args.strategy, args.disk, args.memory_limit
            )
        )
        print(json.dumps(results["results"][-1]), flush=True)
    if args.json:
        if args.json.exists():
            print(f"{args.json} exists; not replaced", file=sys.stderr)
            return 2
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
