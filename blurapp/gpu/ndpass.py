"""Correlate n-D arrays along any axis on the GPU, over storage buffers, in f32 or in double-float.

The n-D passes under :mod:`blurapp.ndimage` (scipy.ndimage's API): :func:`correlate1d_chain`
runs 1-D passes (:class:`Line`: ``scipy.ndimage.correlate1d`` each) one after another without
reading back between them, and :func:`correlate_nd` runs n-D weights (``scipy.ndimage.correlate``).
Any ndim (``correlate_nd``: 1 to 8 axes; ``correlate1d_chain``: any) and any axis, with a border
per pass or per axis; kernels longer than the axis map as scipy's do (reflections repeat).

Precision:

- ``"f32"``: float32 elements accumulated in f32 (as cupyx.scipy.ndimage does for float32).
- ``"df64"``: float64 elements as double-float pairs of f32 (hi + lo, about 48 significant
  bits) with error-free sums and products (shaders/nd_df64.wgsl), so that the result agrees
  with scipy's float64 to within about 1e-13 * sum|w| * max|x| (the goal is 1e-12). The data
  and each pass's weights are scaled by powers of two first (exact), so float64 values beyond
  float32's range (1e300, 1e-300) work too; the scale includes a CONSTANT border's finite
  cval, so the error is relative to max(|x|, |cval|) (a caller whose cval dwarfs the data runs
  the data with cval 0 and adds cval times the passes of zeros with cval 1, as
  blurapp.ndimage does: the passes are linear). In a chain the bound holds per pass, against
  what enters that pass: a derivative pass followed by constant-mode passes whose cval is as
  large as the data (1e8) brings outputs of 1e8 back near the borders, where df64's 48 bits
  give about 2e-6 absolute; measured against the product of the passes' sum|w| (a third
  derivative's is 0.002) that is 5e-12 (float64 itself is off by 3e-13 there).

  WGSL has no way to forbid a compiler from fusing a*b+c or rewriting (a+b)-a, so
  :func:`df64_status` first proves on the adapter that the arithmetic is exact; where it is
  not, the float64 path runs the float64 numpy reference (:mod:`blurapp.core.ndreference`)
  instead and says so once (a RuntimeWarning naming the adapter), never silently.

Arrays larger than the adapter's storage-buffer binding (128 MiB on lavapipe; the data is
8 bytes an element in df64) run in slabs: a chain whose data does not fit runs pass by pass,
each pass over slabs of its (outer, n, inner) view that need no halo (a 1-D pass is independent
across the other axes), or over halo'd pieces of the axis itself when one line is too long;
``correlate_nd`` runs slabs along the first axis with its halo. Where even one slab cannot fit
(a single element's window larger than the binding) the call is refused with one
:class:`~blurapp.core.errors.ImageError` line.

Shaders: 1-D passes run blocks of outputs along the axis per invocation (nd_line.wgsl), f32
kernels up to 17 taps unrolled from registers (a pipeline per kernel length; vec4 loads), df64
ones and longer f32 ones rolled (the taps a loop over the uniform buffer, the block's elements
a window of registers that moves by one element a tap: one pipeline for every length up to
:data:`ROLL_TAPS`); n-D correlations run the kernel as rows along the last axis (nd_taps.wgsl,
a pipeline per kernel shape). In f32, a chain's consecutive passes along the last two axes
(either order; lines of a multiple of 4 elements, up to :data:`MAX_FUSED_TAPS` taps each, or
:data:`MAX_FUSED_TAPS_ROW_FIRST` where the pair runs along axis -1 first) run as one dispatch
(nd_plane.wgsl): the same sums, without the intermediate array going through memory (a pair
along axis -2 first with no constant border runs along axis -1 first: the same values to
rounding, :data:`PLANE_ROW_FIRST`). An array under :data:`SMALL` elements whose pipeline is not
compiled yet runs a looped one (nd_line_loop, nd_taps_loop: one pipeline per precision and
border mode) while that one compiles on a background thread for the next calls. On lavapipe a
storage-buffer access is a loop over the SIMD lanes (Mesa's ``emit_load_mem``), so what costs
is buffer accesses per output (docs/PERFORMANCE.md).

Pipelines (per shader, template and border mode), buffers (per array size, least recently used
dropped beyond :data:`KEPT_ARRAYS`) and bind groups are cached, and a slot's uniforms are written
only when they change, so a small array's per-call cost is one upload, one submission (one
compute pass) and one readback. Where the device maps storage buffers (wgpu's
"mappable-primary-buffers", asked for on software and integrated adapters), the upload and the
read-back go through the ping-pong buffers' own mappings (:data:`MAPPED_IO`), copied on
several threads when large (:data:`PARALLEL_COPY_BYTES`).
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import functools
import itertools
import math
import operator
import os
import struct
import threading
import time
import warnings
import weakref
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from blurapp.core import ndreference
from blurapp.core.borders import Border, BorderMode
from blurapp.core.errors import ImageError, UsageError
from blurapp.core.ndreference import DBL_EPSILON, Line, finite_max, nd_centres, normalise_axis
from blurapp.gpu import commands
from blurapp.gpu.device import GpuContext, get_device
from blurapp.gpu.lru import LruCache
from blurapp.gpu.shaders import load_shader

__all__ = [
    "KEPT_ARRAYS",
    "KEPT_BYTES",
    "MAX_ND",
    "PRECISIONS",
    "SMALL",
    "Line",
    "NdPasses",
    "Plan",
    "Planning",
    "Precision",
    "correlate1d_chain",
    "correlate_nd",
    "df64_status",
    "get_passes",
    "is_lent",
    "planning",
]

Precision = Literal["f32", "df64"]
PRECISIONS: tuple[str, ...] = ("f32", "df64")

#: Axes correlate_nd handles in one shader (its uniforms hold 8 per-axis values).
MAX_ND = 8
#: Array sizes whose buffers stay allocated (least recently used dropped), and the bytes they
#: may hold together (three buffers a size: two ping-pong, one readback; two where the
#: ping-pong buffers map themselves, MAPPED_IO).
KEPT_ARRAYS = 8
KEPT_BYTES = 768 << 20
#: Arrays of more than this many bytes run in buffers of a size class: rounded up to a multiple
#: of an eighth of the power of two below them (at most 1/8 more), so that nearby sizes share
#: buffers (the padded widths of different kernels over one image, a folder of photos of a few
#: sizes) instead of evicting each other's (a new buffer is zeroed and faulted in: ~1 ms a
#: 4 MiB one on lavapipe).
SIZE_CLASS_BYTES = 1 << 20
KEPT_PIPELINES = 64  # as GpuFilter: ~3.5 MiB of JIT code each on lavapipe
_WG = 128  # invocations per workgroup: lavapipe runs them as 8-wide SIMD rows
_MAX_GROUPS = 65535  # workgroups per dispatch dimension (WebGPU's minimum limit)
#: The most taps a rolled line pass (nd_line.wgsl's `roll`) takes from its uniform buffer.
ROLL_TAPS = 1024
# Every pass's uniform buffer: LineParams (48 bytes) or TapsParams (128) with their taps.
_UNIFORM_BYTES = 128 + 16 * ROLL_TAPS
_WEIGHTS_START = 64 * 1024  # weight / tap buffers start here and double when a kernel needs it


def _elem_bytes(precision: str) -> int:
    return 8 if precision == "df64" else 4


def _check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise UsageError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    return precision


# -- df64 packing: float64 <-> (hi, lo) pairs of f32 ------------------------------------------


def _pow2_exponent(m: float) -> int:
    """e such that m * 2**-e lies in [0.5, 1) (0 for 0, inf or NaN)."""
    if m == 0.0 or not math.isfinite(m):
        return 0
    return math.frexp(m)[1]


#: Elements per step of the host's float64 <-> pair conversions: the temporaries stay in the
#: CPU's cache (a whole 256^3 array at once took 2.7 s to split and 2.5 s to join; chunked,
#: a fifth of that).
_CHUNK = 1 << 18


#: Integer dtypes whose every value is exact in f32 (|x| < 2**24): a df64 chain takes such an
#: array as it is (each value's pair is the value scaled and 0: no float64 copy, no float64
#: split on the host; a uint8 1080p pass spent ~7 ms of its ~40 on those).
_SMALL_INTS = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16))


def _times_pow2(x: np.ndarray, k: int, out: np.ndarray) -> None:
    """``out[...] = x * 2**k``, as ``np.ldexp(x, k, out=out)`` gives it: a product with an
    exact power of two is the same correctly rounded x * 2**k (subnormal results, overflow,
    inf and NaN included), and numpy's multiply is vectorised where its ldexp calls C's per
    element (1 M float64, best of 5: 0.33 against 4.6 ms; most of the split and the join).
    ldexp where 2**k is not a float64 (k > 1023) or not exact (k < -1074)."""
    if k == 0:
        if out is not x:
            np.copyto(out, x)
    elif -1074 <= k <= 1023:
        np.multiply(x, 2.0**k, out=out)
    else:
        np.ldexp(x, k, out=out)


def _split(x: np.ndarray, exponent: int) -> np.ndarray:
    """``x * 2**-exponent`` as (..., 2) float32 hi, lo pairs; a non-finite value is (x, 0).
    A :data:`_SMALL_INTS` array's values are exact in f32: (x * 2**-exponent, 0), made without
    float64 (the same pairs, where the scaled values stay normal f32s)."""
    return _Pairs(x, exponent).array()


def _split_into(x: np.ndarray, out: np.ndarray, exponent: int) -> None:
    """:func:`_split` of the flat ``x`` (float64, or one of :data:`_SMALL_INTS`) into ``out``,
    (x.size, 2) float32."""
    if x.dtype in _SMALL_INTS and -100 <= exponent <= 100:
        out[:, 1] = 0.0
        hi = out[:, 0]
        hi[...] = x
        hi *= np.float32(2.0**-exponent)
        return
    scaled = np.empty(min(x.size, _CHUNK), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, x.size, _CHUNK):
            part = x[start : start + _CHUNK]
            sc = scaled[: part.size]
            _times_pow2(part, -exponent, sc)
            hi = out[start : start + part.size, 0]
            hi[...] = sc
            np.subtract(sc, hi, out=sc)  # the rest of the value, in float64 (exact)
            out[start : start + part.size, 1] = sc
            if not np.isfinite(sc).all():  # inf - inf: the pair of a non-finite is (x, 0)
                lo = out[start : start + part.size, 1]
                lo[~np.isfinite(hi) | ~np.isfinite(lo)] = 0.0


def _join(pairs: np.ndarray, exponent: int, into: np.ndarray | None = None) -> np.ndarray:
    """float64 ``(hi + lo) * 2**exponent`` of (..., 2) pairs; hi where hi is not finite. Written
    into ``into`` (C-contiguous float64 of as many elements) when given; a large array in parts
    on several threads (:func:`_in_parts`)."""
    flat = pairs.reshape(-1, 2)
    out = np.empty(flat.shape[0], dtype=np.float64) if into is None else into.reshape(-1)
    _in_parts(out.size, out.nbytes, lambda a, b: _join_into(flat[a:b], out[a:b], exponent))
    return out.reshape(pairs.shape[:-1])


def _join_into(flat: np.ndarray, out: np.ndarray, exponent: int) -> None:
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, out.size, _CHUNK):
            part = flat[start : start + _CHUNK]
            o = out[start : start + part.shape[0]]
            o[...] = part[:, 0]
            o += part[:, 1]
            if not np.isfinite(o).all():
                bad = ~np.isfinite(part[:, 0])
                o[bad] = part[bad, 0]
            if exponent:
                _times_pow2(o, exponent, o)


def _pair(value: float, exponent: int) -> tuple[float, float]:
    """One float64 as the (hi, lo) f32 pair of ``value * 2**-exponent``."""
    p = _split(np.array([value]), exponent)[0]
    return float(p[0]), float(p[1])


# -- dispatches ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Dispatch:
    """One pass: the shader (and what shapes its code), its uniforms and weights/taps."""

    shader: str
    template: tuple[tuple[str, Any], ...]
    constants: tuple[tuple[str, int], ...]
    uniforms: bytes
    data: bytes  # weights or taps (binding 2)
    invocations: int
    # What makes a looped dispatch (or a list of dispatches: a fused pair's two passes)
    # computing the same (small arrays): it runs while this one's pipeline is compiled in the
    # background (NdPasses.run); made only then.
    fallback: Callable[[], _Dispatch | list[_Dispatch]] | None = None
    # False: the next dispatch reads this one's input and writes its output too (the interior
    # and border strips of one fused pair); the ping-pong swaps after the pair.
    swap: bool = True
    wg: int = _WG  # invocations per workgroup (the template's `wg`)
    # The dispatch also reads its input as a texture of this format (TEXTURE_INPUT;
    # "rgba32float" or "r32float"): NdPasses.run copies the input buffer into the array's
    # texture of that format before it.
    texin: str = ""
    # The texture is bound as a read-only storage texture (TEXTURE_STORAGE), not a sampled one.
    texstore: bool = False


def _groups(total: int, wg: int = _WG) -> tuple[int, int]:
    groups = max(1, -(-total // wg))
    gx = min(groups, _MAX_GROUPS)
    return gx, -(-groups // gx)


#: The longest kernel a line pass unrolls; longer ones, up to ROLL_TAPS, loop over the taps
#: with blocks of outputs from a rolling window of registers (nd_line.wgsl's `roll`), and
#: beyond that one output an invocation (nd_line_loop.wgsl). The uniform buffer holds one vec4
#: a tap. df64 always rolls: at 1 MP (wall ms, interleaved runs at load 2.6) rolled blocks of
#: 8 took 62/110/105/152 against the unrolled blocks of 4's 99/201/180 and the looped 65 taps'
#: 185 for sigma 1/2/4/8; f32 rolls beyond 17 taps (sigma 8: 37 against 56 unrolled; sigma 4,
#: 33 taps: 256^3 918-873 against 1040-1184, 4K 238-330 against 280-435, 1 MP and 1080p
#: equal; load 2.5-3), and unrolls up to it (sigma 2: equal on 1 MP and 4K, 605 against 618 ms
#: at 256^3; 610 against 714-793 ms of CPU in an earlier run).
MAX_UNROLLED_TAPS = {"f32": 17, "df64": 0}
#: f32 passes along the last axis (vec4 chunks of the line, nd_line.wgsl's `chunked`) unroll up
#: to MAX_CHUNKED_TAPS taps (sigma 8 at truncate 4), not only to MAX_UNROLLED_TAPS: the rolled
#: pass loads one scalar a tap, the chunked one a chunk for 4 (8 with `wide`) elements of the
#: window. Whole calls interleaved in one process (quiet, medians of 11), rolled -> chunked, ms:
#: gaussian_filter sigma=4 1080p 30.1 -> 25.6, 4K 110.3 -> 81.5, 1024^2 14.1 -> 11.0; sigma=3
#: 1080p 24.3 -> 20.0; gaussian_filter1d sigma=4 axis 1 1080p 18.1 -> 12.9. The price is
#: compiling: one pipeline per length and border mode where the rolled one serves every
#: length, 0.2-0.9 s a new one on lavapipe (a fresh process's first sigma=4 call 117 -> 303
#: ms, then sigma=3 26 -> 241, mode="wrap" 66 -> 958). Up to 65 taps (sigma 8) since the
#: sixteenth session, with the weights folded (464a6a1): sigma=8, rolled -> chunked, ms (medians
#: of 9, 5 at 4K): 1 MP 22.44 -> 14.83, 1080p 39.01 -> 29.31, 4K 179.7 -> 115.7, 4K sigma=6
#: 127.3 -> 115.3; a fresh process's first 1080p sigma=8 call 1.07 -> 1.39 s, a sigma=7 after
#: it 0.05 -> 0.99 s, mode="wrap" 0.14 -> 0.79 s (a new pipeline per length and mode).
MAX_CHUNKED_TAPS = 65
#: f32 passes across the last axis in column groups (nd_line.wgsl's `groups`: the lines' vec4
#: columns even in number) unroll up to MAX_GROUP_TAPS taps too: with symmetric weights folded
#: (a Gaussian's, since 464a6a1) the unrolled pass beats the rolled one, which MAX_UNROLLED_TAPS
#: above measured unfolded. gaussian_filter, whole calls alternated in one process, medians of
#: 9 (5 at 256^3), ms, rolled -> unrolled: 1080p sigma=4 24.34 -> 21.95, sigma=3 22.38 -> 18.64;
#: 1 MP sigma=4 13.78 -> 11.23; 4K sigma=4 96.25 -> 80.72, sigma=3 84.59 -> 66.60; 256^3 sigma=4
#: 320.9 -> 265.2, sigma=3 261.2 -> 217.8. Not for scalar columns (1001 x 1001 sigma=4 20.4 ->
#: 46.7). The price is compiling: one pipeline per length and mode (the first 1080p sigma=4
#: call of a process 1.05 -> 1.37 s, a sigma=3 after it 0.10 -> 0.22 s).
MAX_GROUP_TAPS = 33
#: Rolled f32 passes across a non-contiguous axis take ROLL_GROUPS neighbouring vec4 columns
#: an invocation (nd_line.wgsl's `groups`: a 64-byte line of each input row a lane instead of
#: 16 bytes; where the vec4 columns are a multiple of it), in blocks of ROLL_GROUP_BLOCK
#: outputs; the same sums in the same order, equal bit for bit. ms a pass (CPU ms), one
#: column of 16 bytes in blocks of 32 against 4 columns in blocks of 16, in one process:
#: 1080x1920 axis 0 sigma=4 34.4 (41.0) -> 23.3 (23.1), sigma=8 49.5 (55.7) -> 32.8 (35.8,
#: 2 columns); 256^3 sigma=4 axis 0 338 (332) -> 173 (177) and 290 (293) -> 133 (150), axis 1
#: 260 (250) -> 167 (167). 8 columns or blocks of 4/8 were slower, 32 as fast (load 1.4-3.1).
#: The unrolled ones likewise (UNROLLED_GROUPS in blocks of UNROLLED_GROUP_BLOCK, were one
#: column in blocks of 8), ms a pass: 256^3 sigma=2 (17 taps) axis 0 178 -> 126, axis 1
#: 237 -> 115, sigma=1 axis 0 96 -> 84; 1080x1920 axis 0 sigma=1 7.4 -> 6.7, sigma=2 10.8 ->
#: 9.2 (4 columns in blocks of 2 or 4, 2 in blocks of 4, 8 or 16: slower or between).
#: Where the vec4 columns are even but not a multiple of 4 (1000-wide images), 2 an
#: invocation. On a device with WIDE_FEATURE, a group's loads and stores move two vec4
#: columns each (nd_line.wgsl's `wide`, as the fused pairs'); whole gaussian_filter calls,
#: 16-byte against 32-byte accesses interleaved in one process (quiet, medians of 9), ms:
#: 1080p sigma=2 22.8 -> 19.9, sigma=8 49.0 -> 42.5; 4K sigma=2 78.5 -> 64.9, sigma=4 119.8
#: -> 111.1. 1000x1000 sigma=2, one column against 2 an invocation: 15.5 -> 13.3 (16 bytes).
ROLL_GROUPS = 4
ROLL_GROUP_BLOCK = 16
#: Rolled f32 passes take ROLL_UNROLL taps an iteration (nd_line.wgsl's `unroll`): the window
#: of registers moves by that many elements at once, copied once for them, not once a tap
#: (the rest of the taps one at a time; the same sums in the same order, bit for bit).
#: gaussian_filter, whole calls alternated in one process, ms, 1 / 2 / 4 taps an iteration
#: (column groups only, medians of 7-9): 1080p sigma=4 27.0 / 24.8 / 31.1 (3: 25.5), sigma=8
#: 54.9 / 47.2 / 62.7; 4K sigma=4 111.5 / 98.1, sigma=8 212.6 / 198.7; and the scalar rows too:
#: 1080p sigma=8 59.2 / 51.0 / 58.8, 1 MP 30.9 / 24.6 / 29.5.
ROLL_UNROLL = 2
UNROLLED_GROUPS = 4
UNROLLED_GROUP_BLOCK = 8
#: Unrolled column groups of at least LONG_GROUP_TAPS taps take blocks of LONG_GROUP_BLOCK
#: outputs: each input row is loaded (block + taps - 1) / block times, and with 32-byte
#: accesses the loads cost more than the registers a longer block spills. GPU ms of one
#: axis-0 pass (32-byte accesses, min of 5, median of 3-5 rounds), blocks of 8 / 16 / 24:
#: 1080x1920 9 taps 4.67 / 4.52 / 4.51, 13 taps 5.72 / 4.88 / 4.85, 17 taps 6.17 / 5.49 / 5.00
#: (5 taps 3.69 / 3.95 / 3.83: short kernels keep 8); 2160x3840 9 taps 17.7 / 15.7 / 15.3,
#: 17 taps 21.7 / 18.9 / 18.6; 256^3 axis 1 9 taps 34.4 / 28.7 / 29.1, 17 taps 44.0 / 36.4 /
#: 33.7, axis 0 17 taps 44.3 / 38.0 / 37.0.
LONG_GROUP_TAPS = 9
LONG_GROUP_BLOCK = 16


def _dekker_split(hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's split of float32 ``hi`` into its top 12 bits and the rest, as the shader's."""
    hi = hi.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.float32(4097.0) * hi
        top = t - (t - hi)
    return top, hi - top


