"""``fft``: FFT convolution in overlap-save blocks (power-of-two sides up to 2048), the image's
transforms on the GPU; the block plans, shaders' passes and the run are in blurapp.gpu.fft.

It runs itself (:meth:`FftStrategy.run`: complex buffers and batches of blocks, not texture
slots, through the executor's public API); :meth:`FftStrategy.passes` describes its four passes
for timings and the byte model.

Float32 error: max |error| ≤ 2^-24 · log2(NR·NC) · max|x| · ||k||_1, max|x| over what the blocks
hold (a constant border's value included); measured at 0.15 to 0.4 of that against the float64
reference (docs/PERFORMANCE.md has the table), tested on every border mode. At the largest
block, 2048², that is 1.3e-6 · max|x| · ||k||_1: rounding in a transform grows with log2 of its
length, not with the kernel's size. A transform spreads a NaN or Inf over its whole block:
blurapp.engine runs fft on an image's finite values and places the non-finite outputs exactly
(:mod:`blurapp.gpu.nonfinite`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from blurapp.core.planner import Estimate
from blurapp.gpu.strategies.base import Strategy, check_kernel_size, register

#: Channels the planner assumes (RGBA): two real signals share one complex transform.
PLANNED_CHANNELS = 4


@register
class FftStrategy(Strategy):
    name = "fft"
    # Per element of a block's transform: a + b·log2(side), the built-in guess (fitted once on
    # lavapipe), times the blocks' overlap; calibration also fits the column pass's strided
    # lines past 256 (``wide``), the crop's store per pixel and each batch's dispatches.
    builtin: ClassVar[Mapping[str, float]] = {
        "element": 35.0,
        "element_log2": 4.0,
        "wide": 0.0,
        "pixel": 0.0,
        "batch": 0.0,
    }
    fitted = ("batch", "pixel")  # fitted on their own
    calibration = (
        (512, 512, "disk:radius=8"), (1024, 1024, "disk:radius=20"),
        (256, 256, "disk:radius=40"), (1024, 1024, "box:3"), (64, 64, "box:3"),
        (2048, 512, "disk:radius=100"),
    )  # fmt: skip

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        from blurapp.gpu import fft

        check_kernel_size(kernel)
        return fft.passes(kernel, border_mode, constant, size, limits, channels)

    def run(self, engine, x, kernel, border, passes, **options):
        """Filter ``x`` with ``passes`` on ``engine`` (a GpuFilter); see blurapp.gpu.fft.run."""
        from blurapp.gpu import fft

        return fft.run(engine, x, kernel, border, passes, **options)

    def estimate(self, kernel, limits, size, tolerance=None):
        from blurapp.gpu import fft

        width, height = size
        plan = fft.plan_blocks(kernel.shape, (height, width), PLANNED_CHANNELS, limits)
        nr, nc = plan.block
        # Elements per channel, as the built-in a + b·log2 was fitted (a block's two real
        # signals per complex transform are inside the coefficients).
        elements = plan.blocks * nr * nc
        log2 = (math.log2(nr) + math.log2(nc)) / 2
        features = {
            "element": elements,
            "element_log2": elements * log2,
            "wide": elements * max(0.0, math.log2(nr) - 8),
            "pixel": width * height,
            "batch": len(plan.batches()),
        }
        return Estimate(features, detail=plan)

    def explain(self, kernel, ctx):
        plan = ctx.estimate(self.name).detail
        nr, nc = plan.block
        rival = ctx.rival()
        mine = ctx.per_pixel(self.name)
        head = f"rank {ctx.rank}, {ctx.size} taps: fft's {nc}×{nr} transforms"
        against = f", {rival} {ctx.per_pixel(rival):.0f}" if rival else ""
        if ctx.unit == "direct taps":
            return f"{head} cost about as much per pixel as {mine:.0f} direct taps{against}"
        return f"{head} cost {mine:.3g} ns per pixel{against}"
