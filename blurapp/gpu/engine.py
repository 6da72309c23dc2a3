"""Run the GPU strategies: upload, dispatch the passes a strategy plans, time them, read back.

:class:`GpuFilter` caches what a live preview would otherwise rebuild on every frame: shader
modules and pipelines (keyed by shader, template parameters and override constants) and, per
image shape, the textures, uniform buffers, bind groups and readback buffer. Every cache has a
size (:class:`~blurapp.gpu.lru.LruCache`): the least recently used entries go first.
"""

from __future__ import annotations

import math
import os
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from blurapp.core import strategies as registry
from blurapp.core.borders import Border
from blurapp.core.checks import check_now
from blurapp.core.errors import ImageError, KernelSpecError, UsageError
from blurapp.core.lowrank import MAX_TERMS
from blurapp.core.numbers import copy_pixels, put_pixels
from blurapp.core.planner import DeviceLimits
from blurapp.core.timing import PassTiming, Timing
from blurapp.gpu.calibration import note_user_run, wait_for_quiet
from blurapp.gpu.device import GpuContext, get_device
from blurapp.gpu.lru import LruCache
from blurapp.gpu.shaders import load_shader
from blurapp.gpu.strategies import (
    OUTPUT_FORMATS,
    TEXEL_BYTES,
    PassSpec,
    buffer_variant,
    get_strategy,
    with_channels,
    with_output,
)
from blurapp.gpu.timing import PassTimer

if TYPE_CHECKING:
    from blurapp.core.kernel import Kernel

__all__ = [
    "OUTPUT_FORMATS",
    "STORAGE_FORMATS",
    "GpuFilter",
    "get_filter",
    "mac_rate",
    "modelled_bytes",
    "to_storage",
]

# --format/storage name -> (WebGPU texture format of the input, numpy dtype, bytes per texel).
# The shaders read every one of them as vec4<f32> and accumulate in f32; only the input texture
# is narrower (intermediates stay rgba32float; the output too unless OUTPUT_FORMATS says rgba8).
STORAGE_FORMATS: dict[str, tuple[str, type, int]] = {
    "rgba8": ("rgba8unorm", np.uint8, 4),
    "rgba16f": ("rgba16float", np.float16, 8),
    "rgba32f": ("rgba32float", np.float32, 16),
}

# Weight buffers start big enough for a 257×257 kernel, so changing the kernel of a live
# preview does not reallocate them; a larger kernel grows them (and rebuilds the bind groups).
_WEIGHTS_CAPACITY = 257 * 257 * 4
# lowrank's 2 passes per pair bound the passes of one run; their weight buffers are made when
# a run first needs them, so the other strategies still hold four.
_MAX_PASSES = 2 * MAX_TERMS
_ROW_ALIGN = 256  # copy_texture_to_buffer's bytes_per_row alignment
_KEPT_SHAPES = 4  # image shapes whose resources stay cached (least recently used dropped)
# Pipelines and shader modules kept. Every GPU strategy x every border mode x both output
# formats of one kernel is 37 pipelines from 9 modules (measured): the comparison views
# refresh without recompiling. The 1-D passes bake short kernels in, so each new kernel there
# is 1-2 new pipelines (about 150 ms and 3.5 MiB of JIT code each on lavapipe): a preview
# dragged across many values keeps the last ~30 kernels and stops growing there.
KEPT_PIPELINES = 64
KEPT_SHADER_MODULES = 64


def _texture_usage() -> int:
    import wgpu

    u = wgpu.TextureUsage
    return u.TEXTURE_BINDING | u.STORAGE_BINDING | u.COPY_DST | u.COPY_SRC


@dataclass
class _ShapeResources:
    """Everything sized by one (width, height): reused as long as the shape is."""

    width: int
    height: int
    textures: dict[tuple[str, int, int, str], tuple[Any, Any]] = field(default_factory=dict)
    uniforms: dict[tuple[str, int], Any] = field(default_factory=dict)
    bind_groups: dict[tuple[str, int, str, str], Any] = field(default_factory=dict)
    staging: dict[str, np.ndarray] = field(default_factory=dict)
    # input format -> (input_key, channels) of what its texture holds; None: not known
    uploaded: dict[str, tuple[Hashable, int] | None] = field(default_factory=dict)
    # output format -> free (mappable buffer, padded bytes per row): a run takes one and gives
    # it back once read, so that a run maps its own while the next one's passes execute
    readbacks: dict[str, list[tuple[Any, int]]] = field(default_factory=dict)
    # what a strategy with its own run keeps for this shape (fft: its buffers, bind groups)
    owned: dict[Hashable, Any] = field(default_factory=dict)


#: What one submission of a long direct or tiled pass should take: a run stops, and user work
#: preempts background work, within about this (issue 24 item 4).
BAND_SECONDS = 0.1
#: Multiply-adds a second assumed until measured: lavapipe on this 2-core VM does 2-3e8 (the
#: built-in cost unit, one direct tap per pixel, is 6 ns); 2**35 per 50 ms on a discrete GPU.
_RATE_SOFTWARE = 1e9 / 6.0
_RATE_GPU = float(1 << 35) / 0.05
_BANDED_SHADERS = ("direct", "halo_tiled")
_SHADER_STRATEGY = {"direct": "direct", "halo_tiled": "tiled"}
_RATE_MIN_MS = 5.0  # shorter passes say more about fixed costs than about the rate
#: The uniform Params of shaders/bindings.wgsl (24 bytes), in a 32-byte buffer.
_PARAMS_BYTES = 32


