"""The ``fft`` strategy: correlation as a product of spectra, in overlap-save blocks on the GPU.

The image is cut into blocks of NR × NC outputs' inputs (powers of two, at most 2048 a side):
block (by, bx) holds the border-mapped pixels from (by·TR - ar, bx·TC - ac) on, TR = NR - kh + 1
and TC = NC - kw + 1 its valid outputs, (ar, ac) the kernel's anchor. The circular correlation
of a block with the kernel is exact on its first TR × TC elements (their windows never wrap
around), so the border mode is exactly the one every other strategy applies: the gather maps
indices with it before the transform, and nothing leaks round the block.

Two real signals (two channels, or one channel of two blocks) share one complex transform,
``(a + ib)``: the kernel is real, so the real and imaginary parts of the result are a's and b's
correlations; real input costs half a complex transform per channel.

Four passes per batch of blocks (:func:`passes`; a batch is as many blocks as one buffer of
``_BATCH_BYTES`` holds):

``fft rows``
    gathers each block row from the input texture with the border mapping and transforms it.
``convolve cols``
    transforms each column, multiplies it by the kernel's spectrum and transforms it back, in
    one workgroup-memory pass.
``ifft rows``
    transforms each row back.
``crop``
    writes each block's valid TR × TC outputs, all channels of a pixel at once, into the output
    texture (rgba32float or rgba8unorm, as the other strategies' last pass).

Every line is transformed in workgroup memory (Stockham autosort, radix 16 with one smaller
stage where log2 N is not a multiple of 4; twiddles from a float64 table). WebGPU guarantees
16 KiB of workgroup memory, a 2048-point line of complex f32, so no global-memory pass is
needed within the 2048 cap.

A NaN or Inf in a block spreads over the block's outputs: blurapp.engine.filter_float runs fft on
an image's finite values and writes its non-finite outputs exactly (:mod:`blurapp.gpu.nonfinite`).
"""

from __future__ import annotations

import functools
import math
import struct
import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from blurapp.core.errors import StrategyError
from blurapp.gpu.strategies.base import OUTPUT_FORMATS, PassSpec

if TYPE_CHECKING:
    from blurapp.core.borders import Border
    from blurapp.core.kernel import Kernel
    from blurapp.core.planner import DeviceLimits
    from blurapp.gpu.engine import GpuFilter

__all__ = [
    "MAX_BLOCK",
    "BlockPlan",
    "kernel_spectrum",
    "passes",
    "plan_blocks",
    "run",
]

MAX_BLOCK = 2048  # largest block side: 16 KiB of workgroup memory per complex f32 line
_MIN_BLOCK = 2
# Bytes of complex data one batch of blocks holds (less where the device binds less).
_BATCH_BYTES = 64 << 20
# Nanoseconds per block element and channel of the row passes (fft rows + ifft rows) and of
# the column pass, by block side: benchmarks/fft_blocks.py on lavapipe, 2048² RGB (the column
# pass's strided lines cost more past 256). Only their ratios matter: they pick the block.
_ROW_NS = {64: 12.8, 128: 13.2, 256: 14.0, 512: 16.7, 1024: 16.7, 2048: 20.8}
_COL_NS = {64: 7.4, 128: 7.6, 256: 8.4, 512: 13.6, 1024: 16.3, 2048: 27.6}
_CROP_WORKGROUP = (8, 8)
# Elements of one workgroup's lines: enough lines of a short block side to give a workgroup
# 64 to 256 invocations, one line of a long one.
_LINE_ELEMENTS = 1024
_MAX_WORKGROUP = 256
_MAX_RADIX = 16  # largest Stockham radix: 2, 4, 8 or 16 (one butterfly's values in registers)
PARAMS_BYTES = 48


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _radices(n: int, largest: int) -> tuple[int, ...]:
    """Stockham stages for a line of n: radix ``largest`` while it divides, then one smaller."""
    out = []
    while n > 1:
        r = min(largest, n)
        out.append(r)
        n //= r
    return tuple(out)


def _literal(v: float) -> str:
    text = repr(float(np.float32(v)))
    return text if "." in text or "e" in text else text + ".0"


# exp(-2πi e/16), e < 16, as WGSL literals: (re, im, -im), the radix-8 and -16 butterflies' roots.
_W16 = tuple(
    (_literal(math.cos(2 * math.pi * e / 16)), _literal(-math.sin(2 * math.pi * e / 16)),
     _literal(math.sin(2 * math.pi * e / 16)))
    for e in range(16)
)  # fmt: skip


