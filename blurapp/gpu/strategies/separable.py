"""``separable``: a row pass then a column pass, each invocation filtering a short run of
outputs (rank-1 kernels)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from blurapp.core.planner import Estimate, line_block
from blurapp.gpu.strategies.base import Strategy, register
from blurapp.gpu.strategies.lines import cols_pass, line_features, rank_one_factors, rows_pass


@register
class SeparableStrategy(Strategy):
    name = "separable"
    # Bench, 1024×1024: 28-40 ms for 3×1 up to 17×17: each 1-D pass costs a little more than
    # a copy (2.1 direct taps) and then almost nothing per unrolled tap. Past 65 taps a pass
    # loops over its weights; 0.3 a tap is the built-in guess, which calibration replaces.
    builtin: ClassVar[Mapping[str, float]] = {
        "pass": 2.1, "row_tap": 0.075, "col_tap": 0.075, "row_looped_tap": 0.3,
        "col_looped_tap": 0.3, "dispatch": 0.0,
    }  # fmt: skip
    fitted = ("dispatch", "row_looped_tap", "col_looped_tap")  # fitted on their own
    calibration = (
        (1024, 1024, "gaussian:sigma=1"), (1024, 1024, "gaussian:sigma=7"),
        (512, 512, "gaussian:sigma=20"), (128, 128, "box:3"), (1024, 512, "box:31x1"),
        (512, 1024, "box:1x31"),
    )  # fmt: skip

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        self.check(kernel)
        column, row, col_constant = rank_one_factors(kernel, constant)
        return (
            rows_pass("rows", row, border_mode, constant, size, "input", "tmp0"),
            cols_pass(column, border_mode, col_constant, size),
        )

    def estimate(self, kernel, limits, size, tolerance=None):
        rows, cols = kernel.shape
        return Estimate(line_features((cols, rows), size[0] * size[1]))

    def explain(self, kernel, ctx):
        rows, cols = kernel.shape
        if rows == 1 or cols == 1:
            n = max(rows, cols)
            block = line_block(n)
            reads = (block + n - 1) / block
            if block == 1:
                return (
                    f"1-D {ctx.size} kernel: separable's one looped pass reads its {n} taps per "
                    "pixel, one 1-D pass instead of direct's 2-D one"
                )
            return (
                f"1-D {ctx.size} kernel: separable's pass reads {reads:.2f} texels per pixel "
                f"(a run of {block} outputs shares its loads) instead of direct's {ctx.taps}"
            )
        sep_taps = rows + cols
        if sep_taps < ctx.taps:
            why = f"separable does {sep_taps} multiply-adds per pixel instead of {ctx.taps}"
        else:
            why = f"two 1-D passes of {cols} and {rows} taps cost less than one 2-D pass"
        return f"rank {ctx.rank}, {ctx.size} taps: {why}"
