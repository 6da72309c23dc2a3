"""Filter a Dask array lazily, chunk by chunk, each chunk on its worker's GPU: :func:`correlate`.

This is ``map_overlap(depth=kernel extent, boundary="none")`` as dask-image's
``ndfilters.convolve`` does it, with blurapp's border applied at the true image edges: each
output chunk becomes one task that gathers its chunk plus the halo from the input chunks it
touches, extends it across the true image edges with the border mode's own index mapping
(:meth:`blurapp.core.borders.Border.map_indices`, the same one :func:`blurapp.core.tiling.gather`
uses), runs the padded block through :func:`blurapp.pipeline.filter_pixels` and keeps its
interior. A plain ``map_overlap`` cannot do it: dask's ``reflect`` and ``periodic`` boundaries
are not blurapp's modes, and a ``wrap`` or ``reflect`` halo, or a kernel larger than a chunk,
needs pixels from chunks that are not neighbours.

Each chunk's filter reads exactly the values, in the same order, that a whole-image run reads,
so the result equals :func:`blurapp.filter_image` on the whole array, bit for bit where the
large-images promise holds (``direct``, ``tiled``, ``separable``, ``transpose``, ``cpu``).
Tasks carry the filter as its command line (:meth:`FilterSpec.to_argv`): no GPU object leaves
the process that made it, and each worker creates its own device on its first chunk
(``BLURAPP_ADAPTER`` picks it).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as err:  # the optional extra
    raise ImportError(
        "blurapp.dask needs Dask: pip install 'blurapp[dask]' (or 'dask[array]')"
    ) from err

from blurapp.core.borders import Border
from blurapp.core.errors import ArrayError, ArrayTypeError, UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import MAX_CHANNELS, SUPPORTED_DTYPES, finite_bounds, from_float
from blurapp.core.tiling import halo_indices

__all__ = ["correlate", "halo_indices"]


@dataclass(frozen=True, eq=False)
class _Block:
    """What one output chunk's task needs besides its input pieces (plain, picklable data)."""

    rows: np.ndarray  # input row indices of the padded block
    cols: np.ndarray
    offsets: tuple[tuple[int, int], ...]  # each input piece's first (row, col) in the image
    origin: tuple[int, int]  # the chunk's first output in the padded block
    size: tuple[int, int]  # the chunk's outputs (rows, cols)
    argv: tuple[str, ...]  # the FilterSpec as a command line
    dtype: str  # the output's pixel type
    max_tile_side: int | None


@functools.lru_cache(maxsize=16)
def _spec(argv: tuple[str, ...]) -> FilterSpec:
    return FilterSpec.from_argv(argv)


def _gather(pieces: Sequence[np.ndarray], block: _Block) -> np.ndarray:
    """The padded block from the input pieces it touches (fancy indexing handles the reversed
    and repeated runs that reflect, mirror and wrap make)."""
    rows, cols = block.rows, block.cols
    first = pieces[0]
    padded = np.empty((rows.size, cols.size, *first.shape[2:]), first.dtype)
    for piece, (r0, c0) in zip(pieces, block.offsets, strict=True):
        rsel = np.flatnonzero((rows >= r0) & (rows < r0 + piece.shape[0]))
        csel = np.flatnonzero((cols >= c0) & (cols < c0 + piece.shape[1]))
        if rsel.size and csel.size:
            padded[np.ix_(rsel, csel)] = np.asarray(piece)[np.ix_(rows[rsel] - r0, cols[csel] - c0)]
    return padded


def _filtered(pieces: Sequence[np.ndarray], block: _Block, dtype: np.dtype) -> np.ndarray:
    from blurapp.pipeline import filter_pixels

    padded = _gather(pieces, block)
    result = filter_pixels(
        padded, _spec(block.argv), dtype=dtype, max_tile_side=block.max_tile_side
    )
    (oy, ox), (h, w) = block.origin, block.size
    return result.image[oy : oy + h, ox : ox + w]


