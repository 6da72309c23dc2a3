"""Tiles with halos: the grid, and the gather that applies the border only at true edges."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.core.borders import Border
from blurapp.core.errors import UsageError
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.core.tiling import TILE_TEXELS, gather, plan_grid

BORDERS = ("clamp", "zero", "constant=0.5", "reflect", "mirror", "wrap")


def test_grid_covers_the_image_once() -> None:
    grid = plan_grid(45, 70, (5, 3), max_tile_side=20)
    assert grid.halo == (2, 2, 1, 1) and grid.side == 16 and not grid.whole
    seen = np.zeros((45, 70), int)
    for y0, y1, x0, x1 in grid.windows():
        seen[y0:y1, x0:x1] += 1
    assert (seen == 1).all() and grid.count == len(list(grid.windows())) == 3 * 5


def test_grid_follows_the_device() -> None:
    assert plan_grid(100, 200, (3, 3)).whole
    assert plan_grid(100, 200, (3, 3), max_side=256, max_texels=1 << 20).whole
    over = plan_grid(100, 257, (3, 3), max_side=256)
    assert not over.whole and over.side + 2 <= 256
    big = plan_grid(20000, 15000, (25, 25), max_side=16384, max_texels=1 << 24)
    assert (big.side + 24) ** 2 <= TILE_TEXELS


def test_too_small_a_tile_is_one_line() -> None:
    with pytest.raises(UsageError, match="too small for a 9×9 kernel"):
        plan_grid(50, 50, (9, 9), max_tile_side=8)


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize(
    ("shape", "kernel"),
    [((23, 31, 3), "box:5x3"), ((1, 1, 1), "gaussian:sigma=1"), ((7, 5, 2), "matrix:4x6:"
     + ",".join(str(v) for v in range(24))), ((9, 13, 1), "disk:radius=7")],
)  # fmt: skip
def test_filtering_the_gathered_tiles_is_filtering_the_image(border, shape, kernel) -> None:
    """Each tile's interior, filtered from its gathered pixels with the same border, equals
    the whole image's filter there: even for kernels larger than the image."""
    x = np.random.default_rng(sum(shape)).random(shape)
    k, b = Kernel.parse(kernel), Border.parse(border)
    whole = correlate_float(x, k, b)
    grid = plan_grid(shape[0], shape[1], k.shape, max_tile_side=max(k.shape) + 3)
    got = np.full(whole.shape, np.nan)
    for window in grid.windows():
        y0, y1, x0, x1 = window
        padded, (oy, ox) = gather(x, grid, window, b)
        part = correlate_float(padded, k, b)
        got[y0:y1, x0:x1] = part[oy : oy + y1 - y0, ox : ox + x1 - x0]
    np.testing.assert_allclose(got, whole, rtol=0, atol=1e-12)
