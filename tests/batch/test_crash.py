"""``kill -9`` at random points of a batch, then a rerun with ``--skip-existing``: the output
folder ends complete, every file equal to the reference, with no temporary file left, and the
inputs unchanged (issue 18)."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.core.reference import correlate
from blurapp.io import TEMP_SUFFIX, read_image

FILES = 8


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def batch(inputs: Path, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "blurapp", "batch", str(inputs), "-o", str(out),
            "--kernel", "box:3", "--strategy", "cpu", "--quiet", "--jobs", "2", *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    rng = np.random.default_rng(3)
    for i in range(FILES):
        pixels = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(inputs / f"p{i}.png")
    before = digest(inputs)
    out = tmp_path / "out"
    chance = random.Random(18)
    kills = 0
    for _ in range(3):
        proc = batch(inputs, out, "--skip-existing")
        deadline = time.monotonic() + chance.uniform(0.5, 4.0)
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait(60)
        proc.stderr.close()
    # Whatever the kills left (temporaries, a partial folder), the rerun finishes it.
    proc = batch(inputs, out, "--skip-existing")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    assert sorted(p.name for p in out.iterdir()) == sorted(before), "temporaries or gaps"
    assert not any(p.name.endswith(TEMP_SUFFIX) for p in inputs.iterdir())
    assert digest(inputs) == before
    for name in before:
        image = read_image(inputs / name).pixels
        np.testing.assert_array_equal(read_image(out / name).pixels, correlate(image, "box:3"))


def test_a_rerun_removes_what_a_killed_writer_left(tmp_path: Path) -> None:
    # Deterministic: the writer dies between writing its temporary and publishing it.
    inputs = tmp_path / "in"
    inputs.mkdir()
    Image.fromarray(np.full((8, 8, 3), 7, np.uint8)).save(inputs / "p.png")
    out = tmp_path / "out"
    out.mkdir()
    killed = (
        "import os, signal, sys\n"
        "from blurapp.io import atomic_output\n"
        "with atomic_output(sys.argv[1]) as fh:\n"
        "    fh.write(b'half'); fh.flush(); os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", killed, str(out / "p.png")], timeout=60)
    assert [p.name.endswith(TEMP_SUFFIX) for p in out.iterdir()] == [True]
    proc = batch(inputs, out, "--skip-existing")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    assert [p.name for p in out.iterdir()] == ["p.png"]
