"""A long direct or tiled pass runs in bands of rows, one submission each, and can be stopped
between them (issue 18: Ctrl-C during a long GPU job took effect 168 s later)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from blurapp.core.borders import BORDER_MODES
from blurapp.core.checks import checking
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.pipeline import filter_pixels


@pytest.fixture
def small_bands(fresh_filter):
    fresh_filter.BAND_MACS = 2000  # a few workgroup rows per band
    yield fresh_filter
    fresh_filter.BAND_MACS = None


@pytest.mark.parametrize("border", [*BORDER_MODES, "constant=0.3"])
@pytest.mark.parametrize("strategy", ["direct", "tiled"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (37, 29, 3), (70, 9, 4)])
def test_banded_passes_equal_one_submission(small_bands, border, strategy, shape) -> None:
    f = small_bands
    rng = np.random.default_rng(sum(shape))
    x = rng.random(shape, dtype=np.float32)
    x[shape[0] // 2, shape[1] // 2, 0] = np.nan  # NaN stays where the reference puts it
    k = Kernel.parse("matrix:3x5:1,0,2,0,1,0,3,0,1,2,1,0,2,0,1")
    banded, _ = f.run(x, k, border, strategy, tile=8 if strategy == "tiled" else None)
    bands = f.stats["bands"]
    f.BAND_MACS = 1 << 40
    whole, _ = f.run(x, k, border, strategy, tile=8 if strategy == "tiled" else None)
    np.testing.assert_array_equal(banded, whole)
    ref = correlate_float(x.astype(np.float64), k, border)
    np.testing.assert_array_equal(np.isnan(banded), np.isnan(ref))
    np.testing.assert_allclose(banded, ref, atol=1e-5)
    if shape[0] > 16:
        assert bands > 0  # it did run in bands


def test_a_check_stops_a_run_between_bands_and_the_next_run_is_right(small_bands) -> None:
    f = small_bands
    x = np.random.default_rng(1).random((64, 64, 3), dtype=np.float32)
    k = Kernel.parse("box:7")
    calls = []

    class StopError(Exception):
        pass

    def check() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise StopError

    with checking(check), pytest.raises(StopError):
        f.run(x, k, "clamp", "direct")
    assert len(calls) == 3
    out, timing = f.run(x, k, "clamp", "direct")
    np.testing.assert_allclose(out, correlate_float(x.astype(np.float64), k, "clamp"), atol=1e-5)
    assert timing.passes[0].ms > 0


def test_the_band_times_add_up_in_the_timing(gpu, monkeypatch) -> None:
    from blurapp.gpu.engine import GpuFilter, get_filter

    monkeypatch.setattr(GpuFilter, "BAND_MACS", 2000)
    before = get_filter().stats["bands"]
    x = np.random.default_rng(2).random((80, 80, 1), dtype=np.float32)
    out = filter_pixels(x, FilterSpec.create("box:9", strategy="direct"))
    assert get_filter().stats["bands"] - before >= 8
    assert len(out.timing.passes) == 1 and out.timing.passes[0].ms > 0


def test_ctrl_c_during_a_long_direct_run_stops_within_a_band(tmp_path, gpu) -> None:
    """A run of many seconds on lavapipe (a 2-D kernel of 101×101 taps on 1 MP, direct): Ctrl-C
    one second in ends the command within a few seconds, exit 130, no output file."""
    src = tmp_path / "in.png"
    from PIL import Image

    Image.fromarray(np.random.default_rng(3).integers(0, 256, (1024, 1024, 3), np.uint8)).save(src)
    out = tmp_path / "out.png"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "blurapp", "apply", str(src), "-o", str(out),
         "--kernel", "disk:radius=50", "--strategy", "direct"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    time.sleep(4.0)  # start-up, decode, upload, and into the passes
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 130, err
    assert took < 10, f"Ctrl-C took {took:.1f} s"
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name not in ("in.png",)]
