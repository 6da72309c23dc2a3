"""stream_pixels: tiles read from an array-like that only slices, results handed to a sink."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.core.borders import BORDER_MODES
from blurapp.core.filterspec import FilterSpec
from blurapp.pipeline import filter_pixels, stream_pixels


class SlicesOnly:
    """An array-like that, like a lazily decoded file, answers 2-D slices and nothing else,
    and counts the pixels read."""

    def __init__(self, pixels: np.ndarray) -> None:
        self._pixels = pixels
        self.shape = pixels.shape
        self.dtype = pixels.dtype
        self.read = 0

    def __getitem__(self, key: tuple[slice, slice]) -> np.ndarray:
        rows, cols = key
        assert isinstance(rows, slice) and isinstance(cols, slice)
        assert rows.step is None and cols.step is None
        block = np.array(self._pixels[rows, cols])
        self.read += block.shape[0] * block.shape[1]
        return block


def _stream(source, spec, **kw):
    out = np.zeros(source.shape, kw.pop("dtype", source.dtype))
    windows = []

    def sink(window, tile):
        y0, y1, x0, x1 = window
        windows.append(window)
        out[y0:y1, x0:x1] = tile

    result = stream_pixels(source, spec, sink, dtype=out.dtype, **kw)
    assert result.image is None
    return out, windows, result


@pytest.mark.parametrize("border", [*BORDER_MODES, "constant"])
@pytest.mark.parametrize("strategy", ["cpu", "direct", "separable"])
def test_streamed_tiles_equal_the_whole_run(border, strategy):
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    border_arg = "constant=0.25" if border == "constant" else border
    spec = FilterSpec.create("gaussian:sigma=1", border=border_arg, strategy=strategy)
    whole = filter_pixels(image, spec).image
    source = SlicesOnly(image)
    out, windows, _ = _stream(source, spec, max_tile_side=16)
    np.testing.assert_array_equal(out, whole)
    # Row by row, each window once, covering the image.
    assert windows == sorted(windows)
    assert sum((y1 - y0) * (x1 - x0) for y0, y1, x0, x1 in windows) == 37 * 53
    # Only the tiles and their halos are read (edge tiles are computed whole, so a bit more),
    # never the whole image per tile.
    assert source.read < 37 * 53 * 8


def test_streaming_a_memory_map_in_float_with_alpha_and_normalize(tmp_path):
    rng = np.random.default_rng(3)
    image = rng.random((41, 29, 4), dtype=np.float32)
    path = tmp_path / "x.npy"
    np.save(path, image)
    mapped = np.load(path, mmap_mode="r")
    spec = FilterSpec.create("sobel:x", strategy="direct", range_mode="normalize", dtype="uint16")
    whole = filter_pixels(image, spec).image
    out, _, result = _stream(mapped, spec, dtype=np.uint16, max_tile_side=12)
    np.testing.assert_array_equal(out, whole)
    assert "tiles" in result.reason


def test_a_single_pixel_streams():
    image = np.full((1, 1), 200, np.uint8)
    spec = FilterSpec.create("box:5", border="wrap", strategy="direct")
    out, windows, _ = _stream(SlicesOnly(image), spec)
    assert windows == [(0, 1, 0, 1)]
    np.testing.assert_array_equal(out, filter_pixels(image, spec).image)


def test_max_tile_side_is_checked_in_the_api() -> None:
    from blurapp import filter_image
    from blurapp.core.errors import UsageError

    image = np.zeros((20, 20), np.uint8)
    for bad in ("8", 8.0, True):
        with pytest.raises(UsageError, match="max_tile_side must be a whole number"):
            filter_image(image, "box:3", strategy="cpu", max_tile_side=bad)
    assert filter_image(image, "box:3", strategy="cpu", max_tile_side=np.int64(8)).image.shape


def test_too_many_tiles_is_a_usage_error_naming_a_side_that_works() -> None:
    from blurapp.core.errors import UsageError
    from blurapp.core.tiling import MAX_TILES, plan_grid

    with pytest.raises(UsageError, match=r"into 12000000 tiles \(at most 65536\): use "):
        plan_grid(3000, 4000, (3, 3), max_tile_side=3)
    try:
        plan_grid(3000, 4000, (3, 3), max_tile_side=3)
    except UsageError as err:
        enough = int(str(err).split("--max-tile-side ")[-1].split()[0])
    assert plan_grid(3000, 4000, (3, 3), max_tile_side=enough).count <= MAX_TILES


def test_one_tile_in_flight_gives_the_same_bytes_and_bad_values_are_refused() -> None:
    from blurapp.core.errors import UsageError

    image = np.random.default_rng(9).integers(0, 256, (50, 70, 3), dtype=np.uint8)
    spec = FilterSpec.create("box:5", strategy="cpu")
    many = filter_pixels(image, spec, max_tile_side=20).image
    one = filter_pixels(image, spec, max_tile_side=20, in_flight=1).image
    np.testing.assert_array_equal(one, many)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(UsageError, match="in_flight"):
            filter_pixels(image, spec, in_flight=bad)