def _taps(p: PassSpec) -> int:
    """Multiply-adds per output of a 2-D pass: its weights (tiled's zero padding rows are not
    multiplied)."""
    template = dict(p.template)
    if "kw" in template and "kh" in template:
        return int(template["kw"]) * int(template["kh"])
    return int(p.weights.size) if p.weights is not None else 0


def mac_rate(strategy: str = "direct") -> float:
    """:meth:`GpuFilter.mac_rate` of the process's filter: multiply-adds a second of
    ``strategy``'s 2-D pass on this adapter (the window sizes its preview tiles from it)."""
    return get_filter().mac_rate(strategy)


def _params(p: PassSpec, channels: int, group_y0: int) -> bytes:
    """Params for pass ``p`` dispatched from workgroup row ``group_y0``."""
    packed = struct.pack("<iifii", p.size[0], p.size[1], p.constant, channels, group_y0)
    return packed.ljust(_PARAMS_BYTES, b"\0")


@dataclass
class _Submitted:
    """A run whose passes are submitted: its own readback buffer (being mapped) and timer."""

    res: _ShapeResources
    output: str
    readback: tuple[Any, int]
    mapped: Any  # the mapping's promise
    timer: PassTimer
    earlier_ms: float = 0.0  # the first pass's bands submitted and timed before the last


def _check_storage(storage: str) -> tuple[str, type, int]:
    try:
        return STORAGE_FORMATS[storage]
    except (KeyError, TypeError):
        raise UsageError(
            f"unknown storage format {storage!r}; choose one of {', '.join(STORAGE_FORMATS)}"
        ) from None


def _check_output(output: str) -> tuple[str, int]:
    try:
        return OUTPUT_FORMATS[output]
    except (KeyError, TypeError):
        raise UsageError(
            f"unknown output format {output!r}; choose one of {', '.join(OUTPUT_FORMATS)}"
        ) from None


def _dst_format(p: PassSpec) -> str:
    """The texture format pass ``p`` writes (its ``dst_format`` template parameter)."""
    return dict(p.template).get("dst_format", "rgba32float")


def to_storage(x: np.ndarray, storage: str) -> np.ndarray:
    """``x`` (normalised floats) as the GPU stores it in the input texture, C-contiguous.

    Arguments:
        x: H×W×C image; floats in normalised units, or already the storage dtype (uint8 for
            ``rgba8``, float16 for ``rgba16f``), which is used as it is.
        storage: ``"rgba8"`` (values clamped to [0, 1] and rounded to 1/255 steps, as an
            rgba8unorm texture holds them), ``"rgba16f"`` (rounded to half precision) or
            ``"rgba32f"``.

    Returns:
        The array in the storage format's numpy dtype.
    """
    _, dtype, _ = _check_storage(storage)
    if x.dtype == dtype:
        return np.ascontiguousarray(x)
    if dtype is np.uint8:
        return np.rint(np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)
    return np.ascontiguousarray(x, dtype=dtype)


def _staged(x: np.ndarray, storage: str) -> np.ndarray:
    """``x`` in the input texture's layout (RGBA of the storage format's type), a new array."""
    x = to_storage(x, storage)
    if x.shape[2] == 4:
        return x
    staged = np.empty((*x.shape[:2], 4), x.dtype)
    put_pixels(staged, x)
    staged[:, :, x.shape[2] :] = 0
    return staged


def _check_image(x: np.ndarray, limits: DeviceLimits, max_buffer: int) -> np.ndarray:
    """``x`` as an H×W×C array, or ImageError naming what is wrong."""
    x = np.asarray(x)
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ImageError(f"image must be H×W or H×W×C, got shape {x.shape}")
    height, width, channels = x.shape
    if height == 0 or width == 0:
        raise ImageError(f"image is empty ({width}×{height} pixels)")
    if not 1 <= channels <= 4:
        raise ImageError(f"image has {channels} channels; 1 to 4 are supported")
    if x.dtype.kind not in "fiub":
        raise ImageError(f"image data type {x.dtype} is not numeric")
    side = limits.max_texture_side
    if width > side or height > side:
        raise ImageError(
            f"image is {width}×{height} pixels; this GPU's largest texture side is {side} "
            "(use --strategy cpu)"
        )
    row_bytes = math.ceil(width * TEXEL_BYTES / _ROW_ALIGN) * _ROW_ALIGN
    if row_bytes * height > max_buffer:
        raise ImageError(
            f"image is {width}×{height} pixels: {row_bytes * height >> 20} MiB per RGBA float "
            f"copy exceeds this GPU's {max_buffer >> 20} MiB buffer limit (use --strategy cpu)"
        )
    return x


def _check_kernel(kernel: Kernel) -> None:
    weights = np.asarray(kernel.weights)
    if weights.ndim != 2 or weights.size == 0:
        raise KernelSpecError(f"kernel weights must be a non-empty 2-D matrix, got {weights.shape}")
    if not np.isfinite(weights).all():
        raise KernelSpecError(f"kernel {kernel.name!r} has non-finite weights (NaN or inf)")


def _pass_bytes(p: PassSpec, input_texel_bytes: int) -> int:
    """``p.bytes_modelled`` with the reads of the input texture at its storage format's size."""
    if p.src != "input" or input_texel_bytes == TEXEL_BYTES:
        return p.bytes_modelled
    dst_texel = 4 if _dst_format(p) == "rgba8unorm" else TEXEL_BYTES
    written = p.out_size[0] * p.out_size[1] * dst_texel  # every pass writes its whole output
    return (p.bytes_modelled - written) * input_texel_bytes // TEXEL_BYTES + written


