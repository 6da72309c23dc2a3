#!/usr/bin/env python3
"""A fresh attack on blurapp's command line, as a careless or hostile user (issue 18, again).

Every case runs ``python -m blurapp ...`` as its own process in a scratch folder copied from a
template (small images of every kind, a kernel file, conv arrays, files that must never change),
and is judged against DESIGN.md's contracts, whatever the case:

- no traceback, no death by a signal (a core dump), no hang (a time limit per case);
- the exit code the case expects (0, 1 failure, 2 usage; 130 for Ctrl-C or SIGTERM);
- a usage error is one line on stderr, written before any work: nothing new on the disk;
- a failure is one line per failed file; no RuntimeWarning or other noise;
- no temporary file (``.*.part``, a probe) left anywhere;
- no file of the template changed (inputs, existing outputs, devices, links) unless the case
  is allowed to write it;
- the peak memory (``ru_maxrss``) under a limit;
- and a check of its own for the cases that produce pixels (against the float64 reference,
  scipy.ndimage, or the same run untiled).

Run it from the repository root (``PYTHONPATH=DIR`` runs another copy of the package)::

    .venv/bin/python tests/fuzz/attack_fresh.py            # everything, about 5 minutes
    .venv/bin/python tests/fuzz/attack_fresh.py -k report  # the cases whose name has "report"
    .venv/bin/python tests/fuzz/attack_fresh.py --list     # the case names only

It prints one line per case that falls short and a summary; exit 1 when any did. The results
of its runs are in docs/RELIABILITY.md (issue 18, "The fresh run").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PY = sys.executable
MAX_RSS_MIB = 3072  # a case above this is an unbounded allocation
ERROR_LINE = re.compile(r"^blurapp( [a-z-]+)*: (error: |interrupted)")

# ---------------------------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    rc: int | None  # None: killed after the time limit
    out: bytes
    err: bytes
    seconds: float
    maxrss_mib: float

    @property
    def err_text(self) -> str:
        return self.err.decode("utf-8", "backslashreplace")


def run_process(
    argv: Sequence[str | bytes],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    signal_after: tuple[int, float] | None = None,
    signal_when: tuple[int, str] | None = None,
    stdin: bytes | None = None,
) -> Outcome:
    """Run ``argv`` in its own session; its peak memory from ``wait4``."""
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(name: str, stream) -> None:
        for block in iter(lambda: stream.read(65536), b""):
            if sum(map(len, chunks[name])) < 2**20:
                chunks[name].append(block)

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for t in readers:
        t.start()
    if stdin is not None:
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except OSError:
            pass
    timed_out = threading.Event()

    def on_time() -> None:
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    timer = threading.Timer(timeout, on_time)
    timer.start()
    sender = None
    if signal_after is not None:
        sig, delay = signal_after

        def send() -> None:
            try:
                os.kill(proc.pid, sig)
            except OSError:
                pass

        sender = threading.Timer(delay, send)
        sender.start()
    watcher = None
    if signal_when is not None:
        sig_w, pattern = signal_when

        def watch() -> None:
            while proc.returncode is None and not timed_out.is_set():
                if list(cwd.glob(pattern)):
                    try:
                        os.kill(proc.pid, sig_w)
                    except OSError:
                        pass
                    return
                time.sleep(0.001)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
    timer.cancel()
    if sender is not None:
        sender.cancel()
    try:  # whatever the case started in its session (dask workers) goes too
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    for t in readers:
        t.join(10)
    return Outcome(
        None if timed_out.is_set() else proc.returncode,
        b"".join(chunks["out"]),
        b"".join(chunks["err"]),
        time.monotonic() - start,
        usage.ru_maxrss / 1024,
    )


# ---------------------------------------------------------------------------------- the template


def _noise(shape: tuple[int, ...], dtype=np.uint8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.random(shape).astype(dtype)
    return rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)


def make_template(root: Path) -> None:
    """The files every case starts from (a few KiB in all)."""
    import tifffile
    from PIL import Image

    from blurapp.core.kernel import Kernel
    from blurapp.io import save_kernel

    inp = root / "in"
    inp.mkdir(parents=True)
    Image.fromarray(_noise((12, 16, 3))).save(inp / "rgb.png")
    Image.fromarray(_noise((12, 16, 4), seed=1)).save(inp / "rgba.png")
    Image.fromarray(_noise((12, 16), seed=2)).save(inp / "grey.png")
    Image.fromarray(_noise((10, 9, 3), seed=3)).save(inp / "photo.jpg", quality=90)
    Image.fromarray(_noise((10, 9, 3), seed=4)).save(inp / "pic.webp", lossless=True)
    Image.fromarray(_noise((10, 9, 3), seed=5)).save(inp / "pic.bmp")
    tifffile.imwrite(inp / "u16.tif", _noise((12, 16, 3), np.uint16, 6), photometric="rgb")
    tifffile.imwrite(inp / "f32.tif", _noise((12, 16), np.float32, 7))
    tifffile.imwrite(
        inp / "big.tif", _noise((12, 16, 3), np.uint8, 8), bigtiff=True, photometric="rgb"
    )
    tifffile.imwrite(inp / "bigf.tif", _noise((12, 16), np.float32, 9), bigtiff=True)
    np.save(inp / "f32.npy", _noise((12, 16, 3), np.float32, 10))
    nan = _noise((12, 16), np.float32, 11)
    nan[3, 4], nan[8, 10] = np.nan, np.inf
    np.save(root / "nan.npy", nan)
    save_kernel(Kernel.parse("gaussian:sigma=1"), root / "k.json")
    conv = root / "conv"
    conv.mkdir()
    np.save(conv / "x.npy", _noise((1, 2, 6, 6), np.float32, 12))
    np.save(conv / "w.npy", _noise((3, 2, 3, 3), np.float32, 13))
    np.save(conv / "b.npy", _noise((3,), np.float32, 14))
    (root / "keep.txt").write_text("never to be replaced\n")
    (root / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    existing = root / "out"
    existing.mkdir()
    (existing / "rgb.png").write_bytes(b"an earlier output")


def snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """Every path under ``root`` with its kind and content digest (links not followed)."""
    found: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = os.fsdecode(path.relative_to(root))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", hashlib.sha1(path.read_bytes()).hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", "")
            else:
                found[rel] = ("special", str(stat.S_IFMT(st.st_mode)))
    return found


# ---------------------------------------------------------------------------------- cases


@dataclass
class Case:
    name: str
    args: Sequence[str | bytes]  # "{d}" is the scratch folder
    expect: tuple[int, ...] = (0,)
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path, Outcome], list[str]] | None = None
    timeout: float = 90
    signal_after: tuple[int, float] | None = None
    signal_when: tuple[int, str] | None = None  # the signal, once a file matching this glob is
    may_change: tuple[str, ...] = ()  # template paths (prefixes) the case may write
    quiet_ok: bool = True  # stderr must hold only blurapp's own lines
    stdin: bytes | None = None
    python: bool = False  # args are for ``python`` itself (``-c CODE``), not ``-m blurapp``


def _expand(arg: str | bytes, d: Path) -> str | bytes:
    if isinstance(arg, bytes):
        return arg.replace(b"{d}", os.fsencode(d))
    return arg.replace("{d}", str(d))


def judge(case: Case, d: Path, before: dict[str, tuple[str, str]], o: Outcome) -> list[str]:
    problems: list[str] = []
    err = o.err_text
    if o.rc is None:
        return [f"hang: killed after {case.timeout:.0f} s"]
    if "Traceback" in err:
        problems.append("traceback: " + err.strip().splitlines()[-1][:200])
    sent = (case.signal_after or case.signal_when or (None,))[0]
    if o.rc < 0 and -o.rc == sent:
        pass  # before Python's handlers were in place, or while it exits: nothing half-done
    elif o.rc < 0:
        problems.append(f"died by signal {-o.rc}")
    elif o.rc not in case.expect:
        problems.append(f"exit {o.rc}, expected {case.expect}")
        if case.python:  # what the script found, one line each
            problems += o.out.decode("utf-8", "replace").strip().splitlines()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if o.rc == 2 and len(lines) != 1:
        problems.append(f"usage error in {len(lines)} lines")
    if case.quiet_ok:
        noise = [ln for ln in lines if not ERROR_LINE.match(ln) and not ln.startswith("blurapp:")]
        if noise:
            problems.append("noise on stderr: " + noise[0][:160])
    if "Warning" in err:
        problems.append("a warning on stderr")
    if o.maxrss_mib > MAX_RSS_MIB:
        problems.append(f"peak memory {o.maxrss_mib:.0f} MiB")
    after = snapshot(d)
    leftovers = [p for p in after if re.search(r"(^|/)\.[^/]*\.[0-9a-f]{8}\.part$", p)]
    if leftovers:
        problems.append(f"temporary left: {leftovers[0]}")
    changed = [
        p
        for p, v in before.items()
        if after.get(p) != v and not any(p.startswith(m) for m in case.may_change)
    ]
    if changed:
        problems.append(f"changed or removed: {', '.join(sorted(changed)[:3])}")
    if o.rc == 2:
        new = [p for p in after if p not in before and not p.endswith(".part")]
        if new:
            problems.append(f"usage error after work: wrote {new[0]}")
    if case.check is not None and not problems:
        try:
            problems += case.check(d, o)
        except Exception as exc:  # the check itself: an output that cannot be read
            problems.append(f"check failed: {type(exc).__name__}: {exc}")
    return problems


# ---------------------------------------------------------------------------------- oracles


def read(path: Path) -> np.ndarray:
    """An output's pixels, as blurapp reads them."""
    from blurapp.io import read_image

    return read_image(path).pixels


def reference(path: Path, kernel: str, **options) -> np.ndarray:
    """The cpu reference of ``path`` with ``options`` (FilterSpec.create's keywords)."""
    import blurapp

    options.setdefault("strategy", "cpu")
    return blurapp.filter_image(read(path), kernel, **options).image


