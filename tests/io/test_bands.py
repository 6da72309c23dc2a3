"""blurapp.io.bands: PNGs read and written a band of rows at a time equal the whole-image reader
and writer, hold a bounded number of rows, and leave nothing behind when stopped."""

from __future__ import annotations

import io
import zlib
from pathlib import Path

import imagecodecs
import numpy as np
import pytest
from PIL import Image

from blurapp.core.borders import BORDER_MODES
from blurapp.core.errors import ImageError, OutputError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.tiling import plan_grid
from blurapp.io import TEMP_SUFFIX, read_image
from blurapp.io.bands import PngWriter, open_png_source, png_sink, spng_available
from blurapp.pipeline import filter_pixels, stream_pixels

pytestmark = pytest.mark.skipif(not spng_available(), reason="imagecodecs without libspng")


def _pixels(shape: tuple[int, ...], dtype: type = np.uint8, seed: int = 0) -> np.ndarray:
    top = 256 if dtype == np.uint8 else 65536
    return np.random.default_rng(seed).integers(0, top, shape).astype(dtype)


def _png(path: Path, pixels: np.ndarray) -> Path:
    path.write_bytes(imagecodecs.png_encode(pixels))
    return path


def _tags(exif: bytes | None) -> dict[int, object]:
    found = Image.Exif()
    found.load(exif or b"")
    return dict(found)


def _grid_windows(height: int, width: int, side: int) -> list[tuple[int, int, int, int]]:
    return [
        (y0, min(y0 + side, height), x0, min(x0 + side, width))
        for y0 in range(0, height, side)
        for x0 in range(0, width, side)
    ]


LAYOUTS = [
    ((1, 1), np.uint8),
    ((7, 5), np.uint8),  # grey
    ((9, 4, 2), np.uint8),  # grey + alpha
    ((33, 17, 3), np.uint8),
    ((21, 31, 4), np.uint8),
    ((13, 11, 3), np.uint16),
    ((6, 9), np.uint16),
    ((5, 8, 4), np.uint16),
]


@pytest.mark.parametrize(("shape", "dtype"), LAYOUTS)
def test_source_gives_the_whole_image_readers_pixels(tmp_path: Path, shape, dtype) -> None:
    pixels = _pixels(shape, dtype)
    path = _png(tmp_path / "in.png", pixels)
    whole = read_image(path).pixels
    np.testing.assert_array_equal(whole, pixels)
    with open_png_source(path, look_back=3) as src:
        assert src.shape == whole.shape and src.dtype == whole.dtype
        height, width = shape[0], shape[1]
        side = 4
        for y0, y1, x0, x1 in _grid_windows(height, width, side):
            lo = max(0, y0 - 1)  # a halo row above, as a tile's gather asks
            np.testing.assert_array_equal(src[lo:y1, x0:x1], whole[lo:y1, x0:x1])
        # A second pass (--range normalize reads every tile twice) starts again from the top.
        np.testing.assert_array_equal(src[0:height, 0:width], whole)


def test_source_holds_a_bounded_band_of_rows(tmp_path: Path) -> None:
    pixels = _pixels((2000, 40, 3))
    path = _png(tmp_path / "tall.png", pixels)
    with open_png_source(path, look_back=50) as src:
        for y0 in range(0, 2000, 40):
            lo, hi = max(0, y0 - 5), min(2000, y0 + 45)
            np.testing.assert_array_equal(src[lo:hi, 3:37], pixels[lo:hi, 3:37])
        assert src.decoded_rows == 2000  # each row decoded once
        assert src.peak_rows <= 50 + 50 + 64 + 64  # look-back, a request, decoding steps


def test_prefetch_decodes_the_first_rows_once(tmp_path: Path) -> None:
    """A batch opens the next file ahead and decodes its first row of tiles (prefetch); the
    requests then find those rows, each row still decoded once."""
    pixels = _pixels((500, 30, 3))
    path = _png(tmp_path / "in.png", pixels)
    with open_png_source(path, look_back=120) as src:
        src.prefetch(120)
        assert 120 <= src.decoded_rows <= 120 + 64  # a decoding step at most beyond
        for y0 in range(0, 500, 100):
            lo, hi = max(0, y0 - 10), min(500, y0 + 110)
            np.testing.assert_array_equal(src[lo:hi, 0:30], pixels[lo:hi])
        src.prefetch(120)  # rows were asked for: nothing more
        assert src.decoded_rows == 500
    with open_png_source(path, look_back=50) as src:
        src.prefetch(10_000)  # no more than the buffer holds
        assert src.decoded_rows <= 50 + 64
        np.testing.assert_array_equal(src[0:500, 0:30], pixels)


def test_writer_completes_the_file_after_close(tmp_path: Path) -> None:
    """PngWriter.close returns once every window was given (a batch streams its next file
    meanwhile); wait() publishes the file, which then equals what png_sink writes."""
    pixels = _pixels((40, 25, 3), seed=2)
    out, ref = tmp_path / "out.png", tmp_path / "ref.png"
    writer = PngWriter(out, pixels.shape, np.uint8)
    writer.start()
    for window in _grid_windows(40, 25, 10):
        y0, y1, x0, x1 = window
        writer.sink(window, pixels[y0:y1, x0:x1])
    writer.close()
    writer.wait()
    with png_sink(ref, pixels.shape, np.uint8) as sink:
        sink((0, 40, 0, 25), pixels)
    assert out.read_bytes() == ref.read_bytes()
    np.testing.assert_array_equal(read_image(out).pixels, pixels)