def _line_block(
    taps: int, n: int, precision: str, vec: int, roll: bool = False, chunked: bool = False
) -> int:
    """Outputs an invocation filters along the axis, no more than the axis holds.

    Unrolled f32: 8 with vec4 loads across the axis, else 16 from 15 to 33 taps and 8 otherwise
    (the texture row pass measured the same). At 256^3, 17 taps, a load average of 15 (CPU ms,
    best of 3): vec4 blocks of 4/8/16 took 477/344/648, last-axis (chunked) ones 921/671/422.
    Rolled (registers for 2 x block values, not block + taps): df64 8 up to 17 taps, else 16
    (1 MP, wall ms: blocks of 4/8/16 took 77/62/81 at sigma 1, 189/152/139 at sigma 8); f32 32
    (sigma 8: 16/32/64 took 41/37/35); scalar f32 lines (along the last axis, more than 33
    taps, read from an r32float texture) 64: sigma 8, whole calls alternated, blocks of
    32/64/128, ms: 1 MP 23.95/18.90/18.42, 1080p 41.02/36.47/34.44, 4K 151.8/141.8/135.4,
    the pipeline's first compile 0.36 s at 64 and 0.65 s at 128 (lavapipe, 2-core Zen 3).
    f32 along the last axis (vec4 chunks of one line): 16 below 15 taps, else 32 (1024^2, ms
    a pass, blocks of 8/16/32: 3.9/3.3/3.1 with 3 taps, 5.2/4.2/4.7 with 9, 7.9/6.7/6.0 with
    17, 15.0/11.0/9.5 with 33; load 4).
    """
    if roll:
        block = (64 if vec == 1 else 32) if precision == "f32" else (8 if taps <= 17 else 16)
    elif precision == "df64":
        block = 4
    elif vec > 1:
        block = 8
    elif chunked:
        block = 32 if taps >= 15 else 16
    else:
        block = 16 if 15 <= taps <= 33 else 8
    while block > 1 and block // 2 >= n:
        block //= 2
    return block