def close(out: Path, want: np.ndarray, atol: float) -> list[str]:
    got = read(out)
    if got.shape != want.shape or got.dtype != want.dtype:
        return [f"wrong shape or type: {got.shape} {got.dtype}, expected {want.shape} {want.dtype}"]
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    diff[np.isinf(got) & (got == want)] = 0
    same_nan = np.array_equal(np.isnan(got.astype(float)), np.isnan(want.astype(float)))
    worst = float(np.nanmax(diff)) if diff.size and not np.all(np.isnan(diff)) else 0.0
    if not same_nan or worst > atol:
        return [
            f"silent wrong result: max error {worst:g} (tolerance {atol:g}), NaN same: {same_nan}"
        ]
    return []


def matches(output: str, source: str, kernel: str, atol: float = 1.0, **options) -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        return close(d / output, reference(d / source, kernel, **options), atol)

    return check


def scipy_matches(output: str, source: str, kernel: str, atol: float, mode: str = "nearest"):
    """Against scipy.ndimage.correlate of the kernel's weights (an oracle outside blurapp), for
    an 8-bit output."""

    def check(d: Path, o: Outcome) -> list[str]:
        from scipy import ndimage

        from blurapp.core.kernel import Kernel

        w = Kernel.parse(kernel).weights
        src = read(d / source).astype(np.float64)
        planes = [src] if src.ndim == 2 else [src[..., c] for c in range(src.shape[2])]
        want = np.stack([ndimage.correlate(p, w, mode=mode) for p in planes], axis=-1)
        got = read(d / output).astype(np.float64)
        want = np.clip(np.rint(want.reshape(got.shape)), 0, 255)
        worst = float(np.max(np.abs(got - want)))
        return [] if worst <= atol else [f"silent wrong result against scipy: {worst:g}"]

    return check


def same_as(output: str, other: str) -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        a, b = read(d / output), read(d / other)
        return [] if np.array_equal(a, b, equal_nan=True) else ["differs from the untiled run"]

    return check


def exists(*paths: str) -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        return [f"{p} not written" for p in paths if not (d / p).is_file()]

    return check


def absent(*paths: str) -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        return [f"{p} written" for p in paths if os.path.lexists(d / p)]

    return check


def err_has(*needles: str) -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        return [f"stderr lacks {n!r}" for n in needles if n not in o.err_text]

    return check


def all_of(*checks: Callable) -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        found: list[str] = []
        for c in checks:
            found += c(d, o)
        return found

    return check


# ---------------------------------------------------------------------------------- the cases

A = "apply"
B = "batch"
K = "kernel"


def apply_case(
    name: str,
    *options: str,
    src: str = "in/rgb.png",
    out: str = "o.png",
    expect=(0,),
    check=None,
    **kw,
) -> Case:
    return Case(name, [A, "{d}/" + src, "-o", "{d}/" + out, *options], expect, check=check, **kw)


def kernel_cases() -> list[Case]:
    """Specs of the families added since issue 18: bokeh, unsharp, dog, im:."""
    bad = [
        "bokeh:radius=0",
        "bokeh:radius=-3",
        "bokeh:radius=1e9",
        "bokeh:radius=nan",
        "bokeh:radius=4,blades=0",
        "bokeh:radius=4,blades=1",
        "bokeh:radius=4,blades=2",
        "bokeh:radius=4,blades=1e9",
        "bokeh:radius=4,blades=6.5",
        "bokeh:radius=4,rotation=inf",
        "bokeh:radius=4,rotation=nan",
        "bokeh:radius=300",
        "bokeh:radius=4,bogus=1",
        "bokeh:",
        "bokeh:radius=4,radius=5",
        "unsharp:sigma=0",
        "unsharp:sigma=-1",
        "unsharp:sigma=2,amount=inf",
        "unsharp:sigma=2,amount=nan",
        "unsharp:sigma=2,amount=1e39",
        "unsharp:sigma=1e-300",
        "unsharp:sigma=200",
        "unsharp:sigma=2,amount=-1e308",
        "dog:sigma=1,1",
        "dog:sigma=2,1",
        "dog:sigma=1",
        "dog:sigma=0,1",
        "dog:sigma=1,1e-300",
        "dog:sigma=1,300",
        "dog:sigma=nan,2",
        "dog:sigma=1,2,3",
        "im:",
        "im:Gaussian",
        "im:Gaussian:0x0",
        "im:Gaussian:-1x-1",
        "im:Gaussian:0x1e9",
        "im:Gaussian:1e9x1",
        "im:Gaussian:nanxnan",
        "im:Blur:0x2+1e300",
        "im:Comet:0x1e5",
        "im:DoG:0,0,0",
        "im:LoG:0x0",
        "im:Laplacian:99",
        "im:Sobel:nan",
        "im:Disk:0",
        "im:Disk:1e6",
        "im:Ring:3,2",
        "im:Ring:0,0",
        "im:3x3:",
        "im:3x3: 1,2",
        "im:0x0:",
        "im:1x1: nan",
        "im:1x1: inf",
        "im:1x1: 1e39",
        "im:3x3: nan,nan,nan nan,nan,nan nan,nan,nan",
        "im:9999x9999: 1",
        "im:3x3+5+5: 1,1,1 1,1,1 1,1,1",
        "im:3x3+-1+0: 1,1,1 1,1,1 1,1,1",
        "im:Unity",
        "im:Gaussian:0x2;Blur:0x1",
        "im:Gaussian:0x2>",
        "im:Octagon:1e3",
        "im:Chebyshev:3",
        "im:Rectangle:0x0",
        "im:Rectangle:1e6x1",
        "im:Gaussian:0x2\n",
        "im:\x01",
        "matrix:1x1:1\n",
        "box:3\t",
        "gaussian:sigma=2x0",
        "gaussian:sigma=1e-7x1e7",
        "motion:length=1e9,angle=30",
        "disk:radius=256",
        "disk:radius=257",
        "log:sigma=1e-300",
        "sobel:x,size=1e9",
        "matrix:513x1:" + ",".join(["1"] * 513),
        "matrix:514x1:" + ",".join(["1"] * 514),
    ]
    cases = []
    for spec in bad:
        cases.append(Case(f"kernel {spec!r}", [K, spec, "--no-plan"], (0, 2), timeout=60))
        cases.append(
            Case(f"kernel --json --im {spec!r}", [K, spec, "--json", "--im"], (0, 2), timeout=60)
        )
    good = [
        ("bokeh:radius=3,blades=6,rotation=15", 1.0),
        ("unsharp:sigma=1,amount=1.5", 1.0),
        ("dog:sigma=1,2", 1.0),
        ("im:Gaussian:0x1", 1.0),
        ("im:3x3: 1,2,1 2,4,2 1,2,1", 1.0),
        ("im:Comet:0x2", 1.0),
    ]
    for spec, _atol in good:
        for strategy in ("auto", "direct", "fft", "lowrank", "tiled"):
            cases.append(
                apply_case(
                    f"apply {spec} --strategy {strategy}",
                    "--kernel",
                    spec,
                    "--strategy",
                    strategy,
                    "--border",
                    "mirror",
                    expect=(0, 2),
                    check=lambda d, o, s=spec: (
                        []
                        if o.rc == 2
                        else matches("o.png", "in/rgb.png", s, 1.0, border="mirror")(d, o)
                    ),
                )
            )
    cases.append(
        apply_case(
            "bokeh against scipy",
            "--kernel",
            "bokeh:radius=2",
            "--strategy",
            "direct",
            "--border",
            "clamp",
            check=scipy_matches("o.png", "in/rgb.png", "bokeh:radius=2", 1.0),
        )
    )
    return cases


