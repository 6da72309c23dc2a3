"""Issue 25: HEIC/HEIF, AVIF, camera raw, animations and pages through ``apply`` and ``batch``.

Each output is compared with the decoder's own output (pillow-heif, imagecodecs' libavif, rawpy's
postprocess, Pillow's frames) filtered by an independent float64 reference (scipy), within one
level; timing and frame order are checked where the format has them."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image
from scipy import ndimage

from blurapp.cli import main
from blurapp.io import TEMP_SUFFIX, read_image
from blurapp.io.codecs import bmff

BOX = np.full((3, 3), 1 / 9)


def reference(pixels: np.ndarray, top: int) -> np.ndarray:
    """box:3 with the clamp border, in float64 on normalised values, rounded back."""
    x = pixels.astype(np.float64) / top
    if x.ndim == 2:
        out = ndimage.correlate(x, BOX, mode="nearest")
    else:
        out = np.stack([ndimage.correlate(x[..., c], BOX, mode="nearest")
                        for c in range(x.shape[2])], axis=-1)  # fmt: skip
    return np.clip(np.rint(out * top), 0, top)


def assert_within_one_level(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.abs(got.astype(np.float64) - want).max() <= 1


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


def photo(h: int = 37, w: int = 53, channels: int = 3, seed: int = 0) -> np.ndarray:
    """A smooth picture with some noise (lossy codecs keep it well), odd sizes."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    planes = [x * 4.0, y * 6.0, (x + y) * 2.0, np.full_like(x, 200.0)][:channels]
    base = np.stack(planes, -1) + rng.normal(0, 3, (h, w, channels))
    return np.clip(base, 0, 255).astype(np.uint8)


def exif_with(tag: int, value: object) -> bytes:
    exif = Image.Exif()
    exif[tag] = value
    return exif.tobytes()


@functools.cache
def srgb_icc() -> bytes:
    """One sRGB profile (a new one has a new creation time: other bytes)."""
    from PIL import ImageCms

    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


# ------------------------------------------------------------------ HEIC / HEIF


def heic(path: Path, pixels: np.ndarray, **kwargs: object) -> Path:
    import pillow_heif

    mode = {3: "RGB", 4: "RGBA"}[pixels.shape[2]] + (";16" if pixels.dtype == np.uint16 else "")
    h, w = pixels.shape[:2]
    image = pillow_heif.from_bytes(mode=mode, size=(w, h), data=pixels.tobytes())
    image.save(path, **kwargs)
    return path


def heif_decoded(path: Path) -> np.ndarray:
    """pillow-heif's own decoding, 10/12 bits scaled to 16."""
    import pillow_heif

    f = pillow_heif.open_heif(path, convert_hdr_to_8bit=False)
    pixels = np.asarray(f[0])
    if pixels.dtype == np.uint16:
        depth = f[0].info["bit_depth"]
        pixels = bmff.to_16_bits(pixels >> (16 - depth), depth)
    return pixels


def test_heic_8_bit_through_apply_is_the_decoders_pixels_filtered(capsys, tmp_path) -> None:
    src = heic(tmp_path / "IMG_0001.HEIC", photo(), quality=90,
               exif=exif_with(0x010F, "blurapp"), icc_profile=srgb_icc())  # fmt: skip
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    out = read_image(tmp_path / "o.png")
    assert out.pixels.dtype == np.uint8
    assert_within_one_level(out.pixels, reference(heif_decoded(src), 255))
    assert out.icc_profile == srgb_icc()  # the profile goes on to the output
    assert Image.Exif().load(out.exif) is None or out.exif is not None


def test_heic_into_heic_keeps_icc_exif_and_follows_quality(capsys, tmp_path) -> None:
    src = heic(tmp_path / "in.heic", photo(64, 96), quality=95,
               exif=exif_with(0x010F, "blurapp"), icc_profile=srgb_icc())  # fmt: skip
    sizes = {}
    for q in (30, 95):
        out = tmp_path / f"q{q}.heic"
        code, err = run(capsys, "apply", src, "-o", out, "-k", "box:3", "--strategy", "cpu",
                        "--quality", q)  # fmt: skip
        assert code == 0, err
        sizes[q] = out.stat().st_size
        back = read_image(out)
        assert back.format == "heif" and back.pixels.shape == (64, 96, 3)
        assert back.icc_profile == srgb_icc()
        exif = Image.Exif()
        exif.load(back.exif)
        assert exif[0x010F] == "blurapp"
        want = reference(heif_decoded(src), 255)
        assert np.abs(back.pixels.astype(float) - want).mean() < (4 if q == 95 else 8)
    assert sizes[30] < sizes[95]


