"""`blurapp kernel` with ImageMagick kernel strings: ``im:SPEC``, ``--im``, the near-miss hint."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np


def blurapp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "blurapp", *args], capture_output=True, text=True, timeout=120
    )


def test_kernel_reads_an_imagemagick_array() -> None:
    proc = blurapp("kernel", "im:3x3: 1,2,1 2,4,2 1,2,1", "--json", "--no-plan")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["spec"] == "im:3x3: 1,2,1 2,4,2 1,2,1"
    assert report["name"] == "im"
    np.testing.assert_array_equal(report["weights"], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    assert report["rank"] == 1


def test_imagemagick_spelling_without_im_is_one_line_with_a_suggestion() -> None:
    proc = blurapp("kernel", "Gaussian:0x2", "--no-plan")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].endswith("did you mean im:Gaussian:0x2 (ImageMagick) or gaussian:sigma=2?")


def test_im_prints_the_imagemagick_string() -> None:
    for spec, expected in (
        ("sobel:x", "Sobel:180"),
        ("gaussian:sigma=2", "Gaussian:8x2"),
        ("im:Comet:0x1+90", "Comet:0x1+90"),
        ("matrix:2x2:1,2,3,4", "2x2+1+1: 1,2 3,4"),
    ):
        proc = blurapp("kernel", spec, "--im")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == expected + "\n"


def test_im_string_round_trips_through_the_command_line() -> None:
    text = blurapp("kernel", "motion:length=5,angle=30", "--im").stdout.strip()
    theirs = json.loads(blurapp("kernel", "im:" + text, "--json", "--no-plan").stdout)
    ours = json.loads(blurapp("kernel", "motion:length=5,angle=30", "--json", "--no-plan").stdout)
    assert theirs["weights"] == ours["weights"]
