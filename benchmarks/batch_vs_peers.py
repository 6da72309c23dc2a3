"""Time ``blurapp batch`` against ImageMagick and libvips on the same photo-like 4K images.

Generates N photo-like images (smooth shading, edges, texture and sensor-like noise) as PNG and as
JPEG, then, alternating the tools round after round, times a Gaussian blur of sigma 2 over all of
them with:

- ``blurapp batch DIR/*.png -o OUT -k gaussian:sigma=2`` (one process for the whole set),
- ImageMagick ``convert IN -gaussian-blur 0x2 OUT`` (one process per file, as a shell loop does),
- libvips ``vips gaussblur IN OUT 2`` (one process per file).

With ``--whole``, also ``blurapp batch`` with band streaming off (``BLURAPP_BANDS=0``, glibc's
heap as it is: every PNG decoded whole, as before band streaming), in the same rounds.

A peer that is not installed is skipped with the command that installs it (Debian/Ubuntu, as
root: ``apt-get install -y libvips-tools imagemagick``). Prints the median wall time of each
tool, the ratios to blurapp and to libvips, and peak resident memory (GNU time's maximum
resident set, or ``wait4``'s ru_maxrss: the largest process of a run).

blurapp runs as pip installs it, with its modules' bytecode cached: where
``PYTHONDONTWRITEBYTECODE`` is set (as in some CI and sandbox shells), every run of a source
tree would compile blurapp's ~80 modules again (0.2 s of a 4.5 s batch on a 2-core machine), so
blurapp's processes get ``PYTHONPYCACHEPREFIX=WORKDIR/pycache`` instead, filled by one untimed
warm-up run on the first image before the rounds. ``--bytecode as-is`` keeps the caller's
environment (and still makes the warm-up run).

``--timeline FILE.json`` adds one more ``blurapp batch`` run in a traced process: the stages
(decode, gather, GPU submit and collect, encode...) as (stage, thread, start, end) spans and
every thread's CPU time every 20 ms, printed as a table of 0.1 s steps (where the cores idle).

Usage: ``python benchmarks/batch_vs_peers.py [--count 20] [--size 3840x2160] [--rounds 3]
[--formats png,jpg] [--strategy auto] [--whole] [--skip-imagemagick] [--bytecode cached|as-is]
[--json results.json] [--timeline timeline.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

INSTALL_HINT = {
    "imagemagick": "apt-get install -y imagemagick",
    "vips": "apt-get install -y libvips-tools",
}


def photo_like(width: int, height: int, seed: int) -> np.ndarray:
    """An RGB uint8 image with a photo's statistics: smooth shading, edges, texture, noise."""
    rng = np.random.default_rng(seed)
    # Smooth shading: a small random field upsampled with bicubic interpolation.
    small = rng.random((9, 16, 3)) * 255
    shade = np.asarray(
        Image.fromarray(small.astype(np.uint8)).resize((width, height), Image.Resampling.BICUBIC),
        dtype=np.float32,
    )
    # Mid-frequency texture (foliage, fabric): another field at a finer scale.
    tex = rng.random((height // 24 + 1, width // 24 + 1, 3)) * 60
    texture = np.asarray(
        Image.fromarray(tex.astype(np.uint8)).resize((width, height), Image.Resampling.BILINEAR),
        dtype=np.float32,
    )
    image = 0.8 * shade + texture - 30
    # Hard edges: a few flat rectangles and discs, as objects in a scene.
    yy, xx = np.mgrid[0:height, 0:width]
    for _ in range(6):
        colour = rng.random(3) * 255
        x0, y0 = rng.integers(0, width), rng.integers(0, height)
        if rng.random() < 0.5:
            w, h = rng.integers(width // 10, width // 3), rng.integers(height // 10, height // 3)
            mask = (xx >= x0) & (xx < x0 + w) & (yy >= y0) & (yy < y0 + h)
        else:
            r = rng.integers(height // 20, height // 5)
            mask = (xx - x0) ** 2 + (yy - y0) ** 2 < r * r
        image[mask] = 0.5 * image[mask] + 0.5 * colour
    image += rng.normal(0, 3, image.shape).astype(np.float32)  # sensor noise
    return np.clip(image, 0, 255).astype(np.uint8)


#: Stages a --timeline run times: (module, attribute, name); attributes are wrapped in the
#: traced process only (functions or methods looked up at call time).
TRACED = (
    ("blurapp.gpu.device", "get_device", "device"),
    ("blurapp.batch.pipeline", "probe_image", "probe"),
    ("blurapp.batch.pipeline", "stream_plan", "plan"),
    ("blurapp.batch.pipeline", "read_image", "read"),
    ("blurapp.batch.pipeline", "start_png_stream", "stream"),
    ("blurapp.batch.pipeline", "filter_in_place", "in-place"),
    ("blurapp.batch.pipeline", "_write", "write"),
    ("blurapp.io.bands", "_encode", "encode"),
    ("blurapp.io.bands:PngRowSource", "_decode_to", "decode"),
    ("blurapp.pipeline", "gather", "gather"),
    ("blurapp.pipeline", "prepare", "prepare"),
    ("blurapp.pipeline", "run", "run"),
    ("blurapp.pipeline", "finish", "finish"),
    ("blurapp.gpu.engine:GpuFilter", "_submit", "submit"),
    ("blurapp.gpu.engine:GpuFilter", "_collect", "collect"),
)


def _trace_batch(out: str, argv: list[str], step: float = 0.1) -> int:
    """Run ``blurapp`` with ``argv`` in this process, recording each traced stage's spans
    (thread, stage, start, end) and every thread's CPU time every 20 ms (Linux /proc; threads
    named as Python names them); write both to ``out`` (JSON) and print, for each ``step``
    seconds, the cores busy, each thread group's share and the stages in progress."""
    import collections
    import ctypes
    import importlib
    import re
    import threading

    t0 = time.perf_counter()
    spans: list[tuple[str, str, float, float]] = []
    samples: list[tuple[float, dict[str, tuple[str, float]]]] = []
    libc = ctypes.CDLL(None)
    bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]

    def named(self: threading.Thread) -> None:  # the kernel's thread name = Python's, for /proc
        libc.prctl(15, re.sub(r"[-_]?\d+$", "", self.name)[:15].encode(), 0, 0, 0)
        bootstrap(self)

    threading.Thread._bootstrap_inner = named  # type: ignore[attr-defined]
    tick = os.sysconf("SC_CLK_TCK")
    main_tid = str(threading.get_native_id())

    def poll() -> None:
        while True:
            snap = {}
            for tid in os.listdir("/proc/self/task"):
                try:
                    stat = Path(f"/proc/self/task/{tid}/stat").read_text()
                except OSError:
                    continue
                name = "main" if tid == main_tid else stat[stat.index("(") + 1 : stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2 :].split()
                snap[tid] = (name, (int(fields[11]) + int(fields[12])) / tick)
            samples.append((time.perf_counter() - t0, snap))
            time.sleep(0.02)

    threading.Thread(target=poll, name="tracer", daemon=True).start()

    def wrap(owner: object, attr: str, name: str) -> None:
        fn = getattr(owner, attr)

        def traced(*a: object, **k: object) -> object:
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spans.append((name, threading.current_thread().name, start - t0,
                              time.perf_counter() - t0))  # fmt: skip

        setattr(owner, attr, traced)

    for where, attr, name in TRACED:
        module, _, cls = where.partition(":")
        owner = importlib.import_module(module)
        wrap(getattr(owner, cls) if cls else owner, attr, name)
    from blurapp.cli import main as blurapp_main

    try:
        code = blurapp_main(argv)
    finally:
        wall = time.perf_counter() - t0
        Path(out).write_text(json.dumps({"wall_s": wall, "spans": spans, "samples": samples}))
    # Each step: CPU seconds per thread group (lavapipe's workers are named by the driver), from
    # the first sample on (what the interpreter's start took before it is not counted).
    buckets = int(wall / step) + 1
    cpu: dict[str, list[float]] = collections.defaultdict(lambda: [0.0] * buckets)
    last = {tid: used for tid, (_, used) in samples[0][1].items()} if samples else {}
    for t, snap in samples[1:]:
        b = min(buckets - 1, int(t / step))
        for tid, (name, used) in snap.items():
            group = re.sub(r"[-_:]?\d+$", "", name)
            cpu[group][b] += used - last.get(tid, 0.0)
            last[tid] = used
    cpu.pop("tracer", None)
    active: list[collections.Counter[str]] = [collections.Counter() for _ in range(buckets)]
    for name, _, start, end in spans:
        for b in range(int(start / step), min(buckets, int(end / step) + 1)):
            share = min(end, (b + 1) * step) - max(start, b * step)
            if share > 0:
                active[b][name] += share / step
    groups = sorted(cpu, key=lambda g: -sum(cpu[g]))[:8]
    print(f"wall {wall:.2f} s; CPU seconds: " + ", ".join(f"{g} {sum(cpu[g]):.2f}" for g in groups))
    print("    t  busy " + " ".join(f"{g[:9]:>9s}" for g in groups) + "  stages in progress")
    for b in range(buckets):
        busy = sum(cpu[g][b] for g in cpu) / step
        row = " ".join(f"{cpu[g][b] / step:9.2f}" for g in groups)
        doing = " ".join(f"{n}:{v:.1f}" for n, v in active[b].most_common(6))
        print(f"{b * step:5.1f} {busy:5.2f} {row}  {doing}")
    return code


@dataclass
class Run:
    tool: str
    fmt: str
    wall_s: float
    peak_rss_mib: float


def _run_measured(commands: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """Run commands one after another; (wall seconds, largest peak RSS of them in MiB).

    The peak comes from GNU time (``%M``) where it is installed: a child forked from this big
    Python process would otherwise count the parent's pages it saw before exec.
    """
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    peak = 0
    start = time.perf_counter()
    for cmd in commands:
        if gnu_time:
            with tempfile.NamedTemporaryFile("r") as rss:
                full = [gnu_time, "-f", "%M", "-o", rss.name, *cmd]
                proc = subprocess.run(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      env=env)  # fmt: skip
                kib = int(rss.read().strip().splitlines()[-1] or 0) if proc.returncode == 0 else 0
            err = proc.stderr.decode(errors="replace")
        else:
            child = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
            )
            _, status, usage = os.wait4(child.pid, 0)
            proc = subprocess.CompletedProcess(cmd, os.waitstatus_to_exitcode(status))
            err = child.stderr.read().decode(errors="replace") if child.stderr else ""
            kib = usage.ru_maxrss  # KiB on Linux
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err.strip()[:500]}")
        peak = max(peak, kib)
    return time.perf_counter() - start, peak / 1024


def _imagemagick() -> list[str] | None:
    for name in ("magick", "convert"):
        exe = shutil.which(name)
        if not exe:
            continue
        probe = subprocess.run([exe, "-version"], capture_output=True, text=True)
        if "ImageMagick" in probe.stdout:
            return [exe]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--trace-batch"]:  # the --timeline run's own process
        return _trace_batch(argv[1], argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20, help="images per format (default 20)")
    parser.add_argument("--size", default="3840x2160", help="WxH (default 3840x2160)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--formats", default="png,jpg", help="comma list of png, jpg")
    parser.add_argument("--strategy", default="auto", help="blurapp --strategy (default auto)")
    parser.add_argument("--jobs", type=int, default=None, help="blurapp --jobs")
    parser.add_argument("--workdir", help="where to put images (default: a temporary folder)")
    parser.add_argument("--json", help="write the results here as JSON")
    parser.add_argument(
        "--whole", action="store_true",
        help="also time blurapp with band streaming off (BLURAPP_BANDS=0): before and after",
    )  # fmt: skip
    parser.add_argument(
        "--skip-imagemagick", action="store_true", help="leave ImageMagick out (10x slower)"
    )
    parser.add_argument(
        "--bytecode", choices=("cached", "as-is"), default="cached",
        help="cached (default): blurapp's bytecode cached under WORKDIR/pycache even where "
        "PYTHONDONTWRITEBYTECODE is set, as an installed blurapp has it; as-is: the caller's "
        "environment",
    )  # fmt: skip
    parser.add_argument(
        "--timeline", metavar="FILE.json",
        help="after the rounds, one more blurapp batch of the first format with its stages "
        "and every thread's CPU recorded (JSON here) and printed every 0.1 s",
    )  # fmt: skip
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]

    magick = _imagemagick()
    vips = shutil.which("vips")
    tools = ["blurapp", *(["blurapp-whole"] if args.whole else [])]
    if args.skip_imagemagick:
        magick = None
    for name, found in (("imagemagick", magick), ("vips", vips)):
        if args.skip_imagemagick and name == "imagemagick":
            continue
        if found:
            tools.append(name)
        else:
            print(f"skipping {name}: not installed (Debian/Ubuntu: {INSTALL_HINT[name]})")

    root = Path(args.workdir or tempfile.mkdtemp(prefix="blurapp-bench-"))
    print(f"generating {args.count} photo-like {width}x{height} images per format in {root}")
    inputs: dict[str, list[Path]] = {}
    for fmt in formats:
        folder = root / f"in_{fmt}"
        folder.mkdir(parents=True, exist_ok=True)
        inputs[fmt] = []
        for i in range(args.count):
            path = folder / f"photo{i:03d}.{fmt}"
            if not path.exists():
                image = Image.fromarray(photo_like(width, height, seed=i))
                image.save(path, **({"quality": 92} if fmt == "jpg" else {"compress_level": 6}))
            inputs[fmt].append(path)

    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    blurapp_env = dict(env)
    if args.bytecode == "cached":
        blurapp_env.pop("PYTHONDONTWRITEBYTECODE", None)
        blurapp_env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")

    def commands(tool: str, fmt: str, out: Path) -> list[list[str]]:
        if tool in ("blurapp", "blurapp-whole"):
            cmd = [sys.executable, "-m", "blurapp", "batch", *map(str, inputs[fmt])]
            cmd += ["-o", str(out), "-k", "gaussian:sigma=2", "--strategy", args.strategy]
            cmd += ["--overwrite", "-q"]
            if args.jobs:
                cmd += ["--jobs", str(args.jobs)]
            return [cmd]
        if tool == "imagemagick":
            assert magick is not None
            return [
                [*magick, str(p), "-gaussian-blur", "0x2", str(out / p.name)] for p in inputs[fmt]
            ]
        assert vips is not None
        return [[vips, "gaussblur", str(p), str(out / p.name), "2"] for p in inputs[fmt]]

    # Untimed: fills the bytecode cache (and the driver's shader cache) before the rounds.
    warm = root / "out_warm_up"
    shutil.rmtree(warm, ignore_errors=True)
    warm.mkdir()
    first = commands("blurapp", formats[0], warm)[0]
    rest = {str(path) for path in inputs[formats[0]][1:]}
    first = [a for a in first if a not in rest]
    subprocess.run(first, env=blurapp_env, stdout=subprocess.DEVNULL, check=True)
    shutil.rmtree(warm)
    print(f"blurapp's bytecode: {args.bytecode}")

    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    runs: list[Run] = []
    for r in range(args.rounds):
        order = tools if r % 2 == 0 else tools[::-1]  # alternate to spread drift and warm caches
        for fmt in formats:
            for tool in order:
                out = root / f"out_{tool}_{fmt}"
                if out.exists():
                    shutil.rmtree(out)
                out.mkdir()
                tool_env = blurapp_env if tool.startswith("blurapp") else env
                if tool == "blurapp-whole":
                    tool_env = {**tool_env, "BLURAPP_BANDS": "0", "BLURAPP_HEAP": "default"}
                wall, peak = _run_measured(commands(tool, fmt, out), tool_env)
                runs.append(Run(tool, fmt, wall, peak))
                print(f"round {r + 1} {fmt:4s} {tool:12s} {wall:8.2f} s  peak {peak:7.1f} MiB")

    if args.timeline:
        out = root / "out_timeline"
        out.mkdir(exist_ok=True)
        fmt = formats[0]
        cmd = commands("blurapp", fmt, out)[0]
        traced = [sys.executable, __file__, "--trace-batch", args.timeline, *cmd[3:]]
        print(f"timeline of one blurapp batch ({fmt}), written to {args.timeline}:")
        subprocess.run(traced, env=blurapp_env, check=True)

    load_after = os.getloadavg()
    print()
    print(f"{args.count} images {width}x{height}, gaussian sigma 2, median of {args.rounds} rounds")
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for fmt in formats:
        summary[fmt] = {}
        for tool in tools:
            walls = [x.wall_s for x in runs if x.tool == tool and x.fmt == fmt]
            peaks = [x.peak_rss_mib for x in runs if x.tool == tool and x.fmt == fmt]
            summary[fmt][tool] = {"wall_s": statistics.median(walls), "peak_rss_mib": max(peaks)}
        base = summary[fmt]["blurapp"]["wall_s"]
        vips_wall = summary[fmt]["vips"]["wall_s"] if "vips" in summary[fmt] else None
        for tool in tools:
            s = summary[fmt][tool]
            s["ratio_to_blurapp"] = s["wall_s"] / base
            to_vips = ""
            if vips_wall:
                s["ratio_to_vips"] = s["wall_s"] / vips_wall
                to_vips = f"  x{s['ratio_to_vips']:5.2f} of libvips"
            print(
                f"{fmt:4s} {tool:13s} {s['wall_s']:8.2f} s  {s['wall_s'] / args.count:6.2f} s/image"
                f"  x{s['ratio_to_blurapp']:5.2f} of blurapp{to_vips}"
                f"  peak {s['peak_rss_mib']:7.1f} MiB"
            )
    # Same job? The first image's outputs, compared with blurapp's.
    for fmt in formats:
        ours = np.asarray(Image.open(root / f"out_blurapp_{fmt}" / inputs[fmt][0].name), float)
        for tool in tools[1:]:
            theirs = np.asarray(Image.open(root / f"out_{tool}_{fmt}" / inputs[fmt][0].name), float)
            diff = np.abs(ours - theirs[..., : ours.shape[-1]]).mean()
            print(f"{fmt:4s} mean |blurapp - {tool}| on the first image: {diff:.2f} levels")
    if args.json:
        machine = {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average": {"before": load_before, "after": load_after},
            "blurapp_bytecode": args.bytecode,
        }
        Path(args.json).write_text(
            json.dumps(
                {
                    "machine": machine,
                    "args": vars(args),
                    "summary": summary,
                    "runs": [r.__dict__ for r in runs],
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
