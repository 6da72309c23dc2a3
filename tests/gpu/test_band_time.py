"""A long direct or tiled pass is cut into bands sized by time (issue 24 item 4): each band
holds about BAND_SECONDS of work at the multiply-add rate this adapter measured."""

from __future__ import annotations

import math

import numpy as np

from blurapp.core.borders import Border
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.gpu import engine as gpu_engine
from blurapp.gpu.strategies import get_strategy


def test_bands_follow_the_measured_rate(fresh_filter) -> None:
    f = fresh_filter
    assert f.BAND_MACS is None
    guess = f.mac_rate("direct")
    assert guess == (gpu_engine._RATE_SOFTWARE if f.context.is_software else gpu_engine._RATE_GPU)
    k = Kernel.parse("disk:radius=12")  # 25×25 taps
    x = np.random.default_rng(2).random((240, 200, 3), dtype=np.float32)
    y, timing = f.run(x, k, "mirror", "direct")
    np.testing.assert_allclose(y, correlate_float(x, k, Border.parse("mirror")), atol=2e-5)
    ms = timing.passes[0].ms
    macs = 240 * 200 * 625
    if ms >= gpu_engine._RATE_MIN_MS:  # long enough to measure: the rate is what it did
        assert f.mac_rate("direct") == macs / (ms / 1e3)
    rate = f.mac_rate("direct")
    (p,) = get_strategy("direct").passes(k, 0, 0.0, (200, 240), f.context.limits)
    bands = f._bands(p)
    per_row = 200 * 8 * 625  # the multiply-adds of one workgroup row: 8 image rows
    budget = rate * gpu_engine.BAND_SECONDS
    rows_per_band = max(1, int(budget) * p.workgroups[1] // macs)
    assert len(bands) == math.ceil(p.workgroups[1] / min(rows_per_band, p.workgroups[1]))
    # No band holds more than the budget's work (beyond one workgroup row at the least).
    for _, rows in bands:
        assert rows == 1 or rows * per_row <= budget * 1.0001
    # The module-level rate is the process filter's (what the window sizes tiles from).
    assert gpu_engine.mac_rate("tiled") > 0