@dataclass(frozen=True)
class BlockPlan:
    """How ``fft`` cuts an image into overlap-save blocks and batches.

    Attributes:
        block: (NR, NC), the transform's rows and columns (powers of two).
        tile: (TR, TC), the valid outputs of a block: block - kernel + 1.
        grid: (blocks down, blocks across) the image.
        channels: channels that carry data.
        batch_blocks: blocks per batch (the last batch may hold fewer).
    """

    block: tuple[int, int]
    tile: tuple[int, int]
    grid: tuple[int, int]
    channels: int
    batch_blocks: int

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1]

    def items(self, blocks: int) -> int:
        """Complex transforms for ``blocks`` blocks: two real signals each."""
        return math.ceil(blocks * self.channels / 2)

    def batches(self) -> list[tuple[int, int]]:
        """(first block, blocks) of each batch, in order."""
        step = self.batch_blocks
        return [(b, min(step, self.blocks - b)) for b in range(0, self.blocks, step)]

    @property
    def batch_items(self) -> int:
        return self.items(min(self.batch_blocks, self.blocks))

    def texel_loads(self, blocks: int) -> int:
        """Input texels the gather reads for ``blocks`` blocks: one per block element for each
        block an item's two real signals come from."""
        c = self.channels
        signals = blocks * c
        loads = 0
        for q in range(self.items(blocks)):
            a, b = 2 * q, 2 * q + 1
            loads += 1 if b >= signals or a // c == b // c else 2
        return loads * self.block[0] * self.block[1]


