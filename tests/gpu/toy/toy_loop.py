"""``toy``: a newcomer's strategy as one file of blurapp/gpu/strategies would be (the test in
tests/gpu/test_toy_strategy.py loads it from here): one invocation per output pixel, the
kernel's rows and columns both loops, the weights from the buffer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from blurapp.core.planner import Estimate
from blurapp.gpu.strategies.base import PassSpec, Strategy, check_kernel_size, groups, register


@register
class ToyLoopStrategy(Strategy):
    name = "toy"
    # So cheap that the planner picks it whenever it may (the test asks auto to).
    builtin: ClassVar[Mapping[str, float]] = {"pixel": 0.001}
    calibration = ((64, 64, "box:3"),)

    def passes(self, kernel, border_mode, constant, size, limits, tile=None, channels=4):
        rows, cols = check_kernel_size(kernel)
        width, height = size
        return (
            PassSpec(
                name="toy",
                shader="toy_loop",
                template=(),
                constants=(("KH", rows), ("KW", cols), ("BORDER_MODE", border_mode)),
                src="input",
                dst="output",
                size=size,
                out_size=size,
                workgroups=(groups(width, 8), groups(height, 8)),
                weights=np.ascontiguousarray(kernel.weights, dtype=np.float32).ravel(),
                constant=constant,
                bytes_modelled=width * height * (rows * cols + 1) * 16,
            ),
        )

    def estimate(self, kernel, limits, size, tolerance=None):
        return Estimate({"pixel": size[0] * size[1]})
