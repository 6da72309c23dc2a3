"""batch streams a PNG into a PNG a band of rows at a time: the same pixels as the whole-image
path (``apply``), metadata kept, bad files reported, and only where it can."""

from __future__ import annotations

import io
from pathlib import Path

import imagecodecs
import numpy as np
import pytest
from PIL import Image, ImageCms

from blurapp.batch.pipeline import (
    BAND_BYTES_MAX,
    BAND_TILE_SIDE,
    EncodeSettings,
    Job,
    band_bytes,
    band_side,
    process_file,
    run_pipeline,
    stream_plan,
)
from blurapp.core.filterspec import FilterSpec
from blurapp.io import probe_image, read_image
from blurapp.io.bands import spng_available
from blurapp.pipeline import filter_pixels

pytestmark = pytest.mark.skipif(not spng_available(), reason="imagecodecs without libspng")

SHAPES = [
    ((1, 1, 3), np.uint8),  # fits one band tile: the whole-image path
    ((37, 1203, 3), np.uint8),  # wider than a band tile: several tiles per row
    ((1100, 23), np.uint8),  # taller than two band tiles, grey
    ((613, 509, 4), np.uint8),  # alpha: premultiplied on the float path
    ((300, 700, 3), np.uint16),
]


def _inputs(folder: Path) -> list[tuple[Path, np.ndarray]]:
    rng = np.random.default_rng(7)
    made = []
    for i, (shape, dtype) in enumerate(SHAPES):
        top = 256 if dtype == np.uint8 else 65536
        pixels = rng.integers(0, top, shape).astype(dtype)
        path = folder / f"in{i}.png"
        path.write_bytes(imagecodecs.png_encode(pixels))
        made.append((path, pixels))
    return made


@pytest.mark.parametrize(
    ("strategy", "border"), [("separable", "mirror"), ("tiled", "zero"), ("direct", "clamp")]
)
def test_batch_bands_equal_the_whole_image_path(gpu, tmp_path: Path, strategy, border) -> None:
    spec = FilterSpec.create("gaussian:sigma=2", border, strategy)
    # Band tiles of at most 512 (halo included) keep these small images in several tiles.
    encode = EncodeSettings(max_tile_side=512)
    inputs = _inputs(tmp_path)
    jobs = [Job(p, tmp_path / f"band{i}.png", "png") for i, (p, _) in enumerate(inputs)]
    records = run_pipeline(jobs, spec, encode, workers=2)
    assert [r.status for r in records] == ["ok"] * len(jobs), [r.error for r in records]
    for i, (path, pixels) in enumerate(inputs):
        info = probe_image(path)
        plan = stream_plan(path, info, "png", spec, encode, bands=True)
        fits = max(pixels.shape[:2]) <= 512 - 16
        assert (plan is None) if fits else (plan is not None and plan.kind == "png")
        whole = tmp_path / f"whole{i}.png"
        process_file(path, whole, "png", spec, EncodeSettings())  # apply: filtered whole
        banded = read_image(jobs[i].output).pixels
        np.testing.assert_array_equal(banded, read_image(whole).pixels)
        assert banded.shape == pixels.shape and banded.dtype == pixels.dtype
        assert records[i].strategy == strategy


