"""blurapp.dask.correlate: lazy, chunk by chunk, and equal to filter_image on the whole array."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import tifffile
import zarr

import blurapp
from blurapp.core.borders import Border
from blurapp.core.errors import ImageError, StrategyError, UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.dask import correlate, halo_indices

BORDERS = ["clamp", "zero", "constant=0.25", "reflect", "mirror", "wrap"]
# 37×53 in chunks of 7×17: nothing is a multiple of anything, and the kernel (25 wide, 9 tall)
# is larger than a chunk along both axes, so halos come from chunks beyond the neighbours.
SHAPE, CHUNKS = (37, 53), (7, 17)
KERNEL = "gaussian:sigma=3x1"  # rank 1, so separable runs it too


def _image(kind: str) -> np.ndarray:
    rng = np.random.default_rng(16)
    if kind == "gray-uint8":
        return rng.integers(0, 256, SHAPE, dtype=np.uint8)
    if kind == "rgb-float32":
        return rng.random((*SHAPE, 3), dtype=np.float32) * 1.5 - 0.25
    raise AssertionError(kind)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), np.max(
        np.abs(got.astype(np.float64) - want), initial=0
    )


@pytest.mark.parametrize("kind", ["gray-uint8", "rgb-float32"])
@pytest.mark.parametrize("border", BORDERS)
def test_cpu_equals_whole_image(kind: str, border: str) -> None:
    image = _image(kind)
    want = blurapp.filter_image(image, KERNEL, border=border, strategy="cpu").image
    chunked = da.from_array(image, chunks=CHUNKS + image.shape[2:])
    lazy = correlate(chunked, KERNEL, border, "cpu")
    assert lazy.chunks == chunked.chunks
    _same(lazy.compute(scheduler="threads"), want)


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["direct", "tiled", "separable"])
@pytest.mark.parametrize("kind", ["gray-uint8", "rgb-float32"])
@pytest.mark.parametrize("border", BORDERS)
def test_gpu_equals_whole_image_bit_for_bit(gpu, strategy: str, kind: str, border: str) -> None:
    image = _image(kind)
    want = blurapp.filter_image(image, KERNEL, border=border, strategy=strategy).image
    lazy = correlate(
        da.from_array(image, chunks=CHUNKS + image.shape[2:]), KERNEL, border, strategy
    )
    _same(lazy.compute(scheduler="threads"), want)


@pytest.mark.gpu
@pytest.mark.parametrize("border", ["reflect", "mirror", "wrap", "zero"])
def test_kernel_larger_than_the_image(gpu, border: str) -> None:
    # Reflections repeat: the halo reads the image several times over, in every chunk.
    image = np.random.default_rng(3).random((9, 11), dtype=np.float32)
    kernel = "box:31x25"
    want = blurapp.filter_image(image, kernel, border=border, strategy="direct").image
    got = correlate(da.from_array(image, chunks=(4, 5)), kernel, border, "direct").compute()
    _same(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "options",
    [
        {"range_mode": "normalize"},
        {"range_mode": "offset"},
        {"alpha": "straight"},
        {"linear": True},
        {"dtype": "float32"},
        {"convolve": True},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_every_filter_option_as_filter_image(gpu, options: dict) -> None:
    # RGBA with a transparent patch (premultiplied alpha), chunked across the channels too.
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (29, 31, 4), dtype=np.uint8)
    image[4:9, 3:20, 3] = 0
    kernel = "sobel:x" if "range_mode" in options else "matrix:2x2:1,2,3,4,normalize"
    for strategy in ("cpu", "direct", "auto"):
        want = blurapp.filter_image(image, kernel, border="mirror", strategy=strategy, **options)
        lazy = correlate(
            da.from_array(image, chunks=(8, 10, 3)), kernel, "mirror", strategy, **options
        )
        assert lazy.chunks == ((8, 8, 8, 5), (10, 10, 10, 1), (4,))
        _same(lazy.compute(), want.image)


def test_normalize_needs_the_whole_range() -> None:
    # The chunks alone would each stretch their own range; the result must use the image's.
    image = np.zeros((12, 12), np.uint8)
    image[:, 6:] = 200
    got = correlate(
        da.from_array(image, chunks=6), "sobel:x", "clamp", "cpu", range_mode="normalize"
    )
    want = blurapp.filter_image(image, "sobel:x", strategy="cpu", range_mode="normalize").image
    _same(got.compute(), want)


def test_it_is_lazy_and_takes_a_filter_spec() -> None:
    calls = []

    def source(block: np.ndarray) -> np.ndarray:
        calls.append(block.shape)
        return block

    ones = da.ones((20, 30), dtype=np.float32, chunks=(10, 10))
    image = ones.map_blocks(source, meta=np.empty((0, 0), np.float32))
    spec = FilterSpec.create("box:3", "wrap", "cpu")
    lazy = correlate(image, spec)
    assert calls == [] and lazy.shape == (20, 30) and lazy.dtype == np.float32
    np.testing.assert_array_equal(lazy.compute(), np.ones((20, 30), np.float32))
    assert calls  # the chunks were read when computed, not before
    with pytest.raises(UsageError, match="either a FilterSpec"):
        correlate(image, spec, border="mirror")


def test_a_numpy_array_is_wrapped() -> None:
    image = np.arange(30, dtype=np.float64).reshape(5, 6)
    got = correlate(image, "box:3", "clamp", "cpu")
    assert isinstance(got, da.Array)
    _same(got.compute(), blurapp.filter_image(image, "box:3", strategy="cpu").image)


@pytest.mark.parametrize(
    ("image", "match"),
    [
        (da.zeros((4, 4, 4, 1), dtype=np.uint8), "dimension"),
        (da.zeros((4, 4, 5), dtype=np.uint8), "5 channels"),
        (da.zeros((4, 4), dtype=np.int32), "unsupported pixel type int32"),
        (da.zeros((0, 4), dtype=np.uint8), "empty"),
    ],
)
def test_bad_images_are_one_line_errors(image: da.Array, match: str) -> None:
    with pytest.raises(ImageError, match=match):
        correlate(image, "box:3")


def test_bad_options_are_refused_up_front() -> None:
    image = da.zeros((8, 8), dtype=np.uint8, chunks=4)
    with pytest.raises(StrategyError):
        correlate(image, "disk:radius=2", strategy="separable")  # not rank 1
    with pytest.raises(UsageError):
        correlate(image, "box:3", "mirror", "cpu", range_mode="sideways")


@pytest.mark.parametrize("border", ["clamp", "zero", "reflect", "mirror", "wrap"])
def test_halo_indices_follow_the_border(border: str) -> None:
    b = Border.parse(border)
    idx, offset = halo_indices(0, 2, 4, 2, 1, b)
    if border == "zero":  # cut at the true edge: the filter applies the constant itself
        assert idx.tolist() == [0, 1, 2] and offset == 0
    else:
        assert idx.tolist() == b.map_indices(np.arange(-2, 3), 4).tolist() and offset == 2
    interior, offset = halo_indices(1, 3, 8, 1, 1, b)
    assert interior.tolist() == [0, 1, 2, 3] and offset == 1


def test_zarr_store_round_trip(tmp_path) -> None:
    # Out of core: read from one zarr store, filtered chunk by chunk, written to another.
    image = np.random.default_rng(7).integers(0, 256, (45, 70), dtype=np.uint8)
    source = zarr.open_array(tmp_path / "in.zarr", mode="w", shape=image.shape, chunks=(16, 32),
                             dtype=image.dtype)  # fmt: skip
    source[:] = image
    lazy = correlate(da.from_zarr(tmp_path / "in.zarr"), "gaussian:sigma=2", "mirror", "cpu")
    with dask.config.set(scheduler="threads"):
        lazy.to_zarr(tmp_path / "out.zarr")
    result = zarr.open_array(tmp_path / "out.zarr", mode="r")
    assert result.chunks == (16, 32)
    want = blurapp.filter_image(image, "gaussian:sigma=2", border="mirror", strategy="cpu")
    _same(result[:], want.image)


def test_tiled_tiff_read_lazily(tmp_path) -> None:
    # A tiled TIFF opened as a zarr store (tifffile): chunks are the TIFF's tiles.
    image = np.random.default_rng(8).integers(0, 65536, (70, 90, 3), dtype=np.uint16)
    tifffile.imwrite(tmp_path / "scan.tif", image, tile=(32, 32))
    with tifffile.imread(tmp_path / "scan.tif", aszarr=True) as store:
        lazy_in = da.from_zarr(zarr.open(store, mode="r"))
        assert lazy_in.chunks[:2] == ((32, 32, 6), (32, 32, 26))
        got = correlate(lazy_in, "box:5x3", "reflect", "cpu").compute(scheduler="threads")
    want = blurapp.filter_image(image, "box:5x3", border="reflect", strategy="cpu").image
    _same(got, want)