def option_cases() -> list[Case]:
    """--max-tile-side, --channels, --dtype, --tolerance, --strategy fft|lowrank."""
    cases: list[Case] = []
    for value in ["0", "1", "2", "3", "-5", "1e3", "nan", "99999999999999999999999", "abc", ""]:
        cases.append(
            apply_case(
                f"--max-tile-side {value!r}",
                "--kernel",
                "box:3",
                "--max-tile-side",
                value,
                expect=(0, 2),
            )
        )
    for side in ("2", "3", "5", "8"):
        for strategy in ("direct", "tiled", "separable", "transpose", "cpu", "fft", "lowrank"):
            kern = "gaussian:sigma=1.5" if strategy != "tiled" else "box:5"
            cases.append(
                Case(
                    f"--max-tile-side {side} --strategy {strategy}",
                    [
                        A,
                        "{d}/in/f32.npy",
                        "-o",
                        "{d}/t.npy",
                        "--kernel",
                        kern,
                        "--strategy",
                        strategy,
                        "--max-tile-side",
                        side,
                        "--border",
                        "reflect",
                    ],
                    (0, 2),
                    setup=lambda d, k=kern, s=strategy: _untiled(d, k, s),
                    check=lambda d, o, s=strategy: (
                        []
                        if o.rc == 2
                        else (
                            same_as("t.npy", "u.npy")(d, o)
                            if s not in ("fft", "lowrank")
                            else close(d / "t.npy", read(d / "u.npy"), 1e-4)
                        )
                    ),
                )
            )
    cases.append(
        apply_case(
            "--max-tile-side 4 with a 33-tap kernel",
            "--kernel",
            "box:33",
            "--max-tile-side",
            "4",
            "--strategy",
            "tiled",
            expect=(0, 2),
            timeout=120,
        )
    )
    for value in ["", "x", "rgbx", "rr", "RGB", "a", "r", "ga", "rgba", " r", "r,g", "\u0430"]:
        for src in ("in/rgb.png", "in/rgba.png", "in/grey.png"):
            cases.append(
                apply_case(
                    f"--channels {value!r} on {src}",
                    "--kernel",
                    "box:3",
                    "--channels",
                    value,
                    "--strategy",
                    "direct",
                    src=src,
                    expect=(0, 2),
                    check=lambda d, o, v=value, s=src: (
                        [] if o.rc == 2 else _channels_check(d, s, v)
                    ),
                )
            )
    for dtype in [
        "uint8",
        "uint16",
        "float32",
        "float64",
        "int8",
        "float16",
        "uint32",
        "bool",
        "bogus",
        "",
        "UINT8",
        "f4",
        "<f4",
        "object",
    ]:
        for out in ("o.png", "o.tif", "o.npy", "o.jpg", "o.webp", "o.bmp"):
            cases.append(
                apply_case(
                    f"--dtype {dtype!r} -o {out}",
                    "--kernel",
                    "box:3",
                    "--dtype",
                    dtype,
                    out=out,
                    expect=(0, 2),
                    check=lambda d, o, t=dtype, x=out: _dtype_check(d, x, t, o.rc),
                )
            )
    for tol in ["0", "-1", "nan", "inf", "1e-300", "1e300", "1", "0.5", "abc", "1e-5"]:
        cases.append(
            apply_case(
                f"--tolerance {tol} lowrank",
                "--kernel",
                "disk:radius=3",
                "--strategy",
                "lowrank",
                "--tolerance",
                tol,
                expect=(0, 2),
                check=lambda d, o: (
                    [] if o.rc else matches("o.png", "in/rgb.png", "disk:radius=3", 2.0)(d, o)
                ),
            )
        )
        cases.append(
            Case(f"kernel --tolerance {tol}", [K, "disk:radius=3", "--tolerance", tol], (0, 2))
        )
    for strategy in ("fft", "lowrank"):
        for border in (
            "clamp",
            "zero",
            "reflect",
            "mirror",
            "wrap",
            "constant=0.25",
            "constant=1e30",
        ):
            cases.append(
                Case(
                    f"{strategy} --border {border} on float",
                    [
                        A,
                        "{d}/in/f32.npy",
                        "-o",
                        "{d}/o.npy",
                        "--kernel",
                        "disk:radius=9",
                        "--strategy",
                        strategy,
                        "--border",
                        border,
                    ],
                    (0, 2),
                    check=lambda d, o, b=border: (
                        []
                        if o.rc
                        else close(
                            d / "o.npy",
                            reference(d / "in/f32.npy", "disk:radius=9", border=b),
                            1e-4 * max(1.0, abs(float(b.split("=")[1])) if "=" in b else 1.0),
                        )
                    ),
                )
            )
        cases.append(
            Case(
                f"{strategy} on an image with NaN and Inf",
                [
                    A,
                    "{d}/nan.npy",
                    "-o",
                    "{d}/o.npy",
                    "--kernel",
                    "disk:radius=2",
                    "--strategy",
                    strategy,
                ],
                (2, 1, 0),
                check=lambda d, o: (
                    []
                    if o.rc
                    else close(d / "o.npy", reference(d / "nan.npy", "disk:radius=2"), 1e-4)
                ),
            )
        )
        for kern in ("identity", "matrix:1x1:-2", "matrix:2x1:1,1", "box:1x40", "sobel:x"):
            cases.append(
                Case(
                    f"{strategy} with {kern}",
                    [
                        A,
                        "{d}/in/f32.npy",
                        "-o",
                        "{d}/o.npy",
                        "--kernel",
                        kern,
                        "--strategy",
                        strategy,
                        "--border",
                        "wrap",
                    ],
                    (0, 2),
                    check=lambda d, o, k=kern: (
                        []
                        if o.rc
                        else close(d / "o.npy", reference(d / "in/f32.npy", k, border="wrap"), 1e-4)
                    ),
                )
            )
        cases.append(
            apply_case(
                f"{strategy} --convolve with an even kernel",
                "--kernel",
                "matrix:2x2:1,2,3,4",
                "--convolve",
                "--strategy",
                strategy,
                expect=(0, 2),
                check=lambda d, o: (
                    []
                    if o.rc
                    else matches("o.png", "in/rgb.png", "matrix:2x2:1,2,3,4", 1.0, convolve=True)(
                        d, o
                    )
                ),
            )
        )
        cases.append(
            apply_case(
                f"{strategy} on a 1x1 image",
                "--kernel",
                "disk:radius=5",
                "--strategy",
                strategy,
                src="one.png",
                expect=(0, 2),
                setup=_one_pixel,
            )
        )
    return cases


def _one_pixel(d: Path) -> None:
    from PIL import Image

    Image.fromarray(np.full((1, 1, 3), 200, np.uint8)).save(d / "one.png")


def _untiled(d: Path, kernel: str, strategy: str) -> None:
    import blurapp

    res = blurapp.filter_image(
        np.load(d / "in/f32.npy"), kernel, strategy=strategy, border="reflect"
    )
    np.save(d / "u.npy", res.image)


def _channels_check(d: Path, src: str, value: str) -> list[str]:
    want = reference(d / src, "box:3", strategy="cpu", channels=value)
    problems = close(d / "o.png", want, 1.0)
    got, orig = read(d / "o.png"), read(d / src)
    if got.ndim == 3 and value.strip().lower():
        letters = (
            "rgba"[: got.shape[2]] if got.shape[2] > 2 else ("ra" if got.shape[2] == 2 else "r")
        )
        for i, letter in enumerate(letters):
            kept = letter not in value.lower() and not (
                letter == "r" and got.shape[2] <= 2 and any(c in value.lower() for c in "rgb")
            )
            if kept and not np.array_equal(got[..., i], orig[..., i]):
                problems.append(f"channel {letter} not kept as it was")
    return problems


def _dtype_check(d: Path, out: str, dtype: str, rc: int) -> list[str]:
    try:
        want_type = np.dtype(dtype) if dtype else None
    except TypeError:
        want_type = None
    fmt_holds = {
        "o.png": ("uint8", "uint16"),
        "o.jpg": ("uint8",),
        "o.webp": ("uint8",),
        "o.bmp": ("uint8",),
        "o.tif": ("uint8", "uint16", "float32", "float64"),
        "o.npy": ("uint8", "uint16", "float32", "float64"),
    }[out]
    known = ("uint8", "uint16", "float32", "float64")
    valid = want_type is not None and want_type.name in known and want_type.name in fmt_holds
    if rc == 2:
        return [f"--dtype {dtype} refused for {out}, which holds it"] if valid else []
    got = read(d / out)
    if want_type is not None and want_type.name not in fmt_holds:
        return [f"--dtype {dtype} accepted for {out}, which wrote {got.dtype}"]
    if want_type is not None and got.dtype != want_type:
        return [f"--dtype {dtype} wrote {got.dtype}"]
    if out in ("o.jpg", "o.webp"):
        return []
    opts = {"dtype": want_type.name} if want_type is not None else {}
    from blurapp.io import output_dtype

    want = reference(d / "in/rgb.png", "box:3", **opts)
    want = want.astype(
        output_dtype(want.dtype, Path(out).suffix.lstrip(".").replace("tif", "tiff"))
    )
    return close(d / out, want, 1.0 if got.dtype.kind != "f" else 1e-5)


def info_cases() -> list[Case]:
    cases = []
    sizes = [
        "0x0",
        "1x1",
        "-1x5",
        "5x-1",
        "1e3x5",
        "axb",
        "5x5x5",
        "5",
        "",
        "x",
        "1000000000x1000000000",
        "99999999999999999999x2",
        "2x99999999999999999999",
        "4294967296x1",
        "20000x15000",
        "20000×15000",
        " 5x5",
        "5X5",
        "0x5",
        str(2**63) + "x" + str(2**63),
    ]
    for size in sizes:
        cases.append(Case(f"info --size {size!r}", ["info", "--size", size], (0, 2), timeout=60))
    for opts in (
        ["--kernel", "bogus:1"],
        ["--strategy", "nope"],
        ["--max-tile-side", "1"],
        ["--max-tile-side", "0"],
        ["--max-tile-side", "-1"],
        ["--kernel", "box:513", "--max-tile-side", "8"],
        ["--strategy", "cpu"],
        ["--strategy", "fft", "--kernel", "disk:radius=200"],
        ["--kernel", "@/dev/zero"],
        ["--max-tile-side", "abc"],
    ):
        cases.append(
            Case(
                f"info --size 2000x1000 {' '.join(opts)}",
                ["info", "--size", "2000x1000", *opts],
                (0, 2),
                timeout=60,
            )
        )
    for var, values in {
        "BLURAPP_ADAPTER": [
            "",
            "0",
            "1",
            "999",
            "-1",
            "llvmpipe",
            "LLVMPIPE",
            "\n",
            "x" * 5000,
            "0.5",
            "vulkan",
            "*",
        ],
        "BLURAPP_NO_CFFI_SPEEDUP": ["1", "0", "", "yes", "garbage"],
    }.items():
        for value in values:
            cases.append(
                Case(
                    f"info with {var}={value[:20]!r}",
                    ["info"],
                    (0, 1, 2),
                    env={var: value},
                    timeout=60,
                )
            )
            cases.append(
                apply_case(
                    f"apply with {var}={value[:20]!r}",
                    "--kernel",
                    "box:3",
                    "--strategy",
                    "direct",
                    expect=(0, 2),  # an adapter name matching nothing: exit 2 (issue 25)
                    env={var: value},
                    check=lambda d, o: (
                        [] if o.rc else matches("o.png", "in/rgb.png", "box:3")(d, o)
                    ),
                )
            )
    cases.append(
        Case(
            "info with no XDG_RUNTIME_DIR and no HOME",
            ["info"],
            (0, 1),
            unset=("XDG_RUNTIME_DIR", "HOME"),
        )
    )
    cases.append(
        Case(
            "info with XDG_RUNTIME_DIR a file",
            ["info"],
            (0, 1),
            env={"XDG_RUNTIME_DIR": "{d}/keep.txt"},
        )
    )
    cases.append(
        Case(
            "apply with TMPDIR unwritable",
            [A, "{d}/in/rgb.png", "-o", "{d}/o.png", "-k", "box:3"],
            (0, 1),
            env={"TMPDIR": "/proc"},
            unset=("XDG_RUNTIME_DIR",),
        )
    )
    cases.append(
        Case(
            "kernel with LANG=C and PYTHONIOENCODING=ascii",
            [K, "bokeh:radius=2", "--no-plan"],
            (0,),
            env={"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"},
        )
    )
    return cases


