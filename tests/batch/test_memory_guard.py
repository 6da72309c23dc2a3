"""The decode guard in bytes (issue 18): a small PNG that declares 249.6 megapixels of RGBA
(under the 250 MP limit) needs about 19 GB on the float path; it is refused before a pixel is
decoded when the machine cannot give that much, in apply and in batch alike."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from blurapp.batch import pipeline as batch_pipeline
from blurapp.cli import main

WIDTH = HEIGHT = 15_800  # 249.6 MP


def bomb(path: Path) -> Path:
    """A PNG header declaring WIDTH×HEIGHT RGBA, 8 bits, and a few bytes of image data."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 6, 0, 0, 0)
    data = zlib.compress(b"\0" * 1000)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )
    return path


@pytest.fixture
def two_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_pipeline, "available_memory", lambda: 2 * 2**30)


def test_apply_refuses_a_bomb_before_decoding(tmp_path, capsys, two_gib) -> None:
    out = tmp_path / "o.png"
    assert main(["apply", str(bomb(tmp_path / "b.png")), "-o", str(out), "--kernel", "box:3"]) == 1
    err = capsys.readouterr().err
    assert "15800×15800 with 4 channel(s) needs about" in err and "GiB" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_batch_refuses_a_bomb_and_goes_on(tmp_path, capsys, two_gib) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    bomb(folder / "b.png")
    (folder / "ok.npy").write_bytes(b"")  # a bad file beside it: both reported, one line each
    # Into TIFF the image would be decoded whole: refused before decoding.
    code = main(["batch", str(folder), "-o", str(tmp_path / "out"), "--kernel", "box:3",
                 "--quiet", "--strategy", "cpu", "--format", "tiff"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "b.png: 15800×15800" in err and "decompression bombs" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "b.tiff").exists()


def test_batch_streams_a_huge_png_into_a_png_in_bands(tmp_path, capsys, two_gib) -> None:
    """A PNG into a PNG is decoded a band of rows at a time (blurapp.io.bands): it needs a few
    bands, not 19 GB, so the byte guard lets it through, and its short pixel data is found as
    the rows are decoded: one line, nothing written."""
    folder = tmp_path / "in"
    folder.mkdir()
    bomb(folder / "b.png")
    code = main(["batch", str(folder), "-o", str(tmp_path / "out"), "--kernel", "box:3",
                 "--quiet", "--strategy", "cpu"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "b.png: truncated or corrupt PNG file" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not list((tmp_path / "out").iterdir())


def test_what_is_needed_is_counted_in_bytes() -> None:
    import numpy as np

    from blurapp import pipeline
    from blurapp.core.filterspec import FilterSpec

    spec = FilterSpec.create("box:3")
    need = pipeline.working_bytes(WIDTH, HEIGHT, 4, np.dtype(np.uint8), spec, np.dtype(np.uint8))
    assert need > 6 * 2**30  # more than the machine that found it had