def _passes(
    strategy: str,
    kernel: Kernel,
    border_mode: int,
    constant: float,
    size: tuple[int, int],
    limits: DeviceLimits,
    tile: int | None,
    channels: int,
    tolerance: float | None,
    output: str = "rgba32f",
) -> tuple[PassSpec, ...]:
    """The strategy's passes, the last one writing ``output``; ``tolerance`` goes only to the
    strategies that take one. An 8-bit output (``"rgba8"``) of 1 to 3 channels runs the 1-D
    passes that skip the alpha lane (:func:`with_channels`): the start-up warm-up's 8-bit RGB
    runs compile those, its float runs the others (which an RGBA image, premultiplied, runs)."""
    extra = {"tolerance": tolerance} if registry.STRATEGIES[strategy].takes_tolerance else {}
    passes = get_strategy(strategy).passes(
        kernel, border_mode, constant, size, limits, tile, channels, **extra
    )
    if output == "rgba8":
        passes = with_channels(passes, channels)
    return with_output(passes, output)


def modelled_bytes(
    strategy: str,
    kernel: Kernel,
    shape: tuple[int, ...],
    *,
    tile: int | None = None,
    limits: DeviceLimits | None = None,
    storage: str = "rgba32f",
    output: str = "rgba32f",
    tolerance: float | None = None,
) -> dict[str, int]:
    """Global-memory bytes each pass of ``strategy`` is modelled to read and write, without running.

    The model counts 16 bytes per rgba32float texel read or written (4 or 8 for reads of an
    rgba8 or rgba16f input, 4 for writes of an rgba8 output), halo loads included (direct:
    rows×cols reads per output; tiled: the halo once per tile; separable: each invocation's run
    of outputs with its 1-D halo; transpose: one read and one write per texel).

    Arguments:
        strategy: a GPU strategy name.
        kernel: the kernel.
        shape: image shape (H, W) or (H, W, C).
        tile: tile side for ``tiled`` (the planner's choice when ``None``).
        limits: the device limits (WebGPU's defaults when ``None``).
        storage: the input texture's storage format (``STORAGE_FORMATS``).
        output: the output texture's format (``OUTPUT_FORMATS``).
        tolerance: ``lowrank``'s ``--tolerance`` (``None``: the default).

    Returns:
        ``{pass name: bytes}`` in pass order.
    """
    if limits is None:
        limits = DeviceLimits()
    _, _, texel = _check_storage(storage)
    _check_output(output)
    height, width = int(shape[0]), int(shape[1])
    channels = int(shape[2]) if len(shape) > 2 else 4
    get_strategy(strategy)
    passes = _passes(
        strategy, kernel, 0, 0.0, (width, height), limits, tile, channels, tolerance, output
    )
    return {p.name: _pass_bytes(p, texel) for p in passes}


#: How much lower than its caller a background bake's thread runs (Linux ``nice``).
BAKE_NICE = 10


def _lower_thread_priority(step: int) -> None:
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + step)
    except (AttributeError, OSError):  # not Linux, or not allowed: the same priority
        pass