def test_heic_10_bit_comes_in_as_16_bit_and_goes_out_at_12(capsys, tmp_path) -> None:
    deep = photo(40, 60).astype(np.uint16) * 257
    src = heic(tmp_path / "deep.heic", deep, quality=95)
    info = read_image(src)
    assert info.pixels.dtype == np.uint16 and info.pixels.max() > 255
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    out = read_image(tmp_path / "o.png")
    assert out.pixels.dtype == np.uint16
    assert_within_one_level(out.pixels, reference(heif_decoded(src), 65535))
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.heic", "-k", "box:3",
                    "--strategy", "cpu", "--lossless")  # fmt: skip
    assert code == 0, err
    back = read_image(tmp_path / "o.heic")
    assert back.pixels.dtype == np.uint16
    assert np.abs(back.pixels.astype(float) - out.pixels).mean() < 2 * 257


def test_heic_orientation_is_applied_once(tmp_path) -> None:
    pixels = photo(30, 50)
    src = heic(tmp_path / "turned.heic", pixels, quality=95, exif=exif_with(0x0112, 6))
    data = read_image(src)
    assert data.pixels.shape == (50, 30, 3)  # upright, as a viewer shows it
    assert np.abs(data.pixels.astype(float) - np.rot90(pixels, -1)).mean() < 4
    if data.exif:
        exif = Image.Exif()
        exif.load(data.exif)
        assert exif.get(0x0112, 1) == 1


# ------------------------------------------------------------------ AVIF


def test_avif_8_bit_through_apply_with_orientation_and_icc(capsys, tmp_path) -> None:
    pixels = photo(30, 50)
    src = tmp_path / "in.avif"
    Image.fromarray(pixels).save(src, quality=95, exif=exif_with(0x0112, 6),
                                 icc_profile=srgb_icc())  # fmt: skip
    data = read_image(src)
    assert data.pixels.shape == (50, 30, 3) and data.icc_profile == srgb_icc()
    with Image.open(src) as im:  # Pillow's own decoding, turned upright
        from PIL import ImageOps

        decoded = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    np.testing.assert_array_equal(data.pixels, decoded)
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.avif", "-k", "box:3",
                    "--strategy", "cpu", "--quality", "90")  # fmt: skip
    assert code == 0, err
    back = read_image(tmp_path / "o.avif")
    assert back.pixels.shape == (50, 30, 3) and back.icc_profile == srgb_icc()
    assert np.abs(back.pixels.astype(float) - reference(decoded, 255)).mean() < 4


def test_avif_10_bit_through_apply_is_libavifs_pixels_filtered(capsys, tmp_path) -> None:
    import imagecodecs

    ten = (photo(41, 59).astype(np.uint32) * 1023 // 255).astype(np.uint16)
    src = tmp_path / "ten.avif"
    src.write_bytes(imagecodecs.avif_encode(ten, level=100, bitspersample=10))
    assert bmff.declared(src).depth == 10
    decoded = bmff.to_16_bits(imagecodecs.avif_decode(src.read_bytes()), 10)
    data = read_image(src)
    assert data.pixels.dtype == np.uint16 and data.pixels.max() > 4095
    np.testing.assert_array_equal(data.pixels, decoded)
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.tif", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    out = read_image(tmp_path / "o.tif").pixels
    assert_within_one_level(out, reference(decoded, 65535))
    code, err = run(capsys, "apply", tmp_path / "o.tif", "-o", tmp_path / "o.avif",
                    "-k", "identity", "--strategy", "cpu", "--lossless")  # fmt: skip
    assert code == 0, err
    back = read_image(tmp_path / "o.avif").pixels
    assert back.dtype == np.uint16
    assert np.abs(back.astype(np.int64) - out).max() <= 65535 // 4095 + 1  # 12 bits kept


def test_an_image_sequence_inside_avif_is_said_in_one_note(capsys, tmp_path) -> None:
    frames = [Image.fromarray(photo(20, 30, seed=i)) for i in range(3)]
    src = tmp_path / "seq.avif"
    frames[0].save(src, save_all=True, append_images=frames[1:], duration=50)
    assert bmff.declared(src).sequence
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("blurapp: note: ")]
    assert len(notes) == 1 and "image sequences" in notes[0] and "primary image" in notes[0]