def _names_setup(d: Path) -> None:
    """Inputs with odd names, in a folder of their own."""
    src = (d / "in" / "rgb.png").read_bytes()
    odd = d / "odd"
    odd.mkdir()
    for name in [
        b"new\nline.png",
        b"-rf.png",
        b"--help.png",
        b"\xff\xfe.png",
        b"caf\xc3\xa9.png",
        b"cafe\xcc\x81.png",
        b"sp ace.png",
        b"star*.png",
        b"q?.png",
        b"br[1].png",
        b"esc\x1b[31mred.png",
        b"tab\t.png",
        b"back\\slash.png",
        b"x.part.png",
        b".hidden.png",
        b"UPPER.PNG",
        b"dots..png",
        b"\xe2\x80\xae.png",
    ]:
        (odd / os.fsdecode(name)).write_bytes(src)
    (odd / "bad\nfile.png").write_bytes(b"not an image")


def names_cases() -> list[Case]:
    cases = [
        Case(
            "batch a folder of odd names",
            [B, "{d}/odd", "-o", "{d}/oddout", "-k", "box:3", "--quiet", "--report", "{d}/r.json"],
            (1,),
            setup=_names_setup,
            check=all_of(_odd_outputs, _report_valid("r.json", 18)),
        ),
        Case(
            "batch a folder of odd names --format npy --suffix '-x\\n'",
            [
                B,
                "{d}/odd",
                "-o",
                "{d}/oddout",
                "-k",
                "box:3",
                "--quiet",
                "--format",
                "npy",
                "--suffix=-x\n",
            ],
            (1,),
            setup=_names_setup,
        ),
        Case(
            "apply a name with a newline",
            [A, b"{d}/odd/new\nline.png", "-o", b"{d}/o\nut.png", "-k", "box:3"],
            (0,),
            setup=_names_setup,
            check=exists("o\nut.png"),
        ),
        Case(
            "apply a corrupt file named with a newline",
            [A, b"{d}/odd/bad\nfile.png", "-o", "{d}/o.png", "-k", "box:3"],
            (1,),
            setup=_names_setup,
        ),
        Case(
            "apply a non-UTF-8 name",
            [A, b"{d}/odd/\xff\xfe.png", "-o", b"{d}/\xff.png", "-k", "box:3"],
            (0,),
            setup=_names_setup,
            check=exists(os.fsdecode(b"\xff.png")),
        ),
        Case(
            "apply a missing non-UTF-8 name",
            [A, b"{d}/\xff\xfe-missing.png", "-o", "{d}/o.png", "-k", "box:3"],
            (2,),
        ),
        Case(
            "apply an escape sequence name, missing",
            [A, "{d}/\x1b]0;pwned\x07.png", "-o", "{d}/o.png", "-k", "box:3"],
            (2,),
            check=lambda d, o: ["raw escape on stderr"] if b"\x1b" in o.err else [],
        ),
        Case(
            "apply a leading-dash name",
            [A, "{d}/odd/-rf.png", "-o", "{d}/-o.png", "-k", "box:3"],
            (0,),
            setup=_names_setup,
            check=exists("-o.png"),
        ),
        Case(
            "apply -- -rf.png (relative)",
            [A, "-o", "out.png", "-k", "box:3", "--", "-rf.png"],
            (0, 2),
            setup=_names_setup,
        ),
        Case(
            "batch a glob naming a file with brackets",
            [B, "{d}/odd/br[1].png", "-o", "{d}/bo", "-k", "box:3", "--quiet"],
            (0,),
            setup=_names_setup,
            check=exists("bo/br[1].png"),
        ),
        Case(
            "batch a literal star name",
            [B, "{d}/odd/star*.png", "-o", "{d}/so", "-k", "box:3", "--quiet"],
            (0,),
            setup=_names_setup,
            check=exists("so/star*.png"),
        ),
        Case(
            "batch inputs a.png and A.PNG",
            [B, "{d}/odd/UPPER.PNG", "{d}/up/upper.png", "-o", "{d}/uo", "-k", "box:3", "--quiet"],
            (0, 2),
            setup=lambda d: (
                _names_setup(d),
                (d / "up").mkdir(),
                shutil.copy(d / "in/rgb.png", d / "up/upper.png"),
            ),
        ),
        Case(
            "apply onto a 255-byte name",
            [A, "{d}/in/rgb.png", "-o", "{d}/" + "n" * 251 + ".png", "-k", "box:3"],
            (0,),
        ),
        Case(
            "apply onto a 256-byte name",
            [A, "{d}/in/rgb.png", "-o", "{d}/" + "n" * 252 + ".png", "-k", "box:3"],
            (2,),
        ),
        Case(
            "apply onto a 4097-byte path",
            [
                A,
                "{d}/in/rgb.png",
                "-o",
                "{d}/" + "/".join(["d" * 200] * 21) + "/o.png",
                "-k",
                "box:3",
            ],
            (2,),
        ),
        Case(
            "report named with a newline",
            [
                B,
                "{d}/in/rgb.png",
                "-o",
                "{d}/ro",
                "-k",
                "box:3",
                "--quiet",
                "--report",
                "{d}/r\n.json",
            ],
            (0,),
            check=_report_valid("r\n.json", 1),
        ),
        Case(
            "report name ending .part like a temporary",
            [
                B,
                "{d}/in/rgb.png",
                "-o",
                "{d}/out2",
                "-k",
                "box:3",
                "--quiet",
                "--report",
                "{d}/out2/.rgb.png.0123abcd.part",
            ],
            (0, 2),
        ),
    ]
    return cases


def _odd_outputs(d: Path, o: Outcome) -> list[str]:
    problems = []
    lines = o.err_text.strip().splitlines()
    if len(lines) != 1:
        problems.append(f"one bad file made {len(lines)} stderr lines")
    if b"\x1b" in o.err:
        problems.append("a raw escape sequence on stderr")
    written = sorted(os.listdir(d / "oddout"))
    if len(written) != 17:
        problems.append(f"{len(written)} outputs, expected 17: {written}")
    return problems


def _report_valid(name: str, rows: int) -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        data = json.loads((d / name).read_bytes())
        if len(data["files"]) != rows:
            return [f"report has {len(data['files'])} rows, expected {rows}"]
        return []

    return check


def special_cases() -> list[Case]:
    cases = []
    for target in [
        "/dev/null",
        "/dev/full",
        "/dev/stdout",
        "/dev/zero",
        "/proc/self/fd/1",
        "/dev/tty",
        "/",
    ]:
        cases.append(
            apply_case(
                f"apply -o {target}", "-k", "box:3", out="../" * 12 + target[1:], expect=(2,)
            )
        )
        cases.append(
            Case(
                f"batch --report {target}",
                [
                    B,
                    "{d}/in/rgb.png",
                    "-o",
                    "{d}/ro",
                    "-k",
                    "box:3",
                    "--quiet",
                    "--report",
                    target,
                    "--overwrite",
                ],
                (2,),
            )
        )
        cases.append(
            Case(
                f"bench --json {target}",
                [
                    "bench",
                    "--size",
                    "8x8",
                    "--radii",
                    "1",
                    "--strategies",
                    "cpu",
                    "--repeat",
                    "1",
                    "--warmup",
                    "0",
                    "--quiet",
                    "--json",
                    target,
                    "--overwrite",
                ],
                (2,),
            )
        )
        cases.append(
            Case(
                f"conv run -o {target}",
                [
                    "conv",
                    "run",
                    "--input",
                    "{d}/conv/x.npy",
                    "--weights",
                    "{d}/conv/w.npy",
                    "-o",
                    target,
                    "--overwrite",
                ],
                (2,),
            )
        )
    for source in [
        "/dev/zero",
        "/dev/stdin",
        "/dev/urandom",
        "/proc/self/status",
        "/",
        "/dev/null",
        "/proc/kcore",
    ]:
        cases.append(
            Case(
                f"apply {source}",
                [A, source, "-o", "{d}/o.png", "-k", "box:3"],
                (1, 2),
                timeout=30,
                stdin=b"\x89PNG" * 100,
            )
        )
        cases.append(
            Case(
                f"batch {source}",
                [B, source, "-o", "{d}/bo", "-k", "box:3", "--quiet"],
                (1, 2),
                timeout=30,
            )
        )
        cases.append(
            Case(
                f"conv run --input {source}",
                [
                    "conv",
                    "run",
                    "--input",
                    source,
                    "--weights",
                    "{d}/conv/w.npy",
                    "-o",
                    "{d}/y.npy",
                ],
                (1, 2),
                timeout=30,
            )
        )
        cases.append(
            Case(
                f"conv run --weights {source}",
                [
                    "conv",
                    "run",
                    "--input",
                    "{d}/conv/x.npy",
                    "--weights",
                    source,
                    "-o",
                    "{d}/y.npy",
                ],
                (1, 2),
                timeout=30,
            )
        )
    cases.append(
        Case(
            "a socket as an image",
            [A, "{d}/sock.png", "-o", "{d}/o.png", "-k", "box:3"],
            (1, 2),
            setup=_socket,
        )
    )
    cases.append(
        Case(
            "a socket in a batch folder",
            [B, "{d}/sockdir", "-o", "{d}/so", "-k", "box:3", "--quiet"],
            (1,),
            setup=_socket,
        )
    )
    cases.append(
        Case(
            "a dangling link as output",
            [A, "{d}/in/rgb.png", "-o", "{d}/dl.png", "-k", "box:3"],
            (2,),
            setup=lambda d: os.symlink(d / "nowhere", d / "dl.png"),
        )
    )
    cases.append(
        Case(
            "a link to the input as output, --overwrite",
            [A, "{d}/in/rgb.png", "-o", "{d}/l.png", "-k", "box:3", "--overwrite"],
            (2,),
            setup=lambda d: os.symlink(d / "in/rgb.png", d / "l.png"),
        )
    )
    cases.append(
        Case(
            "a hard link of the input as output, --overwrite",
            [A, "{d}/in/rgb.png", "-o", "{d}/h.png", "-k", "box:3", "--overwrite"],
            (2,),
            setup=lambda d: os.link(d / "in/rgb.png", d / "h.png"),
        )
    )
    cases.append(
        Case(
            "batch -o the input folder --overwrite",
            [B, "{d}/in", "-o", "{d}/in", "-k", "box:3", "--overwrite", "--quiet"],
            (2,),
        )
    )
    cases.append(
        Case("batch -o a file", [B, "{d}/in/rgb.png", "-o", "{d}/keep.txt", "-k", "box:3"], (2,))
    )
    cases.append(
        Case(
            "batch -o a link to a file",
            [B, "{d}/in/rgb.png", "-o", "{d}/lk", "-k", "box:3"],
            (2,),
            setup=lambda d: os.symlink(d / "keep.txt", d / "lk"),
        )
    )
    cases.append(
        Case(
            "batch -o a link loop",
            [B, "{d}/in/rgb.png", "-o", "{d}/loop/x", "-k", "box:3"],
            (2,),
            setup=lambda d: os.symlink(d / "loop", d / "loop"),
        )
    )
    cases.append(
        Case(
            "batch into an existing output without --overwrite",
            [B, "{d}/in/rgb.png", "-o", "{d}/out", "-k", "box:3"],
            (2,),
        )
    )
    cases.append(
        Case(
            "batch --report onto keep.txt --skip-existing",
            [
                B,
                "{d}/in/rgb.png",
                "-o",
                "{d}/out",
                "-k",
                "box:3",
                "--skip-existing",
                "--report",
                "{d}/keep.txt",
            ],
            (2,),
        )
    )
    cases.append(
        Case(
            "batch --report onto an output it skips",
            [
                B,
                "{d}/in/rgb.png",
                "-o",
                "{d}/out",
                "-k",
                "box:3",
                "--skip-existing",
                "--report",
                "{d}/out/rgb.png",
            ],
            (2,),
        )
    )
    cases.append(
        Case(
            "batch --report onto an input, --overwrite",
            [
                B,
                "{d}/in",
                "-o",
                "{d}/ro",
                "-k",
                "box:3",
                "--overwrite",
                "--report",
                "{d}/in/rgb.png",
            ],
            (2,),
        )
    )
    cases.append(
        Case(
            "batch --report onto a future output, --overwrite",
            [
                B,
                "{d}/in",
                "-o",
                "{d}/ro",
                "-k",
                "box:3",
                "--overwrite",
                "--report",
                "{d}/ro/rgb.png",
            ],
            (2,),
        )
    )
    cases.append(
        Case(
            "batch --report in a missing folder",
            [B, "{d}/in/rgb.png", "-o", "{d}/ro", "-k", "box:3", "--report", "{d}/nope/r.json"],
            (2,),
        )
    )
    cases.append(
        Case(
            "batch --report '' ",
            [B, "{d}/in/rgb.png", "-o", "{d}/ro", "-k", "box:3", "--report", ""],
            (0, 2),
        )
    )
    cases.append(
        Case(
            "batch --report a folder",
            [B, "{d}/in/rgb.png", "-o", "{d}/ro", "-k", "box:3", "--report", "{d}/conv"],
            (2,),
        )
    )
    cases.append(
        Case(
            "batch --report in a read-only folder (root ignores modes)",
            [
                B,
                "{d}/in/rgb.png",
                "-o",
                "{d}/ro",
                "-k",
                "box:3",
                "--report",
                "{d}/ro-dir/r.json",
                "--quiet",
            ],
            (0, 2),
            setup=lambda d: ((d / "ro-dir").mkdir(), os.chmod(d / "ro-dir", 0o500)),
        )
    )
    cases.append(
        Case(
            "batch --report in the output folder, twice (--skip-existing)",
            [
                B,
                "{d}/in/rgb.png",
                "-o",
                "{d}/ro",
                "-k",
                "box:3",
                "--quiet",
                "--skip-existing",
                "--report",
                "{d}/ro/r.json",
            ],
            (0,),
            setup=_ran_once,
            may_change=("ro",),
        )
    )
    return cases