def _filter_block(pieces: Sequence[np.ndarray], block: _Block) -> np.ndarray:
    return _filtered(pieces, block, np.dtype(block.dtype))


def _block_bounds(pieces: Sequence[np.ndarray], block: _Block) -> tuple[float, float] | None:
    # float64 holds the filter's floats (float32 on the GPU, float64 on the CPU) exactly.
    return finite_bounds(_filtered(pieces, block, np.dtype(np.float64)))


def _combine_bounds(found: Sequence[tuple[float, float] | None]) -> tuple[float, float] | None:
    known = [b for b in found if b is not None]
    if not known:
        return None
    return min(b[0] for b in known), max(b[1] for b in known)


def _normalize_block(
    pieces: Sequence[np.ndarray], block: _Block, bounds: tuple[float, float] | None
) -> np.ndarray:
    y = _filtered(pieces, block, np.dtype(np.float64))
    return from_float(y, block.dtype, range_mode="normalize", squeeze=False, bounds=bounds)


def _check_dtype(dtype: Any) -> None:
    if dtype is None or np.dtype(dtype) not in SUPPORTED_DTYPES:
        names = ", ".join(d.name for d in SUPPORTED_DTYPES)
        shown = "unknown" if dtype is None else np.dtype(dtype).name
        raise ArrayTypeError(f"unsupported pixel type {shown}; supported: {names}")


def _as_dask(image: Any) -> da.Array:
    """``image`` as a dask array, its pixel type checked first: dask itself cannot even chunk
    an object array (NotImplementedError), nor should a list of pixels be guessed at."""
    if isinstance(image, da.Array):
        return image
    dtype = getattr(image, "dtype", None)
    if dtype is None or not hasattr(image, "shape"):
        raise ArrayTypeError(
            f"image must be a dask or numpy array (H×W or H×W×C), not {type(image).__name__}"
        )
    _check_dtype(dtype)
    return da.asarray(image)


def _check(image: da.Array) -> da.Array:
    shape = image.shape
    if image.ndim not in (2, 3):
        raise ArrayError(f"image must be H×W or H×W×C, got {image.ndim} dimension(s) {shape}")
    if any(np.isnan(s) for s in shape):
        raise ArrayError("the image's shape must be known (compute_chunk_sizes() first)")
    if shape[0] == 0 or shape[1] == 0:
        raise ArrayError(f"image is empty (shape {shape})")
    if image.ndim == 3 and not 1 <= shape[2] <= MAX_CHANNELS:
        raise ArrayError(f"image has {shape[2]} channels; 1 to {MAX_CHANNELS} are supported")
    _check_dtype(image.dtype)
    if image.ndim == 3 and len(image.chunks[2]) > 1:
        # A pixel's channels are filtered together (alpha, linear light): one chunk across them.
        image = image.rechunk({2: -1})
    return image


def _starts(chunks: Sequence[int]) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(chunks)))