def test_gain_map_and_sequence_boxes_are_found() -> None:
    def box(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big")[:0] + (8 + len(body)).to_bytes(4, "big") + kind + body

    urn = b"urn:com:apple:photo:2020:aux:hdrgainmap\0"
    ipco = box(b"ipco", box(b"auxC", b"\0\0\0\0" + urn) + box(b"pixi", b"\0\0\0\0\x03\x0a\x0a\x0a"))
    data = box(b"ftyp", b"heic\0\0\0\0mif1heic") + box(b"meta", b"\0\0\0\0" + box(b"iprp", ipco))
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".heic") as fh:
        fh.write(data)
        fh.flush()
        found = bmff.declared(Path(fh.name))
    assert found.gain_map and found.depth == 10 and not found.sequence
    from blurapp.io.codecs.heif import notes_for

    (note,) = notes_for(Path("x.heic"), found)
    assert note.startswith("x.heic: its HDR gain map is not handled")


# ------------------------------------------------------------------ camera raw


def make_dng(path: Path, h: int = 64, w: int = 96, neutral=(0.5, 1.0, 0.7)) -> Path:
    """A DNG as a camera writes one: a 12-bit RGGB mosaic with the CFA tags, black and white
    levels, a colour matrix and the as-shot white balance."""
    y, x = np.mgrid[0:h, 0:w]
    scene = np.stack([x / w, y / h, 0.5 + 0.3 * np.sin(x / 7.0)], -1)
    cfa = np.empty((h, w))
    cfa[0::2, 0::2] = scene[0::2, 0::2, 0]
    cfa[0::2, 1::2] = scene[0::2, 1::2, 1]
    cfa[1::2, 0::2] = scene[1::2, 0::2, 1]
    cfa[1::2, 1::2] = scene[1::2, 1::2, 2]
    white, black = 4095, 64
    mosaic = (black + cfa * (white - black) * 0.8).astype(np.uint16)

    def rational(values) -> list[int]:
        return [v for value in values for v in (round(value * 10000), 10000)]

    tags = [
        (33421, "H", 2, (2, 2), True),  # CFARepeatPatternDim
        (33422, "B", 4, (0, 1, 1, 2), True),  # CFAPattern: RGGB
        (50706, "B", 4, (1, 4, 0, 0), True),  # DNGVersion
        (50707, "B", 4, (1, 1, 0, 0), True),  # DNGBackwardVersion
        (50708, "s", 0, "blurapp test camera", True),  # UniqueCameraModel
        (50714, "H", 1, (black,), True),  # BlackLevel
        (50717, "H", 1, (white,), True),  # WhiteLevel
        (50721, "2i", 9, rational([0.9, 0.1, 0, -0.1, 1.0, 0.1, 0, 0.1, 0.9]), True),
        (50778, "H", 1, (21,), True),  # CalibrationIlluminant1: D65
        (50728, "2I", 3, rational(neutral), True),  # AsShotNeutral
    ]
    tifffile.imwrite(path, mosaic, photometric=32803, extratags=tags, metadata=None)
    return path


def libraw(path: Path, linear: bool = False) -> np.ndarray:
    import rawpy

    kwargs: dict[str, object] = {
        "use_camera_wb": True,
        "no_auto_bright": True,
        "output_bps": 16,
        "output_color": rawpy.ColorSpace.sRGB,
    }
    if linear:
        kwargs["gamma"] = (1, 1)
    with rawpy.imread(str(path)) as raw:
        return raw.postprocess(**kwargs)