def test_an_aborted_writer_leaves_nothing(tmp_path: Path) -> None:
    pixels = _pixels((40, 25, 3), seed=2)
    out = tmp_path / "out.png"
    writer = PngWriter(out, pixels.shape, np.uint8)
    writer.start()
    writer.sink((0, 20, 0, 25), pixels[:20])
    writer.abort()
    assert not list(tmp_path.iterdir())
    closed = PngWriter(out, pixels.shape, np.uint8)
    closed.start()
    closed.sink((0, 40, 0, 25), pixels)
    closed.close()
    closed.abort()  # the caller failed after the last window: published or removed, no temporary
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]
    never = PngWriter(tmp_path / "never.png", pixels.shape, np.uint8)
    never.abort()  # never started: nothing to wait for
    never.wait()
    assert not (tmp_path / "never.png").exists()
    (tmp_path / "taken.png").write_bytes(b"precious")
    taken = PngWriter(tmp_path / "taken.png", pixels.shape, np.uint8)
    taken.start()
    with pytest.raises(OutputError):
        taken.sink((0, 40, 0, 25), pixels)
        taken.close()
        taken.wait()
    taken.abort()
    assert (tmp_path / "taken.png").read_bytes() == b"precious"


def _with_chunk(png: bytes, kind: bytes, body: bytes) -> bytes:
    chunk = len(body).to_bytes(4, "big") + kind + body
    chunk += (zlib.crc32(kind + body) & 0xFFFFFFFF).to_bytes(4, "big")
    end_of_ihdr = 8 + 8 + 13 + 4
    return png[:end_of_ihdr] + chunk + png[end_of_ihdr:]


def test_files_the_source_leaves_to_the_whole_image_reader(tmp_path: Path) -> None:
    rgb = _pixels((8, 8, 3))
    buf = io.BytesIO()
    Image.fromarray(rgb).quantize(16).save(buf, format="PNG")  # a palette
    (tmp_path / "palette.png").write_bytes(buf.getvalue())
    plain = imagecodecs.png_encode(rgb)
    # Interlace method 1 in the header (the pixel data need not be Adam7: the header decides).
    ihdr = plain[12:28] + b"\x01"
    crc = (zlib.crc32(ihdr) & 0xFFFFFFFF).to_bytes(4, "big")
    (tmp_path / "interlaced.png").write_bytes(plain[:12] + ihdr + crc + plain[33:])
    (tmp_path / "keyed.png").write_bytes(_with_chunk(plain, b"tRNS", b"\x00\x01\x00\x02\x00\x03"))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated: the whole-image reader turns the pixels upright
    (tmp_path / "rotated.png").write_bytes(_with_chunk(plain, b"eXIf", exif.tobytes()[6:]))
    for name in ("palette", "interlaced", "keyed", "rotated"):
        assert open_png_source(tmp_path / f"{name}.png", look_back=4) is None, name
    assert read_image(tmp_path / "rotated.png").pixels.shape == (8, 8, 3)


def test_source_carries_icc_and_exif_as_the_whole_image_reader(tmp_path: Path) -> None:
    from PIL import ImageCms

    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    exif = Image.Exif()
    exif[0x010F] = "Camera maker"
    exif[0x0112] = 1
    buf = io.BytesIO()
    Image.fromarray(_pixels((6, 5, 3))).save(buf, format="PNG", icc_profile=icc, exif=exif)
    path = tmp_path / "meta.png"
    path.write_bytes(buf.getvalue())
    whole = read_image(path)
    with open_png_source(path, look_back=2) as src:
        assert src.icc_profile == whole.icc_profile == icc
        assert _tags(src.exif) == _tags(whole.exif) == {0x010F: "Camera maker", 0x0112: 1}


def test_corrupt_pixels_are_one_line_naming_the_file(tmp_path: Path) -> None:
    data = bytearray(imagecodecs.png_encode(_pixels((300, 200, 3))))
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)  # inside the pixel data: its CRC no longer holds
    path = tmp_path / "bad.png"
    path.write_bytes(bytes(data))
    with open_png_source(path, look_back=10) as src, pytest.raises(ImageError) as err:
        src[0:300, 0:200]
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    # Cut short, it is left to the whole-image reader, which says so.
    cut = tmp_path / "cut.png"
    cut.write_bytes(bytes(data[:middle]))
    assert open_png_source(cut, look_back=10) is None
    with pytest.raises(ImageError):
        read_image(cut)