def _ran_once(d: Path) -> None:
    (d / "ro").mkdir()
    shutil.copy(d / "in/rgb.png", d / "ro/rgb.png")


def _socket(d: Path) -> None:
    import socket

    (d / "sockdir").mkdir()
    shutil.copy(d / "in/rgb.png", d / "sockdir/ok.png")
    for path in (d / "sock.png", d / "sockdir/s.png"):
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))  # left bound: the file stays a socket


def scheduler_cases() -> list[Case]:
    cases = []
    for value in [
        "local:0",
        "local:-1",
        "local:abc",
        "local:",
        "local:1e9",
        "local:99999",
        ":8786",
        "host:0",
        "host:99999",
        "host:-1",
        "256.256.256.256:1",
        "localhost:1",
        "tcp://localhost:1",
        "inproc://x",
        "local",
        "",
        "[::1]:1",
        "local:1 ",
    ]:
        cases.append(
            Case(
                f"--scheduler {value!r}",
                [
                    B,
                    "{d}/in/rgb.png",
                    "-o",
                    "{d}/so",
                    "-k",
                    "box:3",
                    "--quiet",
                    "--scheduler",
                    value,
                ],
                (0, 2),
                timeout=120,
            )
        )
    cases.append(
        Case(
            "--scheduler local:1 with a bad file and a report",
            [
                B,
                "{d}/in",
                "{d}/bad.png",
                "-o",
                "{d}/so",
                "-k",
                "box:3",
                "--quiet",
                "--scheduler",
                "local:1",
                "--report",
                "{d}/r.json",
            ],
            (1,),
            timeout=180,
            check=_report_valid("r.json", 12),
        )
    )
    for sig in (signal.SIGINT, signal.SIGTERM):
        cases.append(
            Case(
                f"--scheduler local:1 and {sig.name} after 6 s",
                [
                    B,
                    "{d}/many",
                    "-o",
                    "{d}/so",
                    "-k",
                    "box:9",
                    "--quiet",
                    "--scheduler",
                    "local:1",
                    "--report",
                    "{d}/r.json",
                ],
                (0, 130),
                setup=lambda d: _many(d, 40),
                timeout=180,
                signal_after=(sig, 6.0),
                check=_interrupted_batch("so", "many", "box:9"),
            )
        )
    return cases


def _many(d: Path, count: int, side: int = 96) -> None:
    from PIL import Image

    (d / "many").mkdir()
    for i in range(count):
        Image.fromarray(_noise((side, side, 3), seed=100 + i)).save(
            d / f"many/m{i:03d}.png", compress_level=1
        )


def _interrupted_batch(out: str, src: str, kernel: str, report: str = "r.json") -> Callable:
    def check(d: Path, o: Outcome) -> list[str]:
        problems = []
        written = sorted(os.listdir(d / out)) if (d / out).is_dir() else []
        for name in written:
            problems += close(d / out / name, reference(d / src / name, kernel), 1.0)
        if (d / out).is_dir() and not (d / report).is_file():
            problems.append("no report after the interrupt")
        elif (d / report).is_file():
            data = json.loads((d / report).read_text())
            ok = sorted(Path(r["output"]).name for r in data["files"] if r["status"] == "ok")
            if ok != written:
                problems.append(f"report says {len(ok)} written, {len(written)} are")
        return problems

    return check


def interrupt_cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(16):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        delay = rng.uniform(0.2, 3.0)
        cases.append(
            Case(
                f"batch {sig.name} after {delay:.2f} s (#{i})",
                [
                    B,
                    "{d}/many",
                    "-o",
                    "{d}/mo",
                    "-k",
                    "box:9",
                    "--quiet",
                    "--jobs",
                    "2",
                    "--report",
                    "{d}/r.json",
                ],
                (0, 130),
                setup=lambda d: _many(d, 30),
                signal_after=(sig, delay),
                check=_interrupted_batch("mo", "many", "box:9"),
            )
        )
    for i in range(8):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        delay = rng.uniform(0.3, 2.5)
        cases.append(
            Case(
                f"apply {sig.name} after {delay:.2f} s (#{i})",
                [
                    A,
                    "{d}/big.png",
                    "-o",
                    "{d}/o.png",
                    "-k",
                    "gaussian:sigma=3",
                    "--strategy",
                    "cpu",
                ],
                (0, 130),
                setup=_big_png,
                signal_after=(sig, delay),
            )
        )
    for i in range(4):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        delay = rng.uniform(0.5, 4.0)
        cases.append(
            Case(
                f"bench --json {sig.name} after {delay:.2f} s (#{i})",
                [
                    "bench",
                    "--size",
                    "64x64",
                    "--radii",
                    "1,2,3",
                    "--strategies",
                    "cpu,direct",
                    "--repeat",
                    "3",
                    "--quiet",
                    "--json",
                    "{d}/b.json",
                    "--csv",
                    "{d}/b.csv",
                ],
                (0, 130),
                signal_after=(sig, delay),
            )
        )
        cases.append(
            Case(
                f"conv run {sig.name} after {delay:.2f} s (#{i})",
                [
                    "conv",
                    "run",
                    "--input",
                    "{d}/cx.npy",
                    "--weights",
                    "{d}/cw.npy",
                    "-o",
                    "{d}/y.npy",
                    "--check",
                ],
                (0, 130),
                setup=_big_conv,
                signal_after=(sig, delay),
            )
        )
    for i in range(3):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        cases.append(
            Case(
                f"kernel {sig.name} (#{i})",
                [K, "disk:radius=200", "--json"],
                (0, 130),
                signal_after=(sig, rng.uniform(0.2, 1.0)),
            )
        )
    for sig in (signal.SIGINT, signal.SIGTERM):  # while the temporary file is being written
        cases.append(
            Case(
                f"apply {sig.name} while writing",
                [
                    A,
                    "{d}/big.png",
                    "-o",
                    "{d}/o.png",
                    "-k",
                    "box:3",
                    "--strategy",
                    "cpu",
                    "--compress-level",
                    "9",
                ],
                (130,),
                setup=_big_png,
                signal_when=(sig, ".o.png.*.part"),
            )
        )
        cases.append(
            Case(
                f"batch {sig.name} while writing",
                [
                    B,
                    "{d}/big.png",
                    "-o",
                    "{d}/wo",
                    "-k",
                    "box:3",
                    "--strategy",
                    "cpu",
                    "--compress-level",
                    "9",
                    "--report",
                    "{d}/r.json",
                    "--quiet",
                ],
                (130,),
                setup=_big_png,
                signal_when=(sig, "wo/.big.png.*.part"),
            )
        )
        cases.append(
            Case(
                f"batch {sig.name} with the report reserved",
                [B, "{d}/many", "-o", "{d}/mo", "-k", "box:9", "--quiet", "--report", "{d}/r.json"],
                (130,),
                setup=lambda d: _many(d, 30),
                signal_when=(sig, ".r.json.*.part"),
                check=_interrupted_batch("mo", "many", "box:9"),
            )
        )
        cases.append(
            Case(
                f"conv run {sig.name} while writing",
                [
                    "conv",
                    "run",
                    "--input",
                    "{d}/cx.npy",
                    "--weights",
                    "{d}/cw.npy",
                    "-o",
                    "{d}/y.npy",
                ],
                (0, 130),
                setup=_big_conv,
                signal_when=(sig, ".y.npy.*.part"),
            )
        )
    return cases