def test_batch_bands_keep_the_profile_and_exif(gpu, tmp_path: Path) -> None:
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    exif = Image.Exif()
    exif[0x010F] = "Maker"
    buf = io.BytesIO()
    pixels = np.random.default_rng(2).integers(0, 256, (40, 50, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(buf, format="PNG", icc_profile=icc, exif=exif)
    src = tmp_path / "meta.png"
    src.write_bytes(buf.getvalue())
    out = tmp_path / "out.png"
    records = run_pipeline(
        [Job(src, out, "png")], FilterSpec.create("box:3", strategy="separable"),
        EncodeSettings(), workers=1,
    )  # fmt: skip
    assert records[0].status == "ok"
    back = read_image(out)
    assert back.icc_profile == icc
    assert Image.open(out).getexif()[0x010F] == "Maker"


def test_a_corrupt_png_fails_alone_and_leaves_no_file(gpu, tmp_path: Path) -> None:
    good = np.random.default_rng(3).integers(0, 256, (700, 90, 3)).astype(np.uint8)
    data = bytearray(imagecodecs.png_encode(good))
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    (tmp_path / "bad.png").write_bytes(bytes(data))
    (tmp_path / "good.png").write_bytes(imagecodecs.png_encode(good))
    out = tmp_path / "out"
    out.mkdir()
    jobs = [Job(tmp_path / n, out / n, "png") for n in ("bad.png", "good.png")]
    records = run_pipeline(jobs, FilterSpec.create("box:3", strategy="separable"),
                           EncodeSettings(), workers=2)  # fmt: skip
    assert [r.status for r in records] == ["failed", "ok"]
    assert "bad.png" in (records[0].error or "") and "\n" not in (records[0].error or "")
    assert sorted(p.name for p in out.iterdir()) == ["good.png"]


def test_only_png_into_png_streams_in_bands(tmp_path: Path) -> None:
    pixels = np.zeros((40, 2100, 3), np.uint8)  # wider than the largest band tile
    png = tmp_path / "a.png"
    png.write_bytes(imagecodecs.png_encode(pixels))
    small = tmp_path / "small.png"
    small.write_bytes(imagecodecs.png_encode(pixels[:, :30]))
    Image.fromarray(pixels).quantize(4).save(tmp_path / "palette.png")
    info = probe_image(png)
    encode = EncodeSettings()
    cpu = FilterSpec.create("box:3", strategy="cpu")
    assert stream_plan(png, info, "png", cpu, encode, bands=True).kind == "png"
    assert stream_plan(png, info, "png", cpu, encode) is None  # apply: the whole image
    assert stream_plan(png, info, "jpg", cpu, encode, bands=True) is None
    wrap = FilterSpec.create("box:3", "wrap", "cpu")  # the first rows' halo is the last rows
    assert stream_plan(png, info, "png", wrap, encode, bands=True) is None
    assert stream_plan(small, probe_image(small), "png", cpu, encode, bands=True) is None
    framed = EncodeSettings(frame=0)  # --frame N goes to the frame reader, which checks N
    assert stream_plan(png, info, "png", cpu, framed, bands=True) is None
    palette = tmp_path / "palette.png"
    assert stream_plan(palette, probe_image(palette), "png", cpu, encode, bands=True) is None


def test_a_4k_photo_in_bands_needs_a_fraction_of_the_whole_image() -> None:
    from blurapp.core.tiling import plan_grid
    from blurapp.pipeline import working_bytes

    spec = FilterSpec.create("gaussian:sigma=2", strategy="separable")
    u8 = np.dtype(np.uint8)
    kernel = spec.effective_kernel.shape
    side = band_side((2160, 3840), kernel, 3, u8, spec, u8)
    assert side <= BAND_TILE_SIDE
    grid = plan_grid(2160, 3840, kernel, max_tile_side=side)
    assert grid.count == 15  # 784² tiles (768² outputs): 5 × 3 cover 3840 × 2304
    banded = band_bytes(grid, 3, u8, spec, u8)
    # The whole image's: its pixels in flight and its GPU resources counted as band_bytes does
    # (four RGBA float images' worth, in host memory on lavapipe).
    whole = working_bytes(3840, 2160, 3, u8, spec, u8) + 3840 * 2160 * 16 * 4
    assert banded < whole / 6 and banded <= BAND_BYTES_MAX


def test_a_dask_worker_writes_the_bytes_of_plain_batch(gpu, tmp_path: Path) -> None:
    """run_file (one task of ``batch --scheduler``) streams a large PNG in bands as plain batch
    does, so that both write the same bytes (and a retried file is recognised by them)."""
    from blurapp.batch.distributed import FileTask, run_file

    spec = FilterSpec.create("gaussian:sigma=1.5", "reflect", "separable")
    pixels = np.random.default_rng(4).integers(0, 256, (1100, 1500, 3)).astype(np.uint8)
    src = tmp_path / "in.png"
    src.write_bytes(imagecodecs.png_encode(pixels))
    plain = tmp_path / "plain.png"
    assert (
        run_pipeline([Job(src, plain, "png")], spec, EncodeSettings(), workers=1)[0].status == "ok"
    )
    task = FileTask(
        "in.png", "task.png", str(src), str(tmp_path / "task.png"), "png", tuple(spec.to_argv()),
        EncodeSettings(), existed=False, stop=None,
    )  # fmt: skip
    assert run_file(task)["status"] == "ok"
    assert (tmp_path / "task.png").read_bytes() == plain.read_bytes()
    # The output appears before the task runs (a dead worker published it): recognised.
    again = run_file(task)
    assert again["status"] == "ok", again["error"]


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_mid_band_leaves_nothing_half_written(tmp_path: Path, sig: str) -> None:
    """The writer's temporary exists while the bands stream in; a signal then stops the
    batch with exit 130: the temporary is removed, or (when the last tiles were already in
    flight) the complete file published; never a temporary or a partial file, the input
    untouched. (On Python 3.11 a signal inside Thread.join marked the running filter thread
    stopped, and the process exited with the writer's temporary behind.)"""
    import os
    import signal
    import subprocess
    import sys
    import time

    from blurapp.io import TEMP_SUFFIX

    big = tmp_path / "big.png"
    pixels = np.random.default_rng(5).integers(0, 256, (2400, 1300, 3)).astype(np.uint8)
    big.write_bytes(imagecodecs.png_encode(pixels))
    before = big.read_bytes()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "blurapp", "batch", big, "-o", out, "-k", "box:9",
         "--strategy", "cpu", "--quiet"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)},
    )  # fmt: skip
    deadline = time.monotonic() + 120

    def temporaries() -> list[Path]:
        return [p for p in out.glob(f".big.png.*{TEMP_SUFFIX}")] if out.exists() else []

    while not temporaries() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert temporaries(), "the band writer's temporary never appeared"
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert not temporaries()
    if (out / "big.png").exists():
        expected = filter_pixels(pixels, FilterSpec.create("box:9", strategy="cpu")).image
        np.testing.assert_array_equal(read_image(out / "big.png").pixels, expected)
    assert big.read_bytes() == before