@pytest.mark.parametrize("linear", [False, True])
def test_dng_is_developed_as_libraw_does(capsys, tmp_path, linear) -> None:
    src = make_dng(tmp_path / "shot.DNG")
    want = libraw(src, linear)
    extra = ["--raw-linear"] if linear else []
    code, err = run(capsys, "apply", src, "-o", tmp_path / "dev.tif", "-k", "identity",
                    "--strategy", "cpu", *extra)  # fmt: skip
    assert code == 0, err
    got = read_image(tmp_path / "dev.tif").pixels
    assert got.dtype == np.uint16 and got.shape == want.shape
    assert np.abs(got.astype(float) - want).max() <= 0.01 * 65535  # within 1 %
    assert np.abs(got.astype(float) - want).mean() <= 0.001 * 65535
    code, err = run(capsys, "apply", src, "-o", tmp_path / "box.png", "-k", "box:3",
                    "--strategy", "cpu", *extra)  # fmt: skip
    assert code == 0, err
    assert_within_one_level(read_image(tmp_path / "box.png").pixels, reference(want, 65535))
    if not linear:
        # The camera's white balance is applied: a grey card lit as shot comes out neutral-ish,
        # so the means differ from a development with unit multipliers.
        import rawpy

        with rawpy.imread(str(src)) as raw:
            flat = raw.postprocess(user_wb=[1, 1, 1, 1], no_auto_bright=True, output_bps=16)
        assert np.abs(flat.astype(float).mean((0, 1)) - want.mean((0, 1))).max() > 1000


def test_a_dng_named_tif_is_still_raw(tmp_path) -> None:
    src = make_dng(tmp_path / "shot.tif")
    data = read_image(src)
    assert data.format == "raw"
    np.testing.assert_array_equal(data.pixels, libraw(src))


def test_writing_raw_is_refused_in_one_line(capsys, tmp_path) -> None:
    src = make_dng(tmp_path / "a.dng")
    for name in ("o.dng", "o.NEF", "o.cr3"):
        code, err = run(capsys, "apply", src, "-o", tmp_path / name, "-k", "box:3")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "cannot write Camera raw" in err and not (tmp_path / name).exists()