def _big_png(d: Path) -> None:
    from PIL import Image

    Image.fromarray(_noise((1200, 1600, 3), seed=50)).save(d / "big.png", compress_level=1)


def _big_conv(d: Path) -> None:
    np.save(d / "cx.npy", _noise((1, 16, 64, 64), np.float32, 51))
    np.save(d / "cw.npy", _noise((16, 16, 3, 3), np.float32, 52))


def conv_cases() -> list[Case]:
    def arrays(**named: np.ndarray) -> Callable[[Path], None]:
        def setup(d: Path) -> None:
            for name, arr in named.items():
                np.save(d / f"{name}.npy", arr, allow_pickle=True)

        return setup

    x, w = np.ones((1, 2, 6, 6), np.float32), np.ones((3, 2, 3, 3), np.float32)
    variants = {
        "empty input": arrays(cx=np.ones((1, 2, 0, 6), np.float32), cw=w),
        "empty weights": arrays(cx=x, cw=np.ones((0, 2, 3, 3), np.float32)),
        "3-d input": arrays(cx=np.ones((2, 6, 6), np.float32), cw=w),
        "5-d input": arrays(cx=np.ones((1, 1, 2, 6, 6), np.float32), cw=w),
        "channel mismatch": arrays(cx=x, cw=np.ones((3, 5, 3, 3), np.float32)),
        "kernel larger than input": arrays(cx=x, cw=np.ones((3, 2, 9, 9), np.float32)),
        "NaN weights": arrays(cx=x, cw=np.full((3, 2, 3, 3), np.nan, np.float32)),
        "inf input": arrays(cx=np.full((1, 2, 6, 6), np.inf, np.float32), cw=w),
        "float64 input": arrays(cx=x.astype(np.float64), cw=w),
        "int64 input": arrays(cx=x.astype(np.int64), cw=w),
        "bool input": arrays(cx=x.astype(bool), cw=w),
        "complex input": arrays(cx=x.astype(np.complex64), cw=w),
        "object input": arrays(cx=np.array([[1, "a"]], dtype=object), cw=w),
        "big-endian input": arrays(cx=x.astype(">f4"), cw=w),
        "huge declared input": None,
        "1e39 weights": arrays(cx=x, cw=np.full((3, 2, 3, 3), 1e39)),
        "all-zero int8": arrays(cx=np.zeros((1, 2, 6, 6), np.float32), cw=np.zeros_like(w)),
    }
    cases = []
    for label, setup in variants.items():
        if setup is None:
            setup = _huge_npy
        for dtype in ("float32", "int8", "fp16"):
            cases.append(
                Case(
                    f"conv run {label} --dtype {dtype}",
                    [
                        "conv",
                        "run",
                        "--input",
                        "{d}/cx.npy",
                        "--weights",
                        "{d}/cw.npy",
                        "-o",
                        "{d}/y.npy",
                        "--dtype",
                        dtype,
                        "--check",
                    ],
                    (0, 1, 2),
                    setup=setup,
                    timeout=90,
                )
            )
    base = [
        "conv",
        "run",
        "--input",
        "{d}/conv/x.npy",
        "--weights",
        "{d}/conv/w.npy",
        "-o",
        "{d}/y.npy",
    ]
    for opts in (
        ["--stride", "0"],
        ["--stride", "-1"],
        ["--dilation", "0"],
        ["--dilation", "99999"],
        ["--padding", "-1"],
        ["--padding", "99999"],
        ["--padding", "5000"],
        ["--groups", "0"],
        ["--groups", "3"],
        ["--groups", "2"],
        ["--groups", "-2"],
        ["--winograd-tile", "3"],
        ["--winograd-tile", "0"],
        ["--strategy", "winograd", "--dilation", "2"],
        ["--strategy", "winograd", "--stride", "2"],
        ["--bias", "{d}/conv/w.npy"],
        ["--bias", "{d}/conv/b.npy", "--dtype", "int8"],
        ["--layout", "nhwc"],
        ["--strategy", "im2col", "--padding", "3000"],
        ["--bias", "{d}/missing.npy"],
        ["--timing", "--json", "--check"],
    ):
        cases.append(Case(f"conv run {' '.join(opts)}", [*base, *opts], (0, 1, 2), timeout=120))
    cases.append(
        Case("conv run -o the input", [*base[:6], "-o", "{d}/conv/x.npy", "--overwrite"], (2,))
    )
    cases.append(Case("conv run -o an existing file", [*base[:6], "-o", "{d}/keep.txt"], (2,)))
    cases.append(Case("conv run -o a missing folder", [*base[:6], "-o", "{d}/no/y.npy"], (2,)))
    cases.append(Case("conv run -o without .npy", [*base[:6], "-o", "{d}/y.png"], (0, 2)))
    for opts in (
        ["--tile", "0x0"],
        ["--tile", "1e9x1e9"],
        ["--tile", "999999x999999"],
        ["--tile", "axb"],
        ["--cin-block", "0"],
        ["--cin-block", "-1"],
        ["--cout-block", "99999999"],
        ["--kernel", "0"],
        ["--kernel", "99999"],
        ["--budget", "0"],
        ["--budget", "-1"],
        ["--budget", "1e20"],
        ["--stride", "0"],
        ["--dilation", "0"],
        ["--size", "0x0"],
        ["--size", "99999999x99999999"],
        ["--cin", "0"],
        ["--padding", "-3"],
    ):
        args = {"--tile": "8x8", "--cin-block": "4", "--cout-block": "4", "--kernel": "3"}
        extra = opts
        if opts[0] in args:
            args[opts[0]] = opts[1]
            extra = []
        argv = ["conv", "plan", *(t for kv in args.items() for t in kv), *extra]
        cases.append(Case(f"conv plan {' '.join(opts)}", argv, (0, 2), timeout=60))
    for opts in (
        ["--shape", "1,1,1,1", "--cout", "0"],
        ["--shape", "0,0,0,0", "--cout", "1"],
        ["--shape", "1,3,100000,100000", "--cout", "64"],
        ["--shape", "1,2,3", "--cout", "1"],
        ["--shape", "a,b,c,d", "--cout", "1"],
        ["--shape", "1,64,512,512", "--cout", "512", "--kernel", "7"],
        ["--shape", "1,3,8,8", "--cout", "4", "--kernel", "99"],
        ["--shape", "-1,3,8,8", "--cout", "4"],
    ):
        for extra in ([], ["--no-run"]):
            cases.append(
                Case(
                    f"conv layout {' '.join(opts + extra)}",
                    ["conv", "layout", *opts, *extra, "--repeats", "1"],
                    (0, 2),
                    timeout=120,
                )
            )
    for layer in [
        "1,1,1,1,1,1",
        "0,0,0,0,0,0",
        "1,3,100000,100000,64,3",
        "1,2",
        "a,b,c,d,e,f",
        "1,3,8,8,4,3,0",
        "1,3,8,8,4,3,1,-1",
        "1,3,8,8,4,3,1,1,5",
        "1,4096,4096,4096,4096,3",
    ]:
        cases.append(
            Case(
                f"conv bench --layer {layer}",
                [
                    "conv",
                    "bench",
                    "--layer",
                    layer,
                    "--repeat",
                    "1",
                    "--no-peer",
                    "--strategy",
                    "direct",
                ],
                (0, 2),
                timeout=120,
            )
        )
    return cases


