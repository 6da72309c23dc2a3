"""The codec registry (blurapp/io/codecs): every format declared once, and every list of formats
elsewhere (the command line, the window's filters, ``blurapp info``, the README) read from it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blurapp.io import FORMATS, codecs, format_from_path, output_dtype
from blurapp.io.codecs import CODECS, METADATA_KINDS

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted({*CODECS, "jpeg", "tif", "heic"}, key=len, reverse=True)


def test_every_codec_declares_what_it_stores() -> None:
    assert list(CODECS) == [
        "png", "jpg", "tiff", "webp", "bmp", "npy", "heif", "avif", "gif", "raw",
    ]  # fmt: skip  # the one literal list: the registry's own order
    for codec in CODECS.values():
        assert codec.extensions
        assert all(e.startswith(".") and e == e.lower() for e in codec.extensions)
        assert codec.magic and codec.label and codec.library
        assert set(codec.dtypes) <= {"uint8", "uint16", "float32", "float64"}
        assert set(codec.channels) <= {1, 2, 3, 4}
        assert set(codec.metadata) <= set(METADATA_KINDS)
        assert codec.unavailable() is None, f"{codec.name}: {codec.unavailable()}"
    extensions = [e for c in CODECS.values() for e in c.extensions]
    assert len(extensions) == len(set(extensions)), "an extension claimed by two codecs"


def test_writers_and_the_formats_table_agree() -> None:
    assert list(FORMATS) == [n for n, c in CODECS.items() if c.writes]
    assert "raw" not in FORMATS
    for name, codec in CODECS.items():
        if codec.writes:
            assert format_from_path(f"x{codec.extensions[0].upper()}") == name
        for dtype in codec.dtypes:
            if codec.writes:
                assert output_dtype(np.dtype(dtype), name) == np.dtype(dtype)


def test_writing_a_raw_format_is_refused_in_one_line() -> None:
    from blurapp.core.errors import UsageError

    for ext in (".dng", ".CR2", ".nef", ".arw"):
        with pytest.raises(UsageError, match="cannot write Camera raw") as err:
            format_from_path(f"photo{ext}")
        assert "\n" not in str(err.value) and "TIFF or PNG" in str(err.value)


@pytest.mark.parametrize(
    ("head", "name", "want"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 8, "x.jpg", "png"),
        (b"\xff\xd8\xff\xe0" + b"\0" * 12, "x.heic", "jpg"),  # a .heic that is a JPEG
        (b"\0\0\0\x18ftypheic\0\0\0\0mif1heic", "x.jpg", "heif"),
        (b"\0\0\0\x1cftypmif1\0\0\0\0mif1avifmiaf", "x.heic", "avif"),
        (b"\0\0\0\x20ftypavif\0\0\0\0avifmif1miaf", "x", "avif"),
        (b"GIF89a" + b"\0" * 10, "x.png", "gif"),
        (b"IIRO\x08\0\0\0" + b"\0" * 8, "x.jpg", "raw"),  # Olympus ORF
        (b"IIU\0\x08\0\0\0" + b"\0" * 8, "x", "raw"),  # Panasonic RW2
        (b"FUJIFILMCCD-RAW ", "x", "raw"),
        (b"\0\0\0\x18ftypcrx \0\0\0\x01", "x", "raw"),  # Canon CR3
        (b"II*\0\x10\0\0\0CR\x02\0" + b"\0" * 4, "x.tif", "raw"),  # Canon CR2
        (b"II*\0\x08\0\0\0" + b"\0" * 8, "x.nef", "raw"),
        (b"II*\0\x08\0\0\0" + b"\0" * 8, "x.tif", "tiff"),
    ],
)
def test_content_decides_the_format(tmp_path: Path, head: bytes, name: str, want: str) -> None:
    path = tmp_path / name
    path.write_bytes(head)
    found = codecs.sniff(head, path)
    assert found is not None and found.name == want


def test_readme_holds_the_registry_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert codecs.format_table() in readme, "README's format table: paste codecs.format_table()"


def test_info_lists_every_format() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", "info", "--formats"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for codec in CODECS.values():
        assert codec.label in proc.stdout and codec.extensions[0] in proc.stdout


# Three or more format names in a row, quoted ('png', "jpg", ...) or as globs (*.png *.jpg):
# a list that should read the registry.
_QUOTED = "|".join(re.escape(n) for n in NAMES)
_LITERAL_LISTS = (
    re.compile(rf"""["']\.?({_QUOTED})["']\s*[,:]\s*(?:[^,\n]*,\s*)?["']\.?({_QUOTED})["']"""
               rf"""\s*[,:]\s*(?:[^,\n]*,\s*)?["']\.?({_QUOTED})["']""", re.IGNORECASE),
    re.compile(rf"\*\.({_QUOTED})\s+\*\.({_QUOTED})\s+\*\.({_QUOTED})", re.IGNORECASE),
    re.compile(r"PNG, JPEG, TIFF", re.IGNORECASE),
)  # fmt: skip


def test_no_literal_list_of_formats_outside_the_registry() -> None:
    offenders = []
    for path in sorted((ROOT / "blurapp").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("blurapp/io/codecs/"):
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in _LITERAL_LISTS:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                offenders.append(f"{rel}:{line}: {match.group(0)[:60]}")
    assert not offenders, "read blurapp.io.codecs instead:\n" + "\n".join(offenders)


def test_the_check_finds_a_literal_list() -> None:
    sample = '_FORMATS = ("png", "jpg", "tiff")\nOPEN = "Images (*.png *.jpg *.tif)"'
    assert all(p.search(sample) for p in _LITERAL_LISTS[:2])
    assert not any(p.search('x = ("png",)\ny = "*.png"') for p in _LITERAL_LISTS)


def test_codecs_import_their_libraries_lazily() -> None:
    """Importing the registry (every ``blurapp --help`` does) loads no image library."""
    code = (
        "import sys, blurapp.io, blurapp.batch.options; "
        "print([m for m in ('PIL', 'pillow_heif', 'rawpy', 'tifffile', 'imagecodecs') "
        "if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