def _line_dispatch(
    shape3: tuple[int, int, int],
    weights: np.ndarray,
    centre: int,
    mode: int,
    constant: tuple[float, float],
    precision: str,
    two_prod: str,
    edge: str = "all",
    lo: int = 0,
    hi: int = 0,
    wide: bool = False,
    shuffle: bool = False,
) -> _Dispatch:
    """A 1-D pass over the (outer, n, inner) view; ``weights`` float64 (df64: already scaled).
    ``edge`` (chunked passes along the last axis): every block ("all"), the blocks ``lo`` to
    ``hi - 1`` ("interior") or the others ("border"). ``wide``: 32-byte accesses where the pass
    takes column groups or chunks of lines of a multiple of 8 (:data:`WIDE_IO`; the device must
    have :data:`WIDE_FEATURE`). ``shuffle`` (:data:`SHUFFLE`): interior chunked blocks take
    the chunks beyond their own from their subgroup's next invocations."""
    outer, n, inner = shape3
    taps = int(weights.shape[0])
    df = precision == "df64"
    roll = taps > MAX_UNROLLED_TAPS[precision]
    if roll and not df and inner == 1 and n % 4 == 0 and taps <= MAX_CHUNKED_TAPS:
        roll = False  # along the last axis: vec4 chunks of the line, unrolled (nd_line's chunked)
    if roll and not df and inner % 8 == 0 and taps <= MAX_GROUP_TAPS:
        roll = False  # across it, in groups of 2 or 4 vec4 columns: unrolled and folded
    if taps > ROLL_TAPS:
        return _line_loop_dispatch(shape3, weights, centre, mode, constant, precision, two_prod)
    small = outer * n * inner < _small()
    if small and not _bake():
        return _line_loop_dispatch(shape3, weights, centre, mode, constant, precision, two_prod)
    width = 2 if df else 4
    vec = width if inner % width == 0 else 1
    # Along the last axis, f32 lines read as vec4 chunks (nd_line.wgsl).
    chunked = not df and not roll and inner == 1 and n % 4 == 0
    block = _line_block(taps, n, precision, vec, roll, chunked)
    chunked = chunked and block % 4 == 0
    inner_v = inner // vec
    groups, group_block = (
        (ROLL_GROUPS, ROLL_GROUP_BLOCK) if roll else (UNROLLED_GROUPS, UNROLLED_GROUP_BLOCK)
    )
    if not roll and taps >= LONG_GROUP_TAPS:
        group_block = LONG_GROUP_BLOCK
    if df or vec == 1:
        groups = 1
    elif inner_v % groups:  # half as many where the columns allow it (1000-wide images)
        groups = 2 if groups >= 2 and inner_v % 2 == 0 else 1
    if groups > 1:
        block = group_block
        while block > 1 and block // 2 >= n:
            block //= 2
    blocks = -(-n // block)
    invocations = outer * blocks * inner_v // groups
    gx, _ = _groups(invocations)
    per_tap = np.zeros((taps, 4), dtype=np.float32)
    if df:
        pairs = _split(weights, 0)
        per_tap[:, :2] = pairs
        per_tap[:, 2], per_tap[:, 3] = _dekker_split(pairs[:, 0])
    else:
        with np.errstate(over="ignore"):
            per_tap[:, 0] = weights.astype(np.float32)
    count = {"all": blocks, "interior": hi - lo, "border": lo + blocks - hi}[edge]
    if edge != "all":
        invocations = outer * count * inner_v // groups
        gx, _ = _groups(invocations)
    header = (outer, n, inner_v, blocks, centre, gx, 1.0, invocations, *constant, taps, lo, hi)
    uniforms = struct.pack("<IIIIiIfIffIIIIII", *header, count, 0, 0) + per_tap.tobytes()
    template: dict[str, Any] = {
        "precision": precision, "taps": taps, "block": block, "vec": vec, "wg": _WG,
    }  # fmt: skip
    if roll:  # one pipeline for every length: the taps are a loop
        template.update(roll=True, roll_taps=ROLL_TAPS, taps=0)
        if not df and ROLL_UNROLL > 1:
            template["unroll"] = ROLL_UNROLL
    if groups > 1:
        template["groups"] = groups
        if wide and groups % 2 == 0:  # inner_v is then even, and each group's first column
            template["wide"] = True
    if df:
        template["two_prod"] = two_prod
    if _line_near(centre, taps, n):  # one reflection at most
        template["near"] = True
    sym = 0 if df or roll else _sym(weights)  # pairs of equal weights share one multiply
    if sym:
        template["sym"] = sym
    if chunked:
        template["chunked"] = True
        template["s0"] = -centre % 4
        if wide and n % 8 == 0 and block % 8 == 0:  # 8 elements an access (nd_line's `wide`)
            template.update(wide=True, s0=-centre % 8)
        if edge != "all":
            template["edge"] = edge
        cw = 8 if template.get("wide") else 4
        if (
            shuffle
            and edge == "interior"
            and (template["s0"] + block + taps - 1 + cw - 1) // cw > (block // cw)
        ):
            template["shuffle"] = True  # the chunks beyond its own from its neighbours
    fallback = (
        functools.partial(
            _line_loop_dispatch, shape3, weights, centre, mode, constant, precision, two_prod,
            sym,
        )
        if small
        else None
    )  # fmt: skip
    return _Dispatch(
        "nd_line", tuple(sorted(template.items())), (("BORDER_MODE", mode),), uniforms, b"",
        invocations, fallback,
    )  # fmt: skip


#: The longest pass (taps) a fused pair of passes along the last two axes takes
#: (nd_plane.wgsl); 0 turns the fusion off. Only f32's unrolled lengths (MAX_UNROLLED_TAPS):
#: the fused pair's arithmetic is theirs. Two box passes on 1080x1920, the chain's CPU ms
#: (lavapipe's threads included), fused against unfused interleaved in one process at load
#: 2.6-4.5: 1 tap 13.2 / 16.2, 3 taps 21.6 / 31.2, 5 taps 14.5-19.1 / 18.6-24.0, 9 taps
#: 19.1-25.8 / 24.2-29.4, 13 taps 30.8-36.8 / 38.6, 17 taps 30.2 / 29.3 (no gain: left
#: unfused); 1024^2 9 taps 15.6 / 18.0; 256^3 9 taps (axes 1 and 2 fused) 252 / 334.
MAX_FUSED_TAPS = 13
#: Pairs along axis -2 then axis -1 whose borders are not constant are computed along axis -1
#: first (nd_plane.wgsl's `rev`: a window of `ta` lines of COLS first sums instead of `ta`
#: lines of COLS + tb - 1 inputs): the same linear map (with no constant border, which would
#: enter the sums at a different stage, the order of two 1-D correlations does not change
#: them), in another rounding order. GPU ms of the pair on 1080x1920, axis -2 first / -1
#: first, interleaved, medians of 11: 5 taps 5.09 / 4.88, 9 taps 6.65 / 5.85, 3 taps
#: 4.72 / 4.42; 17 taps fused 8.13 against 10.13 for its two passes unfused (which 17 taps
#: in the order of the passes did not beat: 10.18). So such pairs fuse up to
#: MAX_FUSED_TAPS_ROW_FIRST taps.
PLANE_ROW_FIRST = True
MAX_FUSED_TAPS_ROW_FIRST = 17
#: Outputs along the last axis an invocation of a fused pair computes (a multiple of 4), and
#: the lines it walks. Whole calls interleaved in one process (load 3.0-3.3), wall ms, 8 / 16
#: columns: 1080p gaussian sigma=1 17.4 / 15.2, uniform 5 16.5 / 14.7, sobel 12.6 / 11.4; 4K
#: 61.7 / 51.2, 46.8 / 39.9, 42.9 / 36.6. 32 columns and 16 / 64 lines a walk instead of 32
#: were within the noise of 16 and 32 (load 2.7-3.8).
PLANE_COLS = 16
PLANE_ROWS = 32
#: On a software adapter (where the interior strips read a texture), a fused pair's interior
#: invocations walk max(PLANE_ROWS, TALL_BANDS * (taps - 1)) lines, taps along the walked axis,
#: halved while the dispatch would have fewer than TALL_BANDS_GROUPS workgroups for each CPU
#: (lavapipe's threads): each band first loads taps - 1 lines that it stores nothing for, half
#: of a 32-line band's walk for 17 taps. Same sums, equal bit for bit. Whole calls alternated,
#: medians of 15 (minima), ms, 32 lines / TALL_BANDS 8 / 16: 1080p σ=2 8.67 (6.28) / 7.83
#: (5.40) / 8.47 (5.70), σ=1 6.36 / 6.14 / 6.15; 4K σ=2 23.47 / 19.63 / 19.82, σ=1 21.14 /
#: 18.18 / 19.90; 1 MP σ=2 5.10 / 4.66 (8); 256³ σ=2 95.1 / 90.8 (8); uniform_filter 5 and
#: sobel (32 lines either way) unchanged.
TALL_BANDS = 8
TALL_BANDS_GROUPS = 2
#: Fused pairs load and store 8 floats at a time as ``vec4<u64>`` (nd_plane.wgsl's `wide`)
#: where the device has wgpu's "shader-int64" feature and lines hold a multiple of 8
#: elements: lavapipe's storage accesses cost per access and lane more than per byte
#: (Mesa's emit_load_mem loops over the SIMD lanes, then over the components), so 32-byte
#: accesses take about half the per-lane work of 16-byte ones for the same data. The pair's
#: arithmetic is unchanged (equal bit for bit). 1080x1920, two box passes fused, CPU ms of
#: the pass (lavapipe's threads included), 16-byte / 32-byte accesses interleaved in one
#: process at load 0.5-1.8: 1 tap 9.8 / 6.8, 5 taps 12.0 / 9.3, 9 taps 16.3 / 14.8 (medians
#: of 9). blurapp.gpu.device asks for the feature on software adapters (measured there; not on
#: a hardware GPU): where the device lacks it, the 16-byte path runs.
WIDE_FEATURE = "shader-int64"
WIDE_IO = True
#: Fused pairs' interior strips take the chunks of a line's window beyond their own from the
#: invocations of the next strips in their subgroup (subgroupShuffleDown) rather than loading
#: them, where the device has wgpu's "subgroup" feature (nd_plane.wgsl's `shuffle`); chunked
#: last-axis passes' interior blocks likewise (nd_line.wgsl's). blurapp.gpu.device asks for it
#: on software adapters. Whole 1080p calls, without / with, interleaved in one process (quiet,
#: medians of 11-25), ms: uniform_filter 5 8.14 / 7.19 and 9.40 / 8.56, sobel 8.26 / 6.84 and
#: 10.54 / 8.39, gaussian_filter sigma=2 (its 17-tap last-axis pass) 15.83 / 15.06. Equal bit
#: for bit (tests/gpu/test_ndpass.py).
SHUFFLE_FEATURE = "subgroup"
SHUFFLE = True
#: Fused pairs run their interior strips (windows inside the line) as a dispatch of their own,
#: without border code, and the other strips after it (_plane_dispatches).
PLANE_SPLIT = True
#: Invocations per workgroup of the border strips' dispatch: a 1080p plane has 68 of them (two
#: strips a band), which in one workgroup of 128 ran on one of lavapipe's threads. GPU ms of
#: the border dispatch, 1080x1920, workgroups of 128 / 32 / 8, medians of 11: 5 taps
#: 0.53 / 0.40 / 0.40, 9 taps 0.51 / 0.52 / 0.49, 17 taps 0.84 / 0.62 / 0.60.
PLANE_BORDER_WG = 32
#: On a software adapter, the interior strips of a wide fused pair read their input as an
#: rgba32float texture (nd_wide.wgsl's `texin`; the texels in rows of TEXTURE_WIDTH), which
#: NdPasses.run fills from the input buffer with a copy on the GPU just before them. lavapipe
#: (Mesa 22.3, LLVM 15) runs a storage load as a loop over the SIMD lanes that rebuilds each
#: component's vector through the stack a lane at a time (an 8-byte store, then a 32-byte
#: reload that cannot be forwarded from it: a stall a lane and component, one chain through
#: memory an access), where a texel fetch is unrolled per lane. 1080x1920, the pair's dispatches
#: alone, interleaved, medians of 31 on a 2-core Zen 3 VM, storage / texture (without the
#: shuffles, which are such loops too): uniform_filter 5 10.73 / 7.08 ms, sobel 9.37 / 5.78,
#: gaussian sigma=1 14.77 / 9.74; the copy into the texture ~1.2. Equal bit for bit.
#: ``"always"`` takes it on any adapter (the tests, on a hardware GPU).
TEXTURE_INPUT: bool | str = True
TEXTURE_WIDTH = 1024
#: The line passes too (wide column-group passes, chunked passes' interior blocks, rolled
#: passes that are not wide), each after a copy of its input into the texture.
TEXTURE_LINES = True
#: And float64's (df64) line passes: their (hi, lo) pairs from an rgba32float texture, two
#: columns' pairs a texel across the axis (`vec` 2), half a texel a pair along it (nd_line.wgsl's
#: load_at). Equal bit for bit. Whole calls, float64 in [0, 1000), alternated in one process,
#: medians of 7, ms, storage / texture (scipy): 1024^2 uniform_filter 5 39.9 / 21.8 (17.1),
#: gaussian sigma=1 62.5 / 38.3 (21.1), sobel 39.7 / 24.2 (17.0), sigma=4 90.6 / 50.2 (32.9);
#: uniform_filter1d along axis 0 25.0 / 19.1, axis 1 24.1 / 16.0.
DF64_TEXTURES = True
#: And f32 n-D correlations (nd_taps.wgsl), from an r32float texture.
TEXTURE_TAPS = True
#: The textures are bound as read-only storage textures (nd_texin.wgsl's `texfmt`), not as
#: sampled ones: on lavapipe a sampled fetch loads its mip level's row stride and offset once per
#: SIMD lane (naga clamps the level to the texture's, so llvmpipe cannot take it for a
#: constant), where a storage texel load has none.
TEXTURE_STORAGE = True
#: A pass that reads its input from the texture alone (every dispatch of it, up to the one that
#: swaps the buffers) writes its output into the buffer the texture was copied from, not into
#: the other one: a call's data goes through one buffer and the texture instead of two buffers
#: and the texture (24 → 16 MB at 1080p, for an L3 cache of 32 MB that scipy's calls between
#: the benchmark's evict). The shaders read no storage buffer under `texin` (binding 0 takes the
#: other buffer, which they never read). Equal bit for bit; 1080p, whole calls alternated with a
#: scipy call before each, medians of 15 (minima), False / True, ms: sobel 4.78 (3.73) / 3.88
#: (3.65), σ=2 7.52 (6.30) / 6.45 (6.11), σ=4 9.87 (9.21) / 9.26 (8.71); others within the noise.
TEXTURE_IN_PLACE = True
#: And fused pairs (nd_plane.wgsl), where that is faster on this machine: ``"probe"`` asks
#: :func:`blurapp.gpu.ndtune.plane_textures` (measured once per adapter and CPU: the texture
#: wins on a Zen 3 CPU, the storage loads on a Zen 4 one); True or False forces it.
TEXTURE_PLANES: bool | str = "probe"
#: And the border dispatches of split passes (chunked line passes, fused pairs), from the
#: texture their interior dispatch filled: no second copy.
TEXTURE_BORDERS = True


def _row_first(shape: tuple[int, ...], first: Line, second: Line) -> bool:
    """Whether a fused pair computes its pass along axis -1 first (nd_plane.wgsl's `rev`):
    where the chain has it first, and (PLANE_ROW_FIRST) where neither border is constant."""
    if first.axis == len(shape) - 1:
        return True
    return PLANE_ROW_FIRST and BorderMode.CONSTANT not in (first.border.mode, second.border.mode)


def _fusable(shape: tuple[int, ...], first: Line, second: Line) -> bool:
    """Whether two consecutive f32 passes run as one fused dispatch (nd_plane.wgsl): along the
    last two axes, either one first, of an array whose lines hold a multiple of 4 elements,
    both unrolled lengths, up to MAX_FUSED_TAPS taps (MAX_FUSED_TAPS_ROW_FIRST where the pair
    runs along axis -1 first)."""
    ndim = len(shape)
    if not (ndim >= 2 and {first.axis, second.axis} == {ndim - 2, ndim - 1} and shape[-1] % 4 == 0):
        return False
    if MAX_FUSED_TAPS == 0:  # fusion off
        return False
    most = MAX_FUSED_TAPS_ROW_FIRST if _row_first(shape, first, second) else MAX_FUSED_TAPS
    return max(first.weights.size, second.weights.size) <= min(most, MAX_UNROLLED_TAPS["f32"])


def _line_near(centre: int, taps: int, n: int) -> bool:
    """:func:`_near` for one line of ``n`` elements and ``taps`` taps about ``centre``."""
    return _near((n,), (-centre,), (taps - 1 - centre,))


def _sym(weights: np.ndarray) -> int:
    """nd_line.wgsl's folding (its f32_sum, nd_plane's too): 1 for symmetric weights, -1 for
    antisymmetric ones, else 0."""
    taps = weights.size
    rev = weights[::-1]
    if np.array_equal(weights, rev) and taps > 1:
        return 1
    if np.array_equal(weights, -rev) and taps > 2:
        return -1
    return 0


def _plane_cols(n1: int) -> int:
    cols = PLANE_COLS
    while cols > 4 and cols // 2 >= n1:
        cols //= 2
    return cols


def _plane_dispatches(
    shape: tuple[int, ...],
    first: Line,
    second: Line,
    wide: bool = False,
    shuffle: bool = False,
    texin: bool = False,
    keep: tuple[int, int] | None = None,
) -> list[_Dispatch]:
    """:func:`_plane_dispatch` as two dispatches over the same buffers where a plane has strips
    whose window lies inside the line (:data:`PLANE_SPLIT`): those strips without any border
    code (on lavapipe the border code runs, masked, for every line of every strip: 20-30 % of
    the pass), then the others. A small array (whose fallback is the two line passes) keeps one
    dispatch. ``texin`` (:data:`TEXTURE_INPUT`): wide strips read the input as a texture
    (:func:`_split_pair`). ``keep``: only those columns of the result are used; where they all
    lie in interior strips, the interior dispatch over their strips alone (:data:`PAD_INTERIOR`:
    the other columns keep what the output buffer held)."""
    n1 = shape[-1]
    line_b = first if first.axis == len(shape) - 1 else second
    cols = _plane_cols(n1)
    strips = -(-n1 // cols)
    lo = -(-line_b.centre // cols)
    hi = min(strips, (n1 - (cols + line_b.weights.size - 1) + line_b.centre) // cols + 1)
    if not PLANE_SPLIT or lo >= hi or math.prod(shape) < _small():
        return [_plane_dispatch(shape, first, second, wide)]
    if keep is not None and lo <= keep[0] // cols and -(-keep[1] // cols) <= hi:
        inner = _plane_dispatch(shape, first, second, wide, "interior", keep[0] // cols,
                                -(-keep[1] // cols), shuffle, texin)  # fmt: skip
        return _split_pair(inner, None, texin)
    inner = _plane_dispatch(shape, first, second, wide, "interior", lo, hi, shuffle, texin)
    border = (
        _plane_dispatch(shape, first, second, wide, "border", lo, hi) if lo + strips - hi else None
    )
    return _split_pair(inner, border, texin)


def _split_pair(inner: _Dispatch, border: _Dispatch | None, texin: bool) -> list[_Dispatch]:
    """A split pass's interior dispatch, then its border one (if any) over the same buffers;
    with ``texin``, wide ones read the input as a texture (:func:`_textured`), the border's
    (:data:`TEXTURE_BORDERS`) the one the interior's copy filled."""

    def tex(d: _Dispatch, on: bool) -> _Dispatch:
        return _textured(d) if texin and on and dict(d.template).get("wide") else d

    if border is None:
        return [tex(inner, True)]
    return [dataclasses.replace(tex(inner, True), swap=False), tex(border, TEXTURE_BORDERS)]


def _plane_rows(planes: int, n0: int, count: int, taps: int) -> int:
    """The lines an invocation of a fused pair's interior dispatch walks on a software adapter
    (:data:`TALL_BANDS`): ``planes`` planes of ``n0`` lines, ``count`` strips a band, ``taps``
    along the lines' axis (-2)."""
    rows = max(PLANE_ROWS, TALL_BANDS * (taps - 1))
    least = TALL_BANDS_GROUPS * (os.cpu_count() or 1) * _WG
    while rows > PLANE_ROWS and planes * -(-n0 // rows) * count < least:
        rows //= 2
    return max(rows, PLANE_ROWS)


def _plane_dispatch(
    shape: tuple[int, ...],
    first: Line,
    second: Line,
    wide: bool = False,
    edge: str = "all",
    lo: int = 0,
    hi: int = 0,
    shuffle: bool = False,
    tall: bool = False,
) -> _Dispatch:
    """Two f32 passes along the last two axes (axis -2 then -1, or with ``rev`` axis -1 then
    -2) as one dispatch (nd_plane.wgsl); the same sums as their two line passes, along axis
    -1 first where :func:`_row_first` says so (then in another rounding order). A small
    array's fallback is those two passes. ``wide``: 32-byte accesses (:data:`WIDE_IO`; the
    device must have :data:`WIDE_FEATURE`), taken where the lines allow it. ``edge``: every
    strip ("all"), the strips ``lo`` to ``hi - 1`` ("interior") or the others ("border")."""
    n0, n1 = shape[-2], shape[-1]
    line_a, line_b = (second, first) if first.axis == len(shape) - 1 else (first, second)
    rev = _row_first(shape, first, second)  # along axis -1 first (line_a: along axis -2)
    planes = math.prod(shape[:-2])
    cols = _plane_cols(n1)
    strips = -(-n1 // cols)
    count = {"all": strips, "interior": hi - lo, "border": lo + strips - hi}[edge]
    rows = _plane_rows(planes, n0, count, line_a.weights.size) if tall else PLANE_ROWS
    bands = -(-n0 // rows)
    invocations = planes * bands * count
    wg = PLANE_BORDER_WG if edge == "border" else _WG
    gx, _ = _groups(invocations, wg)
    wa, wb = line_a.weights, line_b.weights
    ta, tb = int(wa.size), int(wb.size)
    per_tap = np.zeros((ta + tb, 4), dtype=np.float32)
    with np.errstate(over="ignore"):
        per_tap[:ta, 0] = wa.astype(np.float32)
        per_tap[ta:, 0] = wb.astype(np.float32)
    ca, cb = line_a.centre, line_b.centre
    wide = wide and n1 % 8 == 0 and cols % 8 == 0
    header = (planes, n0, n1, strips, bands, rows, ca, cb, gx, invocations,
              _f32(line_a.constant), _f32(line_b.constant))  # fmt: skip
    uniforms = struct.pack("<IIIIIIiiIIffIIII", *header, lo, hi, count, 0) + per_tap.tobytes()
    template: dict[str, Any] = {
        "ta": ta, "tb": tb, "cols": cols, "s0": -cb % 4, "syma": _sym(wa), "symb": _sym(wb),
        "neara": _line_near(ca, ta, n0), "nearb": _line_near(cb, tb, n1), "wg": wg, "rev": rev,
    }  # fmt: skip
    if edge != "all":
        template["edge"] = edge
    if wide:  # the window's place in chunks of 8
        template.update(wide=True, s0=-cb % 8)
    cw = 8 if wide else 4
    chunks = (template["s0"] + cols + tb - 1 + cw - 1) // cw  # a window line's loads
    if shuffle and edge == "interior" and chunks > cols // cw:
        template["shuffle"] = True  # the chunks beyond its own from its neighbours
    modes = (
        ("BORDER_MODE_A", line_a.border.mode.value),
        ("BORDER_MODE_B", line_b.border.mode.value),
    )
    fallback = None
    if planes * n0 * n1 < _small():

        def fallback() -> list[_Dispatch]:
            # In the pair's order (`rev`: axis -1 first), folded as it folds: equal bit for bit.
            order = (line_b, line_a) if rev else (line_a, line_b)
            return [_line_of(ln, _shape3(shape, ln.axis), "f32", "fma", 0, 0) for ln in order]

    return _Dispatch(
        "nd_plane",
        tuple(sorted(template.items())),
        modes,
        uniforms,
        b"",
        invocations,
        fallback,
        wg=wg,
    )


def _line_loop_dispatch(
    shape3: tuple[int, int, int],
    weights: np.ndarray,
    centre: int,
    mode: int,
    constant: tuple[float, float],
    precision: str,
    two_prod: str,
    sym: int = 0,
) -> _Dispatch:
    """A 1-D pass of a long kernel: one output an invocation, the taps looped over; ``sym``
    (f32, 1 / -1): folded as the unrolled passes fold them (a small array's fallback for one)."""
    outer, n, inner = shape3
    total = outer * n * inner
    gx, _ = _groups(total)
    uniforms = struct.pack(
        "<IIIIiIfIff", total, n, inner, weights.shape[0], centre, gx, 1.0, 0, *constant
    )
    template: dict[str, Any] = {"precision": precision, "skip_zero": False, "wg": _WG}
    if sym and precision == "f32":
        template["sym"] = sym
    if precision == "df64":
        template["two_prod"] = two_prod
        data = _split(weights, 0).reshape(-1, 2)
    else:
        with np.errstate(over="ignore"):
            data = weights.astype(np.float32)
    return _Dispatch(
        "nd_line_loop", tuple(sorted(template.items())), (("BORDER_MODE", mode),), uniforms,
        np.ascontiguousarray(data, dtype=np.float32).tobytes(), total,
    )  # fmt: skip


def _per_axis_vec(values: Sequence[int]) -> bytes:
    padded = list(values) + [0] * (MAX_ND - len(values))
    return struct.pack(f"<{MAX_ND}i", *padded)


#: Arrays of fewer elements do not wait for a new unrolled pipeline (a second or more on
#: lavapipe): the looped shaders (nd_line_loop, nd_taps_loop; one pipeline per precision and
#: border mode, and ndim) serve while it compiles in the background.
SMALL = 1 << 15
#: Whether a small array's unrolled pipeline is compiled on a background thread while the
#: looped one serves (False: small arrays always run the looped shaders).
BAKE_IN_BACKGROUND = True
_forced = threading.local()  # .small: the start-up check's threshold, for its own thread


def _bake() -> bool:
    """BAKE_IN_BACKGROUND, unless the start-up check forces the looped shaders on its thread."""
    return getattr(_forced, "bake", BAKE_IN_BACKGROUND)


def _small() -> int:
    """The array size below which the looped shaders run (SMALL, unless the start-up check,
    which runs both shader families, forces it on its own thread)."""
    return getattr(_forced, "small", SMALL)


#: The longest kernel row (along the last axis) nd_taps unrolls; longer rows run in pieces
#: (df64's taps are ~20 operations each: a longer row compiles for seconds on lavapipe).
MAX_TAPS_ROW = {"f32": 64, "df64": 32}


def _near(shape: Sequence[int], lo: Sequence[int], hi: Sequence[int]) -> bool:
    """Whether every window offset, lo[a] .. hi[a] along axis a, stays within one reflection
    (nd_border_index_near)."""
    return all(
        -(n - 1) <= low and high <= n - 1 for n, low, high in zip(shape, lo, hi, strict=True)
    )


#: Outputs along the last axis an n-D correlation's invocation filters (nd_taps.wgsl). Two
#: interleaved runs at load 3-4, median ms, 1 MP 9x9 and 128^3 3x3x3: df64 blocks of 4/8/16
#: 322-345/213-233/247-250 and 219-424/225-279/166-214; f32 blocks of 8/16/32 72-132/61-116/
#: 70-97 and 132-157/102-127/83-152 (were 4 and 8).
_TAPS_BLOCK = {"f32": 16, "df64": 8}
#: f32 kernels over the last two axes (a 2-D correlate) take TAPS_BAND output lines an
#: invocation (nd_taps.wgsl's `band`), walking down the input lines they share: each line's
#: elements are loaded once for the TAPS_BAND outputs it enters, not once a kernel row and
#: output (a 9x9 kernel: 13.5 loads an output -> 4.5). The same sums in the same order, bit for
#: bit. correlate 9x9 float32, whole calls alternated in one process, ms, one line / 4 / 8 an
#: invocation: 1 MP 51.1 / 31.4 / 33.0, 1080p 103.4 / 64.7 / 63.0, 4K 287 / 223 / 225 (medians
#: of 9, 5, 3). The price: the first compile of a kernel shape, 9x9 +0.1 s, 5x5 +0.17 s.
TAPS_BAND = 4


def _taps_dispatch(
    shape: tuple[int, ...],
    w: np.ndarray,
    centres: Sequence[int],
    modes: Sequence[int],
    constant: tuple[float, float],
    precision: str,
    two_prod: str,
) -> _Dispatch:
    """An n-D correlation pass; ``w`` float64 (df64: scaled), zero where scipy skips a tap.
    ``centres`` may lie outside the weights (a piece of a longer row)."""
    ndim = len(shape)
    df = precision == "df64"
    n = shape[-1]
    kw = w.shape[-1]
    block = _TAPS_BLOCK[precision]
    while block > 1 and block // 2 >= n:
        block //= 2
    blocks = -(-n // block)
    invocations = math.prod(shape[:-1]) * blocks
    # f32 kernels over the last two axes: TAPS_BAND output lines an invocation (nd_taps' band).
    flat = ndim >= 2 and math.prod(w.shape[:-2]) == 1 and w.size <= ROLL_TAPS
    band = TAPS_BAND if flat and not df and shape[-2] > 1 else 0
    while band > 1 and band // 2 >= shape[-2]:
        band //= 2
    if band > 1:
        bands = -(-shape[-2] // band)
        invocations = math.prod(shape[:-2]) * bands * blocks
    gx, _ = _groups(invocations)
    strides = [math.prod(shape[a + 1 :]) for a in range(ndim)]
    lead = w.shape[:-1]
    rows = math.prod(lead)
    offsets = np.zeros((rows, 8), dtype=np.int32)
    for r, index in enumerate(np.ndindex(*lead)):
        offsets[r, : ndim - 1] = [i - c for i, c in zip(index, centres[:-1], strict=True)]
    weights = w.reshape(rows, kw)
    # The weights in the uniform buffer, a vec4 a tap, where they fit (nd_taps.wgsl's `uw`).
    uniform_weights = rows * kw <= ROLL_TAPS
    if df or uniform_weights:
        per = np.zeros((rows, kw, 4), dtype=np.float32)
        if df:
            pairs = _split(weights, 0)
            per[..., :2] = pairs
            per[..., 2], per[..., 3] = _dekker_split(pairs[..., 0])
        else:
            with np.errstate(over="ignore"):
                per[..., 0] = weights.astype(np.float32)
    else:
        with np.errstate(over="ignore"):
            per = weights.astype(np.float32)
    data = offsets.view(np.uint32).tobytes() + (b"" if uniform_weights else per.tobytes())
    head = struct.pack("<IIIfffIi", invocations, rows, gx, 1.0, *constant, blocks, centres[-1])
    if band > 1:
        head += struct.pack("<IiII", bands, centres[-2], 0, 0)
    uniforms = (
        head
        + _per_axis_vec(shape)
        + _per_axis_vec(strides)
        + _per_axis_vec(modes)
        + (per.tobytes() if uniform_weights else b"")
    )
    lo = [-c for c in centres]
    hi = [s - 1 - c for s, c in zip(w.shape, centres, strict=True)]
    template: dict[str, Any] = {
        "precision": precision, "ndim": ndim, "kw": kw, "block": block, "wg": _WG,
        "near": _near(shape, lo, hi),
    }  # fmt: skip
    if uniform_weights:  # the array's length: the pipeline is per kernel shape already
        template["uw"] = rows * kw
    if band > 1:
        template["band"] = band
    if df:
        template["two_prod"] = two_prod
    return _Dispatch("nd_taps", tuple(sorted(template.items())), (), uniforms, data, invocations)


def _taps_loop_dispatch(
    shape: tuple[int, ...],
    w: np.ndarray,
    centres: Sequence[int],
    modes: Sequence[int],
    constant: tuple[float, float],
    precision: str,
    two_prod: str,
) -> _Dispatch:
    """An n-D correlation of a small array (nd_taps_loop.wgsl): the non-zero taps of ``w``
    (float64, df64: scaled; zero where scipy skips), each with its offsets."""
    ndim = len(shape)
    total = math.prod(shape)
    strides = [math.prod(shape[a + 1 :]) for a in range(ndim)]
    gx, _ = _groups(total)
    nz = np.argwhere(w != 0.0)
    offsets = nz - np.asarray(centres, dtype=np.int64)
    reach_lo = offsets.min(axis=0) if len(nz) else np.zeros(ndim, np.int64)
    reach_hi = offsets.max(axis=0) if len(nz) else np.zeros(ndim, np.int64)
    uniforms = (
        struct.pack("<IIIfffff", total, len(nz), gx, 1.0, *constant, 0.0, 0.0)
        + _per_axis_vec(shape)
        + _per_axis_vec(strides)
        + _per_axis_vec(modes)
        + _per_axis_vec(reach_lo.tolist())
        + _per_axis_vec(reach_hi.tolist())
    )
    words = np.zeros((max(len(nz), 1), 3 + ndim), dtype=np.uint32)
    if len(nz):
        values = w[tuple(nz.T)]
        if precision == "df64":
            words[: len(nz), :2] = _split(values, 0).view(np.uint32)
        else:
            with np.errstate(over="ignore"):
                words[: len(nz), 0] = values.astype(np.float32).view(np.uint32)
        words[: len(nz), 2] = (
            (offsets @ np.asarray(strides, np.int64)).astype(np.int32).view(np.uint32)
        )
        words[: len(nz), 3:] = offsets.astype(np.int32).view(np.uint32)
    template: dict[str, Any] = {"precision": precision, "ndim": ndim, "wg": _WG}
    if precision == "df64":
        template["two_prod"] = two_prod
    return _Dispatch(
        "nd_taps_loop", tuple(sorted(template.items())), (), uniforms, words.tobytes(), total
    )


# -- the engine --------------------------------------------------------------------------------


@dataclass
class _ArrayBuffers:
    """The ping-pong storage buffers and the readback buffer of one array size (bytes); with
    ``mapped`` (:data:`MAPPED_IO`) no readback buffer: ``a`` is written and the last pass's
    output read through their own mappings."""

    nbytes: int
    a: Any
    b: Any
    readback: Any
    bind_groups: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    mapped: bool = False
    # Buffers of this size whose lent results came back (LEND_RESULTS), for the next one lent.
    spare: list[Any] = field(default_factory=list)
    # The textures that texin dispatches read (TEXTURE_INPUT), by format: (texture, view).
    textures: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def forget(self, buffer: Any) -> None:
        """Drop the bind groups that bind ``buffer`` (it is let go)."""
        for key in [k for k in self.bind_groups if buffer in k[:2]]:
            del self.bind_groups[key]


class _Lease:
    """The owner of a lent result's memory: the mapping of a storage buffer, which goes back to
    its NdPasses when the last array on it is gone (the buffer is unmapped and reused there, on
    the next run: nothing GPU-side happens here, which may be any thread's garbage collection)."""

    __slots__ = ("__array_interface__", "_buffer", "_returned")

    def __init__(self, buffer: Any, address: int, shape: tuple[int, ...], returned: Any) -> None:
        self.__array_interface__ = {
            "data": (address, False), "shape": shape, "typestr": "<f4", "version": 3,
        }  # fmt: skip
        self._buffer = buffer
        self._returned = returned

    def __del__(self) -> None:
        try:
            self._returned.append(self._buffer)
        except Exception:  # no-cover: interpreter shutdown
            pass


#: Upload into and read back from the ping-pong storage buffers themselves, mapped, where the
#: device has wgpu's native feature "mappable-primary-buffers" (blurapp.gpu.device requests it
#: on software and integrated adapters, whose memory is the host's): one copy each way instead
#: of a staging copy and a buffer-to-buffer copy on the GPU each way.
MAPPED_IO = True

#: Copies into and out of a mapping of at least this many bytes are split between this thread
#: and :data:`_COPY_THREADS` - 1 others (numpy's copy releases the GIL; lavapipe's threads are
#: idle then). Whole 1080p calls, one thread / split, interleaved (quiet, medians of 11), ms:
#: uniform_filter 5 8.28 / 7.93, sobel 7.88 / 7.43, gaussian_filter sigma=2 17.28 / 16.06.
#: At 1 MP (4 MB) the other thread's wake-up costs more than it saves: one thread / split,
#: after a scipy call each, medians of 30-50, ms: 1001^2 uniform 3.91 / 3.97 and 4.95 / 5.23,
#: sobel 3.96 / 4.08 and 4.26 / 4.39, sigma=1 5.32 / 5.46; 1024^2 uniform 4.01 / 4.16, sobel
#: 4.18 / 4.43; 1080p (8.3 MB) still gains from the split (uniform 6.83 / 6.60, sobel 6.11 /
#: 6.04). Hence 6 MiB, not the 2 MiB it was.
PARALLEL_COPY_BYTES = 6 << 20
PARALLEL_IO = True
#: On a software adapter, whose mapped buffers are the host's own memory, a float32 result that
#: the caller takes as a new array (NdPasses.run's ``lend``) is the mapping of the buffer it
#: was computed in: no copy out of it (1080p uniform_filter 8.66 -> 7.47 ms, sobel 8.22 ->
#: 7.16, gaussian sigma=2 14.78 -> 13.14, copy against none, interleaved, medians of 41). The
#: buffer stays mapped while any array on it lives, then goes back to the engine (_Lease).
#: Where memory is not the host's (an integrated GPU's may be uncached), results are copied.
LEND_RESULTS = True
_COPY_THREADS = max(1, min(4, os.cpu_count() or 1))
_copy_pool: ThreadPoolExecutor | None = None
_copy_pool_lock = threading.Lock()


def _forget_copy_pool() -> None:
    """A forked child has none of its parent's threads: it starts a pool of its own (and a
    mapping's lock of its own, which a parent's thread may have held at the fork)."""
    global _copy_pool, _copy_pool_lock, _map_done
    _copy_pool = None
    _copy_pool_lock = threading.Lock()
    _map_done = threading.Condition()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_copy_pool)


def _parallel_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``np.copyto(dst, src)`` of two arrays of one shape, in parts along the first axis on
    several threads when it is large (:data:`PARALLEL_COPY_BYTES`)."""
    if dst.ndim == 0:
        np.copyto(dst, src)
        return
    _in_parts(len(dst), dst.nbytes, lambda a, b: np.copyto(dst[a:b], src[a:b]))


def _in_parts(rows: int, nbytes: int, work: Callable[[int, int], None]) -> None:
    """``work(a, b)`` over the rows 0 to ``rows``: at once, or where ``nbytes`` (the data it
    writes) is large (:data:`PARALLEL_COPY_BYTES`), in parts on the copy pool's threads and
    this one (numpy lets go of the GIL in its loops)."""
    global _copy_pool
    parts = _COPY_THREADS if nbytes >= PARALLEL_COPY_BYTES and rows >= 2 else 1
    if parts == 1:
        work(0, rows)
        return
    with _copy_pool_lock:
        if _copy_pool is None:
            _copy_pool = ThreadPoolExecutor(_COPY_THREADS - 1, thread_name_prefix="blurapp-copy")
        pool = _copy_pool
    bounds = [rows * k // parts for k in range(parts + 1)]
    futures = [pool.submit(work, a, b) for a, b in itertools.pairwise(bounds[1:])]
    try:
        work(0, bounds[1])
    finally:
        for f in futures:
            f.result()


#: NdPasses.run records its commands through wgpu-native's functions (:mod:`blurapp.gpu.commands`)
#: rather than wgpu-py's encoder and pass objects: recording and submitting a 1001 x 1001
#: uniform_filter's commands after 5 ms of other work took 0.61-0.69 ms through wgpu-py,
#: 0.30-0.32 through wgpu-native's functions (medians of 30).
RAW_COMMANDS = True

#: NdPasses.run maps its buffers on the calling thread (:func:`_map_here`) rather than through
#: wgpu-py's ``map_async().sync_wait()``, which wakes wgpu-py's poll thread to poll and hand
#: the mapping back: on the 2-vCPU VM a wake-up of a thread on an idle vCPU takes 40-90 us
#: (a threading.Event round trip: 78 us, 175 us after 5 ms idle), and a call made several.
#: Whole calls after a scipy call, alternated, medians of 30-40, ms, poll thread / here:
#: 1001 x 1001 uniform_filter 5 6.24 / 5.76, sobel 5.03 / 4.72; 1080p uniform 7.35 / 6.47,
#: sobel 6.60 / 6.21; 64 x 64 uniform 0.82 / 0.67.
MAP_HERE = True


#: How long :func:`_map_here` polls for a mapping's callback before it gives up (a lost device).
MAP_WAIT_S = 60.0


def _submit(device: Any, commands: Any) -> int | None:
    """``device.queue.submit([commands])``; with :data:`MAP_HERE` through wgpu-native's
    ``wgpuQueueSubmitForIndex``, whose submission index :func:`_map_here` waits for (else
    None)."""
    queue = device.queue
    if not (MAP_HERE and hasattr(queue, "_internal") and hasattr(commands, "_internal")):
        queue.submit([commands])
        return None
    from wgpu.backends.wgpu_native._api import libf, new_array

    handles = new_array("WGPUCommandBuffer[]", [commands._internal])
    return int(libf.wgpuQueueSubmitForIndex(queue._internal, 1, handles))


def _map(device: Any, buffer: Any, mode: str, submitted: int | None = None) -> None:
    """Map the whole idle or just-submitted ``buffer`` for ``mode`` ("READ" or "WRITE");
    ``submitted``: the submission index (:func:`_submit`) that last used it."""
    if MAP_HERE and _can_map_here(buffer):
        _map_here(device, buffer, mode, submitted)
        return
    # The work was submitted: no empty submission to "sync" a read first (what
    # map_async("READ") adds each time; wgpu's own read_buffer maps the same way).
    mapping = buffer.map_async("READ_NOSYNC" if mode == "READ" else mode)
    poll = getattr(device, "_poll", None)
    if poll is not None and mode == "WRITE":
        # The buffer is idle: a poll on this thread maps it at once.
        poll(False)
    mapping.sync_wait()


def _can_map_here(buffer: Any) -> bool:
    """Whether ``buffer`` is a wgpu-native buffer whose map state :func:`_map_here` can keep as
    wgpu-py keeps it (wgpu 0.32's GPUBuffer attributes)."""
    return all(hasattr(buffer, name) for name in
               ("_internal", "_map_state", "_mapped_status", "_mapped_memoryviews"))  # fmt: skip


#: The mappings' one callback (made on first use) and what it hands over: each mapping's status
#: by its key (the callback's userdata), under _map_done, which it notifies. One callback for
#: all, and a callback info struct per thread: a cffi callback, a threading.Event and the struct
#: made for each mapping took 32, 45 and 52 us after a scipy call (the interpreter's caches
#: cold; medians of 60); a write mapping and its unmap, 259 -> 155 us.
_map_done = threading.Condition()
_map_status: dict[int, int] = {}
_map_abandoned: set[int] = set()  # keys of mappings that failed before wgpu called them back
_map_keys = itertools.count(1)
_map_local = threading.local()  # .info: this thread's WGPUBufferMapCallbackInfo
_on_mapped: Any = None


def _mapped(code: int, key: int) -> None:
    """A mapping's callback: hand its status over to the thread waiting for it."""
    with _map_done:
        if key in _map_abandoned:
            _map_abandoned.discard(key)
            return
        _map_status[key] = code
        _map_done.notify_all()


def _map_info() -> Any:
    """This thread's callback info for wgpuBufferMapAsync (its userdata1 set per mapping)."""
    global _on_mapped
    info = getattr(_map_local, "info", None)
    if info is None:
        from wgpu.backends.wgpu_native._api import ffi, lib

        with _map_done:
            if _on_mapped is None:

                @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
                def on_mapped(code: int, _message: Any, userdata1: Any, _userdata2: Any) -> None:
                    _mapped(code, int(ffi.cast("intptr_t", userdata1)))

                _on_mapped = on_mapped
        info = _map_local.info = ffi.new("WGPUBufferMapCallbackInfo *")
        info.mode = lib.WGPUCallbackMode_AllowProcessEvents
        info.callback = _on_mapped
    return info


def _map_here(device: Any, buffer: Any, mode: str, submitted: int | None = None) -> None:
    """``buffer.map_async(mode).sync_wait()`` for the whole buffer, polled on this thread: a
    write mapping of an idle buffer completes in a poll that does not wait, a read mapping in
    one that waits for the submission ``submitted`` (the GPU's fence wakes this thread itself;
    not for work other threads submitted after it; None: for the whole queue). The buffer's
    wgpu-py state is set as its own ``map_async`` sets it (its ``unmap``, ``read_mapped`` and
    ``write_mapped`` work after it); a failed mapping leaves it unmapped and raises."""
    from wgpu import enums
    from wgpu.backends.wgpu_native._api import ffi, lib, libf

    map_mode = lib.WGPUMapMode_Read if mode == "READ" else lib.WGPUMapMode_Write
    key = next(_map_keys)
    info = _map_info()
    info.userdata1 = ffi.cast("void *", key)

    def settle(seconds: float) -> None:
        """Poll the whole queue until wgpu has called back, for at most ``seconds``. wgpu calls
        back in whichever thread's poll finds the mapping done: another thread (wgpu-py's poll
        thread, another call's _map_here) may hold the callback, waiting for the GIL to run it,
        while this thread's polls find nothing left to do; so between polls this thread waits
        for the callback itself, letting go of the GIL."""
        deadline = time.monotonic() + seconds
        while key not in _map_status:
            libf.wgpuDevicePoll(device._internal, True, ffi.NULL)
            with _map_done:
                if _map_done.wait_for(lambda: key in _map_status, 0.0005):
                    return
            if time.monotonic() > deadline:
                return

    def status() -> list[int]:
        """The mapping's status, taken ([] where wgpu has not called back: then it never
        hands it over)."""
        with _map_done:
            if key in _map_status:
                return [_map_status.pop(key)]
            _map_abandoned.add(key)  # wgpu may still call back
            return []

    buffer._map_state = enums.BufferMapState.pending
    try:
        libf.wgpuBufferMapAsync(buffer._internal, map_mode, 0, buffer.size, info[0])
        if mode == "READ" and submitted is not None:
            index = ffi.new("WGPUSubmissionIndex *", submitted)
            libf.wgpuDevicePoll(device._internal, True, index)
        else:
            libf.wgpuDevicePoll(device._internal, mode == "READ", ffi.NULL)
        if key not in _map_status:
            settle(MAP_WAIT_S)  # not mapped yet: the buffer was busy, or another thread called back
    except BaseException:
        # Interrupted in a poll (Ctrl-C) or failed: leave the buffer unmapped in wgpu too, or
        # every later call on it would find it mapped.
        try:
            settle(1.0)
            if status()[:1] == [lib.WGPUMapAsyncStatus_Success]:
                libf.wgpuBufferUnmap(buffer._internal)
        except Exception:  # no-cover: a lost device
            pass
        buffer._map_state = enums.BufferMapState.unmapped
        raise
    got = status()
    if got != [lib.WGPUMapAsyncStatus_Success]:
        buffer._map_state = enums.BufferMapState.unmapped
        raise RuntimeError(f"Could not map buffer (status {got}).")
    buffer._map_state = enums.BufferMapState.mapped
    buffer._mapped_status = 0, buffer.size, map_mode
    buffer._mapped_memoryviews = []


class _Written(abc.ABC):
    """An array NdPasses.run uploads by writing it into the mapped buffer itself (no copy of it
    made on the host first): its float32 ``shape``, ``size``, ``nbytes`` and ``write``."""

    shape: tuple[int, ...]
    size: int
    nbytes: int

    @abc.abstractmethod
    def write(self, target: np.ndarray) -> None:
        """Write the array into ``target`` (flat float32 of :attr:`size`)."""

    def array(self) -> np.ndarray:
        out = np.empty(self.shape, np.float32)
        self.write(out.reshape(-1))
        return out


class _Pairs(_Written):
    """The df64 pairs of ``x`` (float64 or one of :data:`_SMALL_INTS`) scaled by
    ``2**-exponent`` (:func:`_split`), split straight into the mapped buffer, a large array in
    parts on several threads: no (..., 2) float32 copy on the host, and the copy pool's thread
    splits while this one does (a 1 MP float64 array: ~3 ms on one thread, then 0.7 ms to copy
    the pairs into the buffer)."""

    def __init__(self, x: np.ndarray, exponent: int) -> None:
        if x.dtype not in _SMALL_INTS or not -100 <= exponent <= 100:
            x = np.ascontiguousarray(x, dtype=np.float64)
        self.x = x.reshape(-1) if x.flags.c_contiguous else np.ravel(x)
        self.exponent = exponent
        self.shape = (*np.shape(x), 2)
        self.size = x.size * 2
        self.nbytes = self.size * 4

    def write(self, target: np.ndarray) -> None:
        out = target[: self.size].reshape(-1, 2)
        x, e = self.x, self.exponent
        _in_parts(x.size, self.nbytes, lambda a, b: _split_into(x[a:b], out[a:b], e))


class _Padded(_Written):
    """An f32 array ``x`` with its lines along the last axis extended by ``before`` and ``after``
    columns, what NdPasses.run uploads for :func:`_padded_chain`: written into the mapped buffer
    at once (no padded copy on the host first). ``runs`` (:func:`_column_runs`) say which
    column of ``x`` each added column (the ``before`` ones, then the ``after`` ones) copies, or
    that it holds ``constant``. They are copied within the target after ``x`` (just written, so
    in cache: not a second gather over ``x``, which took ~0.3 ms of a 1001 x 1001 call), a run
    of columns whose sources go by one step at a time (a border's mapping is a few such runs)."""

    def __init__(
        self,
        x: np.ndarray,
        before: int,
        after: int,
        runs: Sequence[tuple[int, int, int, int]],
        constant: float,
    ) -> None:
        self.x, self.before, self.after = x, before, after
        self.shape = (*x.shape[:-1], x.shape[-1] + before + after)
        self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * 4
        self._runs = runs
        self._constant = np.float32(_f32(constant))

    def write(self, target: np.ndarray) -> None:
        """Write the padded array into ``target`` (flat float32 of :attr:`size`)."""
        n, b = self.x.shape[-1], self.before
        rows = self.size // self.shape[-1]
        t = target.reshape(rows, self.shape[-1])
        _parallel_copy(t[:, b : b + n], self.x.reshape(rows, n))
        for first, count, source, step in self._runs:
            at = first if first < b else first + n  # the added column's place in the line
            if source < 0:
                t[:, at : at + count] = self._constant
            elif step == 0:
                t[:, at : at + count] = t[:, b + source, None]
            else:
                stop = b + source + step * count
                t[:, at : at + count] = t[:, b + source : stop if stop >= 0 else None : step]


#: :func:`_column_runs`' source of an added column that nothing reads: it is left unwritten.
_UNREAD = -2


def _column_runs(sources: np.ndarray, before: int) -> list[tuple[int, int, int, int]]:
    """``sources`` (the column each added column copies, -1: the constant, _UNREAD: none; the
    ``before`` columns, then the others) as runs (first added column, count, first source,
    step): neighbouring added columns on one side whose sources go by one step (-1, 0 or +1),
    or are all -1; the _UNREAD ones in none."""
    runs: list[tuple[int, int, int, int]] = []
    for k, src in enumerate(int(v) for v in sources):
        if src == _UNREAD:
            continue
        if runs and k != before and k == runs[-1][0] + runs[-1][1]:
            first, count, start, step = runs[-1]
            if start < 0 and src < 0:
                runs[-1] = (first, count + 1, start, 0)
                continue
            if start >= 0 and src >= 0:
                if count == 1 and abs(src - start) <= 1:
                    runs[-1] = (first, 2, start, src - start)
                    continue
                if count > 1 and src == start + step * count:
                    runs[-1] = (first, count + 1, start, step)
                    continue
        runs.append((k, 1, src, 0))
    return runs


class NdPasses:
    """Runs :class:`_Dispatch` lists over storage buffers on one device; caches bounded.

    Thread-safe: runs are serialised by one lock. ``stats`` counts the GPU objects created
    (tests check that a repeated call creates none). ``max_binding`` (bytes) is the largest
    array one dispatch may bind: the device's storage-buffer binding limit unless set smaller
    (the slab tests force it).
    """

    def __init__(self, context: GpuContext | None = None, max_binding: int | None = None) -> None:
        self._ctx = context
        self._lock = threading.RLock()
        self.stats: Counter[str] = Counter()
        self.max_binding_override = max_binding
        self._pipelines: LruCache[tuple[Any, ...], Any] = LruCache(
            KEPT_PIPELINES, self._count("pipelines_evicted")
        )
        self._arrays: LruCache[tuple[int, bool], _ArrayBuffers] = LruCache(
            KEPT_ARRAYS, self._count("arrays_evicted")
        )
        self._layout: dict[str, tuple[Any, Any]] | None = None
        self._uniforms: list[Any] = []
        self._data: list[Any] = []
        # The bytes each slot's buffers hold (None: unknown).
        self._uniforms_held: list[bytes | None] = []
        self._data_held: list[bytes | None] = []
        self._data_capacity = _WEIGHTS_START
        self._baking: set[tuple[Any, ...]] = set()  # pipelines compiling in the background
        self._returned: deque[Any] = deque()  # buffers of lent results, back (_Lease)
        self._tuned: dict[str, Any] = {}  # blurapp.gpu.ndtune's answers for this adapter

    def _count(self, name: str) -> Any:
        def count(_key: Any, _value: Any) -> None:
            self.stats[name] += 1

        return count

    @property
    def context(self) -> GpuContext:
        if self._ctx is None:
            self._ctx = get_device()
        return self._ctx

    @property
    def max_binding(self) -> int:
        """Bytes of the largest array one dispatch binds."""
        if self.max_binding_override is not None:
            return int(self.max_binding_override)
        limits = self.context.device.limits
        return int(min(limits["max-storage-buffer-binding-size"], limits["max-buffer-size"]))

    def clear(self) -> None:
        """Drop every cached GPU object."""
        with self._lock:
            self._pipelines.clear()
            self._arrays.clear()
            self._uniforms.clear()
            self._data.clear()
            self._uniforms_held.clear()
            self._data_held.clear()
            self._data_capacity = _WEIGHTS_START

    # -- running -----------------------------------------------------------------------------

    def run(
        self,
        data: np.ndarray | _Written,
        dispatches: Sequence[_Dispatch],
        convert: Callable[[np.ndarray], np.ndarray] | None = None,
        lend: bool = False,
    ) -> np.ndarray:
        """Upload ``data`` (a C-contiguous float32 array), run ``dispatches`` one after another
        (each reads the previous one's output), read the last output back: float32 of
        ``data``'s shape, or what ``convert`` makes of a read-only view of the mapped buffer
        (valid only during the call: the df64 join reads it without a copy). ``lend``: where
        :data:`LEND_RESULTS` applies, the result is the mapped buffer itself instead (float32),
        a writable array that owns it until it is gone (:class:`_Lease`)."""

        watched = getattr(_planning, "active", None)
        if watched is not None:
            watched.runs += 1
        if not isinstance(data, _Written):
            data = np.ascontiguousarray(data, dtype=np.float32)
        nbytes = max(16, -(-data.nbytes // 16) * 16)  # whole vec4s: the shaders' widest load
        with self._lock, contextlib.ExitStack() as stack:
            device = self.context.device
            self._reclaim()
            bufs = self._array_buffers(self.buffer_bytes(nbytes))
            if bufs.mapped:
                # The buffer is idle: a poll on this thread maps it at once (waiting for wgpu's
                # poll thread to do it took ~1 ms, most of a small array's call).
                _map(device, bufs.a, "WRITE")
                try:
                    if PARALLEL_IO:
                        mapped = bufs.a._experimental_get_mapped_range(0, bufs.nbytes)
                        target = np.frombuffer(mapped, np.float32, count=data.size)
                        if isinstance(data, _Written):
                            data.write(target)
                        else:
                            _parallel_copy(target, data.reshape(-1))
                    else:
                        flat = data.array() if isinstance(data, _Written) else data
                        bufs.a.write_mapped(flat.reshape(-1))
                finally:
                    bufs.a.unmap()
            else:
                device.queue.write_buffer(
                    bufs.a, 0, data.array() if isinstance(data, _Written) else data
                )
            if RAW_COMMANDS and commands.available(device):
                encoder = stack.enter_context(commands.Encoder(device))
            else:
                encoder = device.create_command_encoder()
            src, dst = bufs.a, bufs.b
            compute = None
            textured = None  # the buffer whose contents a texture holds, and its format
            dispatches = [r for d in dispatches for r in self._ready(d)]
            self._ensure_slots(len(dispatches), max((len(d.data) for d in dispatches), default=0))
            for i, d in enumerate(dispatches):
                # A slot's uniforms and weights are written only when they change (a repeated
                # call on a small array writes none).
                if self._uniforms_held[i] != d.uniforms:
                    device.queue.write_buffer(self._uniforms[i], 0, d.uniforms)
                    self._uniforms_held[i] = d.uniforms
                if d.data and self._data_held[i] != d.data:
                    device.queue.write_buffer(self._data[i], 0, d.data)
                    self._data_held[i] = d.data
                pipeline = self._pipeline(d)
                if d.texin and textured != (src, d.texin):
                    if compute is not None:
                        compute.end()
                        compute = None
                    self._fill_texture(encoder, bufs, src, data.size, d.texin)
                    textured = (src, d.texin)
                # In place: the dispatches up to the pass's last read the texture alone, so
                # they write the buffer it was copied from (binding 0, which they never read,
                # takes the other buffer): one buffer fewer through the caches.
                in_place = TEXTURE_IN_PLACE and d.texin and textured == (src, d.texin)
                if in_place:
                    for e in dispatches[i:]:
                        if e.texin != d.texin:
                            in_place = False
                            break
                        if e.swap:
                            break
                if in_place:
                    group = self._bind_group(bufs, dst, src, i, d.texin, d.texstore)
                    self.stats["in_place"] += 1
                else:
                    group = self._bind_group(bufs, src, dst, i, d.texin, d.texstore)
                # One compute pass for all: each dispatch is its own usage scope in WebGPU, so
                # the next one sees this one's writes.
                compute = compute or encoder.begin_compute_pass()
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, group)
                gx, gy = _groups(d.invocations, d.wg)
                compute.dispatch_workgroups(gx, gy, 1)
                if in_place:
                    if d.swap:
                        textured = None  # src holds the pass's output now, not the texture's
                elif d.swap:
                    src, dst = dst, src
            if compute is not None:
                compute.end()
            readback = src if bufs.mapped else bufs.readback
            if not bufs.mapped:
                encoder.copy_buffer_to_buffer(src, 0, bufs.readback, 0, nbytes)
            finished = encoder.finish()
            try:
                submitted = _submit(device, finished)
            finally:
                if isinstance(finished, commands.CommandBuffer):
                    finished.release()
            _map(device, readback, "READ", submitted)
            if lend and bufs.mapped and self._lends():
                return self._lent(bufs, readback, data.shape)
            try:
                raw = readback.read_mapped(0, data.nbytes, copy=False)
                view = np.frombuffer(raw, dtype=np.float32).reshape(data.shape)
                if convert is None:
                    out = np.empty(data.shape, np.float32)
                    _parallel_copy(out.reshape(-1), view.reshape(-1))
                else:
                    out = convert(view)
            finally:
                readback.unmap()
        return out

    def buffer_bytes(self, nbytes: int) -> int:
        """The size of the buffers an array of ``nbytes`` (a multiple of 16) runs in: its size
        class (:data:`SIZE_CLASS_BYTES`), within the largest binding."""
        if nbytes <= SIZE_CLASS_BYTES:
            return nbytes
        step = 1 << (nbytes.bit_length() - 4)
        return max(nbytes, min(-(-nbytes // step) * step, self.max_binding // 16 * 16))

    def _lends(self) -> bool:
        return LEND_RESULTS and self.context.is_software

    def textures(self, elements: int) -> bool:
        """Whether dispatches over an array of ``elements`` floats (a df64 array's: two an
        element) may read it as a texture (:data:`TEXTURE_INPUT`: software adapters, whose
        texel fetches are cheaper than their storage loads; the texture's rows of
        TEXTURE_WIDTH * 4 floats within the device's 2-D texture limit)."""
        if not TEXTURE_INPUT or not elements:
            return False
        if not self.context.is_software and TEXTURE_INPUT != "always":  # "always": tests
            return False
        # The texture holds the buffers' size class (_fill_texture).
        rows = -(-self.buffer_bytes(max(16, -(-elements // 4) * 16)) // (16 * TEXTURE_WIDTH))
        return rows <= int(self.context.device.limits["max-texture-dimension-2d"])

    def _fill_texture(
        self, encoder: Any, bufs: _ArrayBuffers, src: Any, elements: int, fmt: str
    ) -> None:
        """Record the copy of ``src``'s ``elements`` floats into ``bufs``'s texture of format
        ``fmt`` (made on first use; rows of TEXTURE_WIDTH * 4 floats): the whole rows, then
        the last row's part, up to a partial last texel (an odd number of df64 pairs: the
        buffer holds whole 16 bytes)."""
        import wgpu

        texel = 16 if fmt == "rgba32float" else 4  # bytes
        width = TEXTURE_WIDTH * 16 // texel
        full, rest = divmod(-(-elements * 4 // texel), width)  # a partial last texel too
        made = bufs.textures.get(fmt)
        if made is None:
            # As large as the buffers, which arrays of other sizes in their class share.
            rows = -(-bufs.nbytes // (width * texel))
            texture = self.context.device.create_texture(
                size=(width, rows, 1),
                format=fmt,
                usage=wgpu.TextureUsage.TEXTURE_BINDING
                | wgpu.TextureUsage.STORAGE_BINDING
                | wgpu.TextureUsage.COPY_DST,
            )
            made = bufs.textures[fmt] = (texture, texture.create_view())
            self.stats["textures"] += 1
        row = TEXTURE_WIDTH * 16
        if rest and (full + 1) * row <= bufs.nbytes:
            # The last row whole too, the buffer's bytes after the array with it (no texel
            # past the array's is read): one copy command, not two (~45 us at 1 MP).
            full, rest = full + 1, 0
        if full:
            encoder.copy_buffer_to_texture(
                {"buffer": src, "offset": 0, "bytes_per_row": row, "rows_per_image": full},
                {"texture": made[0]},
                (width, full, 1),
            )
        if rest:
            encoder.copy_buffer_to_texture(
                {"buffer": src, "offset": full * row, "bytes_per_row": row, "rows_per_image": 1},
                {"texture": made[0], "origin": (0, full, 0)},
                (rest, 1, 1),
            )

    def _lent(self, bufs: _ArrayBuffers, buffer: Any, shape: tuple[int, ...]) -> np.ndarray:
        """The mapped ``buffer`` as the result array; ``bufs`` takes a spare one in its place."""
        from wgpu.backends.wgpu_native._api import ffi, libf

        address = int(
            ffi.cast("intptr_t", libf.wgpuBufferGetMappedRange(buffer._internal, 0, bufs.nbytes))
        )
        out = np.asarray(_Lease(buffer, address, shape, self._returned))
        replacement = bufs.spare.pop() if bufs.spare else self._new_buffer(bufs.nbytes)
        if buffer is bufs.a:
            bufs.a = replacement
        else:
            bufs.b = replacement
        self.stats["lent"] += 1
        return out

    def _new_buffer(self, nbytes: int) -> Any:
        import wgpu

        usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
                 | wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.MAP_WRITE)  # fmt: skip
        self.stats["buffers"] += 1
        return self.context.device.create_buffer(size=nbytes, usage=usage)

    def _reclaim(self) -> None:
        """Unmap the buffers of lent results that came back; keep two spares a size."""
        while self._returned:
            buffer = self._returned.popleft()
            try:
                buffer.unmap()
            except Exception:  # no-cover: a lost device's buffer is let go
                continue
            bufs = self._arrays.get((int(buffer.size), True))
            if bufs is not None and len(bufs.spare) < 2:
                bufs.spare.append(buffer)
            elif bufs is not None:
                bufs.forget(buffer)
            self.stats["returned"] += 1

    def _array_buffers(self, nbytes: int) -> _ArrayBuffers:
        import wgpu

        device = self.context.device
        mapped = MAPPED_IO and "mappable-primary-buffers" in device.features
        count = 2 if mapped else 3

        def make() -> _ArrayBuffers:
            usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
            self.stats["buffers"] += count
            if mapped:
                usage |= wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.MAP_WRITE
                return _ArrayBuffers(
                    nbytes,
                    device.create_buffer(size=nbytes, usage=usage),
                    device.create_buffer(size=nbytes, usage=usage),
                    None,
                    mapped=True,
                )
            return _ArrayBuffers(
                nbytes,
                device.create_buffer(size=nbytes, usage=usage),
                device.create_buffer(size=nbytes, usage=usage),
                device.create_buffer(
                    size=nbytes, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
                ),
            )

        key = (nbytes, mapped)
        if key not in self._arrays:
            held = sum((2 + len(b.spare) if b.mapped else 3) * b.nbytes
                       + len(b.textures) * b.nbytes
                       for b in self._arrays.values())  # fmt: skip
            if held + count * nbytes > KEPT_BYTES and len(self._arrays):
                # Large arrays: the other sizes' buffers go first (GPU memory, not a count,
                # bounds them: a 256^3 df64 array holds 384 MiB).
                self.stats["arrays_evicted"] += len(self._arrays)
                self._arrays.clear()
        return self._arrays.get_or_make(key, make)

    def _ensure_slots(self, passes: int, data_bytes: int) -> None:
        """A uniform and a weights buffer for each of ``passes`` passes, the latter of at least
        ``data_bytes``."""
        import wgpu

        device = self.context.device
        storage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        if data_bytes > self._data_capacity:
            capacity = max(_WEIGHTS_START, self._data_capacity)
            while capacity < data_bytes:
                capacity *= 2
            self._data_capacity = capacity
            self._data = []
            self._data_held = []
            for bufs in self._arrays.values():  # they bound the old buffers
                bufs.bind_groups.clear()
        while len(self._data) < passes:
            self._data.append(device.create_buffer(size=self._data_capacity, usage=storage))
            self._data_held.append(None)
            self.stats["buffers"] += 1
        while len(self._uniforms) < passes:
            self._uniforms.append(
                device.create_buffer(
                    size=_UNIFORM_BYTES, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
                )
            )
            self._uniforms_held.append(None)
            self.stats["buffers"] += 1

    def _layouts(self, texin: str = "", store: bool = False) -> tuple[Any, Any]:
        """The bind group layout and pipeline layout of every pass; ``texin``: with the
        input's texture of that format at binding 4 (:data:`TEXTURE_INPUT`), a read-only
        storage texture with ``store`` (:data:`TEXTURE_STORAGE`), else a sampled one."""
        import wgpu

        if self._layout is None:
            compute = wgpu.ShaderStage.COMPUTE
            device = self.context.device
            entries: list[dict[str, Any]] = [
                {"binding": 0, "visibility": compute, "buffer": {"type": "read-only-storage"}},
                {"binding": 1, "visibility": compute, "buffer": {"type": "storage"}},
                {"binding": 2, "visibility": compute, "buffer": {"type": "read-only-storage"}},
                {"binding": 3, "visibility": compute, "buffer": {"type": "uniform"}},
            ]
            # Made all at once (a background compile may ask for any of them): none, a sampled
            # texture (any float format), a read-only storage texture of each format.
            binding4: dict[str, dict[str, Any]] = {
                "sampled": {
                    "texture": {"sample_type": "unfilterable-float", "view_dimension": "2d"}
                }
            }
            for fmt in ("rgba32float", "r32float"):
                st = {"access": "read-only", "format": fmt, "view_dimension": "2d"}
                binding4[fmt] = {"storage_texture": st}
            self._layout = {}
            for kind, more in [("", None), *binding4.items()]:
                extra = [{"binding": 4, "visibility": compute, **more}] if more else []
                layout = device.create_bind_group_layout(entries=entries + extra)
                pipeline = device.create_pipeline_layout(bind_group_layouts=[layout])
                self._layout[kind] = (layout, pipeline)
        return self._layout[texin if store or not texin else "sampled"]

    def _bind_group(
        self,
        bufs: _ArrayBuffers,
        src: Any,
        dst: Any,
        slot: int,
        texin: str = "",
        store: bool = False,
    ) -> Any:
        key = (src, dst, slot, texin, store)
        group = bufs.bind_groups.get(key)
        if group is None:
            entries: list[dict[str, Any]] = [
                {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": bufs.nbytes}},
                {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": bufs.nbytes}},
                {"binding": 2, "resource": {"buffer": self._data[slot]}},
                {"binding": 3, "resource": {"buffer": self._uniforms[slot]}},
            ]
            if texin:
                entries.append({"binding": 4, "resource": bufs.textures[texin][1]})
            group = self.context.device.create_bind_group(
                layout=self._layouts(texin, store)[0], entries=entries
            )
            self.stats["bind_groups"] += 1
            bufs.bind_groups[key] = group
        return group

    @staticmethod
    def _key(d: _Dispatch) -> tuple[Any, ...]:
        return (d.shader, d.template, d.constants)

    def _compile(self, d: _Dispatch) -> Any:
        device = self.context.device
        code = load_shader(d.shader, **dict(d.template))
        module = device.create_shader_module(label=d.shader, code=code)
        self.stats["pipelines"] += 1
        return device.create_compute_pipeline(
            label=d.shader,
            layout=self._layouts(d.texin, d.texstore)[1],
            compute={"module": module, "entry_point": "main", "constants": dict(d.constants)},
        )

    def _pipeline(self, d: _Dispatch) -> Any:
        return self._pipelines.get_or_make(self._key(d), lambda: self._compile(d))

    def _ready(self, d: _Dispatch) -> list[_Dispatch]:
        """``[d]``, or (under the lock) its looped fallback while ``d``'s pipeline is not compiled
        yet: a small array does not wait a second for a new kernel length's compile, which
        then runs on a background thread (one at a time) for the next calls."""
        if d.fallback is None or self._key(d) in self._pipelines:
            return [d]
        if BAKE_IN_BACKGROUND and not self._baking:
            key = self._key(d)
            self._baking.add(key)
            self._layouts()  # made under the lock, before the thread uses it

            def bake() -> None:
                try:
                    pipeline = self._compile(d)  # wgpu's device is thread-safe
                    with self._lock:
                        self._pipelines[key] = pipeline
                finally:
                    with self._lock:
                        self._baking.discard(key)

            threading.Thread(target=bake, name="ndpass-bake", daemon=True).start()
        made = d.fallback()
        # A fused pair's fallback is its two passes, each with a looped fallback of its own.
        return [r for f in made for r in self._ready(f)] if isinstance(made, list) else [made]

    def wait_baked(self, timeout: float = 60.0) -> None:
        """Wait until no pipeline is being compiled in the background (tests)."""
        import time

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if not self._baking:
                    return
            time.sleep(0.01)


_passes_lock = threading.Lock()
_passes: NdPasses | None = None


def get_passes() -> NdPasses:
    """The per-process :class:`NdPasses` (its device is created on its first run)."""
    global _passes
    with _passes_lock:
        if _passes is None:
            _passes = NdPasses()
        return _passes


# -- the start-up check ------------------------------------------------------------------------

_status_lock = threading.Lock()
_status: tuple[bool, str, str] | None = None  # (ok, message, two_prod)
_warned = False


def _check_cases() -> np.ndarray:
    """(a, b, c, d) float32 quadruples: (a, b) and (c, d) are normalised df64 pairs
    (|b| < ulp(a)) whose TwoSum and product errors are non-zero, so that an optimised-away
    error term shows; the first has fl(a * b + c) != fl(fl(a * b) + c) (a fused one shows)."""
    rng = np.random.default_rng(12345)
    count = 256
    a = rng.uniform(0.5, 2.0, count)
    b = rng.uniform(-1.0, 1.0, count) * 2.0 ** rng.integers(-32, -25, count)
    c = rng.uniform(0.5, 2.0, count)
    d = rng.uniform(-1.0, 1.0, count) * 2.0 ** rng.integers(-32, -25, count)
    fixed = np.array(
        [
            [1.0 + 2.0**-23, 1.0 - 2.0**-23, -1.0, 2.0**-40],
            [1.0, 2.0**-30, 1.0, 2.0**-30],
            [3.0, 2.0**-27, -1.0 / 3.0, 2.0**-29],
        ]
    )
    return np.concatenate([fixed, np.stack([a, b, c, d], axis=1)]).astype(np.float32)


def _exact(v: float) -> Fraction:
    return Fraction(float(v))


def _check_primitives(out: np.ndarray, cases: np.ndarray) -> str | None:
    """What is wrong with the check shader's results (None: every one exact)."""
    f32 = np.float32
    for i, (a, b, c, d) in enumerate(cases):
        o = out[i]
        ea, eb = _exact(a), _exact(b)
        if _exact(o[0]) != _exact(f32(a) + f32(b)) or _exact(o[0]) + _exact(o[1]) != ea + eb:
            return f"TwoSum is not exact (case {i}): the error term was reassociated away"
        if abs(a) >= abs(b) and _exact(o[2]) + _exact(o[3]) != ea + eb:
            return f"FastTwoSum is not exact (case {i}): the error term was reassociated away"
        if _exact(o[4]) != _exact(f32(a) * f32(b)) or _exact(o[4]) + _exact(o[5]) != ea * eb:
            return f"TwoProd is not exact (case {i}): the product's error term is wrong"
        if i == 0:  # not a normalised pair: for the contraction probe only
            continue
        # df_add and df_mul: to about 2^-44 of the operands (their defined accuracy).
        add_exact = ea + eb + _exact(c) + _exact(d)
        if abs(_exact(o[6]) + _exact(o[7]) - add_exact) > Fraction(2) ** -44 * (
            abs(ea) + abs(_exact(c)) + Fraction(2) ** -100
        ):
            return f"df64 addition is inaccurate (case {i})"
        mul_exact = (ea + eb) * (_exact(c) + _exact(d))
        if (
            abs(_exact(o[8]) + _exact(o[9]) - mul_exact)
            > Fraction(2) ** -44 * abs(ea * _exact(c)) + Fraction(2) ** -100
        ):
            return f"df64 multiplication is inaccurate (case {i})"
    return None


def _run_check(passes: NdPasses, two_prod: str) -> tuple[str | None, bool]:
    """The primitives on the adapter with ``two_prod``: what failed (or None), and whether the
    adapter contracts a * b + c into a fused multiply-add."""
    cases = _check_cases()
    outputs = np.zeros((len(cases), 12), dtype=np.float32)
    uniforms = struct.pack("<IfII", len(cases), 1.0, 0, 0)
    # The check shader reads `inputs` as vec4 (the ping-pong buffer), writes `outputs` (the
    # other one): one buffer size for both, so the data is padded to the larger.
    data = np.zeros(outputs.size, dtype=np.float32)
    data[: cases.size] = cases.ravel()
    d = _Dispatch("nd_df64_check", (("two_prod", two_prod),), (), uniforms, b"", len(cases))
    out = passes.run(data, [d]).reshape(len(cases), 12)
    a, b, c = (float(v) for v in cases[0, :3])
    contracted = _exact(out[0, 10]) != _exact(np.float32(np.float32(a) * np.float32(b)) + c)
    return _check_primitives(out, cases), contracted


def _end_to_end(passes: NdPasses, two_prod: str) -> str | None:
    """A chain (a derivative, then 6 random taps) and an n-D correlation on 1e8-offset data through
    the real df64 shaders, the unrolled and the looped ones, against the float64 reference
    within the 1e-12 goal; what failed, or None."""
    rng = np.random.default_rng(7)
    x = 1e8 + rng.normal(size=(7, 36))
    lines = [
        Line(1, np.array([-0.5, 0.0, 0.5]), Border(BorderMode.REFLECT)),
        Line(0, rng.normal(size=6), Border(BorderMode.CONSTANT), origin=1, cval=1e8 + 0.5),
    ]
    want = ndreference.correlate1d_chain(x, lines)
    bound = 1e-12 * math.prod(float(np.abs(ln.weights).sum()) for ln in lines) * 1e8
    w = rng.normal(size=(3, 4))
    w[1, 2] = 0.0
    borders = (Border(BorderMode.WRAP), Border(BorderMode.CLAMP))
    want_nd = ndreference.correlate_nd(x, w, borders, (1, -1))
    bound_nd = 1e-12 * float(np.abs(w).sum()) * 1e8
    for small, family in ((0, "unrolled"), (1 << 62, "looped")):
        _forced.small = small
        _forced.bake = False  # the looped family really runs (no baked pipeline taken)
        try:
            got = _chain_gpu(passes, x, lines, "df64", two_prod)
            got_nd = _nd_gpu(passes, x, w, borders, nd_centres(w.shape, (1, -1)), 0.0, "df64",
                             two_prod)  # fmt: skip
        finally:
            del _forced.small, _forced.bake
        err = float(np.max(np.abs(got - want)))
        if not err <= bound:
            return f"a df64 chain ({family} shaders) is off by {err:.3g} (allowed {bound:.3g})"
        err = float(np.max(np.abs(got_nd - want_nd)))
        if not err <= bound_nd:
            return (
                f"a df64 n-D correlation ({family} shaders) is off by {err:.3g} "
                f"(allowed {bound_nd:.3g})"
            )
    return None


def df64_status(*, refresh: bool = False) -> tuple[bool, str]:
    """Whether the double-float passes are exact on this adapter, and why (cached per process).

    Runs a small shader proving that TwoSum and TwoProd keep their error terms (no contraction
    of a*b+c into an FMA, no reassociation of (a+b)-a), with the product's error from a fused
    ``fma`` where that is exact, else Dekker's split; then a df64 chain on 1e8-offset data
    against the float64 reference.

    Arguments:
        refresh: run the check again instead of returning the cached answer.

    Returns:
        ``(ok, message)``: the message names the adapter and the method, or what failed.

    Raises:
        GpuUnavailableError: no adapter.
    """
    global _status
    with _status_lock:
        if _status is None or refresh:
            _status = _df64_check(get_passes())
        return _status[0], _status[1]


def _df64_check(passes: NdPasses) -> tuple[bool, str, str]:
    name = passes.context.info["summary"]
    failures = []
    for two_prod in ("fma", "dekker"):
        problem, contracted = _run_check(passes, two_prod)
        problem = problem or _end_to_end(passes, two_prod)
        if problem is None:
            how = "fused fma" if two_prod == "fma" else "Dekker's split (fma is not fused here)"
            fused = (
                "; a*b+c is contracted here, harmlessly (products that feed a sum are opaque)"
                if contracted
                else "; a*b+c is not contracted"
            )
            return True, f"df64 is exact on {name} (products' errors by {how}{fused})", two_prod
        failures.append(f"{two_prod}: {problem}")
    return False, f"df64 is not exact on {name}: {'; '.join(failures)}", ""


def _two_prod() -> str:
    assert _status is not None and _status[0]
    return _status[2]


def _df64_available() -> bool:
    """df64_status()'s answer; the first time it is False, one RuntimeWarning says so."""
    global _warned
    ok, message = df64_status()
    if not ok and not _warned:
        _warned = True
        warnings.warn(
            f"{message}; float64 filters run on the CPU (blurapp's float64 numpy reference) "
            "instead",
            RuntimeWarning,
            stacklevel=3,
        )
    return ok


# -- public API --------------------------------------------------------------------------------


def _as_input(x: np.ndarray, precision: str, small_ints: bool = False) -> np.ndarray:
    """``x`` as the passes' arithmetic takes it: float32 (f32) or float64 (df64); with
    ``small_ints``, a df64 input of a :data:`_SMALL_INTS` dtype as it is."""
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise ImageError(f"the array must be real numbers, got dtype {x.dtype}")
    if small_ints and precision == "df64" and x.dtype in _SMALL_INTS:
        return x
    return np.asarray(x, dtype=np.float32 if precision == "f32" else np.float64)


def correlate1d_chain(
    x: np.ndarray,
    passes: Sequence[Line],
    *,
    precision: Precision,
    passes_engine: NdPasses | None = None,
    out: np.ndarray | None = None,
    lend: bool = False,
) -> np.ndarray:
    """Run 1-D correlations one after another on the GPU, each ``scipy.ndimage.correlate1d``.

    The passes run without reading back between them (ping-pong storage buffers) where the
    array fits one storage-buffer binding; beyond it, pass by pass over slabs (module
    docstring).

    Arguments:
        x: any shape (ndim >= 1; a 0-d array is taken as 1 element); float32 for ``"f32"``
            and float64 for ``"df64"`` (other real dtypes are cast to those).
        passes: the :class:`Line` passes, in order; each one's axis, weights, border, origin
            (``centre = len(weights) // 2 + origin``) and cval mean what they mean in
            ``scipy.ndimage.correlate1d``: every tap is multiplied, zero weights too, so a NaN
            under a zero tap spreads as it does there.
        precision: ``"f32"`` (accumulated in f32) or ``"df64"`` (double-float; where
            :func:`df64_status` fails, the float64 numpy reference, with one warning).
        passes_engine: the :class:`NdPasses` to run on (default: the process's).
        out: a C-contiguous array of the result's shape and dtype that receives it (it may
            be ``x`` itself): the read-back goes straight into it, without a new array and a
            copy (at 1 MP, 3 ms of a 20 ms call went to those).
        lend: a float32 result may be the mapped buffer it was computed in instead of a new
            array or ``out`` (:data:`LEND_RESULTS`, software adapters): a writable array, no
            copy (:func:`is_lent` tells).

    Returns:
        The result, of ``x``'s shape, float32 (``"f32"``) or float64 (``"df64"``): ``out``
        where given.

    Raises:
        UsageError: an unknown precision. numpy's AxisError: a pass's axis out of range.
        ImageError: not a real array, or one slab cannot fit the adapter.
        GpuUnavailableError: no adapter.
    """
    _check_precision(precision)
    x = _as_input(x, precision, small_ints=True)
    dtype = _result_dtype(precision)
    shape = x.shape
    flat = x.reshape(-1) if x.ndim == 0 else x
    lines = [_with_axis(ln, normalise_axis(ln.axis, flat.ndim)) for ln in passes]
    if out is not None and (out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous):
        raise ValueError(f"out must be a C-contiguous {dtype} array of shape {shape}")
    if flat.size == 0:
        result = x.astype(dtype)
    elif precision == "df64" and not _df64_available():
        result = ndreference.correlate1d_chain(flat, lines).reshape(shape)
    else:
        engine = passes_engine or get_passes()
        two_prod = _two_prod() if precision == "df64" else "fma"
        into = None if out is None else out.reshape(flat.shape)
        result = _chain_gpu(engine, flat, lines, precision, two_prod, into, lend).reshape(shape)
    if out is None or (lend and is_lent(result)):
        return result
    if not np.may_share_memory(result, out):
        np.copyto(out, result)
    return out


def is_lent(a: np.ndarray) -> bool:
    """Whether ``a``'s memory is a lent GPU buffer's (NdPasses.run's ``lend``)."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return isinstance(a, _Lease)


def _copied(view: np.ndarray, into: np.ndarray) -> np.ndarray:
    _parallel_copy(into.reshape(-1), view.reshape(-1))
    return into


def _with_axis(line: Line, axis: int) -> Line:
    if line.axis == axis:
        return line
    return Line(axis, line.weights, line.border, line.origin, line.cval)


def _shape3(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1 :])


def _chain_gpu(
    engine: NdPasses,
    x: np.ndarray,
    lines: Sequence[Line],
    precision: str,
    two_prod: str,
    into: np.ndarray | None = None,
    lend: bool = False,
) -> np.ndarray:
    """The chain on the GPU (df64: scaled by powers of two around it); the result read back
    into ``into`` (x's shape and dtype, C-contiguous) where given and the array fits one
    binding, else a new array (f32 with ``lend``: maybe the mapped buffer, NdPasses.run)."""
    if not lines:
        return x.copy()
    elem = _elem_bytes(precision)
    df = precision == "df64"
    # Powers of two that bring max|x| and each pass's max|w| into [0.5, 1): exact, and no
    # finite value overflows or vanishes in f32's range on the way.
    x_exp = 0
    w_exps = [0] * len(lines)
    if df:
        cvals = [abs(ln.constant) for ln in lines if ln.border.mode is BorderMode.CONSTANT]
        finite_cvals = [c for c in cvals if math.isfinite(c)]
        x_exp = _pow2_exponent(max([finite_max(x), *finite_cvals]))
        w_exps = [_pow2_exponent(finite_max(ln.weights)) for ln in lines]
    if _channels_apart(x.shape, lines, precision):
        return _chain_in_parts(engine, x, lines, x.ndim - 1, 1, precision, two_prod, into)
    pad = _line_padding(x.shape, lines, precision)
    if pad is not None and (x.size // x.shape[-1]) * sum(pad, x.shape[-1]) <= _slab_elements(
        engine, elem
    ):
        return _padded_chain(engine, x, lines, pad, two_prod, into, lend)
    if x.size <= _slab_elements(engine, elem):
        data = _Pairs(x, x_exp) if df else x
        dispatches, exp_in = _dispatches(engine, x.shape, lines, precision, two_prod, x_exp,
                                         tuple(w_exps))  # fmt: skip
        if df:
            return engine.run(data, dispatches, lambda v: _join(v, exp_in, into))
        return _planned(_run_plain, engine, x, (dispatches,), into, lend)
    # Too large for one binding: along an axis no pass runs along (a colour image's channels,
    # a stack's images), parts that fit run the whole chain each; else pass by pass, each
    # over slabs that fit.
    part = _untouched_part(x.shape, lines, _slab_elements(engine, elem))
    if part is not None:
        return _chain_in_parts(engine, x, lines, *part, precision, two_prod, into)
    out = x.astype(np.float64) if x.dtype in _SMALL_INTS else x
    for ln, w_exp in zip(lines, w_exps, strict=True):
        if df:  # each pass's data scaled afresh (the chain's scale is not carried across)
            extra = [abs(ln.constant)] if ln.border.mode is BorderMode.CONSTANT else []
            x_exp = _pow2_exponent(max([finite_max(out), *[c for c in extra if math.isfinite(c)]]))
        out = _line_in_slabs(engine, out, ln, precision, two_prod, x_exp, w_exp)
    return out


#: An f32 chain over a colour image (an array of 3 or more axes whose last one holds up to
#: CHANNELS_APART elements, which no pass runs along) with a pass along its rows (axis -2)
#: runs channel by channel, each gathered into a plane on the copy threads
#: (:func:`_chain_in_parts`), where the array has at least CHANNEL_PARTS elements: that pass
#: reads an interleaved image's lines with a stride of 3 (lavapipe's per-lane loads), a plane's
#: as vectors from a texture, and a plane's two passes fuse. Gaussian σ=1 passes, whole
#: calls, ms interleaved / apart: 1000x1000x3 along axis 1 37.8 / 16.7, both axes 50.2 / 19.1;
#: 2000x2000x3 154.3 / 48.8 and 165.2 / 63.0; 3000x4000x3 447.2 / 145.3 and 220.2 / 178.5. Not
#: for a pass along axis 0 alone (its lines are contiguous runs of a row's W x 3 values: 13.8 /
#: 22.8 ms at 1000x1000x3), nor df64 (1000x1000x3 both axes 69.1 / 108.6).
CHANNEL_PARTS = 1 << 18
CHANNELS_APART = 4


def _channels_apart(shape: tuple[int, ...], lines: Sequence[Line], precision: str) -> bool:
    """Whether a chain over an array of ``shape`` runs channel by channel (CHANNEL_PARTS)."""
    nd = len(shape)
    if precision != "f32" or not CHANNEL_PARTS or nd < 3 or not 2 <= shape[-1] <= CHANNELS_APART:
        return False
    if math.prod(shape) < CHANNEL_PARTS:
        return False
    axes = {normalise_axis(ln.axis, nd) for ln in lines}
    return nd - 2 in axes and nd - 1 not in axes


def _untouched_part(
    shape: tuple[int, ...], lines: Sequence[Line], slab: int
) -> tuple[int, int] | None:
    """For a chain over an array larger than one binding: an axis no pass runs along and how
    many of its indices a part takes, where one index's part fits ``slab`` elements (axis 0
    in blocks, views; another axis one index at a time): the one with the fewest parts, at
    most MAX_PARTS (each part is a call of its own); None where there is none."""
    size = math.prod(shape)
    touched = {normalise_axis(ln.axis, len(shape)) for ln in lines}
    best = None
    for u in range(len(shape)):
        if u in touched or shape[u] < 2 or size // shape[u] > slab:
            continue
        block = max(1, slab // (size // shape[u])) if u == 0 else 1
        parts = -(-shape[u] // block)
        if parts <= MAX_PARTS and (best is None or parts < best[0]):
            best = (parts, u, block)
    return None if best is None else (best[1], best[2])


#: The most parts :func:`_chain_in_parts` cuts an array into (a 3000 x 4001 x 3 image's pass
#: along axis 0 would otherwise be 4001 calls of 3000 x 3 elements, not 3 of its channels).
MAX_PARTS = 64


def _chain_in_parts(
    engine: NdPasses,
    x: np.ndarray,
    lines: Sequence[Line],
    axis: int,
    block: int,
    precision: str,
    two_prod: str,
    into: np.ndarray | None,
) -> np.ndarray:
    """The chain over ``x`` part by part along ``axis``, which no pass runs along (so the parts
    are independent): blocks of ``block`` indices of axis 0 read back straight into the
    result, or one index of another axis at a time, that axis dropped (the passes' axes after
    it one lower: a colour image's channel is a plane whose two passes may fuse)."""
    out = into if into is not None else np.empty(x.shape, _result_dtype(precision))
    engine.stats["parts"] += 1
    if axis == 0:
        for start in range(0, x.shape[0], block):
            _chain_gpu(engine, x[start : start + block], lines, precision, two_prod,
                       out[start : start + block])  # fmt: skip
        return out
    sub = [_with_axis(ln, ln.axis - (ln.axis > axis)) for ln in lines]
    index: list[Any] = [slice(None)] * x.ndim
    for i in range(x.shape[axis]):
        index[axis] = i
        # A channel of an interleaved image is a strided view: gathered and scattered on the
        # copy threads (_parallel_copy), as the transfers are.
        part = x[tuple(index)]
        if not part.flags.c_contiguous:
            view, part = part, np.empty(part.shape, part.dtype)
            _parallel_copy(part, view)
        result = _chain_gpu(engine, part, sub, precision, two_prod, None, True)
        _parallel_copy(out[tuple(index)], result)
    return out


def _result_dtype(precision: str) -> np.dtype:
    return np.dtype(np.float32 if precision == "f32" else np.float64)


#: Lines along the last axis whose length is not a multiple of PAD_LINES (the wide shaders'
#: chunk) are padded to one on the host where the array has at least SMALL elements and the
#: lines at least PAD_MIN_LINE elements: the chunked, fused and texture paths need whole vec4
#: chunks (vec4<u64> with WIDE_IO), and the scalar paths they leave otherwise ran 1001 x 1001
#: and 1080 x 1919 filters at 0.8-1.1x scipy.ndimage where 1024 x 1024 ran at 3-3.6x.
PAD_LINES = 8
PAD_MIN_LINE = 64
#: Where the last axis' pass is part of a fused pair (nd_plane.wgsl), the padding also moves the
#: real columns into the pair's interior strips (a whole strip before them, enough after):
#: the pair then runs as its interior dispatch alone, over the strips that hold real columns,
#: and the border dispatch, whose strips would only make the dropped columns, is not run (it
#: took ~0.25 ms of a 1001 x 1001 pair's ~2.5 on lavapipe: two workgroups of scalar loads).
PAD_INTERIOR = True
#: A padded chain's result taken as a new array (``lend``, LEND_RESULTS) is the lent mapped
#: buffer's real columns: a view with rows of the padded width (not C-contiguous; each row's
#: elements contiguous), not a copy of them into a new array, which took ~0.45 ms of a
#: 1001 x 1001 call on one thread after the GPU's work. Whole calls after a scipy call each,
#: medians of 30, ms, copied / lent (scipy): uniform_filter 5 5.03 / 4.53 (9.16), sobel 4.58 /
#: 4.05 (10.67), gaussian sigma=1 5.90 / 5.47 (13.28), sigma=2 8.12 / 7.55 (21.58).
LEND_PADDED = True


def _line_padding(
    shape: tuple[int, ...], lines: Sequence[Line], precision: str
) -> tuple[int, int] | None:
    """The columns (before, after) :func:`_padded_chain` adds to each line along the last axis,
    or None where the chain runs as it is: f32 chains over large arrays whose lines are not a
    multiple of PAD_LINES long, with at most one pass along the last axis, whose border is not
    constant unless that pass comes first (a pass along another axis would change a constant
    column, which the intermediate array's border never is)."""
    if precision != "f32" or not shape or not PAD_LINES:
        return None
    n = shape[-1]
    last = len(shape) - 1
    if n % PAD_LINES == 0 or n < PAD_MIN_LINE or math.prod(shape) < _small():
        return None
    along = [i for i, ln in enumerate(lines) if normalise_axis(ln.axis, len(shape)) == last]
    if len(along) > 1:
        return None
    before = after = 0
    if along:
        ln = lines[along[0]]
        if ln.border.mode is BorderMode.CONSTANT and along[0] != 0:
            return None
        before, after = ln.centre, ln.weights.size - 1 - ln.centre
    if along and PAD_INTERIOR and _pair_along_last(shape, lines):
        # The real columns in whole interior strips (_plane_dispatches' `lo` to `hi`): the
        # first at the start of strip ceil(centre / cols), the last one's strip's window
        # inside the padded line.
        cols = _plane_cols(n)
        start = -(-before // cols) * cols
        width = ((start + n - 1) // cols + 1) * cols + after
        width += -width % PAD_LINES
        if width - n <= n // 2:
            return start, width - start - n
    after += -(n + before + after) % PAD_LINES
    if before + after > n // 2:
        return None
    return before, after


def _pair_along_last(shape: tuple[int, ...], lines: Sequence[Line]) -> bool:
    """Whether :func:`_chain_dispatches` fuses the chain's pass along the last axis into a pair
    (nd_plane.wgsl) once its lines are a multiple of PAD_LINES long."""
    wide = (*shape[:-1], shape[-1] + -shape[-1] % PAD_LINES)
    last = len(shape) - 1
    return any(
        len(group) == 2 and last in (normalise_axis(ln.axis, len(shape)) for ln in group)
        for group in _chain_groups(wide, lines, fuse=True)
    )


def _chain_groups(
    shape: tuple[int, ...], lines: Sequence[Line], fuse: bool
) -> list[tuple[Line, ...]]:
    """The chain's passes as :func:`_chain_dispatches` runs them: consecutive pairs that fuse
    (:func:`_fusable`, where ``fuse``) taken greedily from the first, the others alone."""
    groups: list[tuple[Line, ...]] = []
    i = 0
    while i < len(lines):
        if fuse and i + 1 < len(lines) and _fusable(shape, lines[i], lines[i + 1]):
            groups.append((lines[i], lines[i + 1]))
            i += 2
        else:
            groups.append((lines[i],))
            i += 1
    return groups


def _padded_chain(
    engine: NdPasses,
    x: np.ndarray,
    lines: Sequence[Line],
    pad: tuple[int, int],
    two_prod: str,
    into: np.ndarray | None,
    lend: bool = False,
) -> np.ndarray:
    """The f32 chain over ``x`` with its lines along the last axis extended by ``pad`` columns
    holding what that axis' pass reads there (its border's mapped columns, or its constant),
    the extension cut off the result. Exact: the pass along the last axis reads the
    extension where it would read its border; passes along the other axes carry each column,
    the added ones too, independently (an added column is a copy of the column it maps to,
    so it becomes what the intermediate array's border would hold there); the added columns
    of the result, never read by an output, are dropped (the dispatches may leave them
    unmade). The real columns are copied out of the mapped result into ``into`` or a new
    array; with ``lend`` (:data:`LEND_PADDED`, where NdPasses.run lends) the result is their
    view in the lent buffer instead (rows of the padded width)."""
    before, after = pad
    n = x.shape[-1]
    last = x.ndim - 1
    along = [ln for ln in lines if normalise_axis(ln.axis, x.ndim) == last]
    mode = along[0].border.mode if along else None
    constant = along[0].constant if mode is BorderMode.CONSTANT else 0.0
    # Only the added columns an output kept reads are written: the last axis' pass reaches
    # `centre` columns before the line and `taps - 1 - centre` after it; the other added
    # columns feed only outputs that are cut off (the passes along other axes carry each
    # column alone). 1001 x 1001 reflect, whole calls after a scipy call, alternated, medians
    # of 100, all added columns / these, ms: uniform_filter 5 3.62 / 3.57, sobel 3.40 / 3.34,
    # gaussian sigma=1 4.14 / 4.08.
    reach = (along[0].centre, along[0].weights.size - 1 - along[0].centre) if along else (0, 0)
    runs = _pad_runs(n, before, after, mode, reach)
    shape = (*x.shape[:-1], n + before + after)
    dispatches, _ = _dispatches(engine, shape, lines, "f32", two_prod,
                                keep=(before, before + n))  # fmt: skip
    return _planned(_run_padded, engine, x, (pad, runs, constant, dispatches), into, lend)


def _run_padded(
    engine: NdPasses,
    x: np.ndarray,
    pad: tuple[int, int],
    runs: tuple[tuple[int, int, int, int], ...],
    constant: float,
    dispatches: tuple[_Dispatch, ...],
    into: np.ndarray | None,
    lend: bool,
) -> np.ndarray:
    """:func:`_padded_chain`'s run: ``x`` written padded (:class:`_Padded`), ``dispatches``
    over it, the real columns of the result."""
    before, after = pad
    n = x.shape[-1]
    rows = x.size // n
    engine.stats["padded"] += 1
    wide = _Padded(x, before, after, runs, constant)

    def cut(result: np.ndarray) -> np.ndarray:
        out = into if into is not None else np.empty(x.shape, np.float32)
        _parallel_copy(out.reshape(rows, n), result.reshape(rows, -1)[:, before : before + n])
        return out

    result = engine.run(wide, dispatches, cut, lend=LEND_PADDED and lend)
    # Lent: the padded buffer itself (wide.shape), whose real columns are the result.
    return result if result.shape == x.shape else result[..., before : before + n]


def _run_plain(
    engine: NdPasses,
    x: np.ndarray,
    dispatches: tuple[_Dispatch, ...],
    into: np.ndarray | None,
    lend: bool,
) -> np.ndarray:
    """:func:`_chain_gpu`'s f32 run of a chain that fits one binding: ``dispatches`` over
    ``x``, read back into ``into`` or a new array, or lent."""
    if into is not None:
        return engine.run(x, dispatches, lambda v: _copied(v, into), lend=lend)
    return engine.run(x, dispatches, lend=lend).reshape(x.shape)


# -- plans: a call's one GPU run, made again ---------------------------------------------------

_planning = threading.local()  # .active: the Planning of the call this thread is planning


class Plan:
    """The one GPU run a call made (:func:`planning`), to be made again on another C-ordered
    float32 array of the same shape: the same dispatches over the same engine, none of the
    planning before them. Its result is lent where the adapter lends, else a new array."""

    __slots__ = ("_engine", "_func", "_static")

    def __init__(self, engine: NdPasses, func: Callable[..., np.ndarray], static: tuple) -> None:
        self._engine = weakref.ref(engine)
        self._func, self._static = func, static

    def run(self, x: np.ndarray, engine: NdPasses) -> np.ndarray | None:
        """The run over ``x`` (the call's shape, float32, C order) on ``engine``; None where
        the plan was made on another engine."""
        if self._engine() is not engine:
            return None
        return self._func(engine, x, *self._static, None, True)


class Planning:
    """What a call ran on this thread while :func:`planning` watched it: its
    :func:`_planned` runs (each a Plan, the array it read and what it returned) and how many
    times NdPasses.run ran in all."""

    __slots__ = ("made", "runs")

    def __init__(self) -> None:
        self.made: list[tuple[Plan, np.ndarray, np.ndarray]] = []
        self.runs = 0

    def plan_for(self, x: np.ndarray, result: Any) -> Plan | None:
        """The Plan that makes ``result`` from ``x`` again: where the call ran one chain,
        once, over ``x`` itself (not a copy, not a part), and returned that run's result as
        it came (the same memory, shape and strides: the lent buffer, or where the adapter
        lends none the new array the run read back into); else None."""
        if self.runs != 1 or len(self.made) != 1:
            return None
        plan, read, returned = self.made[0]
        same = (read.__array_interface__["data"] == x.__array_interface__["data"]
                and read.shape == x.shape and read.strides == x.strides
                and read.dtype == x.dtype)  # fmt: skip
        if not same or type(result) is not np.ndarray:
            return None
        if result.__array_interface__ != returned.__array_interface__:
            return None
        return plan


@contextlib.contextmanager
def planning() -> Any:
    """Watch the GPU runs of the call made inside (on this thread): yields a
    :class:`Planning`, or None inside another one (the outer call plans)."""
    if getattr(_planning, "active", None) is not None:
        yield None
        return
    watched = _planning.active = Planning()
    try:
        yield watched
    finally:
        _planning.active = None


def _planned(
    func: Callable[..., np.ndarray],
    engine: NdPasses,
    x: np.ndarray,
    static: tuple,
    into: np.ndarray | None,
    lend: bool,
) -> np.ndarray:
    """``func(engine, x, *static, into, lend)``, recorded as a :class:`Plan` where this
    thread is planning a call."""
    out = func(engine, x, *static, into, lend)
    watched = getattr(_planning, "active", None)
    if watched is not None:
        watched.made.append((Plan(engine, func, static), x, out))
    return out


def _dispatches(
    engine: NdPasses,
    shape: tuple[int, ...],
    lines: Sequence[Line],
    precision: str,
    two_prod: str,
    x_exp: int = 0,
    w_exps: tuple[int, ...] | None = None,
    keep: tuple[int, int] | None = None,
) -> tuple[tuple[_Dispatch, ...], int]:
    """:func:`_chain_dispatches` on ``engine``'s adapter: its features, whether its passes read
    textures, and its fused pairs' answer (:func:`_plane_textures`)."""
    features = engine.context.device.features
    texin = engine.textures(math.prod(shape) * _elem_bytes(precision) // 4)
    return _chain_dispatches(
        shape, lines, precision, two_prod, x_exp, w_exps or (0,) * len(lines),
        WIDE_IO and WIDE_FEATURE in features, SHUFFLE and SHUFFLE_FEATURE in features,
        texin, texin and precision == "f32" and _plane_textures(engine, shape, lines), keep,
    )  # fmt: skip


@functools.lru_cache(maxsize=256)
def _pad_runs(
    n: int, before: int, after: int, mode: BorderMode | None, reach: tuple[int, int] | None = None
) -> tuple[tuple[int, int, int, int], ...]:
    """:func:`_column_runs` of the columns :func:`_padded_chain` adds to lines of ``n`` under
    the border ``mode`` (None: no pass along the lines; every added column a constant).
    ``reach`` (lo, hi): only the added columns an output kept reads, the ``lo`` just before the
    line and the ``hi`` just after it (None: all of them); the others are left as they are."""
    at = np.r_[np.arange(-before, 0), np.arange(n, n + after)]
    sources = np.full(before + after, -1) if mode is None else Border(mode).map_indices(at, n)
    if reach is not None:
        sources = np.where((at >= -reach[0]) & (at < n + reach[1]), sources, _UNREAD)
    return tuple(_column_runs(sources, before))


def _plane_textures(engine: NdPasses, shape: tuple[int, ...], lines: Sequence[Line]) -> bool:
    """Whether the chain's fused pairs read a texture (:data:`TEXTURE_PLANES`); asked of
    :mod:`blurapp.gpu.ndtune` only where the chain has a pair that splits (a small array's
    does not)."""
    if isinstance(TEXTURE_PLANES, bool):
        return TEXTURE_PLANES
    if math.prod(shape) < _small() or not any(
        _fusable(shape, a, b) for a, b in itertools.pairwise(lines)
    ):
        return True
    from blurapp.gpu import ndtune

    return ndtune.plane_textures(engine)


def _line_key(ln: Line) -> tuple[Any, ...]:
    # The cval as its bits: NaN keys equal to NaN.
    return (ln.axis, ln.weights.tobytes(), ln.border, ln.origin, struct.pack("<d", ln.constant))


def _knobs() -> tuple[Any, ...]:
    """Every setting the dispatch builders read: this module's upper-case names (tests and
    benchmarks change them) and the start-up check's forced ones. Their values themselves
    (a dict's as its items), taken in one C call: the names and reprs of all 59 took ~60 us
    of a call; a value that cannot be hashed is keyed by its repr."""
    values = list(_knob_values(globals()))
    for i in _DICT_KNOBS:
        if isinstance(values[i], dict):
            values[i] = tuple(values[i].items())
    key = (_small(), _bake(), *values)
    try:
        hash(key)
    except TypeError:  # a test's or benchmark's list, say
        key = (_small(), _bake(), *(repr(v) for v in values))
    return key


#: The dispatch lists of the last chains (_chain_dispatches), by everything that shapes them:
#: building a fused pair's two dispatches took ~0.4 ms of Python a call.
_CHAINS: LruCache[tuple[Any, ...], tuple[tuple[_Dispatch, ...], int]] = LruCache(64)
_CHAINS_LOCK = threading.Lock()


def _chain_dispatches(
    shape: tuple[int, ...],
    lines: Sequence[Line],
    precision: str,
    two_prod: str,
    x_exp: int,
    w_exps: tuple[int, ...],
    wide: bool,
    shuffle: bool,
    texin: bool = False,
    texplanes: bool | None = None,
    keep: tuple[int, int] | None = None,
) -> tuple[tuple[_Dispatch, ...], int]:
    """The dispatches of a chain that fits one binding, and the exponent of its result (df64);
    cached (_CHAINS). ``texin``: the passes may read their input as a texture; ``texplanes``
    (None: as ``texin``): the fused pairs do (:data:`TEXTURE_PLANES`); ``keep``: the columns of
    the last axis the result is used at (:func:`_chain_gpu`)."""
    texplanes = texin if texplanes is None else texin and texplanes
    key = (shape, tuple(_line_key(ln) for ln in lines), precision, two_prod, x_exp, w_exps,
           wide, shuffle, texin, texplanes, keep, _knobs())  # fmt: skip
    with _CHAINS_LOCK:
        hit = _CHAINS.get(key)
    if hit is not None:
        return hit
    df = precision == "df64"
    dispatches: list[_Dispatch] = []
    exp_in = x_exp
    fuse = not df and (math.prod(shape) >= _small() or _bake())
    i = 0  # the pass's place in the chain (its weights' exponent)
    for group in _chain_groups(shape, lines, fuse):
        if len(group) == 2:
            dispatches.extend(_plane_dispatches(shape, *group, wide, shuffle, texplanes, keep))
            i += 2
            continue
        (ln,) = group
        dispatches.extend(_line_dispatches(ln, _shape3(shape, ln.axis), precision, two_prod,
                                           exp_in, w_exps[i], wide, shuffle, texin))  # fmt: skip
        exp_in += w_exps[i]
        i += 1
    made = (tuple(dispatches), exp_in)
    with _CHAINS_LOCK:
        _CHAINS[key] = made
    return made


def _slab_elements(engine: NdPasses, elem: int) -> int:
    """Elements one dispatch may bind: the binding limit in whole vec4s (the buffers are
    rounded up to 16 bytes)."""
    return (engine.max_binding // 16 * 16) // elem


def _line_of(
    ln: Line,
    shape3: tuple[int, int, int],
    precision: str,
    two_prod: str,
    exp_in: int,
    w_exp: int,
    edge: str = "all",
    lo: int = 0,
    hi: int = 0,
    wide: bool = False,
    shuffle: bool = False,
) -> _Dispatch:
    if precision == "df64":
        weights = np.ldexp(ln.weights, -w_exp)
        constant = _pair(ln.constant, exp_in)
    else:
        weights = ln.weights
        constant = (_f32(ln.constant), 0.0)
    return _line_dispatch(
        shape3, weights, ln.centre, ln.border.mode.value, constant, precision, two_prod, edge,
        lo, hi, wide, shuffle,
    )  # fmt: skip


def _line_dispatches(
    ln: Line,
    shape3: tuple[int, int, int],
    precision: str,
    two_prod: str,
    exp_in: int,
    w_exp: int,
    wide: bool = False,
    shuffle: bool = False,
    texin: bool = False,
) -> list[_Dispatch]:
    """:func:`_line_of`; a chunked pass along the last axis as two dispatches over the same
    buffers where its lines have blocks whose window lies inside (:data:`PLANE_SPLIT`): those
    blocks without border code, then the others (as :func:`_plane_dispatches`). ``shuffle``
    (:data:`SHUFFLE`): the interior blocks take the chunks beyond their own from their
    subgroup's next invocations. ``texin`` (:data:`TEXTURE_LINES`): wide column-group passes,
    wide interior and border blocks, rolled f32 passes and df64 passes (:data:`DF64_TEXTURES`)
    read the input as a texture."""
    d = _line_of(ln, shape3, precision, two_prod, exp_in, w_exp, wide=wide)
    t = dict(d.template)
    texin = texin and TEXTURE_LINES and d.fallback is None
    if texin and t.get("wide") and t.get("groups", 1) > 1:
        return [_textured(d)]
    if texin and precision == "f32" and t.get("roll") and not t.get("wide"):  # rolled, scalar
        return [_textured(d, "r32float" if t["vec"] == 1 else "rgba32float")]
    if texin and DF64_TEXTURES and precision == "df64" and d.shader == "nd_line":
        return [_textured(d)]
    if not PLANE_SPLIT or not t.get("chunked") or d.fallback is not None:
        return [d]
    n, block, taps = shape3[1], t["block"], t["taps"]
    blocks = -(-n // block)
    lo = -(-ln.centre // block)
    hi = min(blocks, (n - block - taps + 1 + ln.centre) // block + 1)
    if lo >= hi:
        return [d]
    inner = _line_of(ln, shape3, precision, two_prod, exp_in, w_exp, "interior", lo, hi, wide,
                     shuffle)  # fmt: skip
    border = (
        _line_of(ln, shape3, precision, two_prod, exp_in, w_exp, "border", lo, hi, wide)
        if lo + blocks - hi
        else None
    )
    return _split_pair(inner, border, texin)


def _textured(d: _Dispatch, fmt: str = "rgba32float") -> _Dispatch:
    """``d`` (a wide pass, a rolled f32 line pass, a df64 line pass, or an f32 nd_taps pass)
    reading its input as a texture of format ``fmt`` (:data:`TEXTURE_INPUT`): no shuffles,
    which on lavapipe are per-lane loops through memory as storage loads are."""
    t = {k: v for k, v in d.template if k != "shuffle"}
    t.update(texin=True, texw=TEXTURE_WIDTH * (4 if fmt == "r32float" else 1))
    if TEXTURE_STORAGE:
        t.update(texfmt=fmt)
    return dataclasses.replace(
        d, template=tuple(sorted(t.items())), texin=fmt, texstore=bool(TEXTURE_STORAGE)
    )


def _line_in_slabs(
    engine: NdPasses,
    x: np.ndarray,
    ln: Line,
    precision: str,
    two_prod: str,
    x_exp: int,
    w_exp: int,
) -> np.ndarray:
    """One pass over slabs of the (outer, n, inner) view that fit one binding each."""
    elem = _elem_bytes(precision)
    df = precision == "df64"
    limit = _slab_elements(engine, elem)
    outer, n, inner = _shape3(x.shape, ln.axis)
    x3 = x.reshape(outer, n, inner)
    out = np.empty(x3.shape, dtype=x.dtype)

    def run(piece: np.ndarray) -> np.ndarray:
        data = _split(piece, x_exp) if df else piece
        d = _line_of(ln, piece.shape, precision, two_prod, x_exp, w_exp)
        if df:
            return engine.run(data, [d], lambda v: _join(v, x_exp + w_exp))
        return engine.run(data, [d]).reshape(piece.shape)

    if n * inner <= limit:  # whole lines, several outer rows a slab
        rows = limit // (n * inner)
        for o in range(0, outer, rows):
            out[o : o + rows] = run(np.ascontiguousarray(x3[o : o + rows]))
    elif n <= limit:  # whole lines, part of the inner extent a slab
        cols = limit // n
        for o in range(outer):
            for j in range(0, inner, cols):
                out[o, :, j : j + cols] = run(np.ascontiguousarray(x3[o, :, j : j + cols])[None])[0]
    else:  # one line longer than a binding: pieces of it with their halo, gathered by the border
        before, after = ln.centre, ln.weights.size - 1 - ln.centre
        step = limit - before - after
        if step < 1:
            raise ImageError(
                f"a pass of {ln.weights.size} taps cannot run in slabs of {limit} elements "
                f"(the adapter's storage-buffer binding): the kernel is longer than a slab"
            )
        for o in range(outer):
            for j in range(inner):
                line = x3[o, :, j]
                for s in range(0, n, step):
                    e = min(s + step, n)
                    idx = ln.border.map_indices(np.arange(s - before, e + after), n)
                    piece = np.where(idx < 0, ln.constant, line[np.maximum(idx, 0)])
                    piece = piece.astype(x.dtype)
                    # Within the piece every window is inside: its own border never matters.
                    inner_ln = Line(0, ln.weights, Border(BorderMode.CLAMP), ln.origin)
                    data = _split(piece, x_exp) if df else piece
                    d = _line_of(inner_ln, (1, piece.size, 1), precision, two_prod, x_exp, w_exp)
                    res = engine.run(data, [d])
                    res = _join(res, x_exp + w_exp) if df else res.reshape(-1)
                    out[o, s:e, j] = res[before : before + (e - s)]
    return out.reshape(x.shape)


def correlate_nd(
    x: np.ndarray,
    weights: np.ndarray,
    borders: Sequence[Border] | Border,
    origins: Sequence[int] | int = 0,
    *,
    precision: Precision,
    cval: float | None = None,
    passes_engine: NdPasses | None = None,
    lend: bool = False,
) -> np.ndarray:
    """``scipy.ndimage.correlate`` on the GPU: n-D weights over an n-D array (1 to 8 axes).

    Taps whose weight is within DBL_EPSILON of zero are skipped, as scipy's footprint does: a
    NaN or Inf under them does not spread; elsewhere NaN and Inf propagate as scipy's do.

    Arguments:
        x: float32 (``"f32"``) or float64 (``"df64"``) array, ndim 1 to 8 (others are cast).
        weights: ``x.ndim``-D float64 weights, any sizes (larger than ``x`` too).
        borders: one :class:`Border` for all axes or one per axis.
        origins: per axis (or one for all): the centre is ``weights.shape[a] // 2 + origin``.
        precision: ``"f32"`` or ``"df64"`` (as :func:`correlate1d_chain`).
        cval: the constant of CONSTANT axes, any float64 (NaN, ±inf); ``None`` takes each
            border's value.
        passes_engine: the :class:`NdPasses` to run on (default: the process's).
        lend: a float32 result may be the mapped buffer it was computed in (as
            :func:`correlate1d_chain`'s).

    Returns:
        The result, of ``x``'s shape and dtype (float32 or float64).

    Raises:
        UsageError: an unknown precision. ValueError: weights of another ndim, a bad origin.
        ImageError: more than 8 axes, or one slab along axis 0 cannot fit the adapter.
    """
    _check_precision(precision)
    x = _as_input(x, precision)
    w = np.asarray(weights, dtype=np.float64)
    shape = x.shape
    if x.ndim == 0:
        x = x.reshape(1)
        w = w.reshape(1)
    if w.ndim != x.ndim:
        raise ValueError(f"weights have {w.ndim} dimensions, the array {x.ndim}")
    if w.size == 0:
        raise ValueError("weights must not be empty")
    if x.ndim > MAX_ND:
        raise ImageError(f"correlate_nd handles 1 to {MAX_ND} axes, got an array of {x.ndim}")
    ndim = x.ndim
    border_list = ndreference._per_axis_borders(borders, ndim)
    origin_list = ndreference._per_axis(origins, ndim, "origins")
    centres = nd_centres(w.shape, origin_list)
    if x.size == 0:
        return x.reshape(shape).copy()
    constants = [
        (b.value if cval is None else float(cval))
        for b in border_list
        if b.mode is BorderMode.CONSTANT
    ]
    constant = constants[0] if constants else 0.0
    if len(set(map(repr, constants))) > 1:
        raise UsageError("correlate_nd takes one constant for every CONSTANT axis")
    if precision == "df64" and not _df64_available():
        return ndreference.correlate_nd(x, w, border_list, origin_list, cval=cval).reshape(shape)
    engine = passes_engine or get_passes()
    two_prod = _two_prod() if precision == "df64" else "fma"
    return _nd_gpu(engine, x, w, border_list, centres, constant, precision, two_prod, lend).reshape(
        shape
    )


def _nd_gpu(
    engine: NdPasses,
    x: np.ndarray,
    w: np.ndarray,
    borders: Sequence[Border],
    centres: Sequence[int],
    constant: float,
    precision: str,
    two_prod: str,
    lend: bool = False,
) -> np.ndarray:
    """correlate_nd on the GPU; ``lend``: a float32 result of one dispatch may be the mapped
    buffer (NdPasses.run)."""
    df = precision == "df64"
    elem = _elem_bytes(precision)
    x_exp = w_exp = 0
    if df:
        extra = [abs(constant)] if math.isfinite(constant) else []
        x_exp = _pow2_exponent(max([finite_max(x), *extra]))
        w_exp = _pow2_exponent(finite_max(w))
    # scipy's footprint: the taps it skips are zeros here, which the shader selects away.
    kept = np.where(np.abs(w) > DBL_EPSILON, w, 0.0)
    if df:
        kept = np.ldexp(kept, -w_exp)
    modes = [b.mode.value for b in borders]
    const_pair = _pair(constant, x_exp) if df else (_f32(constant), 0.0)
    # Rows longer than MAX_TAPS_ROW run as pieces, each with its centre shifted; their sum is
    # the correlation (the host adds them).
    kw, step = w.shape[-1], MAX_TAPS_ROW[precision]
    pieces = [
        (kept[..., k : k + step], (*centres[:-1], centres[-1] - k)) for k in range(0, kw, step)
    ]
    limit = _slab_elements(engine, elem)

    def run(piece: np.ndarray) -> np.ndarray:
        data = _split(piece, x_exp) if df else piece
        if piece.size < _small() and (len(pieces) > 1 or not _bake()):
            d = _taps_loop_dispatch(piece.shape, kept, centres, modes, const_pair, precision,
                                    two_prod)  # fmt: skip
            if df:
                return engine.run(data, [d], lambda v: _join(v, x_exp + w_exp))
            return engine.run(data, [d], lend=lend and piece is x).reshape(piece.shape)
        total = None
        for wp, cp in pieces:
            d = _taps_dispatch(piece.shape, wp, cp, modes, const_pair, precision, two_prod)
            if (
                TEXTURE_TAPS
                and (not df or DF64_TEXTURES)
                and engine.textures(piece.size * elem // 4)
            ):
                d = _textured(d, "rgba32float" if df else "r32float")
            if piece.size < _small():  # one piece: the looped shader while this one compiles
                loop = functools.partial(_taps_loop_dispatch, piece.shape, kept, centres, modes,
                                         const_pair, precision, two_prod)  # fmt: skip
                d = dataclasses.replace(d, fallback=loop)
            if df:
                res = engine.run(data, [d], lambda v: _join(v, x_exp + w_exp))
            else:
                one = lend and piece is x and len(pieces) == 1
                res = engine.run(data, [d], lend=one).reshape(piece.shape)
            total = res if total is None else total + res
        return total

    if x.size <= limit:
        return run(x)
    # Slabs along axis 0 with the window's reach along it, gathered with axis 0's border.
    n = x.shape[0]
    row = math.prod(x.shape[1:])
    before, after = centres[0], w.shape[0] - 1 - centres[0]
    step = limit // row - before - after
    if step < 1:
        raise ImageError(
            f"an array of shape {x.shape} with {w.shape} weights cannot run in slabs along "
            f"axis 0: one slab with its halo needs more than the adapter's storage-buffer "
            f"binding ({engine.max_binding} bytes)"
        )
    out = np.empty(x.shape, dtype=x.dtype)
    b0 = borders[0]
    for s in range(0, n, step):
        e = min(s + step, n)
        idx = b0.map_indices(np.arange(s - before, e + after), n)
        piece = np.take(x, np.maximum(idx, 0), axis=0)
        if b0.mode is BorderMode.CONSTANT:
            piece[idx < 0] = constant
        res = run(np.ascontiguousarray(piece))
        out[s:e] = res[before : before + (e - s)]
    return out


def _f32(v: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(v))


#: The module's settings (_knobs): its upper-case names of plain values.
_KNOB_NAMES = tuple(
    k for k, v in globals().items()
    if k.isupper() and isinstance(v, (bool, int, float, str, tuple, dict))
)  # fmt: skip
_knob_values = operator.itemgetter(*_KNOB_NAMES)
_DICT_KNOBS = tuple(i for i, k in enumerate(_KNOB_NAMES) if isinstance(globals()[k], dict))
