"""Regenerate the ImageMagick fixtures that tests/core/test_im_kernels.py checks ``im:`` against.

Needs ImageMagick 6 (``convert``; the fixtures were made with 6.9.11-60 Q16). The tests do not:
they read what this script wrote.

- ``tests/core/fixtures/imagemagick_kernels.json``: for each kernel string, what
  ``convert xc: -define morphology:showKernel=1 -morphology Convolve SPEC null:`` prints
  (size, origin, and the weights both as printed, 6 significant digits, and again with
  ``-precision 17``).
- ``tests/core/fixtures/imagemagick_correlate.npz``: a small 16-bit grey image and, for each
  kernel of ``CORRELATE``, ImageMagick's ``-virtual-pixel Edge -morphology Correlate SPEC`` of it.

Usage: ``python benchmarks/imagemagick_fixtures.py [--convert PATH]``
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "core" / "fixtures"

#: Kernel strings whose printed weights are kept (every kind ``im:`` supports, and its corners).
KERNELS = [
    # user-defined arrays: WxH, origins, nan/- entries, the old square form
    "3x3: 1,2,1 2,4,2 1,2,1",
    "1,2,1 2,4,2 1,2,1",
    "0,-1,0 -1,5,-1 0,-1,0",
    "3: 0,-1,0 -1,5,-1 0,-1,0",
    "3x3+0+0: 1,2,3 4,nan,6 7,8,9",
    "4x3+3+2: 1,2,3,4 5,6,7,8 9,10,11,12",
    "2x2: 1,1 1,1",
    "5x1: 1,-,3,-,5",
    "1x3+0+2: 1 2 3",
    "3x2: 0.25,-0.5,1e-3 2,3,4",
    # Gaussian family (ImageMagick's own radius rule when R is 0)
    "Gaussian:0x2",
    "Gaussian:0x1",
    "Gaussian:0x0.5",
    "Gaussian:0x0.3",
    "Gaussian:3x2",
    "Gaussian:0x5",
    "Gaussian:0x0",
    "Gaussian:2",
    "Blur:0x2",
    "Blur:0x1+90",
    "Blur:3x1,90",
    "Blur:0x2+180",
    "Blur:0x2+270",
    "Blur:0x0.3",
    "Comet:0x2",
    "Comet:0x1+90",
    "Comet:0x1+180",
    "Comet:0x1+270",
    "Comet:5x2",
    "DoG:0,1,2",
    "DoG:0,2,1",
    "DoG:3,1,0",
    "DoG:0,0,1",
    "LoG:0x1.4",
    "LoG:4x1",
    "LoG:0x0",
    "Binomial",
    "Binomial:2",
    # named constant kernels, with their angles
    "Laplacian",
    "Laplacian:0",
    "Laplacian:1",
    "Laplacian:2",
    "Laplacian:3",
    "Laplacian:5",
    "Laplacian:7",
    "Laplacian:15",
    "Laplacian:19",
    "Sobel",
    "Sobel:45",
    "Sobel:90",
    "Sobel:135",
    "Sobel:180",
    "Sobel:270",
    "Roberts",
    "Roberts:90",
    "Roberts:135",
    "Prewitt",
    "Prewitt:45",
    "Compass",
    "Compass:90",
    "Kirsch",
    "Kirsch:45",
    "FreiChen",
    "FreiChen:1",
    "FreiChen:2",
    "FreiChen:11",
    "FreiChen:12",
    "FreiChen:13",
    "FreiChen:14",
    "FreiChen:15",
    "FreiChen:16",
    "FreiChen:17",
    "FreiChen:18",
    "FreiChen:19",
    "FreiChen:45",
    "FreiChen:11,90",
    # shapes: 1 inside, nan outside (0 in blurapp). No radius R with a fraction >= 0.5 here:
    # Debian 12's 6.9.11-60 (deb12u15) sizes those 2R+1 wide, even, and prints uninitialised
    # memory in the last rows (upstream's source: int(R)*2+1, which im: follows).
    "Disk",
    "Disk:1",
    "Disk:2",
    "Disk:4",
    "Disk:4.3",
    "Disk:1x0.5",
    "Square",
    "Square:2",
    "Square:1.5",
    "Diamond",
    "Diamond:3",
    "Octagon",
    "Octagon:3",
    "Plus",
    "Plus:3",
    "Cross",
    "Cross:1",
    "Ring",
    "Ring:2,3.4",
    "Ring:3,1.5,2",
    "Peaks",
    "Peaks:1.5,3",
    "Rectangle:5x3",
    "Rectangle:4x3+0+0",
    "Unity",
    "Unity:2",
]

#: Kernel strings whose size and origin alone are kept: ImageMagick's radius rule over sigmas.
SIZES = [
    f"{name}:{geometry}"
    for s in ("0.1", "0.25", "0.5", "0.7", "1", "1.5", "2.5", "3", "4", "8", "12", "20", "40",
              "80", "120", "200", "500")
    for name, geometry in (("Gaussian", f"0x{s}"), ("Blur", f"0x{s}"), ("Comet", f"0x{s}"),
                           ("LoG", f"0x{s}"), ("DoG", f"0,{s},0"))
]  # fmt: skip

#: Kernels whose ImageMagick Correlate output is kept: origins off the centre, nan taps,
#: even sizes, 1-D kernels both ways. All non-negative, so a Q16 build does not clip them.
CORRELATE = [
    "3x3+0+0: 1,2,3 4,nan,6 7,8,9",
    "4x3+3+2: 1,2,3,4 5,6,7,8 9,10,11,12",
    "2x2: 1,1 1,1",
    "1x3+0+2: 1 2 3",
    "Comet:0x1",
    "Comet:0x1+90",
    "Comet:0x1+180",
    "Disk:2.3",
    "Gaussian:0x1",
    "Blur:0x1+90",
    "Rectangle:4x3+0+0",
]

_HEADER = re.compile(r'Kernel "(?P<name>[^"@]*)(?:@(?P<angle>[-\d.e+]+))?" of size '
                     r"(?P<w>\d+)x(?P<h>\d+)(?P<x>[+-]\d+)(?P<y>[+-]\d+)")  # fmt: skip


def show_kernel(convert: str, spec: str, precision: int | None) -> dict:
    """Run ImageMagick's showKernel for one string and parse what it prints."""
    cmd = [convert, "xc:"]
    if precision is not None:
        cmd += ["-precision", str(precision)]
    cmd += ["-define", "morphology:showKernel=1", "-morphology", "Convolve", spec, "null:"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    lines = proc.stderr.splitlines()
    m = _HEADER.match(lines[0])
    if m is None or len([ln for ln in lines if ln.startswith("Kernel")]) != 1:
        raise SystemExit(f"{spec!r}: not one kernel:\n{proc.stderr}")
    w, h = int(m["w"]), int(m["h"])
    rows = [ln.split(":", 1)[1].split() for ln in lines[2 : 2 + h]]
    if len(rows) != h or any(len(r) != w for r in rows):
        raise SystemExit(f"{spec!r}: cannot read the weights:\n{proc.stderr}")
    return {
        "spec": spec,
        "name": m["name"],
        "angle": float(m["angle"] or 0),
        "width": w,
        "height": h,
        "x": int(m["x"]),
        "y": int(m["y"]),
        "printed": rows,
    }


def correlate(convert: str, image: np.ndarray, spec: str, tmp: Path) -> np.ndarray:
    """ImageMagick's ``-virtual-pixel Edge -morphology Correlate SPEC`` of a 16-bit grey image."""
    src, dst = tmp / "in.pgm", tmp / "out.pgm"
    h, w = image.shape
    src.write_bytes(f"P5 {w} {h} 65535\n".encode() + image.astype(">u2").tobytes())
    subprocess.run(
        [convert, str(src), "-virtual-pixel", "Edge", "-morphology", "Correlate", spec,
         "-depth", "16", str(dst)],
        check=True,
    )  # fmt: skip
    data = dst.read_bytes()
    return np.frombuffer(data[len(data) - 2 * w * h :], ">u2").reshape(h, w).astype(np.uint16)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--convert", default="convert", help="ImageMagick 6 convert command")
    args = parser.parse_args(argv)
    version = subprocess.run(
        [args.convert, "-version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]
    kernels = []
    for spec in KERNELS:
        shown = show_kernel(args.convert, spec, None)
        precise = show_kernel(args.convert, spec, 17)
        shown["values"] = [
            [None if v == "nan" else float(v) for v in r] for r in precise["printed"]
        ]
        kernels.append(shown)
    sizes = []
    for spec in SIZES:
        shown = show_kernel(args.convert, spec, None)
        del shown["printed"]
        sizes.append(shown)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    doc = {
        "generator": "benchmarks/imagemagick_fixtures.py",
        "imagemagick": version,
        "command": "convert xc: [-precision 17] -define morphology:showKernel=1 "
        "-morphology Convolve SPEC null:",
        "note": "printed: the weights as ImageMagick prints them (6 significant digits); values: "
        "the same with -precision 17 (null where ImageMagick prints nan); x, y: its origin",
        "kernels": kernels,
        "sizes": sizes,
    }
    out = FIXTURES / "imagemagick_kernels.json"
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(kernels)} kernels, {len(sizes)} sizes)")

    rng = np.random.default_rng(19)
    image = rng.integers(0, 1500, size=(9, 11), dtype=np.uint16)
    image[4, 5] = 1500  # a bright dot shows where each kernel's origin lands
    outputs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(CORRELATE):
            outputs[f"out{i}"] = correlate(args.convert, image, spec, Path(tmp))
    npz = FIXTURES / "imagemagick_correlate.npz"
    np.savez(
        npz,
        image=image,
        specs=np.array(CORRELATE),
        imagemagick=np.array(version),
        command=np.array(
            "convert in.pgm -virtual-pixel Edge -morphology Correlate SPEC -depth 16 out.pgm"
        ),
        **outputs,
    )
    print(f"wrote {npz} ({len(CORRELATE)} images)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
