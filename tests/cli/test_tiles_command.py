"""--max-tile-side on apply and batch (same bytes as untiled), and `blurapp info --size`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from blurapp.cli import main
from blurapp.io import ImageData, read_image, write_image


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["auto", "direct", "tiled", "separable", "transpose"])
def test_tiles_write_the_same_bytes(gpu, tmp_path: Path, strategy: str) -> None:
    """1500×1100 with --max-tile-side 256 against the whole image: byte for byte through
    `apply` (the issue's goal, on a smaller image for the test's sake), pixel for pixel
    through `batch` (its PNGs are written a band at a time with the Up row filter, `apply`'s
    with Paeth: blurapp/io/bands.py)."""
    rng = np.random.default_rng(4)
    image = rng.integers(0, 256, (300, 410, 3)).astype(np.uint8)
    src = tmp_path / "in.png"
    write_image(src, ImageData(image))
    kernel = "gaussian:sigma=2" if strategy in ("separable", "transpose") else "emboss"
    common = ["--kernel", kernel, "--border", "mirror", "--strategy", strategy]
    assert main(["apply", str(src), "-o", str(tmp_path / "whole.png"), *common]) == 0
    assert main(["apply", str(src), "-o", str(tmp_path / "tiled.png"), *common,
                 "--max-tile-side", "64"]) == 0  # fmt: skip
    assert (tmp_path / "whole.png").read_bytes() == (tmp_path / "tiled.png").read_bytes()
    out = tmp_path / "batch"
    assert main(["batch", str(src), "-o", str(out), "--quiet", *common,
                 "--max-tile-side", "100"]) == 0  # fmt: skip
    whole, batched = read_image(tmp_path / "whole.png"), read_image(out / "in.png")
    assert batched.pixels.dtype == whole.pixels.dtype
    np.testing.assert_array_equal(batched.pixels, whole.pixels)


def test_a_tile_too_small_is_exit_2(tmp_path: Path, capsys) -> None:
    src = tmp_path / "in.npy"
    np.save(src, np.zeros((20, 20), np.uint8))
    code = main(["apply", str(src), "-o", str(tmp_path / "o.npy"), "--kernel", "box:9",
                 "--strategy", "cpu", "--max-tile-side", "8"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "too small for a 9×9 kernel" in err
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.gpu
def test_info_shows_the_tiles_of_an_image(gpu, capsys) -> None:
    assert main(["info", "--json", "--size", "20000x15000", "--kernel", "box:5"]) == 0
    tiles = json.loads(capsys.readouterr().out)["tiles"]
    assert tiles["whole"] is False and tiles["tiles"] > 1
    assert tiles["halo"].startswith("2 above")
    assert main(["info", "--size", "640x480"]) == 0
    assert "whole" in capsys.readouterr().out
    assert main(["info", "--size", "big"]) == 2
