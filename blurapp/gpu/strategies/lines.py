"""The 1-D passes that separable, transpose and lowrank are made of (no strategy of its own).

A row or column pass filters a run of outputs per invocation: a run of B outputs reads
B + taps - 1 texels into registers instead of B × taps. Short kernels have their weights baked
into the shader as literals; :func:`buffer_variant` reads them from the weights buffer instead,
padded to a bucket, so that one pipeline serves every kernel of the bucket. Also the transpose
pass, and the cost features the three strategies share.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from blurapp.core.planner import BAKED_TAPS, line_block
from blurapp.gpu.strategies.base import TEXEL_BYTES, PassSpec, check_kernel_size, groups

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

__all__ = [
    "LINE_SHADERS",
    "LOOP_BUCKET",
    "TAP_BUCKETS",
    "buffer_variant",
    "cols_pass",
    "factors",
    "line_features",
    "line_pass",
    "rank_one_factors",
    "rows_pass",
    "transpose_pass",
    "with_channels",
]

TRANSPOSE_TILE = 32
TRANSPOSE_ROWS = 8  # a 32×32 tile moved by 32×8 invocations, 4 texels each
# Workgroups of the 1-D passes, (x, y) invocations. On lavapipe a workgroup's invocations run
# 8 to a SIMD vector along x; the column pass wants many neighbouring columns (each row it reads
# is one contiguous stretch), the row pass fewer, as each of its invocations already covers a
# run of outputs. 3840×2160 R=8: rows 16×4, cols 32×2 take 0.81 and 0.67 × the time of 8×8.
ROWS_WORKGROUP = (16, 4)
COLS_WORKGROUP = (32, 2)
#: Tap counts of the 1-D passes that read their weights from the buffer: a kernel's taps are
#: padded with zeros to the next bucket, so that one pipeline serves every kernel up to it (a
#: sigma sweep compiles a handful of pipelines, not two per step).
TAP_BUCKETS = (3, 5, 9, 13, 17, 25, 33, 49, 65)
LOOP_BUCKET = 64  # longer 1-D kernels loop over the buffer, padded to 64·k + 1 taps
LINE_SHADERS = ("separable_rows", "separable_cols")


def factors(kernel: Kernel) -> tuple[np.ndarray, np.ndarray]:
    """The (column, row) 1-D factors of a rank ≤ 1 kernel, float64."""
    sep = kernel.separability
    rows, cols = kernel.shape
    if sep.column is None or sep.row is None:  # rank 0: the zero kernel
        return np.zeros(rows), np.zeros(cols)
    return np.asarray(sep.column, dtype=np.float64), np.asarray(sep.row, dtype=np.float64)


def rank_one_factors(kernel: Kernel, constant: float) -> tuple[np.ndarray, np.ndarray, float]:
    """The column and row factors, and the border constant the column filter must read.

    Outside the image along y, the column filter reads what the row filter makes of a row
    of constants: V * sum(row). Clamp/reflect/mirror/wrap map each axis on its own.
    """
    check_kernel_size(kernel)
    column, row = factors(kernel)
    return column, row, float(constant * row.sum())


def _literal(value: float) -> str:
    """A WGSL literal for the float32 ``value`` (shortest text that rounds back to it)."""
    return repr(float(np.float32(value)))


def line_pass(
    name: str,
    taps: np.ndarray,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    src: str,
    dst: str,
    *,
    vertical: bool,
    bake: bool = True,
    add: str | None = None,
) -> PassSpec:
    """A 1-D pass; ``bake=False`` reads the weights from the buffer (unrolled all the same up to
    BAKED_TAPS), ``add`` is the slot of a running sum to add (lowrank)."""
    width, height = size
    n = len(taps)
    if n > BAKED_TAPS:
        # The looped pass reads its weights from the buffer anyway: pad them with zeros (which
        # it skips) to a multiple of 64 taps plus one, so that one pipeline serves every
        # kernel of the bucket instead of one per length.
        m = LOOP_BUCKET * -(-(n - 1) // LOOP_BUCKET) + 1
        padded = np.zeros(m, np.float64)
        front = m // 2 - n // 2
        padded[front : front + n] = taps
        taps, n = padded, m
    block = line_block(n)
    unrolled = n <= BAKED_TAPS
    baked = tuple(_literal(v) for v in taps) if unrolled and bake else None
    template: tuple[tuple[str, Any], ...] = (
        ("wg_x", COLS_WORKGROUP[0] if vertical else ROWS_WORKGROUP[0]),
        ("wg_y", COLS_WORKGROUP[1] if vertical else ROWS_WORKGROUP[1]),
        ("taps", n),
        ("block", block),
        ("baked", baked),
    )
    if not bake:
        template += (("unrolled", unrolled),)
    if add is not None:
        template += (("accumulate", True),)
    wg_x, wg_y = COLS_WORKGROUP if vertical else ROWS_WORKGROUP
    if vertical:
        blocks = width * groups(height, block)
        workgroups = (groups(width, wg_x), groups(groups(height, block), wg_y))
    else:
        blocks = groups(width, block) * height
        workgroups = (groups(groups(width, block), wg_x), groups(height, wg_y))
    return PassSpec(
        name=name,
        shader="separable_cols" if vertical else "separable_rows",
        template=template,
        constants=(("BORDER_MODE", border_mode),),
        src=src,
        dst=dst,
        size=size,
        out_size=size,
        workgroups=workgroups,
        weights=np.asarray(taps, dtype=np.float32),
        constant=constant,
        # Each block reads its outputs plus the 1-D halo once, and writes its outputs (and
        # reads the running sum once per output when it adds one).
        bytes_modelled=(blocks * (block + n - 1) + (2 if add else 1) * width * height)
        * TEXEL_BYTES,
        add=add,
    )


def rows_pass(
    name: str,
    taps: np.ndarray,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    src: str,
    dst: str,
) -> PassSpec:
    return line_pass(name, taps, border_mode, constant, size, src, dst, vertical=False)


def cols_pass(
    taps: np.ndarray, border_mode: int, constant: float, size: tuple[int, int]
) -> PassSpec:
    return line_pass("cols", taps, border_mode, constant, size, "tmp0", "output", vertical=True)


def transpose_pass(name: str, size: tuple[int, int], src: str, dst: str) -> PassSpec:
    width, height = size
    t = TRANSPOSE_TILE
    return PassSpec(
        name=name,
        shader="transpose",
        template=(("tile", t), ("rows", TRANSPOSE_ROWS)),
        constants=(),
        src=src,
        dst=dst,
        size=size,
        out_size=(height, width),
        workgroups=(groups(width, t), groups(height, t)),
        weights=None,
        constant=0.0,
        bytes_modelled=2 * width * height * TEXEL_BYTES,
    )


def buffer_variant(p: PassSpec) -> PassSpec | None:
    """The same 1-D pass reading its weights from the buffer instead of baked literals, its
    taps padded with zeros to a :data:`TAP_BUCKETS` size around the same anchor; ``None`` when
    ``p`` is not a baked 1-D pass. It computes the same values: a zero weight adds an exact 0."""
    template = dict(p.template)
    if p.shader not in LINE_SHADERS or template.get("baked") is None or p.weights is None:
        return None
    n = int(template["taps"])
    m = next(b for b in TAP_BUCKETS if b >= n)
    front = m // 2 - n // 2  # keeps the anchor (taps // 2) on the same weight
    taps = np.zeros(m, np.float32)
    taps[front : front + n] = p.weights
    variant = line_pass(
        p.name, taps, int(dict(p.constants)["BORDER_MODE"]), p.constant, p.size, p.src, p.dst,
        vertical=p.shader == "separable_cols", bake=False, add=p.add,
    )  # fmt: skip
    # What with_output added (the output texture's format) stays; the traffic is the model's
    # of the kernel itself, not of its zero padding.
    kept = tuple(item for item in p.template if item[0] in ("dst_format", "rgb"))
    return replace(variant, template=variant.template + kept, bytes_modelled=p.bytes_modelled)


def with_channels(passes: tuple[PassSpec, ...], channels: int) -> tuple[PassSpec, ...]:
    """``passes`` for an image of ``channels`` channels: with 1 to 3 the 1-D passes compute only
    the .rgb lanes (the ``rgb`` template parameter) and store an alpha of 1, which nothing reads
    back; with 4, ``passes`` unchanged. The same values in the lanes that are read."""
    if channels > 3:
        return passes
    return tuple(
        replace(p, template=(*p.template, ("rgb", True))) if p.shader in LINE_SHADERS else p
        for p in passes
    )


def line_features(
    lengths: tuple[int, ...], pixels: int, *, vertical: tuple[bool, ...] | None = None
) -> dict[str, float]:
    """Cost features of 1-D passes of these tap counts over ``pixels`` outputs each: a pass's
    reads and store (``pass``), the taps of unrolled passes (``row_tap``, ``col_tap``:
    multiply-adds on registers) and of looped ones (``row_looped_tap``, ``col_looped_tap``:
    past BAKED_TAPS each output reads its taps from the texture and the weights buffer, one
    output per invocation). ``vertical`` says which passes run down columns (default: the
    last of two, separable's); their strided reads cost what they cost on each adapter."""
    vertical = vertical or tuple(i == 1 for i in range(len(lengths)))
    out = {"pass": len(lengths) * pixels, "dispatch": len(lengths)}
    for axis in ("row", "col"):
        mine = [n for n, v in zip(lengths, vertical, strict=True) if v == (axis == "col")]
        out[f"{axis}_tap"] = sum(n for n in mine if n <= BAKED_TAPS) * pixels
        out[f"{axis}_looped_tap"] = sum(n for n in mine if n > BAKED_TAPS) * pixels
    return out
