"""blurapp.io.images in-process: orientation, sniffing, probing, format rules, Pillow's limit.

The atomic writer itself is tested in test_atomic.py."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from blurapp.core.errors import ImageError, OutputError, UsageError
from blurapp.io import (
    TEMP_SUFFIX,
    ImageData,
    format_from_path,
    output_dtype,
    probe_image,
    read_image,
    write_image,
)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_orientation_matches_pillow_exif_transpose(tmp_path: Path, orientation: int) -> None:
    image = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    exif = Image.Exif()
    exif[0x0112] = orientation
    Image.fromarray(image).save(tmp_path / "o.png", exif=exif)
    with Image.open(tmp_path / "o.png") as im:
        upright = np.asarray(ImageOps.exif_transpose(im))
    data = read_image(tmp_path / "o.png")
    np.testing.assert_array_equal(data.pixels, upright)
    assert data.exif is not None
    reread = Image.Exif()
    reread.load(data.exif)
    assert reread.get(0x0112, 1) == 1


def test_content_decides_not_the_name(tmp_path: Path) -> None:
    Image.fromarray(np.zeros((3, 4), np.uint8)).save(tmp_path / "really_png.jpg", format="PNG")
    assert probe_image(tmp_path / "really_png.jpg").format == "png"
    (tmp_path / "t.png").write_text("text")
    with pytest.raises(ImageError, match=r"t\.png.*not a PNG"):
        read_image(tmp_path / "t.png")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(ImageError, match="empty"):
        read_image(tmp_path / "empty.png")


def test_probe_reads_headers_only(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros((5, 7, 2), np.float32))
    info = probe_image(tmp_path / "a.npy")
    assert (info.format, info.width, info.height, info.channels) == ("npy", 7, 5, 2)
    assert info.dtype == np.float32
    write_image(tmp_path / "b.png", np.zeros((3, 2, 4), np.uint16))
    info = probe_image(tmp_path / "b.png")
    assert (info.width, info.height, info.channels, info.dtype) == (2, 3, 4, np.uint16)


def test_too_large_is_refused_before_decoding(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros((100, 100), np.uint8))
    with pytest.raises(ImageError, match=r"100×100 .* over the limit"):
        read_image(tmp_path / "a.npy", max_pixels=9999)
    assert read_image(tmp_path / "a.npy", max_pixels=10000).pixels.shape == (100, 100)


@pytest.mark.parametrize(
    "array",
    [np.zeros((3, 3), np.int32), np.zeros((3, 3, 5), np.uint8), np.zeros((3,), np.uint8)],
)
def test_unsupported_npy_arrays(tmp_path: Path, array: np.ndarray) -> None:
    np.save(tmp_path / "a.npy", array)
    with pytest.raises(ImageError, match=r"a\.npy"):
        read_image(tmp_path / "a.npy")


def test_write_image_never_clobbers_without_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "x.npy"
    write_image(target, np.zeros((2, 2), np.uint8))
    before = target.read_bytes()
    with pytest.raises(OutputError, match=r"x\.npy exists .*--overwrite"):
        write_image(target, np.ones((2, 2), np.uint8))
    assert target.read_bytes() == before
    write_image(target, np.ones((2, 2), np.uint8), overwrite=True)
    assert read_image(target).pixels.max() == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def test_format_rules() -> None:
    assert format_from_path("a/b.JPEG") == "jpg"
    assert format_from_path("x.tif") == "tiff"
    with pytest.raises(UsageError, match=r"\.xcf"):
        format_from_path("x.xcf")
    assert format_from_path("x.gif") == "gif" and format_from_path("x.HEIC") == "heif"
    assert output_dtype(np.float32, "png") == np.uint16
    assert output_dtype(np.uint16, "jpg") == np.uint8
    assert output_dtype(np.float64, "tiff") == np.float64


def test_writer_refuses_a_type_the_format_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="JPG cannot hold uint16"):
        write_image(tmp_path / "a.jpg", np.zeros((2, 2), np.uint16))
    assert list(tmp_path.iterdir()) == []


def test_sixteen_bit_png_chunks_are_valid(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x013B] = "me"
    icc = b"\x00" * 128  # Pillow keeps the bytes even when they are not a real profile
    pixels = np.arange(2 * 3 * 3, dtype=np.uint16).reshape(2, 3, 3) * 3000
    write_image(tmp_path / "a.png", ImageData(pixels, "png", icc, exif.tobytes()))
    with Image.open(tmp_path / "a.png") as im:
        im.verify()  # checks every chunk's CRC
    with Image.open(tmp_path / "a.png") as im:
        assert im.info["icc_profile"] == icc
        assert im.getexif()[0x013B] == "me"
    np.testing.assert_array_equal(read_image(tmp_path / "a.png").pixels, pixels)


def test_pillow_reads_what_we_write() -> None:
    buf = io.BytesIO()
    Image.fromarray(np.full((2, 2, 3), 7, np.uint8)).save(buf, format="BMP")
    assert buf.getvalue()[:2] == b"BM"


# ------------------------------------------------------------------ PNG speed paths (issue 4)


@pytest.mark.parametrize(
    "pixels",
    [
        np.random.default_rng(0).integers(0, 256, (19, 23, 3)).astype(np.uint8),
        np.random.default_rng(1).integers(0, 256, (19, 23, 4)).astype(np.uint8),
        np.random.default_rng(2).integers(0, 256, (19, 23)).astype(np.uint8),
        np.random.default_rng(3).integers(0, 256, (19, 23, 2)).astype(np.uint8),
        np.random.default_rng(4).integers(0, 65536, (19, 23, 4)).astype(np.uint16),
        np.random.default_rng(5).integers(0, 65536, (1, 1)).astype(np.uint16),
    ],
    ids=["rgb8", "rgba8", "grey8", "la8", "rgba16", "grey16-1x1"],
)
@pytest.mark.parametrize("level", [0, 1, 6, 7, 9])
def test_png_every_level_round_trips_exactly(tmp_path: Path, pixels: np.ndarray, level) -> None:
    write_image(tmp_path / "a.png", pixels, compress_level=level)
    np.testing.assert_array_equal(read_image(tmp_path / "a.png").pixels, pixels)
    with Image.open(tmp_path / "a.png") as im:  # and Pillow agrees (8-bit)
        im.verify()
    if pixels.dtype == np.uint8:
        np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "a.png")), pixels)


def test_png_compress_level_is_honoured(tmp_path: Path) -> None:
    """0 stores, 1..6 are the fast photographic encoding, 7..9 the thorough one."""
    yy, xx = np.mgrid[0:96, 0:128]
    smooth = np.stack([xx * 2, yy * 2, (xx + yy)], axis=2).astype(np.uint8)
    sizes = {}
    for level in (0, 1, 6, 9):
        write_image(tmp_path / f"l{level}.png", smooth, compress_level=level)
        sizes[level] = (tmp_path / f"l{level}.png").stat().st_size
    assert sizes[0] > smooth.nbytes  # stored: every byte plus the row filter bytes
    assert sizes[6] < sizes[0] // 4 and sizes[9] < sizes[0] // 4
    assert (tmp_path / "l6.png").read_bytes() != (tmp_path / "l9.png").read_bytes()


def test_png_fast_decoder_leaves_palettes_and_colour_keys_to_pillow(tmp_path: Path) -> None:
    from blurapp.io.codecs.png import libpng_decodes as _libpng_decodes

    rgb = np.random.default_rng(6).integers(0, 256, (6, 7, 3)).astype(np.uint8)
    Image.fromarray(rgb).save(tmp_path / "rgb.png")
    assert _libpng_decodes(tmp_path / "rgb.png")
    Image.fromarray(rgb).convert("P").save(tmp_path / "pal.png")
    assert not _libpng_decodes(tmp_path / "pal.png")
    Image.fromarray(rgb).save(tmp_path / "key.png", transparency=tuple(int(v) for v in rgb[0, 0]))
    assert not _libpng_decodes(tmp_path / "key.png")
    Image.fromarray(rgb[:, :, 0] > 100).save(tmp_path / "bits.png")  # 1-bit grey
    assert not _libpng_decodes(tmp_path / "bits.png")
    for name in ("rgb", "pal", "key", "bits"):
        with Image.open(tmp_path / f"{name}.png") as im:
            want = np.asarray(im.convert("RGBA" if name == "key" else im.mode))
        got = read_image(tmp_path / f"{name}.png").pixels
        if name == "pal":
            want = np.asarray(Image.open(tmp_path / "pal.png").convert("RGB"))
        if name == "bits":
            want = want.astype(np.uint8) * 255
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("ext", "name"), [("png", "PNG"), ("jpg", "JPEG")])
def test_truncated_file_is_named_as_such(tmp_path: Path, ext: str, name: str) -> None:
    rng = np.random.default_rng(7)
    whole = tmp_path / f"whole.{ext}"
    write_image(whole, rng.integers(0, 256, (64, 48, 3), dtype=np.uint8))
    cut = tmp_path / f"cut.{ext}"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(ImageError, match=f"cannot read .*cut.{ext}: truncated or corrupt {name}"):
        read_image(cut)


# ------------------------------------------------------------ Pillow's decompression-bomb limit


@pytest.mark.parametrize("ext", ["png", "bmp"])
def test_pillow_limit_is_kept_while_blurapp_reads_beyond_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ext: str
) -> None:
    """blurapp's max_pixels is the guard; Pillow's own limit is never switched off for the
    process, only raised for blurapp's own Image.open and put back."""
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # Pillow refuses above 2000 pixels
    path = tmp_path / f"big.{ext}"
    Image.new("L", (100, 50)).save(path)  # 5000 pixels: a "bomb" to Pillow at this limit
    with pytest.raises(Image.DecompressionBombError), Image.open(path):
        pass
    info = probe_image(path)
    assert (info.width, info.height) == (100, 50)
    assert Image.MAX_IMAGE_PIXELS == 1000
    assert read_image(path).pixels.shape == (50, 100)
    assert Image.MAX_IMAGE_PIXELS == 1000
    with pytest.raises(ImageError, match=r"100×50 .* over the limit"):
        read_image(path, max_pixels=4999)
    assert Image.MAX_IMAGE_PIXELS == 1000
    with pytest.raises(Image.DecompressionBombError), Image.open(path):
        pass  # still Pillow's limit for everyone else


