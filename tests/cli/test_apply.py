"""`blurapp apply` run as a user would (a subprocess), its files checked against the reference."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.core.reference import correlate
from blurapp.io import read_image


def blurapp(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "blurapp", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _noise(shape: tuple[int, ...], dtype: type = np.uint8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.random(shape).astype(dtype)
    return rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)


@pytest.mark.parametrize(
    ("shape", "dtype", "spec", "border"),
    [
        ((13, 17), np.float64, "gaussian:sigma=1.5", "mirror"),
        ((9, 11, 3), np.uint8, "box:7x3", "wrap"),
        ((1, 1), np.uint16, "disk:radius=3", "reflect"),  # kernel much larger than the image
        ((6, 5, 4), np.float32, "laplacian", "constant=0.25"),
    ],
)
def test_npy_matches_the_reference(
    tmp_path: Path, shape: tuple[int, ...], dtype: type, spec: str, border: str
) -> None:
    image = _noise(shape, dtype)
    np.save(tmp_path / "in.npy", image)
    out = tmp_path / "out.npy"
    # --alpha straight: the reference filters channels as they are (4 channels = RGBA here).
    proc = blurapp(
        "apply", tmp_path / "in.npy", "-o", out, "--kernel", spec, "--border", border,
        "--strategy", "cpu", "--alpha", "straight",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = np.load(out)
    assert result.dtype == image.dtype and result.shape == image.shape
    np.testing.assert_array_equal(result, correlate(image, spec, border))


def test_png_convolve_matches_the_reference(tmp_path: Path) -> None:
    image = _noise((21, 30, 3), seed=3)
    Image.fromarray(image).save(tmp_path / "in.png")
    out = tmp_path / "out.png"
    spec = "motion:length=5,angle=30"
    proc = blurapp(
        "apply", tmp_path / "in.png", "-o", out, "--kernel", spec, "--strategy", "cpu",
        "--convolve", "--border", "clamp",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(
        np.asarray(Image.open(out)), correlate(image, spec, "clamp", convolve=True)
    )


def test_sixteen_bit_png_keeps_every_bit(tmp_path: Path) -> None:
    image = _noise((8, 9, 3), np.uint16, seed=4)
    np.save(tmp_path / "in.npy", image)
    png = tmp_path / "in16.png"
    assert blurapp("apply", tmp_path / "in.npy", "-o", png, "-k", "identity").returncode == 0
    out = tmp_path / "blurred.png"
    proc = blurapp("apply", png, "-o", out, "-k", "gaussian:sigma=1", "--strategy", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert read_image(png).pixels.dtype == np.uint16
    np.testing.assert_array_equal(read_image(png).pixels, image)
    np.testing.assert_array_equal(read_image(out).pixels, correlate(image, "gaussian:sigma=1"))


@pytest.mark.parametrize("mode", ["clamp", "abs", "offset", "normalize"])
def test_sobel_range_modes(tmp_path: Path, mode: str) -> None:
    image = np.tile(np.linspace(0, 255, 16).astype(np.uint8), (8, 1))
    image[:, 8:] = image[:, 8:][:, ::-1]  # rising then falling: both signs of the derivative
    Image.fromarray(image).save(tmp_path / "in.png")
    out = tmp_path / "out.png"
    proc = blurapp(
        "apply", tmp_path / "in.png", "-o", out, "-k", "sobel:x", "--range", mode,
        "--strategy", "cpu",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    expected = correlate(image, "sobel:x", range_mode=mode)
    np.testing.assert_array_equal(np.asarray(Image.open(out)), expected)
    assert len(np.unique(expected)) > 2  # the mode shows up in the numbers


def test_timing_names_strategy_passes_and_throughput(tmp_path: Path) -> None:
    np.save(tmp_path / "in.npy", _noise((32, 32)))
    proc = blurapp(
        "apply", tmp_path / "in.npy", "-o", tmp_path / "o.npy", "-k", "box:3",
        "--strategy", "cpu", "--timing",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    text = proc.stderr
    for word in ("strategy", "cpu", "pass", "ms", "timer", "wall", "Mpix/s", "modelled"):
        assert word in text, text


def test_existing_output_is_refused_then_replaced_with_overwrite(tmp_path: Path) -> None:
    np.save(tmp_path / "in.npy", _noise((5, 5)))
    out = tmp_path / "out.npy"
    out.write_bytes(b"precious")
    proc = blurapp("apply", tmp_path / "in.npy", "-o", out, "-k", "box:3", "--strategy", "cpu")
    assert proc.returncode == 2
    assert str(out) in proc.stderr and "--overwrite" in proc.stderr
    assert out.read_bytes() == b"precious"
    proc = blurapp(
        "apply", tmp_path / "in.npy", "-o", out, "-k", "box:3", "--strategy", "cpu", "--overwrite"
    )
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), correlate(np.load(tmp_path / "in.npy"), "box:3"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy", "out.npy"]  # no temporary


def test_the_input_is_never_the_output_whatever_its_name(tmp_path: Path) -> None:
    np.save(tmp_path / "in.npy", _noise((5, 5)))
    before = (tmp_path / "in.npy").read_bytes()
    os.link(tmp_path / "in.npy", tmp_path / "same.npy")  # one file, two names
    (tmp_path / "link.npy").symlink_to(tmp_path / "in.npy")
    for out in ("in.npy", "same.npy", "link.npy"):
        proc = blurapp("apply", tmp_path / "in.npy", "-o", tmp_path / out, "-k", "box:3",
                       "--strategy", "cpu", "--overwrite")  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert "is the input" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert (tmp_path / "in.npy").read_bytes() == before


def test_something_that_is_not_a_file_is_never_replaced(tmp_path: Path) -> None:
    np.save(tmp_path / "in.npy", _noise((5, 5)))
    (tmp_path / "dir.npy").mkdir()
    os.mkfifo(tmp_path / "fifo.npy")
    for out, kind in (("dir.npy", "a folder"), ("fifo.npy", "a FIFO")):
        proc = blurapp("apply", tmp_path / "in.npy", "-o", tmp_path / out, "-k", "box:3",
                       "--strategy", "cpu", "--overwrite")  # fmt: skip
        assert proc.returncode == 2
        assert f"{out} is {kind}, not a file" in proc.stderr
    assert (tmp_path / "dir.npy").is_dir() and not list((tmp_path / "dir.npy").iterdir())


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["-k", "gaussian:sigma=-1"], 2, "sigma"),
        (["-k", "nonsense"], 2, "nonsense"),
        (["-k", "box:3", "--border", "sideways"], 2, "sideways"),
        (["-k", "laplacian", "--strategy", "separable"], 2, "rank"),
        (["-k", "box:3", "--range", "wide"], 2, "wide"),
        (["-k", "box:3", "--quality", "101"], 2, "quality"),
    ],
)
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], code: int, needle: str) -> None:
    np.save(tmp_path / "in.npy", _noise((4, 4)))
    proc = blurapp("apply", tmp_path / "in.npy", "-o", tmp_path / "o.npy", *args)
    assert proc.returncode == code
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.npy").exists()


def test_bad_files(tmp_path: Path) -> None:
    (tmp_path / "text.png").write_text("not an image\n")
    proc = blurapp("apply", tmp_path / "text.png", "-o", tmp_path / "o.png", "-k", "box:3")
    assert proc.returncode == 1
    assert "text.png" in proc.stderr and "Traceback" not in proc.stderr
    proc = blurapp("apply", tmp_path / "missing.png", "-o", tmp_path / "o.png", "-k", "box:3")
    assert proc.returncode == 2 and "missing.png" in proc.stderr
    np.save(tmp_path / "in.npy", _noise((4, 4)))
    proc = blurapp("apply", tmp_path / "in.npy", "-o", tmp_path / "o.xyz", "-k", "box:3")
    assert proc.returncode == 2 and ".xyz" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy", "text.png"]


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("strategy", ["auto", "tiled", "separable"])
def test_gpu_strategies_agree_with_the_reference(tmp_path: Path, strategy: str) -> None:
    image = _noise((37, 53, 3), seed=7)
    Image.fromarray(image).save(tmp_path / "in.png")
    out = tmp_path / "out.png"
    proc = blurapp(
        "apply", tmp_path / "in.png", "-o", out, "-k", "gaussian:sigma=2", "--strategy", strategy,
        "--border", "mirror", "--timing",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    expected = correlate(image, "gaussian:sigma=2", "mirror")
    # f32 accumulation may turn a x.5 rounding the other way: at most one level apart.
    diff = np.abs(np.asarray(Image.open(out)).astype(int) - expected.astype(int))
    assert diff.max() <= 1
    assert "strategy" in proc.stderr
