"""`blurapp kernel`, `--help` and the one-line error contract, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest


def blurapp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "blurapp", *args], capture_output=True, text=True, timeout=120
    )


def test_help_lists_every_command() -> None:
    proc = blurapp("--help")
    assert proc.returncode == 0
    for command in ("gui", "apply", "batch", "kernel", "info"):
        assert command in proc.stdout


def test_kernel_json_for_a_gaussian() -> None:
    proc = blurapp("kernel", "gaussian:sigma=2", "--json", "--no-plan")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    weights = np.array(report["weights"])
    assert weights.shape == (17, 17)
    assert report["sum"] == pytest.approx(1.0, abs=1e-12)
    assert report["rank"] == 1
    assert report["singular_values"][0] > 0
    column, row = np.array(report["factors"]["column"]), np.array(report["factors"]["row"])
    np.testing.assert_allclose(np.outer(column, row), weights, rtol=0, atol=1e-15)
    assert report["taps"] == {"direct": 289, "separable": 34}


def test_kernel_text_for_a_non_separable_kernel() -> None:
    proc = blurapp("kernel", "laplacian", "--no-plan")
    assert proc.returncode == 0, proc.stderr
    assert "rank     2" in proc.stdout
    assert "not separable" in proc.stdout
    factors = json.loads(blurapp("kernel", "laplacian", "--json", "--no-plan").stdout)["factors"]
    assert factors is None


def test_kernel_states_lowrank_pairs_and_promised_error() -> None:
    # Issue 14's goal: lowrank on disk:radius=16 at tolerance 1e-2 prints its rank and error.
    proc = blurapp("kernel", "disk:radius=16", "--tolerance", "1e-2", "--no-plan")
    assert proc.returncode == 0, proc.stderr
    assert "rank     12 " in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("lowrank"))
    assert line == (
        "lowrank  k=11 separable pairs (tolerance 0.01): max |output error| ≤ 1.3e-06 × max |input|"
    )
    report = json.loads(blurapp("kernel", "disk:radius=16.5", "--json", "--no-plan",
                                "--tolerance", "0.01").stdout)  # fmt: skip
    low = report["lowrank"]
    assert (low["k"], low["exact"], low["tolerance"]) == (9, False, 0.01)
    assert low["error"] <= 0.01
    unsharp = blurapp("kernel", "unsharp:sigma=2", "--no-plan").stdout
    assert "lowrank  k=2 separable pairs (the exact rank)" in unsharp
    bad = blurapp("kernel", "box:3", "--tolerance", "0")
    assert bad.returncode == 2 and "tolerance" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.gpu
def test_kernel_shows_the_plan(gpu: object) -> None:
    proc = blurapp("kernel", "gaussian:sigma=2")
    assert proc.returncode == 0, proc.stderr
    assert (
        "plan     separable: rank 1, 17×17 taps: separable does 34 multiply-adds per pixel "
        "instead of 289"
    ) in proc.stdout


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("gaussian:sigma=-1", "sigma"),
        ("box:0", "0"),
        ("matrix:3x3:1,2", "9"),
        ("sobel:z", "z"),
        ("nonsense", "nonsense"),
        ("box:1001", "1001"),
        ("matrix:2x1:1,nan", "nan"),
    ],
)
def test_bad_spec_is_one_line_and_exit_2(spec: str, needle: str) -> None:
    proc = blurapp("kernel", spec)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert needle in lines[0].lower()


def test_unknown_option_is_one_line() -> None:
    proc = blurapp("kernel", "box:3", "--bogus")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