def test_a_file_failing_in_its_writer_after_its_tiles_fails_alone(
    gpu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer deflates a file's last rows while the next file streams (the batch does not
    wait for it): a write error then (a full disk) still fails that file alone, with one line,
    and leaves no temporary; the other files are written."""
    import errno

    import blurapp.io.bands as bands
    from blurapp.io import TEMP_SUFFIX

    real = bands._encode

    def failing(fh, sink, *args):  # type: ignore[no-untyped-def]
        if "first" not in fh.name:
            return real(fh, sink, *args)
        for _ in sink.bands():  # every band taken, the last one never written
            pass
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bands, "_encode", failing)
    rng = np.random.default_rng(9)
    out = tmp_path / "out"
    out.mkdir()
    jobs = []
    for name in ("first.png", "second.png", "third.png"):
        pixels = rng.integers(0, 256, (900, 1100, 3)).astype(np.uint8)
        (tmp_path / name).write_bytes(imagecodecs.png_encode(pixels))
        jobs.append(Job(tmp_path / name, out / name, "png"))
    spec = FilterSpec.create("box:5", strategy="separable")
    assert stream_plan(jobs[0].input, probe_image(jobs[0].input), "png", spec, EncodeSettings(),
                       bands=True) is not None  # fmt: skip
    records = run_pipeline(jobs, spec, EncodeSettings(), workers=2)
    assert [r.status for r in records] == ["failed", "ok", "ok"]
    assert "No space left" in (records[0].error or "") and "\n" not in (records[0].error or "")
    assert sorted(p.name for p in out.iterdir()) == ["second.png", "third.png"]
    assert not [p for p in out.iterdir() if p.name.endswith(TEMP_SUFFIX)]
