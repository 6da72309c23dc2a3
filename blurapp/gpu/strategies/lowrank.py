"""``lowrank``: a sum of k separable pairs from the SVD (blurapp.core.lowrank chooses k and
states the error).

Pair j runs a row pass (input -> tmp0) and a column pass that adds the sum of pairs 0..j-1,
read from one of two ping-pong textures (tmp1, tmp2), and writes the sum so far; the last one
writes the output. Nothing is read back in between. The 1-D passes read their weights from the
buffer (unrolled all the same), so every pair, and every kernel of the same size, shares one row
and one column pipeline instead of compiling 2k.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from blurapp.core import lowrank
from blurapp.core.planner import Estimate
from blurapp.gpu.strategies.base import PassSpec, Strategy, check_kernel_size, register
from blurapp.gpu.strategies.lines import line_features, line_pass


@register
class LowRankStrategy(Strategy):
    name = "lowrank"
    # Per pair, its two 1-D passes read their weights from a buffer and write f32
    # intermediates the next pass reads; each pair after the first also reads the running sum
    # back in its column pass, which doubles that pass on lavapipe. Fitted to one interleaved
    # run at 1024×1024 RGBA f32 (docs/PERFORMANCE.md): a 9-tap pair 53 ms, its column pass
    # 27 ms alone and 51-62 ms adding the sum; disk r=4 (k=5) 374 ms of passes, laplacian
    # (k=2) 134 ms, where direct took 316 and 46 ms (3.75 ms a tap).
    builtin: ClassVar[Mapping[str, float]] = {
        "pair": 13.0,
        "tap": 0.3,
        "looped_tap": 0.3,
        "sum": 7.0,
        "dispatch": 0.0,
    }
    fitted = ("dispatch", "looped_tap")  # fitted on their own
    calibration = (
        (512, 512, "laplacian"), (512, 512, "log:sigma=1.5"), (512, 512, "unsharp:sigma=4"),
        (256, 256, "disk:radius=8"), (128, 128, "laplacian"), (256, 256, "disk:radius=40"),
    )  # fmt: skip

    def passes(
        self, kernel, border_mode, constant, size, limits, tile=None, channels=4, tolerance=None
    ):
        check_kernel_size(kernel)
        chosen = lowrank.low_rank(kernel, tolerance)
        out: list[PassSpec] = []
        total = None
        for j, (column, row) in enumerate(zip(chosen.columns, chosen.rows, strict=True)):
            last = j == chosen.k - 1
            dst = "output" if last else ("tmp1", "tmp2")[j % 2]
            out.append(
                line_pass(
                    f"rows{j + 1}", row, border_mode, constant, size, "input", "tmp0",
                    vertical=False, bake=False,
                )
            )  # fmt: skip
            # Outside the image along y the column pass reads pair j's rows of constants.
            out.append(
                line_pass(
                    f"cols{j + 1}", column, border_mode, float(constant * row.sum()), size,
                    "tmp0", dst, vertical=True, bake=False, add=total,
                )
            )  # fmt: skip
            total = dst
        return tuple(out)

    def estimate(self, kernel, limits, size, tolerance=None):
        rows, cols = kernel.shape
        pixels = size[0] * size[1]
        chosen = lowrank.low_rank(kernel, tolerance)
        k = chosen.k
        if k <= 1 and kernel.separability.rank <= 1:
            # One pair is separable's two passes without its baked weights: never cheaper, so
            # auto leaves rank-1 kernels to separable however noisy a calibration was.
            return None
        lines = line_features((cols, rows), pixels)
        features = {
            "pair": k * pixels,
            "tap": k * (lines["row_tap"] + lines["col_tap"]),
            "looped_tap": k * (lines["row_looped_tap"] + lines["col_looped_tap"]),
            "sum": (k - 1) * pixels,
            "dispatch": 2 * k,
        }
        return Estimate(features, detail=chosen)

    def explain(self, kernel, ctx):
        chosen = ctx.estimate(self.name).detail
        rows, cols = kernel.shape
        return (
            f"rank {ctx.rank}, {ctx.size} taps: {chosen.describe()}; {chosen.k} separable "
            f"pairs do {chosen.k * (rows + cols)} multiply-adds per pixel instead of {ctx.taps}"
        )
