"""blurapp.io.tiffstream: regions of a TIFF equal the whole-image reader's pixels, only the
regions asked for are read, and the tiled writer is atomic and holds a bounded band of rows."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

from blurapp.core.errors import OutputError
from blurapp.core.filterspec import FilterSpec
from blurapp.io import TEMP_SUFFIX, read_image, tiffstream
from blurapp.io.tiffstream import TIFF_TILE, TiffMetadata, open_tiff_source, tiff_sink
from blurapp.pipeline import filter_pixels, stream_pixels

H, W = 300, 410
_RNG = np.random.default_rng(15)
RGB16 = _RNG.integers(0, 65536, (H, W, 3), dtype=np.uint16)
RGBA8 = _RNG.integers(0, 256, (H, W, 4), dtype=np.uint8)
GREY32 = _RNG.random((H, W), dtype=np.float32)

#: name → (pixels as read, tifffile.imwrite arguments)
LAYOUTS = {
    "uncompressed-striped-rgb16": (RGB16, {"photometric": "rgb", "rowsperstrip": 16}),
    "uncompressed-big-endian": (RGB16, {"photometric": "rgb", "byteorder": ">"}),
    "deflate-striped-rgb16": (RGB16, {"photometric": "rgb", "compression": "zlib",
                                      "rowsperstrip": 7}),
    "lzw-striped-predictor": (RGB16, {"photometric": "rgb", "compression": "lzw",
                                      "predictor": True}),
    "deflate-tiled-rgba8": (RGBA8, {"photometric": "rgb", "extrasamples": ["unassalpha"],
                                    "compression": "zlib", "tile": (64, 128)}),
    "uncompressed-tiled": (RGBA8[:, :, :3], {"photometric": "rgb", "tile": (32, 32)}),
    "planar-separate-deflate": (RGB16, {"photometric": "rgb", "planarconfig": "separate",
                                        "compression": "zlib", "rowsperstrip": 16}),
    "planar-separate-uncompressed": (RGB16, {"photometric": "rgb",
                                             "planarconfig": "separate"}),
    "uncompressed-float32-grey": (GREY32, {"photometric": "minisblack"}),
    "float32-grey-tiled-predictor": (GREY32, {"photometric": "minisblack", "compression": "zlib",
                                              "predictor": True, "tile": (32, 48)}),
    "bigtiff-tiled": (RGBA8[:, :, :3], {"photometric": "rgb", "bigtiff": True,
                                        "compression": "zlib", "tile": (16, 16)}),
    "bigtiff-uncompressed": (RGBA8[:, :, :3], {"photometric": "rgb", "bigtiff": True}),
    "jpeg-ycbcr": (RGBA8[:, :, :3], {"photometric": "ycbcr", "compression": "jpeg",
                                     "tile": (64, 64)}),
}  # fmt: skip

REGIONS = [(0, H, 0, W), (5, 77, 13, 400), (H - 1, H, W - 1, W), (100, 250, 0, W), (0, 1, 0, 5)]


def _write(path: Path, name: str) -> Path:
    pixels, kwargs = LAYOUTS[name]
    data = np.moveaxis(pixels, -1, 0) if kwargs.get("planarconfig") == "separate" else pixels
    tifffile.imwrite(path, data, **kwargs)
    return path


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_regions_equal_the_whole_image_reader(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path / f"{name}.tif", name)
    whole = read_image(path).pixels
    source = open_tiff_source(path)
    assert source is not None
    with source:
        assert source.shape == whole.shape and source.dtype == whole.dtype
        assert source.mapped == ("uncompressed" in name and "tiled" not in name)
        for y0, y1, x0, x1 in REGIONS:
            np.testing.assert_array_equal(source[y0:y1, x0:x1], whole[y0:y1, x0:x1])


def test_pillow_files_and_float16_read_as_the_whole_reader_does(tmp_path: Path) -> None:
    Image.fromarray(RGBA8[:, :, :3]).save(tmp_path / "d.tif", compression="tiff_adobe_deflate")
    Image.fromarray(RGBA8[:, :, :3]).save(tmp_path / "u.tif")
    tifffile.imwrite(tmp_path / "h.tif", GREY32.astype(np.float16), compression="zlib",
                     rowsperstrip=10)  # fmt: skip
    for name in ("d.tif", "u.tif", "h.tif"):
        whole = read_image(tmp_path / name).pixels
        with open_tiff_source(tmp_path / name) as source:  # type: ignore[union-attr]
            assert source.dtype == whole.dtype
            np.testing.assert_array_equal(source[3:200, 7:300], whole[3:200, 7:300])


def test_what_the_whole_reader_must_take_is_not_streamed(tmp_path: Path) -> None:
    # Turned by EXIF orientation, several frames, a palette: the whole-image path's.
    tifffile.imwrite(tmp_path / "o.tif", RGBA8[:, :, :3], extratags=[(274, 3, 1, 6, True)])
    tifffile.imwrite(tmp_path / "f.tif", np.zeros((2, 8, 8), np.uint8))
    Image.fromarray(RGBA8[:, :, 0]).convert("P").save(tmp_path / "p.tif")
    for name in ("o.tif", "f.tif", "p.tif"):
        assert open_tiff_source(tmp_path / name) is None, name


class Counting:
    """A source wrapper that records the size of every region read."""

    def __init__(self, source) -> None:
        self.source = source
        self.shape, self.dtype = source.shape, source.dtype
        self.regions: list[int] = []

    def __getitem__(self, key):
        block = self.source[key]
        self.regions.append(block.shape[0] * block.shape[1])
        return block


@pytest.mark.parametrize(
    "name", ["uncompressed-striped-rgb16", "deflate-striped-rgb16", "deflate-tiled-rgba8"]
)
def test_streaming_reads_tiles_and_halos_and_decodes_each_segment_once(
    tmp_path: Path, name: str
) -> None:
    path = _write(tmp_path / "in.tif", name)
    spec = FilterSpec.create("gaussian:sigma=2", border="clamp", strategy="cpu")
    whole = filter_pixels(read_image(path).pixels, spec).image
    out = np.zeros_like(whole)

    def sink(window, pixels):
        y0, y1, x0, x1 = window
        out[y0:y1, x0:x1] = pixels

    with open_tiff_source(path) as source:  # type: ignore[union-attr]
        counting = Counting(source)
        stream_pixels(counting, spec, sink, max_tile_side=64)
        np.testing.assert_array_equal(out, whole)
        side = 64  # padded tile side: no region read is larger than one tile and its halo
        assert max(counting.regions) <= side * side
        # Each tile with its halo, and its window again for the finishing stage (edge tiles
        # are computed whole, so they overlap their neighbours): 63 × (64² + 48²) ≈ 3.3 times
        # the image here; never the whole image per tile.
        assert sum(counting.regions) < 3.5 * H * W
        if source.mapped:
            assert source.bytes_decoded == 0
        else:
            # A band of strips is decoded once for all the tiles of its row.
            assert max(source.decodes.values()) == 1
            assert len(source.decodes) == len(source._page.dataoffsets)


def _windows(shape, side):
    for y0 in range(0, shape[0], side):
        for x0 in range(0, shape[1], side):
            yield y0, min(y0 + side, shape[0]), x0, min(x0 + side, shape[1])


@pytest.mark.parametrize(
    ("shape", "dtype", "side"),
    [((600, 530, 3), np.uint8, 100), ((600, 530), np.float32, 257), ((513, 256, 4), np.uint16,
     512), ((1, 1, 3), np.uint8, 1), ((300, 410, 2), np.uint8, 48)],
)  # fmt: skip
def test_the_tiled_writer_writes_what_it_was_given(tmp_path: Path, shape, dtype, side) -> None:
    pixels = (np.random.default_rng(1).random(shape) * 250).astype(dtype)
    path = tmp_path / "o.tif"
    with tiff_sink(path, shape, dtype, band_rows=side) as sink:
        for y0, y1, x0, x1 in _windows(shape, side):
            sink((y0, y1, x0, x1), pixels[y0:y1, x0:x1].copy())
    np.testing.assert_array_equal(read_image(path).pixels, pixels)
    with tifffile.TiffFile(path) as tif:
        page = tif.pages.first
        assert page.is_tiled and (page.tilelength, page.tilewidth) == (TIFF_TILE, TIFF_TILE)
        assert page.compression == 8  # deflate, as the whole-image writer
        assert bool(page.extrasamples) == (len(shape) == 3 and shape[2] in (2, 4))
    assert sink.peak_rows <= _held_at_most(side)
    assert os.listdir(tmp_path) == ["o.tif"]


def _held_at_most(side: int) -> int:
    """Rows the writer may hold: the rows of tiles of the row of windows being filled, as many
    waiting for the encoder, and the one being encoded."""
    per_band = -(-side // TIFF_TILE) + 1
    return TIFF_TILE * (2 * per_band + 1)


def test_the_writer_holds_a_band_not_the_image(tmp_path: Path) -> None:
    shape, side = (6000, 64, 1), 100
    path = tmp_path / "o.tif"
    with tiff_sink(path, shape[:2], np.uint8, band_rows=side) as sink:
        for y0, y1, x0, x1 in _windows(shape, side):
            sink((y0, y1, x0, x1), np.full((y1 - y0, x1 - x0), y0 % 251, np.uint8))
    assert sink.peak_rows <= _held_at_most(side) < shape[0] / 4


def test_metadata_is_carried_and_bigtiff_written_when_needed(tmp_path, monkeypatch) -> None:
    src = tmp_path / "in.tif"
    icc = b"\0" * 128 + b"acsp" + b"\0" * 60
    tifffile.imwrite(src, RGBA8, photometric="rgb", extrasamples=["unassalpha"],
                     iccprofile=icc, resolution=(300, 300), resolutionunit=2,
                     software="scanner 1.0", extratags=[(315, "s", 0, "Ada", True)])  # fmt: skip
    with open_tiff_source(src) as source:  # type: ignore[union-attr]
        metadata = source.metadata
    assert metadata.icc_profile == icc
    monkeypatch.setattr(tiffstream, "BIGTIFF_BYTES", 1000)
    path = tmp_path / "o.tif"
    with tiff_sink(path, RGBA8.shape, np.uint8, band_rows=H, metadata=metadata) as sink:
        sink((0, H, 0, W), RGBA8)
    with tifffile.TiffFile(path) as tif:
        page = tif.pages.first
        assert tif.is_bigtiff
        assert page.iccprofile == icc
        assert page.tags["Artist"].value == "Ada"
        assert page.tags["Software"].value == "scanner 1.0"
        assert page.tags["XResolution"].value == (300, 1)
    np.testing.assert_array_equal(read_image(path).pixels, RGBA8)


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_error_or_interrupt_leaves_nothing(tmp_path: Path, error) -> None:
    path = tmp_path / "o.tif"
    with pytest.raises(error):
        with tiff_sink(path, (600, 530, 3), np.uint8, band_rows=100) as sink:
            for i, (y0, y1, x0, x1) in enumerate(_windows((600, 530, 3), 100)):
                if i == 20:
                    raise error
                sink((y0, y1, x0, x1), np.zeros((y1 - y0, x1 - x0, 3), np.uint8))
    assert os.listdir(tmp_path) == []


def test_windows_out_of_order_or_missing_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="order"):
        with tiff_sink(tmp_path / "o.tif", (20, 20), np.uint8, band_rows=10) as sink:
            sink((0, 10, 10, 20), np.zeros((10, 10), np.uint8))
    with pytest.raises(ValueError, match="only 10 of 20 rows"):
        with tiff_sink(tmp_path / "o.tif", (20, 20), np.uint8, band_rows=10) as sink:
            sink((0, 10, 0, 20), np.zeros((10, 20), np.uint8))
    assert os.listdir(tmp_path) == []


def test_an_existing_file_is_never_replaced_without_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "o.tif"
    path.write_bytes(b"mine")
    with pytest.raises(OutputError, match="exists"):
        with tiff_sink(path, (8, 8), np.uint8, band_rows=8) as sink:
            sink((0, 8, 0, 8), np.ones((8, 8), np.uint8))
    assert path.read_bytes() == b"mine"
    assert not [n for n in os.listdir(tmp_path) if n.endswith(TEMP_SUFFIX)]
    with tiff_sink(path, (8, 8), np.uint8, band_rows=8, overwrite=True) as sink:
        sink((0, 8, 0, 8), np.ones((8, 8), np.uint8))
    np.testing.assert_array_equal(read_image(path).pixels, np.ones((8, 8), np.uint8))
    assert os.listdir(tmp_path) == ["o.tif"]


def test_a_corrupt_segment_is_one_line_naming_the_file(tmp_path: Path) -> None:
    from blurapp.core.errors import ImageError

    path = _write(tmp_path / "in.tif", "deflate-striped-rgb16")
    with tifffile.TiffFile(path) as tif:
        offset = int(tif.pages.first.dataoffsets[3])
    raw = bytearray(path.read_bytes())
    raw[offset : offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(raw))
    with open_tiff_source(path) as source:  # type: ignore[union-attr]
        assert source[0:7, :].shape == (7, W, 3)
        with pytest.raises(ImageError, match=rf"^cannot read {re.escape(str(path))}: truncated"):
            source[20:30, :]


def test_metadata_defaults() -> None:
    assert TiffMetadata().extratags == ()
