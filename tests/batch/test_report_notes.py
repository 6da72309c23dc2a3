"""batch's JSON report carries each file's notes (what its decoder left out, what its output's
format drops), as the command prints them, within the report's size bound."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tifffile
from PIL import ImageCms

from blurapp.batch.pipeline import FileRecord
from blurapp.batch.report import build_report, notes_room, report_size_bound, report_text
from blurapp.cli import main
from blurapp.core.filterspec import FilterSpec


def test_a_16_bit_avif_note_is_in_the_report(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    pytest.importorskip("imagecodecs").avif_encode  # noqa: B018  # 16-bit AVIF is imagecodecs'
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    pixels = np.random.default_rng(1).integers(0, 65536, (20, 30, 3)).astype(np.uint16)
    src = tmp_path / "deep.tif"
    tifffile.imwrite(src, pixels, photometric="rgb", iccprofile=icc)
    plain = tmp_path / "plain.tif"  # 8 bits: an AVIF of those keeps what there is
    tifffile.imwrite(plain, (pixels >> 8).astype(np.uint8), photometric="rgb")
    report = tmp_path / "report.json"
    args = ["batch", str(src), str(plain), "-o", str(tmp_path / "out"), "-k", "box:3"]
    code = main([*args, "--strategy", "cpu", "-q", "--format", "avif", "--report", str(report)])
    err = capsys.readouterr().err
    assert code == 0, err
    rows = {Path(r["input"]).name: r for r in json.loads(report.read_text())["files"]}
    (note,) = rows["deep.tif"]["notes"]
    assert note.startswith("deep.avif: a 16-bit AVIF is written without the ICC profile")
    assert note in err  # the line the command printed
    assert rows["plain.tif"]["notes"] == []  # nothing to drop: no note, an empty list


def test_notes_stay_within_the_size_bound(tmp_path: Path) -> None:
    spec = FilterSpec.create("box:3")
    rows = [("in/a.png", "out/a.png"), ("in/b.png", "out/b.png")]
    bound = report_size_bound(rows, spec)
    many = tuple(f"a.png: note {i} " + "x" * 300 for i in range(100))
    records = [
        FileRecord(*rows[0], status="ok", notes=many),
        FileRecord(*rows[1], status="ok", notes=("b.png: " + "y" * 10**5,)),
    ]
    report = build_report(records, spec, 1.0)
    assert len(report_text(report)) <= bound
    first, second = (r["notes"] for r in report["files"])
    assert first[0] == many[0] and first[-1].endswith(f"(and {100 - len(first)} more notes)")
    assert len(json.dumps(first)) <= notes_room("out/a.png")
    assert len(second) == 1 and second[0].endswith("\u2026")
