"""Files that are not what a name promises (issue 18): FIFOs, devices and folders named as
images are refused without blocking; multi-frame images are refused rather than cut to their
first frame; a killed writer's temporary is told from a live one's and removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import Image

from blurapp.core.errors import ImageError, UsageError
from blurapp.io import (
    TEMP_SUFFIX,
    atomic_output,
    check_output,
    probe_image,
    read_image,
    remove_stale_temporaries,
)
from blurapp.io.atomic import temp_name


def frames(n: int = 3) -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (6, 7, 3), dtype=np.uint8)) for _ in range(n)]


# ------------------------------------------------------------------ not regular files


def test_a_fifo_named_as_an_image_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "x.png"
    os.mkfifo(fifo)
    for read in (probe_image, read_image):
        with pytest.raises(ImageError, match="it is a FIFO, not an image file"):
            read(fifo)


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a device"), ("/", "a folder")])
def test_devices_and_folders_are_not_images(path: str, kind: str) -> None:
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    with pytest.raises(ImageError, match=kind):
        read_image(path)


# ------------------------------------------------------------------ frames


def _pillow_frames(path: Path) -> list[np.ndarray]:
    """Every frame as Pillow itself composites it (the decoder's own output)."""
    with Image.open(path) as im:
        out = []
        for i in range(im.n_frames):
            im.seek(i)
            out.append(np.asarray(im.convert("RGB")))
        return out


def test_an_animated_webp_is_read_frame_by_frame(tmp_path: Path) -> None:
    """Issue 25: refused before ("it has 3 frames"); now every frame, with its timing."""
    first, *rest = frames()
    first.save(tmp_path / "a.webp", save_all=True, append_images=rest, duration=50, lossless=True)
    data = read_image(tmp_path / "a.webp")
    assert data.frame_count == 3 and data.animation.durations == (50, 50, 50)
    for got, want in zip(data.frames, _pillow_frames(tmp_path / "a.webp"), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(read_image(tmp_path / "a.webp", frame=2).pixels, rest[1])


def test_an_apng_is_read_frame_by_frame(tmp_path: Path) -> None:
    first, *rest = frames(2)
    first.save(tmp_path / "a.png", save_all=True, append_images=rest, duration=50)
    data = read_image(tmp_path / "a.png")
    assert data.frame_count == 2 and probe_image(tmp_path / "a.png").frames == 2
    for got, want in zip(data.frames, [first, *rest], strict=True):
        np.testing.assert_array_equal(got, np.asarray(want))


@pytest.mark.parametrize("writer", ["tifffile", "pillow"])
def test_a_multi_page_tiff_is_read_page_by_page(tmp_path: Path, writer: str) -> None:
    path = tmp_path / "a.tif"
    pages = frames()
    if writer == "tifffile":
        tifffile.imwrite(path, np.stack([np.asarray(f) for f in pages]))
    else:
        first, *rest = pages
        first.save(path, save_all=True, append_images=rest)
    data = read_image(path)
    assert data.frame_count == 3 and probe_image(path).frames == 3
    for got, want in zip(data.frames, pages, strict=True):
        np.testing.assert_array_equal(got, np.asarray(want))


def test_single_images_and_a_tiff_with_a_preview_are_read(tmp_path: Path) -> None:
    first, second = frames(2)
    first.save(tmp_path / "a.webp", lossless=True)
    first.save(tmp_path / "a.png")
    with tifffile.TiffWriter(tmp_path / "a.tif") as tif:
        tif.write(np.asarray(first))
        tif.write(np.asarray(second)[:3, :3], subfiletype=1)  # a reduced-resolution preview
    for name in ("a.webp", "a.png", "a.tif"):
        np.testing.assert_array_equal(read_image(tmp_path / name).pixels, np.asarray(first))


# ------------------------------------------------------------------ leftovers


KILLED_WRITER = """
import os, signal, sys
from blurapp.io import atomic_output
with atomic_output(sys.argv[1]) as fh:
    fh.write(b"half")
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def kill_a_writer(target: Path) -> list[Path]:
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return [p for p in target.parent.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def test_a_killed_writers_temporary_is_removed(tmp_path: Path) -> None:
    target = tmp_path / "out.png"
    left = kill_a_writer(target)
    assert len(left) == 1 and not target.exists()
    other = tmp_path / "unrelated.png"
    other.write_bytes(b"x")
    assert remove_stale_temporaries(tmp_path, ["out.png"]) == left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unrelated.png"]


def test_a_live_writers_temporary_stays(tmp_path: Path) -> None:
    target = tmp_path / "out.png"
    with atomic_output(target) as fh:
        fh.write(b"busy")
        assert remove_stale_temporaries(tmp_path, ["out.png"]) == []
        assert len([p for p in tmp_path.iterdir() if p.name.endswith(TEMP_SUFFIX)]) == 1
    assert target.read_bytes() == b"busy"


def test_only_the_named_outputs_temporaries_are_looked_at(tmp_path: Path) -> None:
    left = kill_a_writer(tmp_path / "mine.png")
    assert remove_stale_temporaries(tmp_path, ["other.png"]) == []
    assert left[0].exists()
    stray = tmp_path / temp_name(tmp_path, "mine.png").replace(TEMP_SUFFIX, ".txt")
    stray.write_bytes(b"not ours")
    assert remove_stale_temporaries(tmp_path, ["mine.png"]) == left
    assert stray.exists()


# ------------------------------------------------------------------ unwritable folders


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_an_output_in_proc_is_refused_before_any_work() -> None:
    with pytest.raises(UsageError, match=r"cannot write /proc/r\.json"):
        check_output("/proc/r.json", overwrite=False)


def test_an_output_in_a_read_only_folder_is_refused_before_any_work(
    tmp_path: Path, monkeypatch
) -> None:
    """A folder the user cannot write into. Root writes into read-only folders (and CI runs as
    root), so where the mode bits do not stop the probe, the file system's answer is made."""
    from blurapp.io import atomic

    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    if os.geteuid() == 0:
        real_open = os.open

        def denied(path, flags, mode=0o777, **kwargs):
            if Path(path).parent == folder:
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, flags, mode, **kwargs)

        monkeypatch.setattr(atomic.os, "open", denied)
    try:
        with pytest.raises(UsageError, match="Permission denied"):
            check_output(folder / "r.json", overwrite=False)
    finally:
        folder.chmod(0o700)
    assert list(folder.iterdir()) == []


def test_the_write_probe_leaves_nothing(tmp_path: Path) -> None:
    check_output(tmp_path / "r.json", overwrite=False)
    assert list(tmp_path.iterdir()) == []


def test_an_encoder_error_names_the_output_not_the_temporary(tmp_path, monkeypatch) -> None:
    from blurapp.io import ImageData, write_image
    from blurapp.io.codecs import tiff

    def full_disk(fh, *args, **kwargs):
        raise OSError(28, "No space left on device", fh.name)

    monkeypatch.setattr(tiff, "write_tifffile", full_disk)
    target = tmp_path / "out.tif"
    with pytest.raises(ImageError) as info:
        write_image(target, ImageData(np.zeros((4, 4), np.float32), "tiff"), fmt="tiff")
    assert str(info.value) == f"cannot write {target}: No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_a_large_png_text_chunk_prints_no_libpng_warning(tmp_path, capfd) -> None:
    """libpng printed "tEXt: out of memory" on stderr for a text chunk over its 8 MB limit, on a
    run that then succeeded (issue 18): text chunks are not given to it."""
    import struct
    import zlib

    import imagecodecs

    from blurapp.io.images import read_image

    pixels = np.arange(20 * 30 * 3, dtype=np.uint16).reshape(20, 30, 3) * 37
    plain = imagecodecs.png_encode(pixels)
    text = b"Comment\0" + b"y" * 9_000_000
    chunk = (struct.pack(">I", len(text)) + b"tEXt" + text
             + struct.pack(">I", zlib.crc32(b"tEXt" + text)))  # fmt: skip
    path = tmp_path / "text16.png"
    path.write_bytes(plain[:33] + chunk + plain[33:])  # after IHDR
    capfd.readouterr()
    image = read_image(path)
    np.testing.assert_array_equal(image.pixels, pixels)
    assert capfd.readouterr().err == ""