def test_reading_a_big_image_leaves_pillow_limit_unchanged(tmp_path: Path) -> None:
    before = Image.MAX_IMAGE_PIXELS
    assert before is not None
    path = tmp_path / "big.jpg"
    side = int((2 * before) ** 0.5) + 16  # past twice Pillow's limit: Pillow alone refuses it
    Image.new("L", (side, side // 2 + 8)).save(path, quality=10)
    assert side * (side // 2 + 8) > before
    pixels = read_image(path, max_pixels=side * side).pixels
    assert pixels.shape == (side // 2 + 8, side)
    assert Image.MAX_IMAGE_PIXELS == before


def test_pillow_limit_holds_between_reading_threads(tmp_path: Path) -> None:
    """Many threads reading past Pillow's limit at once never leave it raised or None."""
    import threading

    path = tmp_path / "a.png"
    Image.new("RGB", (64, 48)).save(path)
    before = Image.MAX_IMAGE_PIXELS
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(20):
                read_image(path)
                probe_image(path)
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert Image.MAX_IMAGE_PIXELS == before


@pytest.mark.parametrize("layout", [{}, {"tile": (32, 32), "compression": "zlib"}])
def test_a_bigtiff_is_written_back_as_tiff(tmp_path: Path, layout: dict) -> None:
    """A BigTIFF's EXIF came back with the BigTIFF header, which the TIFF writer could not read
    ("unpack requires a buffer of 8 bytes"); its tags now go out as classic EXIF."""
    import tifffile

    pixels = np.random.default_rng(2).integers(0, 256, (70, 90, 3)).astype(np.uint8)
    src = tmp_path / "big.tif"
    tifffile.imwrite(src, pixels, bigtiff=True, **layout)
    image = read_image(src)
    np.testing.assert_array_equal(image.pixels, pixels)
    for name in ("out.tif", "out.png", "out.jpg"):
        write_image(tmp_path / name, image)
    np.testing.assert_array_equal(read_image(tmp_path / "out.tif").pixels, pixels)
    np.testing.assert_array_equal(read_image(tmp_path / "out.png").pixels, pixels)