def test_batch_writes_raw_as_16_bit_tiff_and_reports_it(capsys, tmp_path) -> None:
    folder = tmp_path / "card"
    folder.mkdir()
    make_dng(folder / "DSC_0001.dng")
    make_dng(folder / "DSC_0002.DNG", neutral=(0.6, 1.0, 0.5))
    code, err = run(capsys, "batch", folder, "-o", tmp_path / "out", "-k", "box:3",
                    "--strategy", "cpu", "--quiet", "--report", tmp_path / "r.json")  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "DSC_0001.tiff", "DSC_0002.tiff"]  # fmt: skip
    for name in ("DSC_0001", "DSC_0002"):
        src = next(folder.glob(f"{name}.*"))
        got = read_image(tmp_path / "out" / f"{name}.tiff").pixels
        assert_within_one_level(got, reference(libraw(src), 65535))
    report = json.loads((tmp_path / "r.json").read_text())
    assert {f["dtype"] for f in report["files"]} == {"uint16"}


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("empty.cr2", b"", "the file is empty"),
        ("junk.nef", b"II*\x00\x08\x00\x00\x00" + b"\x00" * 40, "cannot read"),
        ("cut.dng", None, "cannot read"),
        ("not.orf", b"IIRO" + b"\x01" * 60, "cannot read"),
    ],
)
def test_broken_raw_files_are_one_line(capsys, tmp_path, name, content, says) -> None:
    path = tmp_path / name
    if content is None:
        full = make_dng(tmp_path / "full.dng").read_bytes()
        content = full[: len(full) // 3]
    path.write_bytes(content)
    code, err = run(capsys, "apply", path, "-o", tmp_path / "o.tif", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert says in err and not (tmp_path / "o.tif").exists()
    assert not list(tmp_path.glob(f"*{TEMP_SUFFIX}"))


# ------------------------------------------------------------------ careless files


def test_a_heic_that_is_a_jpeg_reads_as_the_jpeg(capsys, tmp_path) -> None:
    src = tmp_path / "holiday.heic"
    Image.fromarray(photo()).save(src, format="JPEG", quality=95)
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    decoded = np.asarray(Image.open(src).convert("RGB"))
    assert_within_one_level(read_image(tmp_path / "o.png").pixels, reference(decoded, 255))


@pytest.mark.parametrize("suffix", [".heic", ".avif"])
def test_truncated_heif_and_avif_are_one_line(capsys, tmp_path, suffix) -> None:
    whole = tmp_path / f"whole{suffix}"
    if suffix == ".heic":
        heic(whole, photo(64, 64), quality=90)
    else:
        Image.fromarray(photo(64, 64)).save(whole, quality=90)
    data = whole.read_bytes()
    for cut in (len(data) // 2, 40, 12):
        path = tmp_path / f"cut{cut}{suffix}"
        path.write_bytes(data[:cut])
        code, err = run(capsys, "apply", path, "-o", tmp_path / "o.png", "-k", "box:3",
                        "--strategy", "cpu")  # fmt: skip
        assert code == 1 and len(err.strip().splitlines()) == 1, err
        assert err.startswith("blurapp: error: cannot read") and not (tmp_path / "o.png").exists()


def test_a_huge_declared_heic_is_refused_before_decoding(capsys, tmp_path) -> None:
    src = heic(tmp_path / "small.heic", photo(64, 64), quality=90)
    data = bytearray(src.read_bytes())
    at = data.index(b"ispe")  # the image's spatial extent: width and height, 32 bits each
    data[at + 8 : at + 16] = (60000).to_bytes(4, "big") * 2
    bomb = tmp_path / "bomb.heic"
    bomb.write_bytes(bytes(data))
    code, err = run(capsys, "apply", bomb, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "cannot read" in err and not (tmp_path / "o.png").exists()


# ------------------------------------------------------------------ frames


def animation(path: Path, fmt: str, n: int = 3, size=(23, 31)) -> list[np.ndarray]:
    frames = [photo(*size, seed=i) for i in range(n)]
    images = [Image.fromarray(f) for f in frames]
    kwargs: dict[str, object] = {"save_all": True, "append_images": images[1:],
                                 "duration": [40, 80, 120][:n], "loop": 2}  # fmt: skip
    if fmt == "WEBP":
        kwargs["lossless"] = True
    if fmt == "PNG":
        kwargs["disposal"] = [0, 1, 2][:n]
    if fmt == "GIF":
        kwargs["disposal"] = [1, 2, 1][:n]
    images[0].save(path, format=fmt, **kwargs)
    return frames


def pillow_frames(path: Path) -> tuple[list[np.ndarray], list[int], int | None]:
    with Image.open(path) as im:
        frames, durations = [], []
        for i in range(im.n_frames):
            im.seek(i)
            frames.append(np.asarray(im.convert("RGB")))
            durations.append(im.info.get("duration"))
        return frames, durations, im.info.get("loop")


@pytest.mark.parametrize(("fmt", "suffix"), [("WEBP", ".webp"), ("PNG", ".png")])
def test_animations_have_every_frame_filtered_and_their_timing_kept(
    capsys, tmp_path, fmt, suffix
) -> None:
    src = tmp_path / f"anim{suffix}"
    animation(src, fmt)
    decoded, durations, loop = pillow_frames(src)
    out = tmp_path / f"out{suffix}"
    extra = ["--lossless"] if fmt == "WEBP" else []
    code, err = run(capsys, "apply", src, "-o", out, "-k", "box:3", "--strategy", "cpu", *extra)
    assert code == 0, err
    got, got_durations, got_loop = pillow_frames(out)
    assert len(got) == 3 and got_durations == durations == [40, 80, 120] and got_loop == loop == 2
    for frame, want in zip(got, decoded, strict=True):
        assert_within_one_level(frame, reference(want, 255))
    if fmt == "PNG":
        with Image.open(out) as im:
            disposal = []
            for i in range(im.n_frames):
                im.seek(i)
                disposal.append(im.info.get("disposal"))
        assert disposal == [0, 1, 2]


def test_a_gif_keeps_timing_and_disposal_gets_a_palette_per_frame_and_a_note(
    capsys, tmp_path
) -> None:
    src = tmp_path / "anim.gif"
    animation(src, "GIF")
    decoded, durations, loop = pillow_frames(src)
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err  # a GIF into an APNG: the filtered frames exactly
    for frame, want in zip(pillow_frames(tmp_path / "o.png")[0], decoded, strict=True):
        assert_within_one_level(frame, reference(want, 255))
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.gif", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    assert "blurapp: note: GIF holds 256 colours per frame" in err and "lossy" in err
    got, got_durations, got_loop = pillow_frames(tmp_path / "o.gif")
    assert len(got) == 3 and got_durations == durations == [40, 80, 120] and got_loop == loop
    with Image.open(tmp_path / "o.gif") as im:
        palettes, disposal = [], []
        for i in range(im.n_frames):
            im.seek(i)
            palettes.append(im.getpalette() if i == 0 else im.palette.tobytes())
            disposal.append(im.disposal_method)
    assert disposal == [1, 2, 1]
    raw = (tmp_path / "o.gif").read_bytes()
    assert raw.count(b"\x2c") >= 3  # image descriptors; local colour tables follow them
    for frame, want in zip(got, decoded, strict=True):
        assert np.abs(frame.astype(float) - reference(want, 255)).mean() < 6  # 256 colours


@pytest.mark.parametrize("writer", ["tifffile", "pillow"])
def test_a_multi_page_tiff_has_every_page_filtered_in_order(capsys, tmp_path, writer) -> None:
    pages = [photo(19, 27, seed=i) for i in range(4)]
    src = tmp_path / "scan.tif"
    if writer == "tifffile":
        with tifffile.TiffWriter(src) as tw:
            for page in pages:
                tw.write(page, photometric="rgb")
    else:
        first, *rest = (Image.fromarray(p) for p in pages)
        first.save(src, save_all=True, append_images=rest)
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.tif", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    with tifffile.TiffFile(tmp_path / "o.tif") as tif:
        got = [p.asarray() for p in tif.pages]
    assert len(got) == 4
    for frame, want in zip(got, pages, strict=True):
        assert_within_one_level(frame, reference(want, 255))


def test_frame_n_takes_one_frame(capsys, tmp_path) -> None:
    src = tmp_path / "anim.webp"
    animation(src, "WEBP")
    decoded = pillow_frames(src)[0]
    code, err = run(capsys, "apply", src, "-o", tmp_path / "one.png", "-k", "box:3",
                    "--strategy", "cpu", "--frame", "1")  # fmt: skip
    assert code == 0, err
    with Image.open(tmp_path / "one.png") as im:
        assert getattr(im, "n_frames", 1) == 1
    assert_within_one_level(read_image(tmp_path / "one.png").pixels, reference(decoded[1], 255))
    code, err = run(capsys, "apply", src, "-o", tmp_path / "none.png", "-k", "box:3",
                    "--frame", "7")  # fmt: skip
    assert code == 1 and "it has 3 frames" in err and len(err.strip().splitlines()) == 1


def test_batch_counts_frames_in_its_report(capsys, tmp_path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    animation(folder / "a.gif", "GIF")
    animation(folder / "b.webp", "WEBP", n=2)
    Image.fromarray(photo()).save(folder / "c.png")
    code, err = run(capsys, "batch", folder, "-o", tmp_path / "out", "-k", "box:3", "--strategy",
                    "cpu", "--quiet", "--report", tmp_path / "r.json")  # fmt: skip
    assert code == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    frames = {Path(f["input"]).name: f["frames"] for f in report["files"]}
    assert frames == {"a.gif": 3, "b.webp": 2, "c.png": 1}
    assert report["totals"]["frames"] == 6
    assert report["totals"]["pixels"] == 23 * 31 * 5 + 37 * 53
    assert len(pillow_frames(tmp_path / "out" / "b.webp")[0]) == 2


def test_the_memory_guard_counts_every_frame(capsys, tmp_path) -> None:
    src = tmp_path / "long.gif"
    frames = [Image.new("RGB", (1000, 1000), (i, 0, 0)) for i in range(12)]
    frames[0].save(src, save_all=True, append_images=frames[1:], duration=20)
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.gif", "-k", "box:3",
                    "--max-megapixels", "10")  # fmt: skip
    assert code == 1 and "1000×1000 × 12 frames is 12.0 megapixels" in err, err
    assert "--max-megapixels 12" in err and not (tmp_path / "o.gif").exists()
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3",
                    "--strategy", "cpu", "--max-megapixels", "10", "--frame", "3")  # fmt: skip
    assert code == 0, err  # one frame is within the limit


@pytest.mark.gpu
def test_new_formats_on_the_gpu(gpu, capsys, tmp_path) -> None:
    """The default strategy on the adapter: HEIC, raw and an animation, within one level."""
    src = heic(tmp_path / "p.heic", photo(40, 70), quality=90)
    code, err = run(capsys, "apply", src, "-o", tmp_path / "h.png", "-k", "box:3",
                    "--strategy", "separable")  # fmt: skip
    assert code == 0, err
    assert_within_one_level(
        read_image(tmp_path / "h.png").pixels, reference(heif_decoded(src), 255)
    )
    dng = make_dng(tmp_path / "r.dng")
    code, err = run(capsys, "apply", dng, "-o", tmp_path / "r.tif", "-k", "box:3",
                    "--strategy", "separable")  # fmt: skip
    assert code == 0, err
    assert_within_one_level(read_image(tmp_path / "r.tif").pixels, reference(libraw(dng), 65535))
    anim = tmp_path / "a.png"
    animation(anim, "PNG")
    code, err = run(capsys, "apply", anim, "-o", tmp_path / "a2.png", "-k", "box:3",
                    "--strategy", "tiled")  # fmt: skip
    assert code == 0, err
    for frame, want in zip(pillow_frames(tmp_path / "a2.png")[0], pillow_frames(anim)[0],
                           strict=True):  # fmt: skip
        assert_within_one_level(frame, reference(want, 255))


def test_batch_on_dask_filters_every_frame_too(capsys, tmp_path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    animation(folder / "a.png", "PNG")
    decoded = pillow_frames(folder / "a.png")[0]
    code, err = run(capsys, "batch", folder, "-o", tmp_path / "out", "-k", "box:3",
                    "--strategy", "cpu", "--quiet", "--scheduler", "local:1",
                    "--report", tmp_path / "r.json")  # fmt: skip
    assert code == 0, err
    got, durations, loop = pillow_frames(tmp_path / "out" / "a.png")
    assert durations == [40, 80, 120] and loop == 2
    for frame, want in zip(got, decoded, strict=True):
        assert_within_one_level(frame, reference(want, 255))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["files"][0]["frames"] == 3


def test_batch_filters_heic_and_avif_as_their_decoders_give_them(capsys, tmp_path) -> None:
    import imagecodecs

    folder = tmp_path / "phone"
    folder.mkdir()
    heic(folder / "IMG_0002.HEIC", photo(33, 47), quality=90)
    ten = (photo(29, 41, seed=2).astype(np.uint32) * 1023 // 255).astype(np.uint16)
    (folder / "deep.avif").write_bytes(imagecodecs.avif_encode(ten, level=100, bitspersample=10))
    out = tmp_path / "out"
    code, err = run(capsys, "batch", folder, "-o", out, "-k", "box:3", "--strategy", "cpu",
                    "--quiet", "--format", "png")  # fmt: skip
    assert code == 0, err
    assert_within_one_level(
        read_image(out / "IMG_0002.png").pixels,
        reference(heif_decoded(folder / "IMG_0002.HEIC"), 255),
    )
    decoded = bmff.to_16_bits(imagecodecs.avif_decode((folder / "deep.avif").read_bytes()), 10)
    deep = read_image(out / "deep.png").pixels
    assert deep.dtype == np.uint16
    assert_within_one_level(deep, reference(decoded, 65535))
    code, err = run(capsys, "batch", folder, "-o", tmp_path / "same", "-k", "box:3",
                    "--strategy", "cpu", "--quiet")  # fmt: skip
    assert code == 0, err  # each in its own format
    assert sorted(p.name for p in (tmp_path / "same").iterdir()) == ["IMG_0002.heic", "deep.avif"]
    assert read_image(tmp_path / "same" / "deep.avif").pixels.dtype == np.uint16


def test_a_16_bit_avif_says_what_it_cannot_carry(capsys, tmp_path) -> None:
    src = tmp_path / "deep.tif"
    tifffile.imwrite(src, photo(20, 30).astype(np.uint16) * 257, photometric="rgb",
                     iccprofile=srgb_icc())  # fmt: skip
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.avif", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    (note,) = [line for line in err.splitlines() if line.startswith("blurapp: note: ")]
    assert "o.avif: a 16-bit AVIF is written without the ICC profile" in note
    assert read_image(tmp_path / "o.avif").pixels.dtype == np.uint16
    code, err = run(capsys, "batch", src, "-o", tmp_path / "out", "-k", "box:3", "--strategy",
                    "cpu", "--quiet", "--format", "avif")  # fmt: skip
    assert code == 0 and "deep.avif: a 16-bit AVIF is written without the ICC profile" in err
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.heic", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0 and "note" not in err  # HEIF keeps it
    assert read_image(tmp_path / "o.heic").icc_profile == srgb_icc()
