"""Split an image into tiles with halos, so that any image streams through a bounded device.

A tile of outputs needs the kernel's extent around it (the halo: ``rows - 1`` rows and
``cols - 1`` columns, split around the anchor). :func:`gather` cuts a tile's window plus its
halo out of the stored pixels with the border mode's own index mapping, so the border is applied
only at the true image edges and the filter of the padded tile never reads outside it for the
outputs kept. Every output then sees exactly the values, in the same order, that an untiled run
sees: the same result bit for bit where the arithmetic per pixel is the same (the strategy's
own work does not depend on the image size).

One exception keeps that promise: in ``constant`` mode the halo on a true image edge is not
padded on the CPU but left to the filter's own border handling (a separable filter reads
``V · sum(row)`` outside the image, which padding with V and filtering in float32 would round
differently).

libvips (regions grown by the kernel's size - 1) and GEGL (the requested region grown by the
filter's padding) stream the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from blurapp.core.borders import Border, BorderMode
from blurapp.core.errors import UsageError

__all__ = [
    "MAX_TILES",
    "TILE_TEXELS",
    "WHOLE_IMAGE_TEXELS",
    "TileGrid",
    "gather",
    "plan_grid",
]

#: An image up to this many texels that fits the device runs whole (one upload, one dispatch
#: per pass: a 12 MP photo's live preview keeps its cached upload). 2**24 texels are 256 MiB as
#: an RGBA float texture.
WHOLE_IMAGE_TEXELS = 1 << 24
#: Tiles of larger images hold at most this many texels, halo included (2048², 64 MiB per RGBA
#: float texture): a separable run's input, intermediate, output and readback take about 0.2 GB.
#: A 20000×15000 RGB photo (0.9 GB in, 0.9 GB out) then peaks at 2.35 GB through ``apply``
#: (2.51 GB with tiles of 2**23 texels, no faster: docs/PERFORMANCE.md "Images of any size").
TILE_TEXELS = 1 << 22
#: The most tiles ``--max-tile-side`` may cut one image into (a minute or two of per-tile
#: overhead on lavapipe, about 1.4 ms a tile).
MAX_TILES = 1 << 16


@dataclass(frozen=True)
class TileGrid:
    """Output tiles of ``side`` × ``side`` (smaller at the right and bottom edges).

    Attributes:
        height, width: the image.
        side: output pixels per tile side; ``side >= max(height, width)`` is one whole tile.
        halo: (top, bottom, left, right) inputs each output needs around it.
    """

    height: int
    width: int
    side: int
    halo: tuple[int, int, int, int]

    @property
    def whole(self) -> bool:
        """One tile covers the image."""
        return self.side >= self.height and self.side >= self.width

    @property
    def count(self) -> int:
        return math.ceil(self.height / self.side) * math.ceil(self.width / self.side)

    def windows(self) -> Iterator[tuple[int, int, int, int]]:
        """``(y0, y1, x0, x1)`` of each output tile, row by row."""
        for y0 in range(0, self.height, self.side):
            for x0 in range(0, self.width, self.side):
                yield y0, min(y0 + self.side, self.height), x0, min(x0 + self.side, self.width)


def _halo(kernel_shape: tuple[int, int]) -> tuple[int, int, int, int]:
    rows, cols = kernel_shape
    ar, ac = rows // 2, cols // 2
    return ar, rows - 1 - ar, ac, cols - 1 - ac


def plan_grid(
    height: int,
    width: int,
    kernel_shape: tuple[int, int],
    *,
    max_side: int | None = None,
    max_texels: int | None = None,
    max_tile_side: int | None = None,
) -> TileGrid:
    """The tiles an image of ``height`` × ``width`` runs in.

    Arguments:
        height, width: the image.
        kernel_shape: ``(rows, cols)`` of the kernel (the halo).
        max_side: the largest texture side the device takes (``None``: no limit).
        max_texels: the most texels one tile may hold, halo included (``None``: no limit),
            from the device's largest buffer and a memory budget.
        max_tile_side: a user's limit on a tile's side, halo included (``--max-tile-side``):
            smaller tiles for small GPUs and for tests. Forces tiling even where the image
            would fit whole.

    Returns:
        The grid; :attr:`TileGrid.whole` when one tile covers the image.

    Raises:
        UsageError: ``max_tile_side`` leaves no room for a single output besides the halo.
    """
    halo = _halo(kernel_shape)
    pad_y, pad_x = halo[0] + halo[1], halo[2] + halo[3]
    if max_tile_side is not None:
        if isinstance(max_tile_side, bool) or not isinstance(max_tile_side, (int, np.integer)):
            raise UsageError(
                f"max_tile_side must be a whole number of pixels, not {max_tile_side!r}"
            )
        side = int(max_tile_side) - max(pad_y, pad_x)
        if side < 1:
            rows, cols = kernel_shape
            raise UsageError(
                f"--max-tile-side {max_tile_side} is too small for a {cols}×{rows} kernel: a "
                f"tile needs {max(pad_y, pad_x) + 1} pixels per side or more"
            )
        grid = TileGrid(height, width, side, halo)
        if grid.count > MAX_TILES:
            # Each tile costs a run's fixed overhead (about a millisecond or more): millions of
            # them would take hours for an image a few larger tiles do in seconds.
            enough = math.isqrt(height * width // MAX_TILES) + 1 + max(pad_y, pad_x)
            raise UsageError(
                f"--max-tile-side {max_tile_side} cuts this {width}×{height} image into "
                f"{grid.count} tiles (at most {MAX_TILES}): use --max-tile-side {enough} or more"
            )
        return grid
    fits = (max_side is None or (height <= max_side and width <= max_side)) and (
        max_texels is None or height * width <= max_texels
    )
    if fits:
        return TileGrid(height, width, max(height, width), halo)
    budget = min(v for v in (max_texels, TILE_TEXELS) if v is not None)
    padded = math.isqrt(budget)
    if max_side is not None:
        padded = min(padded, max_side)
    side = padded - max(pad_y, pad_x)
    if side < 1:
        rows, cols = kernel_shape
        raise UsageError(
            f"a {cols}×{rows} kernel does not fit this device's largest tile ({padded} pixels "
            "per side): use a smaller kernel or --strategy cpu"
        )
    return TileGrid(height, width, side, halo)


def halo_indices(
    start: int,
    stop: int,
    n: int,
    before: int,
    after: int,
    border: Border,
    *,
    cut_constant: bool = True,
) -> tuple[np.ndarray, int]:
    """The input indices along one axis that the outputs ``start:stop`` read: the one halo
    index mapping of the tile loop, :mod:`blurapp.dask` and the window's crops.

    Arguments:
        start, stop: the outputs along an axis of length ``n``.
        before, after: the kernel's extent before and after its anchor along that axis
            (``rows // 2`` and ``rows - 1 - rows // 2`` for the rows).
        border: the border mode; its mapping handles indices far outside (kernels larger
            than the image).
        cut_constant: in ``constant`` mode, cut the halo at the true edges (the filter's own
            border handling supplies the constant there, see the module docstring); ``False``
            keeps every index, ``-1`` marking those outside the image.

    Returns:
        ``(indices, offset)``: indices into ``[0, n)`` (or ``-1``) and where output ``start``
        lies in them.
    """
    idx = np.arange(start - before, stop + after)
    if border.mode is BorderMode.CONSTANT and cut_constant:
        idx = idx[(idx >= 0) & (idx < n)]
        return idx, start - int(idx[0])
    return border.map_indices(idx, n), before


def gather(
    pixels: np.ndarray,
    grid: TileGrid,
    window: tuple[int, int, int, int],
    border: Border,
) -> tuple[np.ndarray, tuple[int, int]]:
    """The pixels a tile's filter reads: its window plus the halo, as ``border`` extends them.

    Arguments:
        pixels: the whole image (H×W or H×W×C, any dtype; stored pixels are cheapest): an
            array, or an array-like with ``shape``, ``dtype`` and 2-D slicing (a memory-mapped
            or lazily decoded file), of which only the tile's own runs of pixels are read.
        grid: the tile grid.
        window: ``(y0, y1, x0, x1)`` of the output tile.
        border: the border mode.

    Returns:
        ``(padded, (oy, ox))``: the padded tile (a copy) and where the window's first output
        lies in it. Filter ``padded`` with ``border`` and keep
        ``[oy : oy + y1 - y0, ox : ox + x1 - x0]``.
    """
    y0, y1, x0, x1 = window
    top, bottom, left, right = grid.halo
    # An edge tile smaller than the others computes a full tile that ends where it ends (its
    # extra outputs are the neighbour's, computed again and dropped): every tile then has the
    # same shape, and the device keeps one set of textures for all of them.
    cy0 = max(0, y1 - grid.side) if y1 - y0 < grid.side else y0
    cx0 = max(0, x1 - grid.side) if x1 - x0 < grid.side else x0
    rows, oy = halo_indices(cy0, y1, grid.height, top, bottom, border)
    cols, ox = halo_indices(cx0, x1, grid.width, left, right, border)
    origin = (y0 - cy0 + oy, x0 - cx0 + ox)
    whole = rows.size == grid.height and cols.size == grid.width
    if whole and _is_range(rows) and _is_range(cols):
        return np.asarray(pixels[:, :]), origin  # the whole image as it is
    if isinstance(pixels, np.ndarray) and not isinstance(pixels, np.memmap):
        return pixels[rows[:, None], cols[None, :]], origin
    return _take_runs(pixels, rows, cols), origin


def _is_range(idx: np.ndarray) -> bool:
    return bool(idx[0] == 0 and np.all(np.diff(idx) == 1))


def _take_runs(pixels: Any, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``pixels[rows][:, cols]`` for an array-like that only slices (a memory-mapped or lazily
    decoded file): each run of consecutive rows and columns is read once, as one slice, so
    that only the tile and its halo are read (a mirrored edge reads its few rows twice).

    Runs of ascending indices are read as slices; a descending run (a mirrored edge) is read
    as its ascending slice and flipped.
    """
    out = np.empty((rows.size, cols.size, *pixels.shape[2:]), np.dtype(pixels.dtype))
    for ri, r0, r1 in _runs_both(rows):
        for ci, c0, c1 in _runs_both(cols):
            block = np.asarray(pixels[min(r0, r1) : max(r0, r1) + 1, min(c0, c1) : max(c0, c1) + 1])
            if r1 < r0:
                block = block[::-1]
            if c1 < c0:
                block = block[:, ::-1]
            out[ri : ri + block.shape[0], ci : ci + block.shape[1]] = block
    return out


def _runs_both(idx: np.ndarray) -> list[tuple[int, int, int]]:
    """``idx`` as runs of indices stepping by +1 or by -1: ``(position, first, last)``."""
    found: list[tuple[int, int, int]] = []
    start = 0
    while start < idx.size:
        end = start + 1
        if end < idx.size and abs(int(idx[end]) - int(idx[start])) == 1:
            step = int(idx[end]) - int(idx[start])
            while end < idx.size and int(idx[end]) - int(idx[end - 1]) == step:
                end += 1
        found.append((start, int(idx[start]), int(idx[end - 1])))
        start = end
    return found
