"""``tiled``: a T×T output tile with its halo in workgroup memory, a block of outputs per
invocation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from blurapp.core.errors import StrategyError
from blurapp.core.planner import Estimate, choose_tile, halo_texels, tile_block
from blurapp.gpu.strategies.base import (
    TEXEL_BYTES,
    PassSpec,
    Strategy,
    check_kernel_size,
    groups,
    has_zero,
    register,
)


@register
class TiledStrategy(Strategy):
    name = "tiled"
    # Bench, 1024×1024: 67, 95, 153, 225, 324 ms at 3 to 81 taps: the cooperative halo load,
    # the barrier and the block's stores cost 10 direct taps, then a workgroup-memory read and
    # a multiply-add half a direct tap. The scalar halo is loaded and synchronised once per
    # channel, an overhead per tile that small tiles amortise badly (256×256: 49×49 at T=32
    # scalar 0.78 × direct's time, 65×65 at T=16 1.19 ×): 0.5 + 10 / T per tap.
    builtin: ClassVar[Mapping[str, float]] = {
        "pixel": 10.0, "tap": 0.5, "scalar_tap": 0.5, "scalar_tile_tap": 10.0, "pass": 0.0,
    }  # fmt: skip
    fitted = ("pass",)  # calibration fits these on their own (blurapp.gpu.calibration)
    calibration = (
        (512, 512, "laplacian"), (512, 512, "disk:radius=4"), (256, 256, "disk:radius=12"),
        (256, 256, "disk:radius=24"), (64, 64, "disk:radius=2"),
    )  # fmt: skip

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        rows, cols = check_kernel_size(kernel)
        width, height = size
        choice = choose_tile((rows, cols), limits, tile)
        t = choice.tile
        bh, bw = tile_block(t)
        halo_len = (t + cols - 1) * (t + rows - 1)
        tiles = groups(width, t) * groups(height, t)
        # The scalar layout reloads the halo once per channel (a whole texel each time).
        loads = halo_len * (1 if choice.layout == "vec4" else channels)
        # BLOCK_H - 1 zero rows above and below: output row o of a block reads kernel row r - o.
        pad = np.zeros((bh - 1) * cols, dtype=np.float32)
        weights = np.concatenate([pad, np.asarray(kernel.weights, np.float32).ravel(), pad])
        return (
            PassSpec(
                name="tiled",
                shader="halo_tiled",
                template=(
                    ("tile", t),
                    ("kw", cols),
                    ("kh", rows),
                    ("block_w", bw),
                    ("block_h", bh),
                    ("layout", choice.layout),
                    ("skip_zero", has_zero(kernel)),
                ),
                constants=(("BORDER_MODE", border_mode),),
                src="input",
                dst="output",
                size=size,
                out_size=size,
                workgroups=(groups(width, t), groups(height, t)),
                weights=weights,
                constant=constant,
                bytes_modelled=(tiles * loads + width * height) * TEXEL_BYTES,
            ),
        )

    def estimate(self, kernel, limits, size, tolerance=None):
        rows, cols = kernel.shape
        try:
            choice = choose_tile((rows, cols), limits)
        except StrategyError:
            return None
        pixels = size[0] * size[1]
        taps = pixels * rows * cols
        t = choice.tile
        # No feature of its own for the halo's texels: they grow with the kernel as its taps
        # do, and a fit of a few runs would trade one for the other (one calibration here put
        # all of a 21x21 kernel's cost in the halo and predicted a tenth of its time).
        features = {"pixel": pixels, "pass": 1}
        if choice.layout == "scalar":
            features.update(scalar_tap=taps, scalar_tile_tap=taps / t)
        else:
            features["tap"] = taps
        return Estimate(features, tile=t, detail=choice)

    def explain(self, kernel, ctx):
        est = ctx.estimate(self.name)
        t = est.tile
        per_px = halo_texels(t, kernel.shape) / t**2
        if ctx.rank <= 1:
            return (
                f"rank {ctx.rank}, {ctx.size} taps: tiled T={t} reads {per_px:.2f} texels per "
                "pixel and costs less here than two 1-D passes"
            )
        return (
            f"rank {ctx.rank}, so not separable; tiled T={t} reads {per_px:.2f} texels per "
            f"pixel from global memory instead of {ctx.taps}"
        )