class GpuFilter:
    """Runs the GPU strategies on one device, caching pipelines and per-shape resources.

    ``BAKE_IN_BACKGROUND``: see :attr:`bake_in_background`.

    Strategies that run themselves (``fft``: buffers and batches of its own) use the public
    executor API: :meth:`shape_resources`, :meth:`upload`, :meth:`texture`, :meth:`make_buffer`,
    :meth:`shader_module`, :meth:`cached_pipeline`, :meth:`pass_timer`, :meth:`take_readback`,
    :meth:`copy_output` and :meth:`map_output`.

    Thread-safe: runs are serialised (the GUI's preview worker and a batch can share it).
    ``stats`` counts the GPU objects created, so that tests can check nothing is rebuilt, and
    (``*_evicted``) the cache entries dropped to stay within KEPT_PIPELINES,
    KEPT_SHADER_MODULES and the kept image shapes.
    """

    BAKE_IN_BACKGROUND: bool | None = None
    #: Multiply-adds per submission of a direct or tiled pass (``None``: by adapter, see
    #: :meth:`_bands`).
    BAND_MACS: int | None = None

    def __init__(self, context: GpuContext | None = None) -> None:
        self._ctx = context
        self._lock = threading.RLock()
        self.stats: Counter[str] = Counter()
        self._compile_ms = 0.0  # compiles of the run in progress (Timing.compile_ms)
        self._baking: set[tuple[Any, ...]] = set()  # baked pipelines being compiled
        self._modules: LruCache[tuple[str, tuple[tuple[str, Any], ...]], Any] = LruCache(
            KEPT_SHADER_MODULES, self._counter("shader_modules_evicted")
        )
        self._pipelines: LruCache[tuple[Any, ...], Any] = LruCache(
            KEPT_PIPELINES, self._counter("pipelines_evicted")
        )
        self._shapes: LruCache[tuple[int, int], _ShapeResources] = LruCache(
            _KEPT_SHAPES, self._counter("shapes_evicted")
        )
        self._weights: list[Any] = []
        self._weights_capacity = 0
        # (dst texture format, adds a sum) -> (bind group layout, pipeline layout): the storage
        # texture's format is part of the layout, and so is lowrank's sum texture (binding 4).
        self._layouts: dict[tuple[str, bool], tuple[Any, Any]] = {}
        self._timer: PassTimer | None = None  # a strategy with its own run (under the lock)
        self._timers: list[PassTimer] = []  # free for runs that are read outside the lock
        self.uploads = 0  # input textures written (a run with a known input_key skips it)
        self._rates: dict[str, float] = {}  # shader -> measured multiply-adds per second

    @property
    def context(self) -> GpuContext:
        """The GPU context (created on first use; GpuUnavailableError without an adapter)."""
        if self._ctx is None:
            self._ctx = get_device()
        return self._ctx

    # -- public API -----------------------------------------------------------------------

    def run(
        self,
        x: np.ndarray,
        kernel: Kernel,
        border: Border | str,
        strategy: str,
        *,
        tile: int | None = None,
        storage: str = "rgba32f",
        convert: Callable[[np.ndarray], np.ndarray] | None = None,
        output: str = "rgba32f",
        input_key: Hashable | None = None,
        tolerance: float | None = None,
    ) -> tuple[np.ndarray, Timing]:
        """Correlate ``x`` with ``kernel`` on the GPU.

        Arguments:
            x: float H×W×C image (C 1..4; H×W is taken as one channel), normalised units.
            kernel: the kernel, applied as correlation anchored at (rows // 2, cols // 2).
            border: a :class:`Border` (or its name).
            strategy: ``"direct"``, ``"tiled"``, ``"separable"`` or ``"transpose"``.
            tile: tile side for ``tiled`` (8, 16 or 32); ``None`` lets the planner choose.
                The other strategies ignore it.
            storage: the input texture's format: ``"rgba32f"`` (rgba32float, the default),
                ``"rgba16f"`` (rgba16float: x rounded to half precision) or ``"rgba8"``
                (rgba8unorm: x clamped to [0, 1] and rounded to 1/255). The shaders accumulate
                in f32 either way; see :func:`to_storage`.
            convert: called with the H×W×C result (float32, or uint8 for ``output="rgba8"``)
                as a read-only view of the mapped readback buffer (valid only during the
                call); what it returns is the result, as returned (an H×W input is not
                squeezed then).
                Lets a caller quantise straight from the buffer without a float copy. The
                default copies the view.
            output: the last pass's texture: ``"rgba32f"`` (the default: float32 results) or
                ``"rgba8"`` (rgba8unorm: uint8 results, each value clamped to [0, 1] and
                rounded to nearest by the GPU's store, i.e. DESIGN.md's clamp quantisation
                done on the GPU; intermediates stay f32). For callers that quantise to 8 bits
                anyway: the output texture and readback buffer are a quarter of the size.
            input_key: a hashable that identifies ``x``'s content, or ``None``. When the input
                texture of this shape and storage format last received an ``x`` with an equal
                key (and as many channels), it is used as it is, without uploading ``x`` again:
                a live preview that changes only the kernel or the border re-runs the passes
                alone. The caller promises that equal keys mean equal pixels.
            tolerance: for ``lowrank``: the output error allowed per unit of max |x|
                (``None``: half an 8-bit step; see :mod:`blurapp.core.lowrank`).

        Returns:
            The float32 (``output="rgba8"``: uint8) result, or ``convert``'s, with ``x``'s
            shape, and its :class:`Timing` (``timer`` is ``"gpu"`` when the adapter records
            timestamps, else ``"wall"``).

        Raises:
            StrategyError: unknown strategy, or one that cannot run this kernel or tile.
            UsageError: unknown storage or output format.
            ImageError: empty image, more than 4 channels, larger than the device allows.
            KernelSpecError: non-finite weights.
            GpuUnavailableError: no adapter.
        """
        start = time.perf_counter()
        note_user_run()  # the background calibration yields (not to its own runs)
        strat = get_strategy(strategy)
        _, _, texel = _check_storage(storage)
        _check_output(output)
        border = Border.parse(border)
        _check_kernel(kernel)
        strat.check(kernel, tolerance)
        ctx = self.context
        squeeze = np.ndim(x) == 2
        x = _check_image(x, ctx.limits, int(ctx.device.limits["max-buffer-size"]))
        height, width, channels = x.shape
        passes = _passes(
            strategy, kernel, border.mode.value, border.value, (width, height), ctx.limits,
            tile, channels, tolerance, output,
        )  # fmt: skip
        # The upload's layout is made before the lock (on lavapipe, another thread's run holds
        # the lock while its passes execute); a keyed input may be skipped, so it waits.
        staged = _staged(x, storage) if input_key is None and not hasattr(strat, "run") else None
        submitted = None
        with self._lock:
            # A run that waited for the lock while its caller was cancelled stops here, before
            # its upload (the tile loop's next tiles wait here while one executes).
            check_now()
            self._compile_ms = 0.0
            made = self.stats["pipelines"]
            passes = self._ready_passes(passes)
            if hasattr(strat, "run"):  # buffers and passes of its own (fft); timed the same way
                out, pass_ms, timer = strat.run(
                    self, x, kernel, border, passes,
                    storage=storage, convert=convert, output=output, input_key=input_key,
                )  # fmt: skip
            else:
                submitted = self._submit(x, passes, storage, output, input_key, staged)
            compile_ms, first_run = self._compile_ms, self.stats["pipelines"] > made
        if submitted is not None:
            # Outside the lock: another thread's run (the next tile) uploads and submits while
            # this one waits for its passes and reads its result back.
            out, pass_ms, timer = self._collect(submitted, channels, convert)
        result = out[:, :, 0] if squeeze and convert is None else out
        self._learn_rates(passes, pass_ms)
        timing = Timing(
            passes=tuple(
                PassTiming(p.name, ms, _pass_bytes(p, texel))
                for p, ms in zip(passes, pass_ms, strict=True)
            ),
            timer=timer,
            pixels=width * height,
            wall_ms=(time.perf_counter() - start) * 1e3,
            compile_ms=compile_ms,
            first_run=first_run,
        )
        return result, timing

    def _ready_passes(self, passes: tuple[PassSpec, ...]) -> tuple[PassSpec, ...]:
        """``passes`` with every baked 1-D pass whose pipeline is not compiled yet replaced by
        its weights-from-the-buffer variant, whose pipeline serves every kernel of its size
        bucket: a new kernel is not compiled on the critical path (a live preview stepping
        sigma). Where baking pays (``bake_in_background``), the baked pipeline is compiled on
        a background thread and used from the next run on; both give the same values.
        """
        out = []
        for p in passes:
            variant = buffer_variant(p)
            if variant is None or self._pipeline_key(p) in self._pipelines:
                out.append(p)
                continue
            out.append(variant)
            if self.bake_in_background:
                self._compile_in_background(p)
        return tuple(out)

    def _compile_in_background(self, p: PassSpec) -> None:
        key = self._pipeline_key(p)
        if key in self._baking:
            return
        self._baking.add(key)

        with self._lock:  # the caches are shared with runs: only touched under the lock
            layout = self._layouts_for(_dst_format(p), p.add is not None)[1]
        device = self.context.device

        def bake() -> None:
            # Background work: below the user's threads (Linux nice +10) and held, as the
            # background calibration is, while user work waits or runs (the window's preview
            # pauses it) and for a moment after the last user run. The compile itself runs
            # outside the lock, beside the runs (wgpu's device is thread-safe); only the
            # finished pipeline goes into the cache, under the lock.
            _lower_thread_priority(BAKE_NICE)
            wait_for_quiet()
            try:
                module = device.create_shader_module(
                    label=p.shader, code=load_shader(p.shader, **dict(p.template))
                )
                pipeline = device.create_compute_pipeline(
                    label=p.shader,
                    layout=layout,
                    compute={
                        "module": module, "entry_point": "main", "constants": dict(p.constants),
                    },
                )  # fmt: skip
                with self._lock:
                    self._pipelines.get_or_make(key, lambda: pipeline)
                    self.stats["baked_in_background"] += 1
            except Exception:  # the buffer variant keeps working; nothing is lost
                pass
            finally:
                self._baking.discard(key)

        threading.Thread(target=bake, name="blurapp-bake", daemon=True).start()

    @property
    def bake_in_background(self) -> bool:
        """Whether baked 1-D passes are compiled in the background and swapped in.

        Measured on lavapipe (2048² RGBA f32, sigma 1, 3, 8): baked passes are 1-7 % faster
        than the buffer variant, not worth a second's compile on the cores the preview runs
        on; on a hardware GPU the compile runs beside the GPU's work. ``BAKE_IN_BACKGROUND``
        overrides (``None``: hardware adapters only).
        """
        if self.BAKE_IN_BACKGROUND is not None:
            return self.BAKE_IN_BACKGROUND
        return not self.context.is_software

    def modelled_bytes(
        self,
        strategy: str,
        kernel: Kernel,
        shape: tuple[int, ...],
        *,
        tile: int | None = None,
        storage: str = "rgba32f",
        output: str = "rgba32f",
        tolerance: float | None = None,
    ) -> dict[str, int]:
        """:func:`modelled_bytes` with this device's limits."""
        return modelled_bytes(
            strategy,
            kernel,
            shape,
            tile=tile,
            limits=self.context.limits,
            storage=storage,
            output=output,
            tolerance=tolerance,
        )

    def clear(self) -> None:
        """Drop the per-shape resources (pipelines stay): frees GPU memory after a big image."""
        with self._lock:
            self._shapes.clear()

    # -- execution --------------------------------------------------------------------------

    def _submit(
        self,
        x: np.ndarray,
        passes: tuple[PassSpec, ...],
        storage: str,
        output: str,
        input_key: Hashable | None = None,
        staged: np.ndarray | None = None,
    ) -> _Submitted:
        """Upload ``x``, record and submit the passes and the copy of the result into a
        readback buffer of this run's own, and ask for that buffer's mapping (under the lock).

        The mapping is asked for at once, so that the device's poll waits for this submission
        and not for a later one; :meth:`_collect` waits for it and reads the result.
        """
        import wgpu

        device = self.context.device
        height, width, channels = x.shape
        fmt = STORAGE_FORMATS[storage][0]
        res = self.shape_resources(width, height)
        # The passes' shaders and texture slots name their bind groups and uniforms.
        strategy_key = "/".join(f"{p.shader}:{p.src}>{p.dst}+{p.add}" for p in passes)
        self.upload(res, x, storage, input_key, staged)

        commands = []
        for i, p in enumerate(passes):
            pipeline = self._pipeline(p)
            bind_group = self._bind_group(res, strategy_key, i, p, fmt)
            device.queue.write_buffer(res.uniforms[(strategy_key, i)], 0, _params(p, channels, 0))
            if p.weights is not None:
                device.queue.write_buffer(self._weights[i], 0, p.weights.tobytes())
            commands.append((p, pipeline, bind_group))

        timer = self._take_timer()
        readback = self.take_readback(res, output)
        earlier_ms = 0.0  # the bands submitted before the last one
        # A run stopped between bands leaves its timer and readback unreturned (not reused).
        encoder = device.create_command_encoder()
        for i, (p, pipeline, bind_group) in enumerate(commands):
            bands = self._bands(p) if len(passes) == 1 else [(0, p.workgroups[1])]
            for b, (first, groups) in enumerate(bands):
                if b:
                    # A band of its own submission, timed; then a cancellation point
                    # (on the main thread, Ctrl-C is raised as the submission returns).
                    timer.resolve(encoder)
                    device.queue.submit([encoder.finish()])
                    earlier_ms += sum(timer.read_ms())
                    self.stats["bands"] += 1
                    check_now(b, len(bands))
                    uniforms = res.uniforms[(strategy_key, i)]
                    device.queue.write_buffer(uniforms, 0, _params(p, channels, first))
                    encoder = device.create_command_encoder()
                writes = timer.writes(i)
                cpass = encoder.begin_compute_pass(label=p.name, timestamp_writes=writes)
                cpass.set_pipeline(pipeline)
                cpass.set_bind_group(0, bind_group)
                cpass.dispatch_workgroups(p.workgroups[0], groups, 1)
                cpass.end()
                encoder = timer.after_pass(encoder)
        self.copy_output(encoder, res, output, readback)
        timer.resolve(encoder)
        device.queue.submit([encoder.finish()])
        mapped = readback[0].map_async(wgpu.MapMode.READ)
        return _Submitted(res, output, readback, mapped, timer, earlier_ms)

    def _learn_rates(self, passes: tuple[PassSpec, ...], pass_ms: list[float]) -> None:
        """Follow the multiply-adds a second the 2-D passes reach (a running mean of the runs
        long enough to say; timestamps where the adapter has them)."""
        for p, ms in zip(passes, pass_ms, strict=True):
            if p.shader in _BANDED_SHADERS and p.weights is not None and ms >= _RATE_MIN_MS:
                rate = p.size[0] * p.size[1] * _taps(p) / (ms / 1e3)
                old = self._rates.get(p.shader)
                self._rates[p.shader] = rate if old is None else 0.5 * (old + rate)

    def mac_rate(self, strategy: str = "direct") -> float:
        """Multiply-adds a second of ``strategy``'s 2-D pass (``direct`` or ``tiled``) on this
        adapter: measured by this filter's runs, else the calibrated cost table's cost of a tap,
        else a guess for a software or a hardware adapter. For sizing work by time (the bands
        of a long pass, the window's preview tiles)."""
        shader = next((k for k, v in _SHADER_STRATEGY.items() if v == strategy), "direct")
        measured = self._rates.get(shader)
        if measured is not None:
            return measured
        from blurapp.core.planner import active_table
        from blurapp.gpu.strategies import STRATEGIES

        table = active_table()
        model = STRATEGIES.get(_SHADER_STRATEGY[shader])
        if table.calibrated and model is not None:
            ns = table.coefficient(model, "tap") * table.unit_ns
            if ns > 0:
                return 1e9 / ns
        return _RATE_SOFTWARE if self.context.is_software else _RATE_GPU

    def _bands(self, p: PassSpec) -> list[tuple[int, int]]:
        """``(first workgroup row, workgroup rows)`` of each submission of pass ``p``: one,
        unless the pass reads so many taps per output (direct and tiled with a large kernel)
        that one submission would run for long; then bands of about BAND_SECONDS at the
        adapter's measured rate (:meth:`mac_rate`; ``BAND_MACS`` overrides) multiply-adds
        each, so that a run can be stopped between them (on lavapipe a submission cannot be
        interrupted; on a GPU, a long one trips the driver's watchdog)."""
        rows = p.workgroups[1]
        if p.shader not in _BANDED_SHADERS or p.weights is None or rows <= 1:
            return [(0, rows)]
        budget = self.BAND_MACS
        if budget is None:
            budget = int(self.mac_rate(_SHADER_STRATEGY[p.shader]) * BAND_SECONDS)
        cost = p.size[0] * p.size[1] * _taps(p)
        per_band = max(1, budget * rows // max(cost, 1))
        if per_band >= rows:
            return [(0, rows)]
        return [(g, min(per_band, rows - g)) for g in range(0, rows, per_band)]

    def _collect(
        self,
        submitted: _Submitted,
        channels: int,
        convert: Callable[[np.ndarray], np.ndarray] | None,
    ) -> tuple[np.ndarray, list[float], str]:
        """Wait for a submitted run, read its result (``convert`` on a read-only view of the
        mapped buffer) and its pass times; the readback and the timer go back for reuse."""
        res, output, readback, timer = (
            submitted.res, submitted.output, submitted.readback, submitted.timer,
        )  # fmt: skip
        submitted.mapped.sync_wait()
        try:
            out = self._read_mapped(res, output, readback, channels, convert)
        finally:
            readback[0].unmap()
        pass_ms = timer.read_ms()
        if submitted.earlier_ms:
            pass_ms[0] += submitted.earlier_ms
        with self._lock:
            res.readbacks.setdefault(output, []).append(readback)
            self._timers.append(timer)
        return out, pass_ms, timer.timer

    def upload(
        self,
        res: _ShapeResources,
        x: np.ndarray,
        storage: str,
        input_key: Hashable | None,
        staged: np.ndarray | None = None,
    ) -> None:
        """Write ``x`` into the input texture of its storage format, unless it holds it already
        (``staged``: ``x`` already in the texture's layout, from :func:`_staged`)."""
        height, width, channels = x.shape
        fmt, _, texel = STORAGE_FORMATS[storage]
        in_tex, _ = self.texture(res, "input", (width, height), fmt)
        held = None if input_key is None else (input_key, channels)
        device = self.context.device
        if held is None or res.uploaded.get(fmt) != held:
            res.uploaded[fmt] = None  # unknown until the upload below has been queued
            if staged is not None:
                upload = staged
            elif channels == 4:
                upload = to_storage(x, storage)  # RGBA in the texture's layout: no staging copy
            else:
                x = to_storage(x, storage)
                upload = res.staging.get(fmt)
                if upload is None:
                    upload = res.staging[fmt] = np.zeros((height, width, 4), dtype=x.dtype)
                put_pixels(upload, x)
                upload[:, :, channels:] = 0
            device.queue.write_texture(
                {"texture": in_tex, "mip_level": 0, "origin": (0, 0, 0)},
                upload,
                {"offset": 0, "bytes_per_row": width * texel, "rows_per_image": height},
                (width, height, 1),
            )
            self.uploads += 1
            res.uploaded[fmt] = held

    def copy_output(
        self, encoder: Any, res: _ShapeResources, output: str, readback: tuple[Any, int]
    ) -> None:
        """Encode the copy of the output texture of format ``output`` into ``readback`` (from
        :meth:`take_readback`)."""
        width, height = res.width, res.height
        out_tex, _ = self.texture(res, "output", (width, height), OUTPUT_FORMATS[output][0])
        readback, row_bytes = readback
        encoder.copy_texture_to_buffer(
            {"texture": out_tex, "mip_level": 0, "origin": (0, 0, 0)},
            {
                "buffer": readback,
                "offset": 0,
                "bytes_per_row": row_bytes,
                "rows_per_image": height,
            },
            (width, height, 1),
        )

    def map_output(
        self,
        res: _ShapeResources,
        output: str,
        readback: tuple[Any, int],
        channels: int,
        convert: Callable[[np.ndarray], np.ndarray] | None,
    ) -> np.ndarray:
        """The result in ``readback`` (after the submission that copied it), H×W×C, or what
        ``convert`` makes of a read-only view of it; the buffer is given back for reuse."""
        import wgpu

        readback[0].map_sync(wgpu.MapMode.READ)
        try:
            return self._read_mapped(res, output, readback, channels, convert)
        finally:
            readback[0].unmap()
            with self._lock:
                res.readbacks.setdefault(output, []).append(readback)

    @staticmethod
    def _read_mapped(
        res: _ShapeResources,
        output: str,
        readback: tuple[Any, int],
        channels: int,
        convert: Callable[[np.ndarray], np.ndarray] | None,
    ) -> np.ndarray:
        """The H×W×C result in a mapped readback buffer (a copy), or ``convert``'s."""
        buffer, row_bytes = readback
        width, height = res.width, res.height
        dtype = np.float32 if OUTPUT_FORMATS[output][1] == TEXEL_BYTES else np.uint8
        raw = np.frombuffer(buffer.read_mapped(copy=False), dtype=dtype)
        rows = raw.reshape(height, row_bytes // raw.itemsize)[:, : width * 4]
        view = rows.reshape(height, width, 4)[:, :, :channels]
        return copy_pixels(view) if convert is None else convert(view)

    # -- caches -------------------------------------------------------------------------------

    def _counter(self, name: str) -> Callable[[Any, Any], None]:
        """An eviction callback that counts in ``stats[name]``."""

        def count(_key: Any, _value: Any) -> None:
            self.stats[name] += 1

        return count

    def shape_resources(self, width: int, height: int) -> _ShapeResources:
        """The textures, buffers and bind groups kept for one (width, height); a strategy with
        its own run keeps its resources in the result's ``owned`` dict."""
        return self._shapes.get_or_make((width, height), lambda: _ShapeResources(width, height))

    def take_readback(self, res: _ShapeResources, output: str) -> tuple[Any, int]:
        """A readback buffer of ``output``'s format for one run in flight (under the lock);
        :meth:`_collect` gives it back."""
        import wgpu

        free = res.readbacks.setdefault(output, [])
        if free:
            return free.pop()
        _, texel = OUTPUT_FORMATS[output]
        row_bytes = math.ceil(res.width * texel / _ROW_ALIGN) * _ROW_ALIGN
        usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        return self.make_buffer(row_bytes * res.height, usage), row_bytes

    def _take_timer(self) -> PassTimer:
        """A pass timer for one run in flight (under the lock); :meth:`_collect` gives it back."""
        if self._timers:
            return self._timers.pop()
        ctx = self.context
        return PassTimer(ctx.device, _MAX_PASSES, use_timestamps=ctx.has_timestamps)

    def make_buffer(self, size: int, usage: int) -> Any:
        """A new device buffer of ``size`` bytes (counted in ``stats["buffers"]``)."""
        self.stats["buffers"] += 1
        return self.context.device.create_buffer(size=size, usage=usage)

    def texture(
        self, res: _ShapeResources, slot: str, size: tuple[int, int], fmt: str = "rgba32float"
    ) -> tuple[Any, Any]:
        """``(texture, view)`` of texture slot ``slot`` of ``res`` (made on first use)."""
        key = (slot, size[0], size[1], fmt)
        found = res.textures.get(key)
        if found is None:
            tex = self.context.device.create_texture(
                label=f"blurapp {slot} {size[0]}x{size[1]} {fmt}",
                size=(size[0], size[1], 1),
                format=fmt,
                usage=_texture_usage(),
            )
            self.stats["textures"] += 1
            found = (tex, tex.create_view())
            res.textures[key] = found
        return found

    def _layouts_for(self, dst_fmt: str, adds: bool = False) -> tuple[Any, Any]:
        """The bind group layout and pipeline layout of passes that write ``dst_fmt`` (and, with
        ``adds``, read a running sum at binding 4)."""
        import wgpu

        found = self._layouts.get((dst_fmt, adds))
        if found is None:
            compute = wgpu.ShaderStage.COMPUTE
            device = self.context.device
            texture = {"sample_type": "unfilterable-float", "view_dimension": "2d"}
            extra = [{"binding": 4, "visibility": compute, "texture": texture}] if adds else []
            layout = device.create_bind_group_layout(
                entries=[
                    {"binding": 0, "visibility": compute, "texture": texture},
                    {
                        "binding": 1,
                        "visibility": compute,
                        "storage_texture": {
                            "access": "write-only",
                            "format": dst_fmt,
                            "view_dimension": "2d",
                        },
                    },
                    {"binding": 2, "visibility": compute, "buffer": {"type": "read-only-storage"}},
                    {"binding": 3, "visibility": compute, "buffer": {"type": "uniform"}},
                    *extra,
                ]
            )
            found = (layout, device.create_pipeline_layout(bind_group_layouts=[layout]))
            self._layouts[(dst_fmt, adds)] = found
        return found

    def _weights_buffers(self, needed: int, passes: int = 4) -> list[Any]:
        """At least ``passes`` weight buffers (one per pass index) of ``needed`` bytes each."""
        import wgpu

        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
        if needed > self._weights_capacity or not self._weights:
            self._weights_capacity = max(_WEIGHTS_CAPACITY, needed)
            self._weights = [
                self.make_buffer(self._weights_capacity, usage) for _ in range(max(4, passes))
            ]
            for res in self._shapes.values():  # they bound the old buffers
                res.bind_groups.clear()
        while len(self._weights) < passes:  # lowrank's later passes: new buffers, new indices
            self._weights.append(self.make_buffer(self._weights_capacity, usage))
        return self._weights

    def _bind_group(
        self, res: _ShapeResources, strategy_key: str, i: int, p: PassSpec, fmt: str
    ) -> Any:
        import wgpu

        weights = self._weights_buffers(0 if p.weights is None else p.weights.nbytes, i + 1)
        key = (strategy_key, i)
        if key not in res.uniforms:
            res.uniforms[key] = self.make_buffer(
                _PARAMS_BYTES, wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
            )
        # The pass that reads the input binds the texture of the input's storage format; the
        # one that writes the output, the texture of the output's format.
        src_fmt = fmt if p.src == "input" else "rgba32float"
        dst_fmt = _dst_format(p)
        group = res.bind_groups.get((*key, src_fmt, dst_fmt))
        if group is None:
            _, src_view = self.texture(res, p.src, p.size, src_fmt)
            _, dst_view = self.texture(res, p.dst, p.out_size, dst_fmt)
            extra = []
            if p.add is not None:
                _, sum_view = self.texture(res, p.add, p.out_size)
                extra.append({"binding": 4, "resource": sum_view})
            group = self.context.device.create_bind_group(
                layout=self._layouts_for(dst_fmt, p.add is not None)[0],
                entries=[
                    {"binding": 0, "resource": src_view},
                    {"binding": 1, "resource": dst_view},
                    {"binding": 2, "resource": {"buffer": weights[i]}},
                    {"binding": 3, "resource": {"buffer": res.uniforms[key]}},
                    *extra,
                ],
            )
            self.stats["bind_groups"] += 1
            res.bind_groups[(*key, src_fmt, dst_fmt)] = group
        return group

    @staticmethod
    def _pipeline_key(p: PassSpec) -> tuple[Any, ...]:
        return (p.shader, p.template, p.constants)

    def _pipeline(self, p: PassSpec) -> Any:
        return self._pipelines.get_or_make(self._pipeline_key(p), lambda: self._make_pipeline(p))

    def _make_pipeline(self, p: PassSpec, *, timed: bool = True) -> Any:
        """Compile ``p``'s module (if not cached) and pipeline; ``timed`` adds the time to the
        current run's ``compile_ms``."""
        return self.compiling(lambda: self._compile(p)) if timed else self._compile(p)

    def compiling(self, make: Callable[[], Any]) -> Any:
        """``make()``, its time added to the current run's ``compile_ms`` (for strategies that
        build pipelines of their own)."""
        start = time.perf_counter()
        try:
            return make()
        finally:
            self._compile_ms += (time.perf_counter() - start) * 1e3

    def shader_module(self, shader: str, template: tuple[tuple[str, Any], ...]) -> Any:
        """The compiled module of ``shader`` with ``template``'s parameters (cached, bounded by
        KEPT_SHADER_MODULES): for strategies that build pipelines of their own."""
        device = self.context.device

        def make_module() -> Any:
            code = load_shader(shader, **dict(template))
            module = device.create_shader_module(label=shader, code=code)
            self.stats["shader_modules"] += 1
            return module

        return self._modules.get_or_make((shader, template), make_module)

    def cached_pipeline(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The pipeline cached under ``key``, made by ``make()`` (its time added to the run's
        ``compile_ms``) when missing; bounded by KEPT_PIPELINES with the strategies' own."""
        return self._pipelines.get_or_make(key, lambda: self.compiling(make))

    def _compile(self, p: PassSpec) -> Any:
        device = self.context.device
        module = self.shader_module(p.shader, p.template)
        pipeline = device.create_compute_pipeline(
            label=p.shader,
            layout=self._layouts_for(_dst_format(p), p.add is not None)[1],
            compute={"module": module, "entry_point": "main", "constants": dict(p.constants)},
        )
        self.stats["pipelines"] += 1
        return pipeline

    def pass_timer(self) -> PassTimer:
        """The timer of a strategy that runs itself (used under the run's lock)."""
        if self._timer is None:
            ctx = self.context
            self._timer = PassTimer(ctx.device, _MAX_PASSES, use_timestamps=ctx.has_timestamps)
        return self._timer


_filter_lock = threading.Lock()
_filter: GpuFilter | None = None


def get_filter() -> GpuFilter:
    """The per-process :class:`GpuFilter` (its device is created on its first run)."""
    global _filter
    with _filter_lock:
        if _filter is None:
            _filter = GpuFilter()
        return _filter