def _huge_npy(d: Path) -> None:
    """A .npy whose header declares 2**40 float32 elements over a few bytes of data."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1048576, 524288), }"
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
    (d / "cx.npy").write_bytes(data + b"\0" * 64)
    np.save(d / "cw.npy", np.ones((3, 2, 3, 3), np.float32))


def tiff_cases() -> list[Case]:
    cases = []
    for src in ("in/big.tif", "in/bigf.tif", "in/u16.tif", "in/f32.tif"):
        for out in ("o.tif", "o.png", "o.npy"):
            cases.append(
                apply_case(
                    f"{src} -> {out}",
                    "--kernel",
                    "gaussian:sigma=1",
                    "--border",
                    "wrap",
                    src=src,
                    out=out,
                    expect=(0, 1),
                    check=lambda d, o, s=src, x=out: [] if o.rc else _tiff_check(d, s, x),
                )
            )
    for label, maker in _hostile_tiffs().items():
        cases.append(
            Case(
                f"hostile TIFF: {label}",
                [A, "{d}/h.tif", "-o", "{d}/o.tif", "-k", "box:3"],
                (1,),
                setup=maker,
                timeout=60,
            )
        )
        cases.append(
            Case(
                f"hostile TIFF in a batch: {label}",
                [B, "{d}/h.tif", "{d}/in/rgb.png", "-o", "{d}/ho", "-k", "box:3", "--quiet"],
                (1,),
                setup=maker,
                timeout=60,
                check=exists("ho/rgb.png"),
            )
        )
    cases.append(
        Case(
            "batch --format tiff of f32.tif and f32.npy",
            [B, "{d}/in", "-o", "{d}/to", "-k", "box:3", "--format", "tiff", "--quiet"],
            (2,),
            check=err_has("collision"),
        )
    )
    cases.append(
        Case(
            "batch --format tiff of every TIFF and PNG",
            [
                B,
                "{d}/in/*.tif",
                "{d}/in/*.png",
                "-o",
                "{d}/to",
                "-k",
                "box:3",
                "--format",
                "tiff",
                "--quiet",
            ],
            (0,),
            check=lambda d, o: [
                f"{n} missing"
                for n in ("rgb.tiff", "big.tiff", "f32.tiff", "grey.tiff")
                if not (d / "to" / n).exists()
            ],
        )
    )
    return cases


def _tiff_check(d: Path, src: str, out: str) -> list[str]:
    want = reference(d / src, "gaussian:sigma=1", border="wrap")
    from blurapp.io import output_dtype

    fmt = {"o.tif": "tiff", "o.png": "png", "o.npy": "npy"}[out]
    want_type = output_dtype(want.dtype, fmt)
    got = read(d / out)
    if got.dtype != want_type:
        return [f"{src} -> {out} wrote {got.dtype}, expected {want_type}"]
    if want.dtype.kind == "f" and want_type.kind != "f":
        return []  # float into an integer format: checked elsewhere
    return close(d / out, want.astype(want_type), 1.0 if want_type.kind != "f" else 1e-5)


def _hostile_tiffs() -> dict[str, Callable[[Path], None]]:
    import struct

    def bigtiff(
        width: int,
        height: int,
        spp: int = 3,
        bits: int = 8,
        offset: int = 64,
        count: int = 16,
        tiles: tuple[int, int] | None = None,
        pages: int = 1,
    ):
        def make(d: Path) -> None:
            entries = [
                (256, 16, width),
                (257, 16, height),
                (258, 3, bits),
                (259, 3, 1),
                (262, 3, 2 if spp >= 3 else 1),
                (277, 3, spp),
                (284, 3, 1),
            ]
            if tiles:
                entries += [
                    (322, 16, tiles[0]),
                    (323, 16, tiles[1]),
                    (324, 16, offset),
                    (325, 16, count),
                ]
            else:
                entries += [(273, 16, offset), (278, 16, height), (279, 16, count)]
            entries.sort()
            body = bytearray(b"II+\x00\x08\x00\x00\x00" + struct.pack("<Q", 16))
            for page in range(pages):
                start = len(body)
                body += struct.pack("<Q", len(entries))
                for tag, typ, value in entries:
                    body += struct.pack("<HHQQ", tag, typ, 1, value)
                nxt = start + 8 + 20 * len(entries) + 8 if page + 1 < pages else 0
                body += struct.pack("<Q", nxt)
            body += b"\x55" * 64
            (d / "h.tif").write_bytes(bytes(body))

        return make

    return {
        "BigTIFF 2^31 x 2^31": bigtiff(2**31, 2**31),
        "BigTIFF 2^40 wide": bigtiff(2**40, 1),
        "BigTIFF 15000x15000 in 16 bytes": bigtiff(15000, 15000),
        "BigTIFF 4096x4096 RGBA16": bigtiff(4096, 4096, spp=4, bits=16),
        "BigTIFF tiles of 2^30": bigtiff(64, 64, tiles=(2**30, 2**30)),
        "BigTIFF strip past the end": bigtiff(8, 8, offset=2**62, count=2**40),
        "BigTIFF 9 samples": bigtiff(8, 8, spp=9),
        "BigTIFF 0x0": bigtiff(0, 0),
        "BigTIFF 1000 pages": bigtiff(4, 4, pages=1000),
        "BigTIFF IFD loop": _ifd_loop,
        "BigTIFF truncated header": lambda d: (d / "h.tif").write_bytes(b"II+\x00\x08\x00\x00"),
    }


def _ifd_loop(d: Path) -> None:
    import struct

    body = bytearray(b"II+\x00\x08\x00\x00\x00" + struct.pack("<Q", 16))
    body += struct.pack("<Q", 1) + struct.pack("<HHQQ", 256, 16, 1, 8) + struct.pack("<Q", 16)
    (d / "h.tif").write_bytes(bytes(body))


def size_cases() -> list[Case]:
    cases = []
    for size in [
        "0x0",
        "1x1",
        "-1x1",
        "65536x65536",
        "100000x1",
        "1x100000000",
        "abc",
        "30000x30000",
        "5x5x5",
    ]:
        cases.append(
            Case(
                f"bench --size {size}",
                [
                    "bench",
                    "--size",
                    size,
                    "--radii",
                    "1",
                    "--strategies",
                    "cpu",
                    "--repeat",
                    "1",
                    "--warmup",
                    "0",
                    "--quiet",
                ],
                (0, 2),
                timeout=120,
            )
        )
    for opts in (
        ["--radii", "0"],
        ["--radii", "-1"],
        ["--radii", "257"],
        ["--radii", "1e3"],
        ["--radii", ""],
        ["--radii", "1,,2"],
        ["--repeat", "0"],
        ["--repeat", "-1"],
        ["--warmup", "-1"],
        ["--strategies", ""],
        ["--strategies", "auto"],
        ["--strategies", "cpu,cpu"],
        ["--tolerance", "nan"],
        ["--max-tile-side", "1"],
        ["--max-tile-side", "3"],
        ["--border", "constant=1e300"],
        ["--channels", "0"],
        ["--family", "disk", "--strategies", "separable"],
        ["--plot", "{d}/p.png"],
        ["--csv", "{d}/keep.txt"],
        ["--json", "{d}/in/rgb.png", "--overwrite"],
    ):
        cases.append(
            Case(
                f"bench {' '.join(opts)}",
                [
                    "bench",
                    "--size",
                    "16x16",
                    "--radii",
                    "1",
                    "--strategies",
                    "cpu,direct",
                    "--repeat",
                    "1",
                    "--warmup",
                    "0",
                    "--quiet",
                    *opts,
                ],
                (0, 2),
                timeout=120,
                quiet_ok=False,
                may_change=("in/rgb.png",) if "--overwrite" in opts else (),
            )
        )
    for mp in ["0", "1e-9", "0.000001", "-1", "1e308", "nan", "inf"]:
        cases.append(
            apply_case(
                f"--max-megapixels {mp}", "-k", "box:3", "--max-megapixels", mp, expect=(0, 1, 2)
            )
        )
    cases.append(
        Case(
            "a PNG declaring 60000x60000",
            [A, "{d}/bomb.png", "-o", "{d}/o.png", "-k", "box:3", "--max-megapixels", "5000"],
            (1,),
            setup=_png_bomb,
            timeout=60,
        )
    )
    cases.append(
        Case(
            "a .npy declaring 2^40 pixels",
            [A, "{d}/cx.npy", "-o", "{d}/o.npy", "-k", "box:3"],
            (1,),
            setup=_huge_npy,
        )
    )
    cases.append(
        Case(
            "a 20000x1 row, a 1x20000 column",
            [
                B,
                "{d}/row.npy",
                "{d}/col.npy",
                "-o",
                "{d}/rc",
                "-k",
                "gaussian:sigma=3",
                "--quiet",
                "--strategy",
                "separable",
            ],
            (0,),
            setup=_row_col,
            timeout=120,
            check=lambda d, o: close(
                d / "rc/row.npy", reference(d / "row.npy", "gaussian:sigma=3"), 1e-5
            ),
        )
    )
    return cases


def _png_bomb(d: Path) -> None:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", 60000, 60000, 8, 6, 0, 0, 0)
    idat = zlib.compress(b"\0" * 60001 * 4, 9)
    (d / "bomb.png").write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def _row_col(d: Path) -> None:
    np.save(d / "row.npy", _noise((1, 20000), np.float32, 60))
    np.save(d / "col.npy", _noise((20000, 1), np.float32, 61))


def _stream_tiff(d: Path) -> None:
    """A 700×900 RGB TIFF (tiled, deflate) that runs in tiles with --max-tile-side 256, and so
    streams region by region into a tiled TIFF."""
    import tifffile

    tifffile.imwrite(
        d / "s.tif", _noise((700, 900, 3), seed=70), photometric="rgb", tile=(128, 128),
        compression="zlib",
    )  # fmt: skip


def stream_cases(seed: int) -> list[Case]:
    """The streamed TIFF path (large TIFFs, or any TIFF that runs in tiles)."""
    rng = random.Random(seed + 1)
    base = [A, "{d}/s.tif", "-o", "{d}/so.tif", "--max-tile-side", "256"]
    cases = []
    for kern, opts in [
        ("gaussian:sigma=2", ["--border", "wrap"]),
        ("box:5", ["--strategy", "direct", "--border", "mirror"]),
        ("disk:radius=4", ["--strategy", "fft", "--border", "reflect"]),
        ("disk:radius=4", ["--strategy", "lowrank"]),
        ("sobel:x", ["--range", "offset", "--strategy", "tiled"]),
        ("box:3", ["--channels", "g"]),
        ("box:3", ["--dtype", "float32"]),
        ("box:3", ["--dtype", "uint16", "--linear"]),
        ("matrix:2x2:1,2,3,4", ["--convolve", "--strategy", "cpu"]),
        ("box:3", ["--border", "constant=0.5", "--compress-level", "0"]),
    ]:
        options = dict(zip(opts[::2], opts[1::2], strict=False))
        spec_kw = {
            "border": options.get("--border", "clamp"),
            "range_mode": options.get("--range", "clamp"),
            "channels": options.get("--channels"),
            "dtype": options.get("--dtype"),
            "linear": "--linear" in opts,
            "convolve": "--convolve" in opts,
        }
        spec_kw = {k: v for k, v in spec_kw.items() if v not in (None, False)}
        atol = 1e-4 if "float32" in opts else (2.0 if "lowrank" in opts or "fft" in opts else 1.0)
        cases.append(
            Case(
                f"stream {kern} {' '.join(opts)}",
                [*base, "--kernel", kern, *[o for o in opts if o != "--linear"],
                 *(["--linear"] if "--linear" in opts else [])],
                (0,),
                setup=_stream_tiff,
                timeout=180,
                check=lambda d, o, k=kern, kw=spec_kw, a=atol: close(
                    d / "so.tif", reference(d / "s.tif", k, **kw), a
                ),
            )
        )  # fmt: skip
    for i in range(6):
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        cases.append(
            Case(
                f"stream {sig.name} while writing (#{i})",
                [*base, "--kernel", "gaussian:sigma=3", "--strategy", "direct"],
                (0, 130),
                setup=_stream_tiff,
                timeout=180,
                signal_when=(sig, ".so.tif.*.part"),
            )
        )
        cases.append(
            Case(
                f"stream {sig.name} after {0.5 + i * 0.6:.1f} s",
                [*base, "--kernel", "gaussian:sigma=3", "--strategy", "direct"],
                (0, 130),
                setup=_stream_tiff,
                timeout=180,
                signal_after=(sig, 0.5 + i * 0.6),
            )
        )
    cases += [
        Case("stream onto its input --overwrite", [A, "{d}/s.tif", "-o", "{d}/s.tif",
             "--max-tile-side", "256", "-k", "box:3", "--overwrite"], (2,),
             setup=_stream_tiff),
        Case("stream onto an existing file", [*base[:3], "{d}/keep.txt", "--max-tile-side",
             "256", "-k", "box:3"], (2,), setup=_stream_tiff),
        Case("stream in a batch with a report", [B, "{d}/s.tif", "{d}/in/rgb.png", "-o",
             "{d}/bo", "--max-tile-side", "256", "-k", "box:3", "--quiet", "--report",
             "{d}/r.json"], (0,), setup=_stream_tiff, timeout=180,
             check=_report_valid("r.json", 2)),
        Case("stream a truncated tiled TIFF", [*base, "-k", "box:3"], (1,),
             setup=lambda d: (_stream_tiff(d), _truncate(d / "s.tif", 0.5))),
        Case("stream on a full folder: o.tif a FIFO", [*base[:3], "{d}/f.tif",
             "--max-tile-side", "256", "-k", "box:3", "--overwrite"], (2,),
             setup=lambda d: (_stream_tiff(d), os.mkfifo(d / "f.tif"))),
    ]  # fmt: skip
    return cases


def _truncate(path: Path, share: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * share)])


def report_cases() -> list[Case]:
    """The batch report, reserved before the work: whatever stops the run removes it."""
    run = [B, "{d}/in", "-o", "{d}/ro", "-k", "box:3", "--quiet", "--report", "{d}/r.json"]
    return [
        Case("report, then no adapter", [*run, "--strategy", "direct"], (2,),
             env={"BLURAPP_ADAPTER": "no-such-adapter"}, check=absent("r.json", "ro")),
        Case("report, then an uncreatable -o", [B, "{d}/in", "-o", "{d}/keep.txt/x", "-k",
             "box:3", "--report", "{d}/r.json"], (2,), check=absent("r.json")),
        Case("report, then outputs that exist", [B, "{d}/in/rgb.png", "-o", "{d}/out", "-k",
             "box:3", "--report", "{d}/r.json"], (2,), check=absent("r.json")),
        Case("report beside 2000 inputs", [B, "{d}/many", "-o", "{d}/mo", "-k", "box:3",
             "--quiet", "--strategy", "cpu", "--report", "{d}/r.json"], (0,),
             setup=lambda d: _tiny_many(d, 2000), timeout=300,
             check=_report_valid("r.json", 2000)),
        Case("report with --skip-existing of everything", [B, "{d}/in/rgb.png", "-o",
             "{d}/out", "-k", "box:3", "--skip-existing", "--report", "{d}/r.json"], (0,),
             check=_report_valid("r.json", 1)),
        Case("report with --overwrite onto itself twice", [B, "{d}/in/rgb.png", "-o", "{d}/ro",
             "-k", "box:3", "--overwrite", "--report", "{d}/keep.txt"], (0,),
             may_change=("keep.txt",), check=_report_valid("keep.txt", 1)),
    ]  # fmt: skip


def _tiny_many(d: Path, count: int) -> None:
    (d / "many").mkdir()
    data = (d / "in/grey.png").read_bytes()
    for i in range(count):
        (d / f"many/t{i:05d}.png").write_bytes(data)


API = """
import warnings, sys
import numpy as np
import blurapp
from blurapp.core.errors import BlurappError
warnings.simplefilter("error")
img = np.random.default_rng(0).integers(0, 256, (9, 11, 3), np.uint8)
bad = []
def call(image, kernel, **kw):
    try:
        blurapp.filter_image(image, kernel, **kw)
    except BlurappError:
        pass
    except Exception as exc:
        bad.append(f"{kw} {getattr(image, 'dtype', type(image))}: {type(exc).__name__}: {exc}")