def _largest_block(limits: DeviceLimits) -> int:
    fits = 1 << max(0, (limits.workgroup_storage // 8).bit_length() - 1)
    return min(MAX_BLOCK, fits)


def _axis_choices(kernel_side: int, image_side: int, largest: int) -> list[int]:
    low = max(_MIN_BLOCK, _pow2_at_least(kernel_side))
    high = min(largest, max(low, _pow2_at_least(image_side + kernel_side - 1)))
    return [1 << e for e in range(low.bit_length() - 1, high.bit_length())]


def plan_blocks(
    kernel_shape: tuple[int, int],
    image_shape: tuple[int, int],
    channels: int,
    limits: DeviceLimits,
) -> BlockPlan:
    """The block sides that cost the least modelled work for this kernel and image.

    Each side is a power of two from the kernel's side (rounded up) to the one that covers the
    image in one block, at most :data:`MAX_BLOCK` (and what the device's workgroup memory holds);
    the work is blocks × NR·NC × (row cost of NC + column cost of NR), measured per element.

    Raises:
        StrategyError: a kernel side larger than the largest block.
    """
    kh, kw = int(kernel_shape[0]), int(kernel_shape[1])
    height, width = int(image_shape[0]), int(image_shape[1])
    largest = _largest_block(limits)
    if max(kh, kw) > largest:
        raise StrategyError(
            f"fft handles kernels up to {largest} taps a side on this GPU; this one is "
            f"{kw}×{kh}: use direct or tiled"
        )
    best: tuple[float, int, int] | None = None
    for nr in _axis_choices(kh, height, largest):
        for nc in _axis_choices(kw, width, largest):
            blocks = math.ceil(height / (nr - kh + 1)) * math.ceil(width / (nc - kw + 1))
            cost = blocks * nr * nc * (_ROW_NS[max(64, nc)] + _COL_NS[max(64, nr)])
            if best is None or cost < best[0]:
                best = (cost, nr, nc)
    assert best is not None
    _, nr, nc = best
    tile = (nr - kh + 1, nc - kw + 1)
    grid = (math.ceil(height / tile[0]), math.ceil(width / tile[1]))
    budget = min(_BATCH_BYTES, limits.max_storage_binding)
    per_block = nr * nc * 8 * channels / 2
    batch = max(1, min(grid[0] * grid[1], int(budget // per_block)))
    if math.ceil(batch * channels / 2) * nr * nc * 8 > limits.max_storage_binding:
        batch = max(1, batch - 1)  # an odd channel count rounds the items up
    return BlockPlan((nr, nc), tile, grid, channels, batch)


# -- the kernel's spectrum -----------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _spectrum(weights: bytes, shape: tuple[int, int], block: tuple[int, int]) -> np.ndarray:
    w = np.frombuffer(weights, dtype=np.float64).reshape(shape)
    nr, nc = block
    # Correlation with w is multiplication by conj(DFT(w)); the inverse transform's 1/(NR·NC)
    # is folded in here, where it is free.
    return (np.conj(np.fft.fft2(w, s=block)) / (nr * nc)).astype(np.complex64)


def kernel_spectrum(weights: np.ndarray, block: tuple[int, int]) -> np.ndarray:
    """conj(DFT(weights zero-padded to ``block``)) / (NR·NC) as complex64, NR × NC.

    The kernel's spectrum is small and made once per kernel and block size, on the CPU with
    numpy in float64 (then rounded to f32); the image's transforms are the GPU's work.
    """
    w = np.ascontiguousarray(weights, dtype=np.float64)
    return _spectrum(w.tobytes(), w.shape, tuple(block))


@functools.lru_cache(maxsize=16)
def _twiddles(n: int) -> np.ndarray:
    """exp(-2πi k / n), k < n, complex64 from float64."""
    return np.exp(-2j * np.pi * np.arange(n) / n).astype(np.complex64)


# -- passes --------------------------------------------------------------------------------


def _lines_template(
    axis: str,
    n: int,
    block: tuple[int, int],
    limits: DeviceLimits,
    *,
    source: str,
    forward: bool,
    multiply: bool,
    inverse: bool,
) -> tuple[tuple[str, Any], ...]:
    nr, nc = block
    lines = nr if axis == "rows" else nc  # lines of this axis in one block
    fit = max(1, min(_LINE_ELEMENTS, limits.workgroup_storage // 8) // n)
    lanes = min(lines, fit)
    radices = _radices(n, _MAX_RADIX)
    wg = min(lanes * n // max(radices), _MAX_WORKGROUP, limits.max_invocations)
    stages = []
    ns = 1
    for r in radices:
        stages.append((r, ns, lanes * n // r // wg))
        ns *= r
    chain = [(*st, "") for st in stages] * forward + [(*st, "-") for st in stages] * inverse
    # (radix, sub-transform length so far, butterflies per invocation, sign, reads the
    # source, writes data, multiplies its outputs by the spectrum)
    program = tuple(
        (*st, i == 0, i == len(chain) - 1, multiply and i == len(stages) - 1)
        for i, st in enumerate(chain)
    )
    return (
        ("axis", axis),
        ("n", n),
        ("nr", nr),
        ("nc", nc),
        ("lanes", lanes),
        ("wg", wg),
        ("program", program),
        ("source", source),
        ("multiply", multiply),
        ("w16", _W16),
    )


def passes(
    kernel: Kernel,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    limits: DeviceLimits,
    channels: int = 4,
) -> tuple[PassSpec, ...]:
    """The four passes of ``fft`` on a (width, height) image, their bytes summed over batches.

    The complex data is described to the byte model as rgba32float texels, two complex values
    each: ``out_size`` (NR·NC / 2, items). ``workgroups`` is the first batch's dispatch.
    """
    width, height = size
    plan = plan_blocks(kernel.shape, (height, width), channels, limits)
    nr, nc = plan.block
    items = sum(plan.items(b) for _, b in plan.batches())
    loads = sum(plan.texel_loads(b) for _, b in plan.batches())
    element = nr * nc * 8  # one complex item's bytes
    first = plan.batch_items
    buffer = (nr * nc // 2, items)
    rows = _lines_template("rows", nc, plan.block, limits, source="image", forward=True,
                           multiply=False, inverse=False)  # fmt: skip
    cols = _lines_template("cols", nr, plan.block, limits, source="buffer", forward=True,
                           multiply=True, inverse=True)  # fmt: skip
    irows = _lines_template("rows", nc, plan.block, limits, source="buffer", forward=False,
                            multiply=False, inverse=True)  # fmt: skip
    lanes_r, lanes_c = dict(rows)["lanes"], dict(cols)["lanes"]
    tr, tc = plan.tile
    wx, wy = _CROP_WORKGROUP
    common = {"constant": constant, "weights": None}
    return (
        PassSpec("fft rows", "fft_lines", rows, (("BORDER_MODE", border_mode),), "input", "fft",
                 size, buffer, (nr // lanes_r, first), bytes_modelled=loads * 16 + items * element,
                 **common),
        PassSpec("convolve cols", "fft_lines", cols, (), "fft", "fft", buffer, buffer,
                 (nc // lanes_c, first), bytes_modelled=3 * items * element, **common),
        PassSpec("ifft rows", "fft_lines", irows, (), "fft", "fft", buffer, buffer,
                 (nr // lanes_r, first), bytes_modelled=2 * items * element, **common),
        PassSpec("crop", "fft_crop", (("nr", nr), ("nc", nc), ("wg_x", wx), ("wg_y", wy)), (),
                 "fft", "output", buffer, size, (math.ceil(tc / wx), math.ceil(tr / wy)),
                 bytes_modelled=width * height * (channels * 8 + 16), **common),
    )  # fmt: skip


# -- running -------------------------------------------------------------------------------


@dataclass
class _Buffers:
    """One image shape's fft resources (kept in the engine's per-shape cache)."""

    plan: BlockPlan
    data: Any
    spectrum: Any
    spectrum_key: Hashable | None
    twiddles: dict[int, Any]
    params: Any
    bind_groups: dict[Hashable, Any]


def _buffers(engine: GpuFilter, res: Any, plan: BlockPlan) -> _Buffers:
    import wgpu

    key = ("fft", plan)
    found = res.owned.get(key)
    if found is None:
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        nr, nc = plan.block
        twiddles = {}
        for n in {nr, nc}:
            twiddles[n] = engine.make_buffer(n * 8, usage)
            engine.context.device.queue.write_buffer(twiddles[n], 0, _twiddles(n).tobytes())
        found = res.owned[key] = _Buffers(
            plan=plan,
            data=engine.make_buffer(plan.batch_items * nr * nc * 8, usage),
            spectrum=engine.make_buffer(nr * nc * 8, usage),
            spectrum_key=None,
            twiddles=twiddles,
            params=engine.make_buffer(PARAMS_BYTES, wgpu.BufferUsage.UNIFORM | usage),
            bind_groups={},
        )
    return found


# The bind group layout and pipeline layout of each kind of pass, per filter (they are device
# objects: a GpuFilter's device outlives them).
_LAYOUTS: weakref.WeakKeyDictionary[GpuFilter, dict[Hashable, tuple[Any, Any]]] = (
    weakref.WeakKeyDictionary()
)


def _entries(p: PassSpec) -> list[tuple[int, str]]:
    """(binding, kind) of what pass ``p``'s shader declares."""
    if p.shader == "fft_crop":
        return [(1, "read-only-storage"), (3, "uniform"), (5, _dst_format(p))]
    template = dict(p.template)
    entries = [(1, "storage"), (2, "read-only-storage"), (3, "uniform")]
    if template["source"] == "image":
        entries.append((0, "texture"))
    if template["multiply"]:
        entries.append((4, "read-only-storage"))
    return entries


def _dst_format(p: PassSpec) -> str:
    return dict(p.template).get("dst_format", "rgba32float")


def _layouts(engine: GpuFilter, p: PassSpec) -> tuple[Any, Any]:
    import wgpu

    kinds = tuple(_entries(p))
    cache = _LAYOUTS.setdefault(engine, {})
    found = cache.get(kinds)
    if found is None:
        compute = wgpu.ShaderStage.COMPUTE
        entries = []
        for binding, kind in kinds:
            entry: dict[str, Any] = {"binding": binding, "visibility": compute}
            if kind == "texture":
                entry["texture"] = {"sample_type": "unfilterable-float", "view_dimension": "2d"}
            elif kind in ("storage", "read-only-storage", "uniform"):
                entry["buffer"] = {"type": kind}
            else:
                entry["storage_texture"] = {
                    "access": "write-only", "format": kind, "view_dimension": "2d",
                }  # fmt: skip
            entries.append(entry)
        device = engine.context.device
        layout = device.create_bind_group_layout(entries=entries)
        found = cache[kinds] = (layout, device.create_pipeline_layout(bind_group_layouts=[layout]))
    return found


def _pipeline(engine: GpuFilter, p: PassSpec) -> Any:
    device = engine.context.device

    def make() -> Any:
        module = engine.shader_module(p.shader, p.template)
        engine.stats["pipelines"] += 1
        return device.create_compute_pipeline(
            label=f"fft {p.name}",
            layout=_layouts(engine, p)[1],
            compute={"module": module, "entry_point": "main", "constants": dict(p.constants)},
        )

    return engine.cached_pipeline(("fft", p.shader, p.template, p.constants), make)


def _bind_group(engine: GpuFilter, bufs: _Buffers, p: PassSpec, views: dict[str, Any]) -> Any:
    key = (p.name, _dst_format(p), id(views.get(p.src)), id(views.get(p.dst)))
    found = bufs.bind_groups.get(key)
    if found is not None:
        return found
    resources = {1: {"buffer": bufs.data}, 3: {"buffer": bufs.params}, 4: {"buffer": bufs.spectrum}}
    if p.shader == "fft_lines":
        resources[2] = {"buffer": bufs.twiddles[dict(p.template)["n"]]}
        resources[0] = views["input"]
    else:
        resources[5] = views["output"]
    group = engine.context.device.create_bind_group(
        layout=_layouts(engine, p)[0],
        entries=[{"binding": b, "resource": resources[b]} for b, _ in _entries(p)],
    )
    engine.stats["bind_groups"] += 1
    bufs.bind_groups[key] = group
    return group


def _params(plan: BlockPlan, size: tuple[int, int], anchor: tuple[int, int], first: int,
            blocks: int, constant: float) -> bytes:  # fmt: skip
    width, height = size
    tr, tc = plan.tile
    ar, ac = anchor
    return struct.pack(
        "<10ifi", width, height, tc, tr, ac, ar, plan.grid[1], first, blocks, plan.channels,
        constant, 0,
    )  # fmt: skip


def run(
    engine: GpuFilter,
    x: np.ndarray,
    kernel: Kernel,
    border: Border,
    specs: tuple[PassSpec, ...],
    *,
    storage: str,
    convert: Callable[[np.ndarray], np.ndarray] | None,
    output: str,
    input_key: Hashable | None,
) -> tuple[np.ndarray, list[float], str]:
    """Run ``specs`` (from :func:`passes`, output format applied) batch by batch.

    A NaN or Inf in ``x`` spreads over its whole block here; blurapp.engine.filter_float runs
    fft on the finite values and places the non-finite outputs (:mod:`blurapp.gpu.nonfinite`).

    Returns:
        The result (as :meth:`GpuFilter.run` describes it), each pass's milliseconds summed
        over the batches, and the timer kind.
    """
    from blurapp.gpu.engine import STORAGE_FORMATS

    ctx = engine.context
    device = ctx.device
    height, width, channels = x.shape
    plan = plan_blocks(kernel.shape, (height, width), channels, ctx.limits)
    res = engine.shape_resources(width, height)
    engine.upload(res, x, storage, input_key)
    views = {
        "input": engine.texture(res, "input", (width, height), STORAGE_FORMATS[storage][0])[1],
        "output": engine.texture(res, "output", (width, height), OUTPUT_FORMATS[output][0])[1],
    }
    bufs = _buffers(engine, res, plan)
    weights = np.asarray(kernel.weights, dtype=np.float64)
    spectrum_key = (weights.shape, weights.tobytes())
    if bufs.spectrum_key != spectrum_key:
        device.queue.write_buffer(bufs.spectrum, 0, kernel_spectrum(weights, plan.block).tobytes())
        bufs.spectrum_key = spectrum_key
    commands = []
    for p in specs:
        pipeline = _pipeline(engine, p)
        commands.append((p, pipeline, _bind_group(engine, bufs, p, views)))

    timer = engine.pass_timer()
    totals = [0.0] * len(specs)
    batches = plan.batches()
    for index, (first, blocks) in enumerate(batches):
        params = _params(plan, (width, height), kernel.anchor, first, blocks, border.value)
        device.queue.write_buffer(bufs.params, 0, params)
        items = plan.items(blocks)
        encoder = device.create_command_encoder()
        for i, (p, pipeline, group) in enumerate(commands):
            if p.shader == "fft_crop":
                groups = (p.workgroups[0], p.workgroups[1], blocks)
            else:
                groups = (p.workgroups[0], items, 1)
            cpass = encoder.begin_compute_pass(label=p.name, timestamp_writes=timer.writes(i))
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*groups)
            cpass.end()
            encoder = timer.after_pass(encoder)
        last = index == len(batches) - 1
        if last:
            readback = engine.take_readback(res, output)
            engine.copy_output(encoder, res, output, readback)
        timer.resolve(encoder)
        device.queue.submit([encoder.finish()])
        if not last:
            totals = [t + ms for t, ms in zip(totals, timer.read_ms(), strict=True)]
    out = engine.map_output(res, output, readback, channels, convert)
    totals = [t + ms for t, ms in zip(totals, timer.read_ms(), strict=True)]
    return out, totals, timer.timer
