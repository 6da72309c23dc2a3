"""``direct``: one invocation per output pixel, every tap read from global memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from blurapp.core.planner import Estimate
from blurapp.gpu.strategies.base import (
    TEXEL_BYTES,
    PassSpec,
    Strategy,
    check_kernel_size,
    groups,
    has_zero,
    register,
)

WORKGROUP = 8  # 8×8: a multiple of lavapipe's 8 SIMD lanes and of a GPU's 32-wide warp


@register
class DirectStrategy(Strategy):
    name = "direct"
    # Bench, 1024×1024 RGBA f32 on lavapipe: 39 ms at 3 taps, 73 at 9, 150 at 25, 306 at 49,
    # 620 at 81 (~6 ms a tap, the built-in unit): indexing, border mapping and the store cost
    # about 3 taps.
    builtin: ClassVar[Mapping[str, float]] = {"pixel": 3.0, "tap": 1.0, "pass": 0.0}
    fitted = ("pass",)  # calibration fits these on their own (blurapp.gpu.calibration)
    calibration = (
        (512, 512, "box:3"), (512, 512, "disk:radius=4"), (256, 256, "disk:radius=12"),
        (64, 64, "box:3"), (1024, 512, "laplacian"),
    )  # fmt: skip

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        rows, cols = check_kernel_size(kernel)
        width, height = size
        wg = WORKGROUP
        pixels = width * height
        return (
            PassSpec(
                name="direct",
                shader="direct",
                # The kernel's columns are unrolled in the shader: its width shapes the code.
                template=(
                    ("wg_x", wg),
                    ("wg_y", wg),
                    ("kw", cols),
                    ("skip_zero", has_zero(kernel)),
                ),
                constants=(("KH", rows), ("BORDER_MODE", border_mode)),
                src="input",
                dst="output",
                size=size,
                out_size=size,
                workgroups=(groups(width, wg), groups(height, wg)),
                weights=np.ascontiguousarray(kernel.weights, dtype=np.float32).ravel(),
                constant=constant,
                bytes_modelled=pixels * (rows * cols + 1) * TEXEL_BYTES,
            ),
        )

    def estimate(self, kernel, limits, size, tolerance=None):
        rows, cols = kernel.shape
        pixels = size[0] * size[1]
        return Estimate({"pixel": pixels, "tap": pixels * rows * cols, "pass": 1})

    def explain(self, kernel, ctx):
        if ctx.taps == 1:
            return "1×1 kernel: one tap per pixel, nothing to share; direct"
        head = f"rank {ctx.rank}, {ctx.size} taps"
        if ctx.registered("tiled"):
            tiled = ctx.estimate("tiled")
            if tiled is None:
                return (
                    f"{head}: the halo does not fit workgroup memory "
                    f"({ctx.limits.workgroup_storage} bytes); direct reads every tap from "
                    "global memory"
                )
            if tiled.detail.layout == "scalar":
                t = tiled.tile
                return (
                    f"{head}: only a {t}×{t} tile with a one-channel halo fits workgroup "
                    "memory, and reloading it per channel costs more than direct's global reads"
                )
            return (
                f"{head}: too few taps for tiled's halo load and barrier to pay off; direct "
                f"reads its {ctx.taps} taps from global memory"
            )
        return super().explain(kernel, ctx)
