"""`blurapp batch` end to end (subprocess): formats, metadata, alpha, bad files, safety, report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image, ImageCms

from blurapp.core.reference import correlate
from blurapp.io import ImageData, read_image, write_image

ORIENTATION = 0x0112
ARTIST = 0x013B


def blurapp(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "blurapp", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        **kwargs,  # type: ignore[call-overload]
    )


def _noise(shape: tuple[int, ...], dtype: type = np.uint8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.random(shape) * 1.5 - 0.25).astype(dtype)  # floats are not clamped
    return rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _no_temporaries(*folders: Path) -> None:
    for folder in folders:
        assert not [p for p in folder.iterdir() if p.name.endswith(".part")], _files(folder)


# ------------------------------------------------------------------ formats × bit depths

_LOSSLESS = {
    "png": (np.uint8, np.uint16),
    "tiff": (np.uint8, np.uint16, np.float32, np.float64),
    "npy": (np.uint8, np.uint16, np.float32, np.float64),
    "bmp": (np.uint8,),
    "webp": (np.uint8,),
}
_HOLDS = {"bmp": (1, 3), "webp": (3, 4)}  # channel layouts a format stores as they are


def test_round_trip_every_format_and_depth_is_exact(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    expected: dict[str, np.ndarray] = {}
    seed = 0
    for fmt, dtypes in _LOSSLESS.items():
        for dtype in dtypes:
            for channels in _HOLDS.get(fmt, (1, 2, 3, 4)):
                seed += 1
                shape = (7, 5) if channels == 1 else (7, 5, channels)
                image = _noise(shape, dtype, seed)
                if channels in (2, 4) and np.dtype(dtype).kind == "u":
                    image[0, :, -1] = 0  # fully transparent pixels keep their colour too
                name = f"{fmt}_{np.dtype(dtype).name}_{channels}"
                write_image(src / f"{name}.{fmt}", image, lossless=True)
                expected[name] = image
    # Pillow's own palette, 1-bit, and keyed-transparency files are expanded.
    pal = Image.fromarray(_noise((6, 4, 3), seed=99)).convert("P", palette=Image.Palette.ADAPTIVE)
    pal.save(src / "palette.png")
    expected["palette"] = np.asarray(pal.convert("RGB"))
    pal.save(src / "palette_key.png", transparency=0)
    expected["palette_key"] = np.asarray(Image.open(src / "palette_key.png").convert("RGBA"))
    assert (expected["palette_key"][:, :, 3] == 0).any()
    bits = Image.fromarray(_noise((5, 9), seed=98) > 127)
    bits.save(src / "bits.png")
    expected["bits"] = np.asarray(bits.convert("L"))

    proc = blurapp(
        "batch", src, "-o", out, "-k", "identity", "--strategy", "cpu", "--lossless",
        "--report", tmp_path / "r.json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for name, image in expected.items():
        fmt = name.split("_")[0] if name.split("_")[0] in _LOSSLESS else "png"
        got = read_image(out / f"{name}.{fmt}").pixels
        assert got.dtype == image.dtype, name
        if image.dtype == np.float64 and image.ndim == 3 and image.shape[2] in (2, 4):
            # premultiplying and dividing back a float64 may move the last bit
            np.testing.assert_allclose(got, image, rtol=1e-15, err_msg=name)
        else:
            np.testing.assert_array_equal(got, image, err_msg=name)
    # 16 bits really are stored as 16 bits, in the file, not only in our reader's output
    assert tifffile.imread(out / "tiff_uint16_3.tiff").dtype == np.uint16
    with open(out / "png_uint16_4.png", "rb") as fh:
        head = fh.read(26)
    assert head[24] == 16 and head[25] == 6  # IHDR: bit depth 16, colour type RGBA
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["totals"]["ok"] == len(expected)


def test_jpeg_and_lossy_webp_are_close(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    smooth = np.clip(
        np.add.outer(np.arange(32) * 4, np.arange(48) * 3)[:, :, None] + np.array([0, 30, 60]),
        0,
        255,
    ).astype(np.uint8)
    Image.fromarray(smooth).save(src / "photo.jpg", quality=98)
    Image.fromarray(smooth).save(src / "pic.webp", quality=98)
    Image.fromarray(smooth[:, :, 0]).save(src / "grey.jpg", quality=98)
    proc = blurapp("batch", src, "-o", out, "-k", "identity", "--strategy", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    for name in ("photo.jpg", "pic.webp", "grey.jpg"):
        before = np.asarray(Image.open(src / name)).astype(float)
        after = np.asarray(Image.open(out / name)).astype(float)
        assert before.shape == after.shape
        assert np.abs(after - before).mean() < 1.5, name
    assert Image.open(out / "grey.jpg").mode == "L"


# ------------------------------------------------------------------ metadata


def _exif(orientation: int) -> Image.Exif:
    exif = Image.Exif()
    exif[ORIENTATION] = orientation
    exif[ARTIST] = "blurapp tests"
    return exif


def test_exif_orientation_applied_and_metadata_kept(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    image = _noise((12, 20, 3), seed=5)
    cases = {}
    for orientation, name in ((6, "rot.png"), (3, "flip.jpg"), (8, "left.webp"), (5, "t.tiff")):
        im = Image.fromarray(image)
        if name.endswith(".jpg"):
            im.save(src / name, exif=_exif(orientation), icc_profile=icc, quality=100)
        elif name.endswith(".webp"):
            im.save(src / name, exif=_exif(orientation), icc_profile=icc, lossless=True)
        else:
            im.save(src / name, exif=_exif(orientation), icc_profile=icc)
        with Image.open(src / name) as opened:
            from PIL import ImageOps

            cases[name] = np.asarray(ImageOps.exif_transpose(opened))
    # a 16-bit PNG (decoded by imagecodecs) with orientation and ICC in its chunks
    deep = _noise((6, 10, 3), np.uint16, seed=6)
    write_image(src / "deep.png", ImageData(deep, "png", icc, _exif(6).tobytes()))
    cases["deep.png"] = np.rot90(deep, -1)
    before = {p.name: p.read_bytes() for p in src.iterdir()}

    proc = blurapp("batch", src, "-o", out, "-k", "identity", "--strategy", "cpu", "--lossless")
    assert proc.returncode == 0, proc.stderr
    for name, upright in cases.items():
        got = read_image(out / name).pixels
        assert got.shape == upright.shape, name
        if name.endswith(".jpg"):
            assert np.abs(got.astype(float) - upright).mean() < 3, name
        else:
            np.testing.assert_array_equal(got, upright, err_msg=name)
        with Image.open(out / name) as written:
            exif = written.getexif()
            assert exif.get(ORIENTATION, 1) == 1, name
            assert exif.get(ARTIST) == "blurapp tests", name
            assert written.info.get("icc_profile") == icc, name
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before  # inputs never modified


def test_icc_kept_in_sixteen_bit_tiff(tmp_path: Path) -> None:
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    image = _noise((5, 6, 4), np.uint16, seed=8)
    tifffile.imwrite(tmp_path / "in.tiff", image, photometric="rgb", iccprofile=icc,
                     extrasamples=["unassalpha"])  # fmt: skip
    proc = blurapp("apply", tmp_path / "in.tiff", "-o", tmp_path / "o.tiff", "-k", "identity",
                   "--strategy", "cpu")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with tifffile.TiffFile(tmp_path / "o.tiff") as tif:
        assert tif.pages.first.iccprofile == icc
        np.testing.assert_array_equal(tif.asarray(), image)


# ------------------------------------------------------------------ alpha and light


def test_premultiplied_alpha_blurs_without_fringes(tmp_path: Path) -> None:
    image = np.zeros((16, 16, 4), np.uint8)
    image[:, :8] = (255, 0, 0, 255)  # opaque red
    image[:, 8:] = (0, 255, 0, 0)  # transparent green
    Image.fromarray(image, "RGBA").save(tmp_path / "in.png")
    spec = "gaussian:sigma=2"
    for alpha in ("premultiply", "straight"):
        proc = blurapp("apply", tmp_path / "in.png", "-o", tmp_path / f"{alpha}.png", "-k", spec,
                       "--strategy", "cpu", "--alpha", alpha)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    good = np.asarray(Image.open(tmp_path / "premultiply.png"))
    bad = np.asarray(Image.open(tmp_path / "straight.png"))
    visible = good[:, :, 3] > 0
    assert visible[:, 8:].any()  # the blur spread the red into the transparent half
    assert (good[visible, 1] == 0).all()  # ... with no green in it
    assert (good[visible, 0] == 255).all()
    np.testing.assert_array_equal(good[:, :, 3], bad[:, :, 3])  # alpha itself is the same
    assert bad[visible, 1].max() > 60  # straight alpha shows the fringe this test is about
    # the default is premultiply
    proc = blurapp("apply", tmp_path / "in.png", "-o", tmp_path / "default.png", "-k", spec,
                   "--strategy", "cpu")  # fmt: skip
    assert proc.returncode == 0
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "default.png")), good)


def test_linear_light(tmp_path: Path) -> None:
    image = np.zeros((4, 8), np.uint8)
    image[:, 4:] = 255
    np.save(tmp_path / "in.npy", image)
    for flag in ((), ("--linear",)):
        proc = blurapp("apply", tmp_path / "in.npy", "-o", tmp_path / f"o{len(flag)}.npy",
                       "-k", "box:2x1", "--strategy", "cpu", *flag)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    plain, linear = np.load(tmp_path / "o0.npy"), np.load(tmp_path / "o1.npy")
    # box:2x1 anchored at column 1 averages columns j-1 and j: the edge pixel is half light
    assert plain[0, 4] == 128
    assert linear[0, 4] == round(255 * (1.055 * 0.5 ** (1 / 2.4) - 0.055))  # 188
    np.testing.assert_array_equal(np.delete(linear, 4, axis=1), np.delete(plain, 4, axis=1))


# ------------------------------------------------------------------ bad files, safety


def _good_inputs(folder: Path, n: int = 2) -> list[np.ndarray]:
    folder.mkdir(exist_ok=True)
    images = []
    for i in range(n):
        image = _noise((9, 12, 3), seed=20 + i)
        Image.fromarray(image).save(folder / f"good{i}.png")
        images.append(image)
    return images


def test_bad_files_are_reported_and_the_rest_processed(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    images = _good_inputs(src)
    (src / "text.png").write_text("this is not a picture\n")
    whole = (src / "good0.png").read_bytes()
    (src / "truncated.png").write_bytes(whole[: len(whole) // 2])
    # a valid header promising 100000×100000 pixels: refused before decoding
    ihdr = b"IHDR" + (100_000).to_bytes(4, "big") * 2 + whole[24:29]
    crc = zlib.crc32(ihdr).to_bytes(4, "big")
    (src / "huge.png").write_bytes(whole[:12] + ihdr + crc + whole[33:])
    (src / "gone.png").symlink_to(src / "nowhere.png")  # unreadable, even for root
    report = tmp_path / "report.json"
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--strategy", "cpu",
                   "--report", report)  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert _files(out) == ["good0.png", "good1.png"]
    for i, image in enumerate(images):
        np.testing.assert_array_equal(
            np.asarray(Image.open(out / f"good{i}.png")), correlate(image, "box:3")
        )
    rows = {Path(r["input"]).name: r for r in json.loads(report.read_text())["files"]}
    for name in ("text.png", "truncated.png", "huge.png", "gone.png"):
        assert rows[name]["status"] == "failed"
        assert name in rows[name]["error"]
        assert name in proc.stderr
    assert "megapixels" in rows["huge.png"]["error"]
    assert rows["good0.png"]["status"] == "ok"
    _no_temporaries(out)


def _report_schema(report: dict) -> None:
    assert set(report) >= {"blurapp", "report_version", "settings", "files", "totals"}
    for row in report["files"]:
        assert set(row) >= {
            "input", "output", "size", "dtype", "strategy", "gpu_ms", "total_ms", "status",
            "error",
        }  # fmt: skip
        assert row["status"] in ("ok", "failed", "skipped", "cancelled")
        if row["status"] == "ok":
            assert row["error"] is None and row["strategy"]
            assert isinstance(row["total_ms"], float) and row["total_ms"] > 0
            width, height = row["size"]
            assert width > 0 and height > 0 and row["dtype"] in ("uint8", "uint16", "float32")
    totals = report["totals"]
    for key in ("files", "ok", "failed", "skipped", "pixels", "wall_s", "mpix_per_s", "gpu_ms"):
        assert key in totals
    assert totals["files"] == len(report["files"])
    assert totals["ok"] + totals["failed"] + totals["skipped"] + totals["cancelled"] == len(
        report["files"]
    )


def test_existing_outputs_refuse_skip_or_overwrite(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    images = _good_inputs(src, 3)
    out.mkdir()
    (out / "good1.png").write_bytes(b"older result")
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--strategy", "cpu")
    assert proc.returncode == 2
    assert "good1.png" in proc.stderr and "--skip-existing" in proc.stderr
    assert _files(out) == ["good1.png"]  # refused before any work

    report = tmp_path / "r.json"
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--strategy", "cpu",
                   "--skip-existing", "--report", report)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (out / "good1.png").read_bytes() == b"older result"
    assert _files(out) == ["good0.png", "good1.png", "good2.png"]
    data = json.loads(report.read_text())
    _report_schema(data)
    assert [r["status"] for r in data["files"]] == ["ok", "skipped", "ok"]
    assert data["totals"]["skipped"] == 1

    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--strategy", "cpu", "--overwrite")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(
        np.asarray(Image.open(out / "good1.png")), correlate(images[1], "box:3")
    )
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--overwrite", "--skip-existing")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_collisions_and_clobbering_inputs_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    Image.fromarray(_noise((4, 4, 3))).save(tmp_path / "a" / "x.png")
    Image.fromarray(_noise((4, 4, 3))).save(tmp_path / "b" / "x.jpg")
    out = tmp_path / "out"
    proc = blurapp("batch", tmp_path / "a", tmp_path / "b", "-o", out, "-k", "box:3",
                   "--format", "png")  # fmt: skip
    assert proc.returncode == 2
    assert "x.png" in proc.stderr and "x.jpg" in proc.stderr and "collision" in proc.stderr
    assert not out.exists()
    # the same inputs with their own formats do not collide; a glob finds them too
    proc = blurapp("batch", str(tmp_path / "*" / "x.*"), "-o", out, "-k", "box:3",
                   "--strategy", "cpu", "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _files(out) == ["x.jpg", "x.png"]
    # writing into the input's own folder without a suffix would replace the input
    before = (tmp_path / "a" / "x.png").read_bytes()
    proc = blurapp("batch", tmp_path / "a", "-o", tmp_path / "a", "-k", "box:3", "--overwrite")
    assert proc.returncode == 2 and "input" in proc.stderr
    assert (tmp_path / "a" / "x.png").read_bytes() == before
    (tmp_path / "tree").mkdir()
    for sub in ("a", "b"):
        (tmp_path / sub).rename(tmp_path / "tree" / sub)
    proc = blurapp("batch", tmp_path / "tree", "-o", out, "-k", "box:3", "--suffix", "_b", "-r",
                   "--strategy", "cpu", "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _files(out) == ["x.jpg", "x.png", "x_b.jpg", "x_b.png"]


def test_the_report_follows_the_never_overwrite_rule(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    _good_inputs(src, 2)
    q0 = src / "q0.png"
    q0.write_bytes((src / "good0.png").read_bytes())
    before = q0.read_bytes()
    for extra in ([], ["--overwrite"]):  # an input is never a report, even with --overwrite
        proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--report", q0, *extra)
        assert proc.returncode == 2, proc.stderr
        assert "q0.png" in proc.stderr and "input" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert not out.exists() and q0.read_bytes() == before  # refused before any work
    report = tmp_path / "r.json"
    report.write_text("an older report")
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--strategy", "cpu", "--report", report)
    assert proc.returncode == 2
    assert "r.json exists" in proc.stderr and "--overwrite" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists() and report.read_text() == "an older report"
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--strategy", "cpu", "--report", report,
                   "--overwrite", "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(report.read_text())["totals"]["ok"] == 3
    (tmp_path / "folder.json").mkdir()
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--report", tmp_path / "folder.json",
                   "--overwrite")  # fmt: skip
    assert proc.returncode == 2 and "folder.json is a folder" in proc.stderr


def test_an_output_is_known_as_an_input_by_inode_not_name(tmp_path: Path) -> None:
    """A hard link gives the input another name in the output folder: still refused."""
    src, out = tmp_path / "in", tmp_path / "out"
    _good_inputs(src, 1)
    out.mkdir()
    os.link(src / "good0.png", out / "good0.png")
    before = (src / "good0.png").read_bytes()
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--overwrite")
    assert proc.returncode == 2 and "replace its input" in proc.stderr
    assert (src / "good0.png").read_bytes() == before


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    _good_inputs(src, 3)
    (out / "good1.png").mkdir(parents=True)  # a folder where the output must go
    proc = blurapp("batch", src, "-o", out, "-k", "box:3", "--strategy", "cpu", "--overwrite")
    assert proc.returncode == 1
    assert "good1.png" in proc.stderr
    assert _files(out) == ["good0.png", "good1.png", "good2.png"]
    assert (out / "good1.png").is_dir() and not list((out / "good1.png").iterdir())
    _no_temporaries(out)


def test_interrupt_stops_cleanly(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    image = _noise((300, 400, 3), seed=1)
    for i in range(24):
        Image.fromarray(np.roll(image, i, axis=1)).save(src / f"p{i:02d}.png", compress_level=1)
    report = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "blurapp", "batch", src, "-o", out, "-k", "box:9x9", "--strategy",
         "cpu", "--jobs", "2", "--report", report],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out.exists() and any(out.glob("p*.png"))):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    _no_temporaries(out)
    written = _files(out)
    assert 0 < len(written) < 24
    for name in written:  # whatever was written is whole
        i = int(name[1:3])
        np.testing.assert_array_equal(
            np.asarray(Image.open(out / name)), correlate(np.roll(image, i, axis=1), "box:9x9")
        )
    data = json.loads(report.read_text())
    statuses = [r["status"] for r in data["files"]]
    assert statuses.count("ok") == len(written) and "cancelled" in statuses


# ------------------------------------------------------------------ progress and report


def test_progress_bar_only_on_a_terminal(tmp_path: Path, on_a_tty) -> None:
    src = tmp_path / "in"
    _good_inputs(src, 3)
    proc = blurapp("batch", src, "-o", tmp_path / "o1", "-k", "box:3", "--strategy", "cpu")
    assert proc.returncode == 0 and proc.stdout == ""  # not a TTY: silent

    def batch_on_a_tty(*extra: str) -> str:
        shown, code = on_a_tty("batch", src, "-k", "box:3", "--strategy", "cpu", *extra)
        assert code == 0
        return shown

    shown = batch_on_a_tty("-o", str(tmp_path / "o2"))
    assert "3/3 files" in shown and "Mpix/s" in shown and "[" in shown
    assert batch_on_a_tty("-o", str(tmp_path / "o3"), "--quiet") == ""


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_gpu_batch_matches_the_reference(tmp_path: Path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    images = _good_inputs(src, 3)
    report = tmp_path / "r.json"
    proc = blurapp("batch", src, "-o", out, "-k", "gaussian:sigma=1.5", "--strategy", "separable",
                   "--report", report, "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    _report_schema(data)
    for i, image in enumerate(images):
        got = np.asarray(Image.open(out / f"good{i}.png")).astype(int)
        assert np.abs(got - correlate(image, "gaussian:sigma=1.5")).max() <= 1
    for row in data["files"]:
        assert row["strategy"] == "separable"
        assert row["filter_ms"] > 0
        if row["timer"] == "gpu":
            assert row["gpu_ms"] > 0
