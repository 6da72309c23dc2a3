"""A full disk, for real: small tmpfs mounts, no mocking (issue 18, "--report on a full disk").

A disk that is full before the run is a usage error before any work (exit 2, one line, nothing
written); a disk that fills during a batch fails the files that no longer fit (exit 1, one line
each) and the report, whose space was reserved before the work, still lists every file.

Mounting needs root: CI runs as root, and there a mount that fails fails the test (it is never
skipped, so a green run always means the disk was really full).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.batch.pipeline import FileRecord
from blurapp.batch.report import (
    build_report,
    error_room,
    report_size_bound,
    report_text,
)
from blurapp.cli import main
from blurapp.core.errors import OutputError
from blurapp.core.filterspec import FilterSpec
from blurapp.io import TEMP_SUFFIX, atomic_output


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """``small_disk(kib)``: a fresh tmpfs of ``kib`` KiB, unmounted after the test."""
    mounts: list[Path] = []

    def mount(kib: int) -> Path:
        path = tmp_path / f"disk{len(mounts)}"
        path.mkdir()
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={kib}k,mode=0755", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"cannot mount a tmpfs (root is needed): {proc.stderr}"
        mounts.append(path)
        return path

    yield mount
    for path in reversed(mounts):
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Take all of ``disk``'s free space but ``leave`` bytes, with a file of real blocks."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        if free > leave:
            os.posix_fallocate(fd, 0, free - leave)
    finally:
        os.close(fd)
    st = os.statvfs(disk)
    assert st.f_bavail * st.f_frsize <= leave
    return filler


def no_temporaries(*folders: Path) -> None:
    for folder in folders:
        if folder.is_dir():
            left = [p.name for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX)]
            assert not left, left


def pngs(folder: Path, count: int, side: int = 64) -> list[Path]:
    """``count`` noise PNGs (they do not compress: each output takes about side² × 3 bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        pixels = np.random.default_rng(i).integers(0, 256, (side, side, 3), dtype=np.uint8)
        path = folder / f"p{i}.png"
        Image.fromarray(pixels).save(path)
        paths.append(path)
    return paths


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return code, err


# ------------------------------------------------------------------ the atomic writer


def test_reserved_space_is_there_when_the_disk_fills_up(small_disk) -> None:
    disk = small_disk(64)
    dest = disk / "r.json"
    with atomic_output(dest, reserve=16 * 1024) as fh:
        fill(disk)  # someone else takes the rest of the disk meanwhile
        with pytest.raises(OSError):
            (disk / "other").write_bytes(b"y" * 8192)
        fh.write(b"x" * 12000)  # into the blocks reserved when the file was opened
    assert dest.read_bytes() == b"x" * 12000  # the unused reservation is given back
    no_temporaries(disk)


def test_a_reservation_the_disk_cannot_hold_fails_at_once(small_disk) -> None:
    disk = small_disk(64)
    fill(disk, leave=8192)
    reached = False
    with pytest.raises(OutputError, match="No space left on device"):
        with atomic_output(disk / "r.json", reserve=64 * 1024):
            reached = True
    assert not reached and not (disk / "r.json").exists()
    no_temporaries(disk)


# ------------------------------------------------------------------ the report's bound


def test_the_report_bound_holds_for_the_widest_rows() -> None:
    spec = FilterSpec.create("gaussian:sigma=2", border="constant=0.5", strategy="tiled")
    names = [
        ("in/a.png", "out/a.png"),
        ("in/new\nline.png", "out/new\nline.png"),
        ("in/-rf.png", "out/-rf.png"),
        (os.fsdecode(b"in/\xff\xfe.png"), os.fsdecode(b"out/\xff\xfe.png")),
        ("in/" + "é" * 120 + ".png", "out/" + "é" * 120 + ".png"),
    ]
    bound = report_size_bound(names, spec)
    records = []
    for i, (src, dst) in enumerate(names):
        error = ("😀" * 5000) if i % 2 else f"cannot read {src}: " + "\x00" * 3000
        records.append(
            FileRecord(src, dst, status="failed", width=2**40, height=2**40, channels=4,
                       dtype="float64", strategy="separable", timer="wall", gpu_ms=1e-300,
                       filter_ms=-1.2345678901234567e-300, total_ms=float("nan"), error=error)
        )  # fmt: skip
    text = report_text(build_report(records, spec, 1.2345678901234567e-300))
    assert len(text.encode()) <= bound
    rows = json.loads(text)["files"]
    for (src, dst), row in zip(names, rows, strict=True):
        assert row["error"].endswith("…")  # cut to its room, and said so
        assert len(json.dumps(row["error"])) <= error_room(src, dst)
    assert rows[0]["input"] == "in/a.png"


# ------------------------------------------------------------------ the command line


@pytest.mark.parametrize("leave", [0, 8192], ids=["full", "nearly-full"])
def test_a_report_on_a_full_disk_is_refused_before_any_work(
    capsys, small_disk, tmp_path, leave
) -> None:
    """Full: not even a block for the probe. Nearly full: two pages, fewer than the report of
    40 files takes (before, that was found only after all the work, as exit 1)."""
    disk = small_disk(64)
    inputs = pngs(tmp_path / "in", 40, side=4)
    fill(disk, leave=leave)
    out = tmp_path / "out"
    report = disk / "r.json"
    code, err = run(capsys, "batch", *inputs, "-o", out, "--kernel", "box:3", "--strategy",
                    "cpu", "--report", report)  # fmt: skip
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(report) in lines[0] and "No space left" in lines[0], err
    assert ("reserving" in err) == bool(leave)  # past the probe: the reservation found it
    assert not out.exists()  # nothing done
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # nothing written, no leftovers


def test_an_output_folder_on_a_full_disk_is_refused_before_any_work(
    capsys, small_disk, tmp_path
) -> None:
    disk = small_disk(64)
    inputs = pngs(tmp_path / "in", 2, side=8)
    (disk / "out").mkdir()
    fill(disk)
    code, err = run(capsys, "batch", *inputs, "-o", disk / "out", "--kernel", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 2 and "No space left" in err and str(disk / "out") in err, err
    code, err = run(capsys, "apply", inputs[0], "-o", disk / "o.png", "--kernel", "box:3",
                    "--strategy", "cpu")  # fmt: skip
    assert code == 2 and "No space left" in err and str(disk / "o.png") in err, err
    assert sorted(p.name for p in disk.iterdir()) == ["filler", "out"]
    assert not list((disk / "out").iterdir())


def test_a_disk_that_fills_during_a_batch_still_gets_the_whole_report(
    capsys, small_disk, tmp_path
) -> None:
    disk = small_disk(96)  # room for the report and about four of the eight outputs
    inputs = pngs(tmp_path / "in", 8)
    out, report = disk / "out", disk / "r.json"
    code, err = run(capsys, "batch", tmp_path / "in", "-o", out, "--kernel", "identity",
                    "--strategy", "cpu", "--jobs", "1", "--quiet", "--report", report)  # fmt: skip
    assert code == 1, err
    data = json.loads(report.read_text())
    rows = data["files"]
    assert [Path(r["input"]).name for r in rows] == [p.name for p in inputs]
    ok = [r for r in rows if r["status"] == "ok"]
    failed = [r for r in rows if r["status"] == "failed"]
    assert ok and failed and len(ok) + len(failed) == len(inputs)
    assert all("No space left on device" in r["error"] for r in failed)
    assert len(err.strip().splitlines()) == len(failed)  # one line per file that failed
    assert sorted(p.name for p in out.iterdir()) == sorted(Path(r["output"]).name for r in ok)
    for row in ok:  # whatever was written is whole
        src = np.asarray(Image.open(row["input"]))
        np.testing.assert_array_equal(np.asarray(Image.open(row["output"])), src)
    no_temporaries(out, disk)
