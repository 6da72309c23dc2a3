"""Issue 25's new paths attacked as a careless user would: interrupted writes, huge declared
sizes and frame counts, pages that differ, names with odd characters and upper-case
extensions, files whose name lies about their content. Every case is one line and the right
exit code, with nothing left half-written."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

from blurapp.cli import main
from blurapp.io import TEMP_SUFFIX, read_image


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if not line.startswith("blurapp: note: ")]
    if code:
        assert len(errors) == 1, err
        assert errors[0].startswith(("blurapp: error: ", "blurapp: interrupted")), err
    return code, err


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob(f"*{TEMP_SUFFIX}")]


def picture(h: int = 24, w: int = 32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize("suffix", [".heic", ".avif", ".gif"])
def test_an_interrupted_encoder_leaves_nothing(capsys, tmp_path, monkeypatch, suffix) -> None:
    from blurapp.io import codecs

    codec = codecs.codec_for_extension(f"x{suffix}")
    real = type(codec).encode

    def interrupted(self, fh, data, options) -> None:
        real(self, fh, data, options)  # the bytes are in the temporary file...
        raise KeyboardInterrupt  # ...and Ctrl-C comes before it is published

    monkeypatch.setattr(type(codec), "encode", interrupted)
    src = tmp_path / "in.png"
    Image.fromarray(picture()).save(src)
    out = tmp_path / f"out{suffix}"
    code, err = run(capsys, "apply", src, "-o", out, "-k", "box:3", "--strategy", "cpu")
    assert code == 130 and "interrupted" in err
    assert not out.exists() and not leftovers(tmp_path)


def test_a_gif_declaring_a_huge_screen_is_refused_before_decoding(capsys, tmp_path) -> None:
    src = tmp_path / "bomb.gif"
    Image.fromarray(picture()).save(src)
    data = bytearray(src.read_bytes())
    data[6:10] = struct.pack("<HH", 65535, 65535)  # the logical screen
    src.write_bytes(bytes(data))
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3")
    assert code == 1 and "megapixels" in err and not (tmp_path / "o.png").exists()


def test_an_apng_declaring_a_billion_frames_is_refused_before_decoding(capsys, tmp_path) -> None:
    first, second = (Image.fromarray(picture(seed=i)) for i in range(2))
    src = tmp_path / "frames.png"
    first.save(src, save_all=True, append_images=[second])
    data = bytearray(src.read_bytes())
    at = data.index(b"acTL")
    body = struct.pack(">II", 1_000_000_000, 0)
    data[at + 4 : at + 12] = body
    data[at + 12 : at + 16] = struct.pack(">I", zlib.crc32(b"acTL" + body))
    src.write_bytes(bytes(data))
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.png", "-k", "box:3")
    assert code == 1 and "1000000000 frames" in err and "megapixels" in err, err
    assert not (tmp_path / "o.png").exists()


def test_tiff_pages_of_different_sizes_say_to_take_one(capsys, tmp_path) -> None:
    src = tmp_path / "scan.tif"
    with tifffile.TiffWriter(src) as tw:
        tw.write(picture(20, 30), photometric="rgb")
        tw.write(picture(25, 35, seed=1), photometric="rgb")
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.tif", "-k", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 1 and "pages differ in size" in err and "--frame N" in err
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.tif", "-k", "identity",
                    "--strategy", "cpu", "--frame", "1")  # fmt: skip
    assert code == 0, err
    np.testing.assert_array_equal(read_image(tmp_path / "o.tif").pixels, picture(25, 35, seed=1))


def test_a_negative_frame_is_a_usage_error(capsys, tmp_path) -> None:
    src = tmp_path / "in.png"
    Image.fromarray(picture()).save(src)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:  # argparse's own exit, one line
        main(["apply", str(src), "-o", str(tmp_path / "o.png"), "-k", "box:3", "--frame=-1"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "frame must be at least 0" in err
    assert len(err.strip().splitlines()) == 1


def test_a_truncated_animation_is_one_line_or_its_whole_frames(capsys, tmp_path) -> None:
    frames = [Image.fromarray(picture(seed=i)) for i in range(4)]
    whole = tmp_path / "whole.gif"
    frames[0].save(whole, save_all=True, append_images=frames[1:], duration=50)
    data = whole.read_bytes()
    for cut in (len(data) * 3 // 4, len(data) // 2, 20):
        src = tmp_path / f"cut{cut}.gif"
        src.write_bytes(data[:cut])
        out = tmp_path / f"o{cut}.gif"
        code, err = run(capsys, "apply", src, "-o", out, "-k", "box:3", "--strategy", "cpu")
        assert code in (0, 1), err
        if code == 0:  # what Pillow could decode, every frame whole
            with Image.open(out) as im:
                assert im.size == (32, 24) and 1 <= im.n_frames <= 4
        else:
            assert "cannot read" in err and not out.exists()
    assert not leftovers(tmp_path)


def test_odd_names_and_names_that_lie_in_a_batch(capsys, tmp_path) -> None:
    import pillow_heif

    from tests.cli.test_new_formats import make_dng

    folder = tmp_path / "DCIM"
    folder.mkdir()
    pixels = picture(30, 40)
    heic = folder / "Ümlaut\nphoto  2.HEIC"  # a newline and two spaces, as a careless copy makes
    pillow_heif.from_bytes(mode="RGB", size=(40, 30), data=pixels.tobytes()).save(heic, quality=90)
    make_dng(folder / "raw shot.NEF")  # a DNG named like a Nikon file: still raw
    Image.fromarray(pixels).save(folder / "really a png.avif", format="PNG")
    out = tmp_path / "out"
    code, err = run(capsys, "batch", folder, "-o", out, "-k", "box:3", "--strategy", "cpu",
                    "--quiet")  # fmt: skip
    assert code == 0, err
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["Ümlaut\nphoto  2.heic", "raw shot.tiff", "really a png.avif"])
    assert read_image(out / "raw shot.tiff").pixels.dtype == np.uint16
    assert read_image(out / "really a png.avif").format == "avif"  # written as its name says
    assert not leftovers(tmp_path)
    # The newline in the name is one escaped line in a message, not two lines.
    os.chmod(heic, 0o000)
    try:
        if os.geteuid() == 0:
            heic.write_bytes(b"")  # root reads anything: an empty file instead
        code, err = run(capsys, "apply", heic, "-o", tmp_path / "o.png", "-k", "box:3")
        assert code == 1 and "Ümlaut\\nphoto" in err
    finally:
        os.chmod(heic, 0o644)


def test_a_16_bit_grey_apng_keeps_its_16_bits(capsys, tmp_path) -> None:
    """Pillow's convert("RGB") clipped 16-bit grey frames at 255: they stay 16-bit grey."""
    src = tmp_path / "deep.png"
    frames = [np.full((4, 6), v, np.uint16) for v in (1000, 20000, 65535)]
    for i, frame in enumerate(frames):
        frame[i, : i + 2] = 7  # each frame differs from the last where Pillow's APNG looks
    first, *rest = (Image.fromarray(f) for f in frames)
    first.save(src, save_all=True, append_images=rest, duration=30)
    data = read_image(src)
    assert data.frame_count == 3 and data.pixels.dtype == np.uint16 and not data.notes
    assert [int(f.max()) for f in data.frames] == [1000, 20000, 65535]
    code, err = run(capsys, "apply", src, "-o", tmp_path / "o.tif", "-k", "identity",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 0, err
    with tifffile.TiffFile(tmp_path / "o.tif") as tif:
        assert [int(p.asarray().max()) for p in tif.pages] == [1000, 20000, 65535]


def test_an_apng_written_keeps_every_frame_its_timing_and_loop(tmp_path) -> None:
    """Pillow's APNG writer merged frames equal once cut to 8 bits (16-bit grey ones differing
    above 255, or identical ones): blurapp writes each frame, its duration and the loop count."""
    from blurapp.io import Animation, ImageData, write_image

    frames = tuple(np.full((4, 6), v, np.uint16) for v in (1000, 20000, 20000, 65535))
    anim = Animation(frames, (10, 20, 30, 40), 3, (0, 1, 2, 0))
    write_image(tmp_path / "a.png", ImageData(frames[0], "png", animation=anim))
    data = read_image(tmp_path / "a.png")
    assert data.frame_count == 4 and data.animation.durations == (10, 20, 30, 40)
    assert data.animation.loop == 3 and data.animation.disposal == (0, 1, 2, 0)
    for got, want in zip(data.frames, frames, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("suffix", [".gif", ".webp"])
def test_equal_frames_are_merged_with_their_durations_not_an_encoder_error(
    tmp_path, suffix
) -> None:
    """Every frame equal made Pillow's GIF writer fail ("int() argument ... not 'list'"); GIF
    and WebP merge a frame equal to the one before it, its duration added."""
    from blurapp.io import Animation, ImageData, write_image

    flat = np.full((8, 8, 3), 100, np.uint8)
    other = flat.copy()
    other[0, 0] = 0
    for frames, want in (((flat, flat, flat), 1), ((flat, flat, other), 2)):
        out = tmp_path / f"{len(frames)}-{want}{suffix}"
        anim = Animation(frames, (10, 20, 30), 0, (1, 1, 1))
        write_image(out, ImageData(flat, suffix[1:], animation=anim))
        data = read_image(out)
        assert data.frame_count == want
        if want == 2:
            assert data.animation.durations == (30, 30)
            np.testing.assert_array_equal(data.frames[1], other)
