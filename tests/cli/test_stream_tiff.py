"""A large TIFF into a TIFF streams a tile at a time through apply and batch (issue 15, item 3):
the same pixels as the whole-image path, bit for bit; atomic; never over an existing file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tifffile

from blurapp.batch import pipeline as batch_pipeline
from blurapp.cli import main
from blurapp.core.errors import ImageError
from blurapp.io import TEMP_SUFFIX, read_image, tiffstream
from blurapp.io.tiffstream import TiffSource

H, W = 300, 410
_RNG = np.random.default_rng(151)
RGB8 = _RNG.integers(0, 256, (H, W, 3), dtype=np.uint8)
RGB16 = _RNG.integers(0, 65536, (H, W, 3), dtype=np.uint16)
RGBA8 = _RNG.integers(0, 256, (H, W, 4), dtype=np.uint8)
GREY32 = (_RNG.random((H, W), dtype=np.float32) * 2 - 0.5).astype(np.float32)

#: name → (pixels, tifffile.imwrite arguments)
FILES = {
    "uncompressed-striped-rgb8": (RGB8, {"photometric": "rgb", "rowsperstrip": 32}),
    "deflate-striped-rgb16": (RGB16, {"photometric": "rgb", "compression": "zlib",
                                      "rowsperstrip": 9}),
    "lzw-striped-rgb8": (RGB8, {"photometric": "rgb", "compression": "lzw"}),
    "deflate-tiled-rgba8": (RGBA8, {"photometric": "rgb", "extrasamples": ["unassalpha"],
                                    "compression": "zlib", "tile": (64, 64)}),
    "bigtiff-rgb16": (RGB16, {"photometric": "rgb", "bigtiff": True, "compression": "zlib",
                              "tile": (32, 64)}),
    "float32-grey": (GREY32, {"photometric": "minisblack"}),
}  # fmt: skip

#: (strategy, border, kernel) combinations, run against every file in turn.
RUNS = [
    ("separable", "wrap", "gaussian:sigma=2"),
    ("direct", "mirror", "emboss"),
    ("tiled", "reflect", "box:5x3"),
    ("cpu", "constant=0.25", "gaussian:sigma=1.5"),
    ("transpose", "clamp", "gaussian:sigma=2"),
    ("separable", "mirror", "box:7"),
]


def _tiff(path: Path, name: str) -> Path:
    pixels, kwargs = FILES[name]
    tifffile.imwrite(path, pixels, **kwargs)
    return path


def _streamed(path: Path) -> bool:
    """The streamed writer writes 256×256 tiles; the whole-image path writes strips."""
    with tifffile.TiffFile(path) as tif:
        return bool(tif.pages.first.is_tiled)


#: Every file with two runs, and every run on one file.
CASES = sorted(
    {(name, RUNS[(i + k) % len(RUNS)]) for i, name in enumerate(sorted(FILES)) for k in (0, 1)}
    | {("deflate-striped-rgb16", run) for run in RUNS}
)


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "run"), CASES, ids=[f"{n}-{'-'.join(r)}" for n, r in CASES])
def test_streamed_equals_the_whole_image_path(gpu, tmp_path: Path, name: str, run) -> None:
    strategy, border, kernel = run
    src = _tiff(tmp_path / "in.tif", name)
    common = ["--kernel", kernel, "--border", border, "--strategy", strategy]
    assert main(["apply", str(src), "-o", str(tmp_path / "whole.tif"), *common]) == 0
    assert not _streamed(tmp_path / "whole.tif")
    assert main(["apply", str(src), "-o", str(tmp_path / "streamed.tif"), *common,
                 "--max-tile-side", "64"]) == 0  # fmt: skip
    assert _streamed(tmp_path / "streamed.tif")
    whole = read_image(tmp_path / "whole.tif").pixels
    streamed = read_image(tmp_path / "streamed.tif").pixels
    assert streamed.dtype == whole.dtype and streamed.shape == whole.shape
    np.testing.assert_array_equal(streamed, whole)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(TEMP_SUFFIX)]


@pytest.mark.gpu
def test_batch_streams_tiffs_and_timing_works(gpu, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _tiff(folder / "a.tif", "deflate-tiled-rgba8")
    _tiff(folder / "b.tif", "uncompressed-striped-rgb8")
    common = ["--kernel", "gaussian:sigma=2", "--border", "wrap", "--strategy", "separable"]
    for name in ("a", "b"):
        assert main(["apply", str(folder / f"{name}.tif"), "-o", str(tmp_path / f"{name}.tif"),
                     *common]) == 0  # fmt: skip
    report = tmp_path / "r.json"
    assert main(["batch", str(folder), "-o", str(tmp_path / "out"), "--quiet", *common,
                 "--max-tile-side", "100", "--report", str(report)]) == 0  # fmt: skip
    for name in ("a", "b"):
        out = tmp_path / "out" / f"{name}.tiff"
        assert _streamed(out)
        np.testing.assert_array_equal(
            read_image(out).pixels, read_image(tmp_path / f"{name}.tif").pixels
        )
    rows = json.loads(report.read_text())["files"]
    assert [(r["status"], r["strategy"], r["dtype"]) for r in rows] == [
        ("ok", "separable", "uint8"),
        ("ok", "separable", "uint8"),
    ]
    # Into another format, batch takes the whole-image path (the pixels are the same).
    assert main(["batch", str(folder / "b.tif"), "-o", str(tmp_path / "png"), "--quiet",
                 "--format", "png", *common, "--max-tile-side", "100"]) == 0  # fmt: skip
    np.testing.assert_array_equal(
        read_image(tmp_path / "png" / "b.png").pixels, read_image(tmp_path / "b.tif").pixels
    )
    capsys.readouterr()
    assert main(["apply", str(folder / "a.tif"), "-o", str(tmp_path / "t.tif"), *common,
                 "--max-tile-side", "64", "--timing"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "tiles of up to 48×48" in err and "throughput" in err


@pytest.mark.gpu
def test_an_existing_output_is_refused_without_overwrite(gpu, tmp_path: Path, capsys) -> None:
    src = _tiff(tmp_path / "in.tif", "deflate-striped-rgb16")
    out = tmp_path / "o.tif"
    out.write_bytes(b"mine")
    args = ["apply", str(src), "-o", str(out), "--kernel", "box:3", "--max-tile-side", "64"]
    assert main(args) == 2
    assert "exists (use --overwrite" in capsys.readouterr().err
    assert out.read_bytes() == b"mine"
    assert main([*args, "--overwrite"]) == 0
    assert _streamed(out) and read_image(out).pixels.shape == (H, W, 3)
    assert sorted(os.listdir(tmp_path)) == ["in.tif", "o.tif"]


@pytest.mark.parametrize("error", [KeyboardInterrupt, ImageError])
def test_an_interruption_leaves_no_output_and_no_temporary(
    tmp_path: Path, monkeypatch, capsys, error
) -> None:
    src = _tiff(tmp_path / "in.tif", "deflate-striped-rgb16")
    read = TiffSource.__getitem__
    calls = []

    def interrupted(self, key):
        calls.append(key)
        if len(calls) == 40:
            raise error("stop")
        return read(self, key)

    monkeypatch.setattr(TiffSource, "__getitem__", interrupted)
    out = tmp_path / "o.tif"
    code = main(["apply", str(src), "-o", str(out), "--kernel", "box:3", "--strategy", "cpu",
                 "--max-tile-side", "32"])  # fmt: skip
    assert code == (130 if error is KeyboardInterrupt else 1)
    assert 40 <= len(calls) < 50  # stopped at once (the other stage read one more region)
    assert os.listdir(tmp_path) == ["in.tif"]


def test_sigterm_while_streaming_leaves_nothing(tmp_path: Path) -> None:
    big = np.random.default_rng(0).integers(0, 256, (1500, 1500, 3), dtype=np.uint8)
    src = tmp_path / "in.tif"
    tifffile.imwrite(src, big, photometric="rgb", compression="zlib", tile=(256, 256))
    out = tmp_path / "o.tif"
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", str(tmp_path))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "blurapp", "apply", str(src), "-o", str(out), "--kernel",
         "box:3", "--strategy", "cpu", "--max-tile-side", "24"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not [n for n in os.listdir(tmp_path) if n.endswith(TEMP_SUFFIX)]:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    assert os.listdir(tmp_path) == ["in.tif"]


def test_max_megapixels_says_what_to_pass(tmp_path: Path, capsys) -> None:
    src = _tiff(tmp_path / "in.tif", "uncompressed-striped-rgb8")
    code = main(["apply", str(src), "-o", str(tmp_path / "o.tif"), "--kernel", "box:3",
                 "--strategy", "cpu", "--max-tile-side", "64",
                 "--max-megapixels", "0.1"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "over the limit of 0.1" in err and "pass --max-megapixels 1 to allow it" in err
    assert os.listdir(tmp_path) == ["in.tif"]


def test_a_tiff_too_big_for_memory_streams_instead(tmp_path: Path, monkeypatch) -> None:
    """Whole, it would not fit in the memory there is; streamed (in tiles of the usual size,
    here made small) it does, and the guard counts what streaming holds."""
    src = tmp_path / "in.tif"
    tall = np.concatenate([RGB16] * 5)  # 1500×410: two bands of rows are a small part of it
    tifffile.imwrite(src, tall, photometric="rgb", compression="zlib", rowsperstrip=9)
    common = ["--kernel", "gaussian:sigma=2", "--strategy", "cpu", "--border", "mirror"]
    assert main(["apply", str(src), "-o", str(tmp_path / "whole.tif"), *common]) == 0
    spec, encode = _settings(common)
    info = batch_pipeline.probe_image(src)
    whole_need = batch_pipeline.pipeline.working_bytes(
        W, 5 * H, 3, info.dtype, spec, np.dtype(np.uint16)
    )
    monkeypatch.setattr(batch_pipeline, "TILE_TEXELS", 100 * 100)
    monkeypatch.setattr(tiffstream, "MIN_CACHE_BYTES", 0)
    monkeypatch.setattr(batch_pipeline, "available_memory", lambda: 10**9)
    assert batch_pipeline.stream_plan(src, info, "tiff", spec, encode) is None  # it fits whole
    monkeypatch.setattr(batch_pipeline, "available_memory", lambda: whole_need)
    plan = batch_pipeline.stream_plan(src, info, "tiff", spec, encode)
    assert plan is not None and plan.max_tile_side == 100 and not plan.grid.whole
    # The guard counts the tiles in flight, two bands of rows and the strip cache: less.
    assert plan.need < whole_need * batch_pipeline.MEMORY_SHARE
    available = (plan.need + whole_need) / 2 / batch_pipeline.MEMORY_SHARE
    monkeypatch.setattr(batch_pipeline, "available_memory", lambda: int(available))
    assert main(["apply", str(src), "-o", str(tmp_path / "streamed.tif"), *common]) == 0
    assert _streamed(tmp_path / "streamed.tif")
    np.testing.assert_array_equal(
        read_image(tmp_path / "streamed.tif").pixels, read_image(tmp_path / "whole.tif").pixels
    )


def _settings(common):
    from blurapp.batch.commands import settings_from_args
    from blurapp.cli import build_parser

    args = build_parser().parse_args(["apply", "in.tif", "-o", "o.tif", *common])
    return settings_from_args(args)
