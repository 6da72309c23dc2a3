"""`blurapp bench` end to end on a small case: table, JSON records, CSV and plot."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

REQUIRED = {
    "strategy", "radius", "width", "height", "median_ms", "min_ms", "mpix_per_s",
    "bytes_modelled", "gbps_effective", "timer", "adapter",
}  # fmt: skip


@pytest.mark.gpu
def test_bench_writes_records_csv_and_plot(gpu: object, tmp_path: Path) -> None:
    out_json, out_csv, out_png = tmp_path / "b.json", tmp_path / "b.csv", tmp_path / "b.png"
    proc = subprocess.run(
        [
            sys.executable, "-m", "blurapp", "bench", "--size", "64x48", "--size", "32x32",
            "--radii", "1,3", "--repeat", "2", "--warmup", "1", "--quiet",
            "--json", str(out_json), "--csv", str(out_csv), "--plot", str(out_png),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = json.loads(out_json.read_text())
    from blurapp.bench import DEFAULT_STRATEGIES

    assert len(records) == 2 * 2 * len(DEFAULT_STRATEGIES)
    for r in records:
        assert REQUIRED <= r.keys()
        assert r["median_ms"] > 0 and r["min_ms"] <= r["median_ms"]
        assert r["bytes_modelled"] > 0
        assert r["timer"] in ("gpu", "wall")
    assert {r["strategy"] for r in records} == set(DEFAULT_STRATEGIES)
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == len(records)
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "vs direct" in proc.stdout


def test_bench_rejects_bad_arguments() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", "bench", "--size", "12by4"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "12by4" in proc.stderr and "Traceback" not in proc.stderr


def test_bench_refuses_existing_outputs_before_timing(tmp_path: Path) -> None:
    """Checked before any GPU work: no adapter is needed to be refused."""
    existing = tmp_path / "existing.png"
    existing.write_bytes(b"precious")
    for flag in ("--json", "--csv", "--plot"):
        proc = subprocess.run(
            [sys.executable, "-m", "blurapp", "bench", "--size", "8x8", "--radii", "1",
             flag, str(existing)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert "existing.png exists" in proc.stderr and "--overwrite" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert existing.read_bytes() == b"precious"
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", "bench", "--json", str(tmp_path / "a"), "--csv",
         str(tmp_path / "a"), "--overwrite"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and "the same file" in proc.stderr


@pytest.mark.gpu
def test_bench_format_changes_the_input_texture(gpu: object, tmp_path: Path) -> None:
    def bench(fmt: str) -> list[dict]:
        out = tmp_path / f"{fmt}.json"
        proc = subprocess.run(
            [
                sys.executable, "-m", "blurapp", "bench", "--size", "40x24", "--radii", "2",
                "--strategies", "direct,separable", "--repeat", "1", "--warmup", "0", "--quiet",
                "--format", fmt, "--json", str(out),
            ],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return json.loads(out.read_text())

    wide, narrow = bench("rgba32f"), bench("rgba8")
    assert {r["format"] for r in narrow} == {"rgba8"}
    for w, n in zip(wide, narrow, strict=True):
        # The first pass reads 4-byte rgba8unorm texels instead of 16-byte rgba32float ones.
        assert n["strategy"] == w["strategy"] and n["bytes_modelled"] < w["bytes_modelled"]


@pytest.mark.gpu
def test_bench_ceiling_reports_share_of_a_plain_copy(gpu: object, tmp_path: Path) -> None:
    out_json = tmp_path / "c.json"
    proc = subprocess.run(
        [
            sys.executable, "-m", "blurapp", "bench", "--size", "48x32", "--radii", "2",
            "--strategies", "separable", "--repeat", "1", "--warmup", "1", "--quiet",
            "--format", "rgba8", "--ceiling", "--json", str(out_json),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    copy, sep = json.loads(out_json.read_text())
    assert (copy["strategy"], copy["radius"], copy["kernel"]) == ("copy", 0, "matrix:1x1:1")
    assert copy["pct_of_copy"] is None
    # The copy reads one rgba8 texel and writes one rgba32float texel per pixel.
    assert copy["bytes_modelled"] == 48 * 32 * (4 + 16)
    assert sep["strategy"] == "separable"
    expected = 100 * sep["gbps_effective"] / copy["gbps_effective"]
    assert sep["pct_of_copy"] == pytest.approx(expected)
    assert "% copy" in proc.stdout


@pytest.mark.gpu
def test_bench_disk_family_for_the_non_separable_strategies(gpu: object, tmp_path: Path) -> None:
    # --family disk: a kernel lowrank has something to do with (disk:radius=R+0.5, rank > 1);
    # separable cannot run it and is skipped with its one-line reason, not a traceback.
    out_json = tmp_path / "d.json"
    proc = subprocess.run(
        [
            sys.executable, "-m", "blurapp", "bench", "--size", "24x20", "--radii", "2,4",
            "--family", "disk", "--strategies", "direct,separable,lowrank",
            "--tolerance", "0.01", "--repeat", "1", "--warmup", "0", "--quiet",
            "--json", str(out_json),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = json.loads(out_json.read_text())
    assert [(r["strategy"], r["kernel"]) for r in records] == [
        ("direct", "disk:radius=2.5"), ("lowrank", "disk:radius=2.5"),
        ("direct", "disk:radius=4.5"), ("lowrank", "disk:radius=4.5"),
    ]  # fmt: skip
    assert "separable 24x20 R=2: skipped, separable needs a rank-1 kernel" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert set(records[1]["passes"]) == {"rows1", "cols1", "rows2", "cols2", "rows3", "cols3"}
