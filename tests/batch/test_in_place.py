"""batch filters an image decoded whole (JPEG, WebP...) in band tiles into its own array: the
same pixels as the whole-image path (``apply``), one tile's GPU textures instead of the
image's, and only where it can."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.batch.inplace import InPlaceBands
from blurapp.batch.pipeline import (
    EncodeSettings,
    Job,
    in_place_side,
    process_file,
    run_pipeline,
)
from blurapp.core.filterspec import FilterSpec
from blurapp.core.tiling import plan_grid
from blurapp.io import probe_image, read_image
from blurapp.pipeline import filter_pixels, stream_pixels


def _photo(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (8, 8, shape[2])).astype(np.uint8)
    mode = "RGB" if shape[2] == 3 else "RGBA"
    smooth = Image.fromarray(small, mode).resize((shape[1], shape[0]), Image.Resampling.BICUBIC)
    noise = rng.integers(-8, 9, shape)
    return np.clip(np.asarray(smooth).astype(int) + noise, 0, 255).astype(np.uint8)


@pytest.mark.parametrize(
    ("strategy", "border"), [("separable", "mirror"), ("tiled", "zero"), ("direct", "clamp")]
)
def test_a_whole_decoded_image_in_band_tiles_equals_the_whole_image_path(
    gpu, tmp_path: Path, strategy: str, border: str
) -> None:
    spec = FilterSpec.create("gaussian:sigma=2", border, strategy)
    jpeg = tmp_path / "photo.jpg"
    Image.fromarray(_photo((1100, 1500, 3), 1)).save(jpeg, quality=90)
    webp = tmp_path / "alpha.webp"  # alpha: premultiplied on the float path
    Image.fromarray(_photo((1250, 1030, 4), 2), "RGBA").save(webp, lossless=True)
    encode = EncodeSettings()
    jobs = [
        Job(jpeg, tmp_path / "photo.png", "png"),  # pixels compared exactly
        Job(jpeg, tmp_path / "photo_out.jpg", "jpg"),  # bytes compared
        Job(webp, tmp_path / "alpha.png", "png"),
    ]
    for job in jobs:
        assert in_place_side(probe_image(job.input), job.format, spec, encode) is not None
    records = run_pipeline(jobs, spec, encode, workers=2)
    assert [r.status for r in records] == ["ok"] * len(jobs), [r.error for r in records]
    for i, job in enumerate(jobs):
        whole = tmp_path / f"whole{i}.{job.format}"
        process_file(job.input, whole, job.format, spec, encode)  # apply: the whole image
        if job.format == "jpg":
            assert job.output.read_bytes() == whole.read_bytes()
        else:
            np.testing.assert_array_equal(read_image(job.output).pixels, read_image(whole).pixels)
        assert records[i].strategy == strategy


def test_in_place_bands_hold_two_rows_of_tiles_at_most(gpu) -> None:
    pixels = _photo((2000, 700, 3), 3)
    spec = FilterSpec.create("gaussian:sigma=1.5", "reflect", "separable")
    expected = filter_pixels(pixels, spec).image
    side = 256
    grid = plan_grid(2000, 700, spec.effective_kernel.shape, max_tile_side=side)
    top, bottom, _, _ = grid.halo
    bands = InPlaceBands(pixels.copy(), grid.side + top + bottom)
    stream_pixels(bands, spec, bands, max_tile_side=side)
    np.testing.assert_array_equal(bands.finish(), expected)
    assert bands.peak_rows <= 3 * grid.side  # not the image: a row of tiles waits, or two
    with pytest.raises(ValueError, match="already replaced"):
        bands[0:10, 0:10]  # the results replaced the pixels: a second pass cannot run


def test_only_what_runs_once_in_tiles_is_filtered_in_place(tmp_path: Path) -> None:
    jpeg = tmp_path / "photo.jpg"
    Image.fromarray(_photo((1100, 1500, 3), 4)).save(jpeg)
    small = tmp_path / "small.jpg"
    Image.fromarray(_photo((300, 400, 3), 5)).save(small)
    info = probe_image(jpeg)
    encode = EncodeSettings()
    gauss = FilterSpec.create("gaussian:sigma=2", strategy="separable")
    assert in_place_side(info, "jpg", gauss, encode) is not None
    assert in_place_side(probe_image(small), "jpg", gauss, encode) is None  # one tile
    wrap = FilterSpec.create("gaussian:sigma=2", "wrap", "separable")
    assert in_place_side(info, "jpg", wrap, encode) is None  # the first rows' halo: the last
    normalize = FilterSpec.create("sobel:x", range_mode="normalize", strategy="separable")
    assert in_place_side(info, "jpg", normalize, encode) is None  # every tile twice
    assert in_place_side(info, "tiff", FilterSpec.create("box:3", dtype="uint16"), encode) is None
    cpu = FilterSpec.create("box:3", strategy="cpu")
    assert in_place_side(info, "jpg", cpu, encode) is None  # the reference: no GPU textures
    assert in_place_side(info, "jpg", gauss, EncodeSettings(max_tile_side=300)) is None