def correlate(
    image: Any,
    kernel: Kernel | str | FilterSpec,
    border: Border | str = "clamp",
    strategy: str = "auto",
    *,
    max_tile_side: int | None = None,
    **options: Any,
) -> da.Array:
    """Filter a Dask array lazily, as :func:`blurapp.filter_image` filters a numpy one.

    Arguments:
        image: H×W or H×W×C (C ≤ 4) dask array of uint8, uint16, float32 or float64, chunked
            along rows and columns as you like (e.g. ``da.from_zarr``, or
            ``da.from_array(tifffile.imread(path, aszarr=True))`` for a TIFF larger than
            memory); chunks along the channel axis are joined into one. Another array (numpy,
            zarr) is wrapped with ``da.asarray``; what is not an array of a supported pixel
            type is an ``ArrayTypeError``, a bad shape an ``ArrayError`` (blurapp errors that
            are a ``TypeError`` and a ``ValueError``).
        kernel: a :class:`Kernel`, a spec string, or a whole :class:`FilterSpec` (then the
            other filter options must stay at their defaults).
        border, strategy, options: the filter's settings, as for
            :func:`blurapp.filter_image` (``tile``, ``convolve``, ``range_mode``, ``alpha``,
            ``linear``, ``dtype``, ``tolerance``, ``channels``; DESIGN.md's tables).
        max_tile_side: tiles of at most this side within a chunk (chunks larger than the
            device takes are tiled anyway).

    Returns:
        A lazy dask array of the input's shape and chunks and the output's pixel type; compute
        it, or store it (``to_zarr``), with any scheduler. Each output chunk reads its own
        chunk plus the kernel's extent around it. ``range_mode="normalize"`` with an integer
        output needs the whole image's range: every chunk is then filtered twice (once for the
        range, once for the pixels), as the large-images tile loop does.

    Example:
        >>> import dask.array as da, numpy as np, blurapp.dask
        >>> img = da.from_array(np.eye(6, dtype=np.float32), chunks=4)
        >>> blurapp.dask.correlate(img, "box:3", "wrap", "cpu").compute()[0, :3].round(3)
        array([0.333, 0.222, 0.   ], dtype=float32)
    """
    if not isinstance(kernel, FilterSpec):
        options = {"border": border, "strategy": strategy, **options}
    elif (border, strategy) != ("clamp", "auto"):
        raise UsageError("pass either a FilterSpec or filter options, not both")
    spec = FilterSpec.of(kernel, **options)
    image = _check(_as_dask(image))
    out_dtype = spec.output_dtype(image.dtype)
    height, width = image.shape[:2]
    rows_k, cols_k = spec.effective_kernel.shape
    top, left = rows_k // 2, cols_k // 2
    bottom, right = rows_k - 1 - top, cols_k - 1 - left
    argv = tuple(spec.to_argv())
    normalize = spec.range_mode == "normalize" and out_dtype.kind == "u"

    token = tokenize(image, argv, out_dtype.str, max_tile_side)
    name = f"blurapp-correlate-{token}"
    bounds_name = f"blurapp-bounds-{token}"
    range_name = f"blurapp-range-{token}"
    row_starts, col_starts = _starts(image.chunks[0]), _starts(image.chunks[1])
    tail = (0,) if image.ndim == 3 else ()  # the channel axis: one chunk
    graph: dict[Hashable, Any] = {}
    bounds_keys = []
    for i in range(len(image.chunks[0])):
        y0, y1 = int(row_starts[i]), int(row_starts[i + 1])
        rows, oy = halo_indices(y0, y1, height, top, bottom, spec.border)
        row_blocks = np.unique(np.searchsorted(row_starts, rows, side="right") - 1)
        for j in range(len(image.chunks[1])):
            x0, x1 = int(col_starts[j]), int(col_starts[j + 1])
            cols, ox = halo_indices(x0, x1, width, left, right, spec.border)
            col_blocks = np.unique(np.searchsorted(col_starts, cols, side="right") - 1)
            pieces = [
                (image.name, int(bi), int(bj), *tail) for bi in row_blocks for bj in col_blocks
            ]
            offsets = tuple(
                (int(row_starts[bi]), int(col_starts[bj])) for bi in row_blocks for bj in col_blocks
            )
            block = _Block(
                rows, cols, offsets, (oy, ox), (y1 - y0, x1 - x0), argv, out_dtype.str,
                max_tile_side,
            )  # fmt: skip
            key = (name, i, j, *tail)
            if normalize:
                bounds_key = (bounds_name, i, j)
                graph[bounds_key] = (_block_bounds, pieces, block)
                bounds_keys.append(bounds_key)
                graph[key] = (_normalize_block, pieces, block, (range_name,))
            else:
                graph[key] = (_filter_block, pieces, block)
    if normalize:
        graph[(range_name,)] = (_combine_bounds, bounds_keys)
    layers = HighLevelGraph.from_collections(name, graph, dependencies=[image])
    meta = np.empty((0,) * image.ndim, out_dtype)
    return da.Array(layers, name, image.chunks, meta=meta)