@pytest.mark.parametrize(("shape", "dtype"), LAYOUTS)
@pytest.mark.parametrize("level", [0, 6, 9])
def test_sink_writes_what_the_windows_hold(tmp_path: Path, shape, dtype, level: int) -> None:
    pixels = _pixels(shape, dtype, seed=3)
    out = tmp_path / "out.png"
    with png_sink(out, pixels.shape, dtype, compress_level=level) as sink:
        for y0, y1, x0, x1 in _grid_windows(shape[0], shape[1], 3):
            sink((y0, y1, x0, x1), pixels[y0:y1, x0:x1])
    np.testing.assert_array_equal(read_image(out).pixels, pixels)
    assert sink.peak_rows <= 3 * 3  # a band being filled, one queued, one being encoded
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]


@pytest.mark.parametrize("deflater", ["zlib-ng", "zlib"])
def test_fast_levels_write_up_filtered_rows_in_steps(tmp_path: Path, monkeypatch, deflater) -> None:
    """Levels 1..6: numpy's Up filter and zlib-ng's (or, without it, the standard library's)
    run-length deflate, a step of rows at a time across bands; libpng and Pillow read the
    same pixels, and every row says Up."""
    import blurapp.io.bands as bands

    if deflater == "zlib":
        monkeypatch.setattr(bands, "_deflater", lambda: zlib)
    monkeypatch.setattr(bands, "_ENCODE_STEP_BYTES", 3 * (1 + 17 * 3 * 2))  # 3 rows a step
    pixels = _pixels((40, 17, 3), np.uint16, seed=5)
    out = tmp_path / "out.png"
    with png_sink(out, pixels.shape, np.uint16, compress_level=1) as sink:
        for y0, y1, x0, x1 in _grid_windows(40, 17, 7):
            sink((y0, y1, x0, x1), pixels[y0:y1, x0:x1])
    np.testing.assert_array_equal(imagecodecs.png_decode(out.read_bytes()), pixels)
    np.testing.assert_array_equal(read_image(out).pixels, pixels)
    data = out.read_bytes()
    idat, pos = b"", 8
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        assert zlib.crc32(kind + body) == int.from_bytes(
            data[pos + 8 + length : pos + 12 + length], "big"
        )
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    rows = zlib.decompress(idat)
    assert {rows[i * (1 + 17 * 6)] for i in range(40)} == {2}


def test_sink_carries_icc_and_exif(tmp_path: Path) -> None:
    from PIL import ImageCms

    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    exif = Image.Exif()
    exif[0x010F] = "Camera maker"
    pixels = _pixels((10, 12, 3))
    out = tmp_path / "out.png"
    with png_sink(out, pixels.shape, np.uint8, icc_profile=icc, exif=exif.tobytes()) as sink:
        sink((0, 10, 0, 12), pixels)
    back = read_image(out)
    assert back.icc_profile == icc
    assert _tags(back.exif) == {0x010F: "Camera maker"}
    assert Image.open(out).getexif()[0x010F] == "Camera maker"


def test_sink_never_replaces_and_leaves_nothing_when_stopped(tmp_path: Path) -> None:
    pixels = _pixels((20, 10, 3))
    out = tmp_path / "out.png"
    out.write_bytes(b"precious")
    with pytest.raises(OutputError), png_sink(out, pixels.shape, np.uint8) as sink:
        sink((0, 10, 0, 10), pixels[:10])
        sink((10, 20, 0, 10), pixels[10:])
    assert out.read_bytes() == b"precious"
    fresh = tmp_path / "fresh.png"
    with pytest.raises(KeyboardInterrupt), png_sink(fresh, pixels.shape, np.uint8) as sink:
        sink((0, 10, 0, 10), pixels[:10])
        raise KeyboardInterrupt
    assert not fresh.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]
    with (
        pytest.raises(ValueError, match="rows were given"),
        png_sink(fresh, pixels.shape, np.uint8) as sink,
    ):
        sink((0, 10, 0, 10), pixels[:10])  # the second band never comes
    assert not fresh.exists()
    with pytest.raises(ValueError, match="order"), png_sink(fresh, pixels.shape, np.uint8) as s:
        s((10, 20, 0, 10), pixels[10:])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.png"]


@pytest.mark.parametrize("border", [b for b in BORDER_MODES if b != "wrap"])
def test_stream_through_the_pipeline_equals_the_whole_image(tmp_path: Path, border: str) -> None:
    """Source → stream_pixels → sink gives filter_pixels' pixels on the decoded image, with a
    kernel taller than a tile's rows and a range mode that reads every tile twice."""
    pixels = _pixels((61, 47, 3), seed=5)
    path = _png(tmp_path / "in.png", pixels)
    for spec in (
        FilterSpec.create("box:5x9", border, "cpu"),
        FilterSpec.create("sobel:y", border, "cpu", range_mode="normalize"),
    ):
        grid = plan_grid(61, 47, spec.effective_kernel.shape, max_tile_side=16)
        top, bottom, _, _ = grid.halo
        out = tmp_path / "out.png"
        with (
            open_png_source(path, look_back=grid.side + top + bottom) as src,
            png_sink(out, src.shape, np.uint8, overwrite=True) as sink,
        ):
            stream_pixels(src, spec, sink, dtype=np.uint8, max_tile_side=16)
        whole = filter_pixels(pixels, spec, dtype=np.uint8).image
        np.testing.assert_array_equal(read_image(out).pixels, whole)