for kw in %s:
    call(img, "box:3", **kw)
for image in %s:
    for strategy in ("auto", "direct", "fft", "lowrank", "cpu"):
        call(image, "disk:radius=2", strategy=strategy)
print("\\n".join(bad))
sys.exit(1 if bad else 0)
"""

API_OPTIONS = """[dict(channels=123), dict(channels=""), dict(channels=b"rgb"),
    dict(channels=["r"]), dict(dtype="float16"), dict(dtype=np.float16), dict(dtype=int),
    dict(dtype="int8"),
    dict(dtype=object), dict(dtype=1), dict(tolerance="abc"), dict(tolerance=-1),
    dict(tolerance=float("nan")), dict(tolerance=[1]), dict(tolerance=True),
    dict(tile=True), dict(tile=np.int64(16)), dict(tile="16"), dict(border=3), dict(border=None),
    dict(strategy=None), dict(strategy=3), dict(strategy="FFT"), dict(convolve="yes"),
    dict(range_mode=None), dict(alpha=1), dict(linear="no"), dict(bogus=1)]"""

API_IMAGES = """[np.zeros((0, 5)), np.zeros((3, 3, 5)), np.zeros((3,)), np.zeros((2, 2, 2, 2)),
    np.zeros((4, 4), np.complex64), np.zeros((4, 4), bool), np.zeros((4, 4), np.int64),
    np.zeros((4, 4), np.float16), np.zeros((4, 4), object), np.array([[1, 2]], dtype=">u2"),
    np.asfortranarray(np.zeros((5, 6, 3), np.float32)), np.zeros((5, 6, 3), np.float32)[::2, ::3],
    np.broadcast_to(np.zeros((1, 1, 3), np.float32), (5, 6, 3)), [[1, 2], [3, 4]], "abc", None,
    np.full((4, 4), np.nan, np.float32), np.zeros((1, 5000), np.float32),
    np.full((3, 3), 1e300)]"""


API_TILES = (
    (API % ("[dict(max_tile_side=v) for v in (1, -5, 2.5, '8', None, True, 10**30)]", "[]"))
    .replace(
        "blurapp.filter_image(image, kernel, **kw)",
        "blurapp.pipeline.filter_pixels(image, blurapp.core.filterspec.FilterSpec.of(kernel), "
        "max_tile_side=kw['max_tile_side'])",
    )
    .replace("import blurapp\n", "import blurapp, blurapp.pipeline\n")
)


def api_cases() -> list[Case]:
    """blurapp.filter_image with odd keywords and arrays: a BlurappError or a result, never
    another exception or a warning."""
    return [
        Case("API: filter_image with odd keywords and images",
             ["-c", API % (API_OPTIONS, API_IMAGES)], (0,), python=True, timeout=300),
        Case("API: max_tile_side of odd types", ["-c", API_TILES], (0,), python=True),
    ]  # fmt: skip


def all_cases(seed: int) -> list[Case]:
    return [
        *stream_cases(seed),
        *report_cases(),
        *api_cases(),
        *kernel_cases(),
        *option_cases(),
        *info_cases(),
        *names_cases(),
        *special_cases(),
        *scheduler_cases(),
        *interrupt_cases(seed),
        *conv_cases(),
        *tiff_cases(),
        *size_cases(),
    ]


# ---------------------------------------------------------------------------------- the run


def run_case(case: Case, template: Path, work: Path, base_env: dict[str, str]) -> list[str]:
    d = Path(tempfile.mkdtemp(prefix="case-", dir=work))
    shutil.copytree(template, d, dirs_exist_ok=True, symlinks=True)
    if case.setup is not None:
        case.setup(d)
    before = snapshot(d)
    env = {**base_env, **{k: _expand(v, d) for k, v in case.env.items()}}
    for name in case.unset:
        env.pop(name, None)
    head = [PY] if case.python else [PY, "-m", "blurapp"]
    argv = [*head, *(_expand(a, d) for a in case.args)]
    outcome = run_process(
        argv,
        cwd=d,
        env=env,
        timeout=case.timeout,
        signal_after=case.signal_after,
        signal_when=case.signal_when,
        stdin=case.stdin,
    )
    problems = judge(case, d, before, outcome)
    if not problems:
        for root, dirs, _files in os.walk(d):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        shutil.rmtree(d, ignore_errors=True)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="pattern", help="only cases whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--seed", type=int, default=18, help="the interruptions' random points")
    parser.add_argument("--json", type=Path, help="write every case's result here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    cases = all_cases(args.seed)
    if args.pattern:
        cases = [c for c in cases if args.pattern in c.name]
    if args.list:
        for c in cases:
            print(c.name.encode("unicode_escape").decode())
        return 0
    work = Path(tempfile.mkdtemp(prefix="blurapp-attack-"))
    runtime = work / "xdg"
    runtime.mkdir(mode=0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # the oracles run blurapp here too
    template = work / "template"
    make_template(template)
    base_env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "COLUMNS": "80"}
    results: dict[str, list[str]] = {}
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_case, c, template, work, base_env): c for c in cases}
        for future in concurrent.futures.as_completed(futures):
            case = futures[future]
            try:
                problems = future.result()
            except Exception as exc:
                problems = [f"harness: {type(exc).__name__}: {exc}"]
            results[case.name] = problems
            if problems:
                label = case.name.encode("unicode_escape").decode()
                print(f"FAIL {label}: {'; '.join(problems)}", flush=True)
    failed = sum(1 for p in results.values() if p)
    print(
        f"{len(cases)} cases, {len(cases) - failed} held, {failed} fell short "
        f"in {time.monotonic() - started:.0f} s (scratch: {work})"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=True))
    if not args.keep and not failed:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
