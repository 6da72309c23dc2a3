"""``transpose``: a row pass, a tiled transpose, the same row pass, and a transpose back
(rank-1 kernels): the column pass's strided reads become a copy's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from blurapp.core.planner import Estimate
from blurapp.gpu.strategies.base import Strategy, register
from blurapp.gpu.strategies.lines import (
    line_features,
    rank_one_factors,
    rows_pass,
    transpose_pass,
)


@register
class TransposeStrategy(Strategy):
    name = "transpose"
    # Two 1-D passes as separable's, and two copies at about a pass's cost each.
    builtin: ClassVar[Mapping[str, float]] = {
        "pass": 2.1, "row_tap": 0.075, "row_looped_tap": 0.3, "copy": 2.1, "dispatch": 0.0,
    }  # fmt: skip
    fitted = ("dispatch", "row_looped_tap")  # fitted on their own
    calibration = (
        (1024, 1024, "gaussian:sigma=1"), (1024, 1024, "gaussian:sigma=7"),
        (512, 512, "gaussian:sigma=20"), (128, 128, "box:3"), (512, 1024, "box:1x31"),
    )  # fmt: skip

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        self.check(kernel)
        column, row, col_constant = rank_one_factors(kernel, constant)
        width, height = size
        return (
            rows_pass("rows", row, border_mode, constant, size, "input", "tmp0"),
            transpose_pass("transpose", size, "tmp0", "tmp1"),
            rows_pass("rows_t", column, border_mode, col_constant, (height, width), "tmp1", "tmp2"),
            transpose_pass("transpose_back", (height, width), "tmp2", "output"),
        )

    def estimate(self, kernel, limits, size, tolerance=None):
        rows, cols = kernel.shape
        pixels = size[0] * size[1]
        # Both 1-D passes run along rows (the second on the transposed image).
        features = line_features((cols, rows), pixels, vertical=(False, False))
        features["copy"] = 2 * pixels
        features["dispatch"] += 2
        return Estimate(features)

    def explain(self, kernel, ctx):
        rows, cols = kernel.shape
        return (
            f"rank {ctx.rank}, {ctx.size} taps: two row passes of {cols} and {rows} taps and "
            "two transposes cost less than a column pass's strided reads"
        )
