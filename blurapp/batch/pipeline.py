"""Filter decoded images the way a photographer expects, one at a time or overlapped in a pipeline.

One image goes: stored pixels → normalised floats → (sRGB → linear) → premultiplied alpha →
kernel → un-premultiplied → (linear → sRGB) → the output's pixel type. :func:`run_pipeline`
overlaps decoding, filtering and encoding of many files on threads, with a memory budget so that
only a bounded number of images is in flight whatever the number of files.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from blurapp.core.borders import Border
from blurapp.core.errors import BlurappError, StrategyError, UsageError
from blurapp.core.imageio import (
    DEFAULT_MAX_PIXELS,
    ImageData,
    output_dtype,
    probe_image,
    read_image,
    with_pixels,
    write_image,
)
from blurapp.core.kernel import Kernel
from blurapp.core.numbers import RANGE_MODES, from_float, to_float
from blurapp.core.timing import Timing

__all__ = [
    "ALPHA_MODES",
    "BatchInterrupted",
    "EncodeSettings",
    "FileRecord",
    "FilterOutcome",
    "FilterSettings",
    "Job",
    "MemoryBudget",
    "filter_pixels",
    "linear_to_srgb",
    "process_file",
    "run_pipeline",
    "srgb_to_linear",
]

ALPHA_MODES = ("premultiply", "straight")

#: Below this filtered alpha a pixel is invisible: its colour is not divided out (it would be
#: noise over a tiny number) but taken from the input, so that identity round-trips exactly.
_ALPHA_EPS = 1e-7

#: Default bytes of images in flight in a batch (decoded, filtered or being encoded). One image
#: is always let through, however big. An 8-bit 4K RGB photo on the GPU path counts 75 MB (its
#: pixels in and out, and the encoder's buffers), so about three are in flight: enough to keep
#: decoding, the GPU and encoding busy on two cores. The GPU's own textures and readback buffer
#: (about 0.27 GB for a 4K 8-bit output, which reads back rgba8; 0.47 GB for float results; in
#: host memory on lavapipe) are made once per image size, not per image, and are not counted.
DEFAULT_MEMORY_BUDGET = 256 * 2**20


@dataclass(frozen=True)
class FilterSettings:
    """What to do to every image; build it with :meth:`create` to check the values up front."""

    kernel: Kernel
    border: Border
    strategy: str = "auto"
    tile: int | None = None
    range_mode: str = "clamp"
    alpha: str = "premultiply"
    linear: bool = False

    @classmethod
    def create(
        cls,
        kernel: Kernel | str,
        border: Border | str = "clamp",
        strategy: str = "auto",
        tile: int | None = None,
        *,
        convolve: bool = False,
        range_mode: str = "clamp",
        alpha: str = "premultiply",
        linear: bool = False,
    ) -> FilterSettings:
        """Checked settings: a bad spec, border, strategy, range or alpha mode is a UsageError."""
        from blurapp.engine import why_not

        k = Kernel.parse(kernel) if not isinstance(kernel, Kernel) else kernel
        if convolve:
            k = k.flipped()
        problem = why_not(strategy, k)
        if problem:
            raise StrategyError(problem)
        if range_mode not in RANGE_MODES:
            raise UsageError(f"unknown range mode {range_mode!r}; valid: {', '.join(RANGE_MODES)}")
        if alpha not in ALPHA_MODES:
            raise UsageError(f"unknown alpha mode {alpha!r}; valid: {', '.join(ALPHA_MODES)}")
        return cls(k, Border.parse(border), strategy, tile, range_mode, alpha, linear)


@dataclass(frozen=True)
class EncodeSettings:
    """How outputs are written."""

    quality: int = 95
    compress_level: int = 6
    lossless: bool = False
    overwrite: bool = False
    max_pixels: int = DEFAULT_MAX_PIXELS


@dataclass(frozen=True)
class FilterOutcome:
    """Which strategy ran, why, and its timing."""

    strategy: str
    reason: str
    timing: Timing


# ------------------------------------------------------------------------------ colour


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """The sRGB decoding curve (IEC 61966-2-1), odd-symmetric so signed values survive."""
    a = np.abs(c)
    lin = np.where(a <= 0.04045, a / 12.92, ((a + 0.055) / 1.055) ** 2.4)
    return np.copysign(lin, c).astype(c.dtype, copy=False)


def linear_to_srgb(x: np.ndarray) -> np.ndarray:
    """The sRGB encoding curve, inverse of :func:`srgb_to_linear`."""
    a = np.abs(x)
    enc = np.where(a <= 0.0031308, a * 12.92, 1.055 * a ** (1 / 2.4) - 0.055)
    return np.copysign(enc, x).astype(x.dtype, copy=False)


def _prepare(pixels: np.ndarray, settings: FilterSettings, float_dtype: type) -> np.ndarray:
    """Stored pixels → the float H×W×C image the kernel sees (linear, premultiplied as asked)."""
    x = to_float(pixels, float_dtype)
    channels = x.shape[2]
    has_alpha = channels in (2, 4)
    colour = channels - 1 if has_alpha else channels
    if not settings.linear and not (has_alpha and settings.alpha == "premultiply"):
        return x
    x = x.copy()  # to_float may return a view of the input
    if settings.linear:
        x[:, :, :colour] = srgb_to_linear(x[:, :, :colour])
    if has_alpha and settings.alpha == "premultiply":
        x[:, :, :colour] *= x[:, :, colour:]
    return x


def _finish(
    y: np.ndarray,
    source: np.ndarray,
    settings: FilterSettings,
    dtype: np.dtype,
    squeeze: bool,
) -> np.ndarray:
    """Filtered floats → the output's pixel type (un-premultiplied, sRGB-encoded as asked)."""
    channels = y.shape[2]
    has_alpha = channels in (2, 4)
    colour = channels - 1 if has_alpha else channels
    if has_alpha and settings.alpha == "premultiply":
        y = np.array(y, dtype=np.float64)
        alpha = y[:, :, colour:]
        visible = np.abs(alpha) > _ALPHA_EPS
        np.divide(y[:, :, :colour], alpha, out=y[:, :, :colour], where=visible)
        hidden = ~visible[:, :, 0]
        if hidden.any():
            # The colour of an invisible pixel is undefined after premultiplication; the input's
            # own colour there keeps identity exact and transparent areas unchanged.
            src = to_float(source, np.float64)
            if settings.linear:
                src = src.copy()
                src[:, :, :colour] = srgb_to_linear(src[:, :, :colour])
            y[hidden, :colour] = src[hidden, :colour]
    if settings.linear:
        y = np.array(y, copy=True)
        y[:, :, :colour] = linear_to_srgb(y[:, :, :colour])
    if y.dtype == np.float32 and dtype.kind == "u" and settings.range_mode == "clamp":
        return _quantise_f32(y, dtype, squeeze)
    return from_float(y, dtype, range_mode=settings.range_mode, squeeze=squeeze)


def _quantise_f32(y: np.ndarray, dtype: np.dtype, squeeze: bool) -> np.ndarray:
    """from_float's clamp mode for a float32 GPU result, without its float64 copies.

    The values are the same except where the float32 product lands within float32 rounding of
    a .5 tie, which the GPU's own float32 accumulation leaves undecided anyway. NaN becomes 0,
    as in from_float.
    """
    top = np.float32(np.iinfo(dtype).max)
    out = np.empty(y.shape, dtype)
    rows = max(1, (1 << 20) // max(1, y.shape[1] * y.shape[2] * 4))  # cache-sized slabs
    tmp = np.empty((min(rows, y.shape[0]), *y.shape[1:]), np.float32)
    for r0 in range(0, y.shape[0], rows):
        r1 = min(r0 + rows, y.shape[0])
        t = tmp[: r1 - r0]
        np.multiply(y[r0:r1], top, out=t)
        np.nan_to_num(t, copy=False, nan=0.0)
        np.rint(t, out=t)
        np.clip(t, 0, top, out=t)
        out[r0:r1] = t
    return out[:, :, 0] if squeeze else out


def _float_dtype(settings: FilterSettings) -> type:
    # The reference works in float64 (bit-for-bit what blurapp.core.reference.correlate gives);
    # the GPU in float32, so a float64 copy would only cost memory.
    return np.float64 if settings.strategy == "cpu" else np.float32


def _uploads_stored(dtype: np.dtype, channels: int, settings: FilterSettings) -> bool:
    """Whether stored pixels go to the GPU as they are: 8-bit pixels (v / 255) are exactly what
    an rgba8unorm texture holds, so with nothing to do in float before the kernel (no --linear,
    no alpha to premultiply) they are uploaded without a float copy, a quarter of the bytes."""
    return (
        dtype == np.uint8
        and settings.strategy != "cpu"
        and not settings.linear
        and not (channels in (2, 4) and settings.alpha == "premultiply")
    )


def _quantiser(
    settings: FilterSettings, channels: int, dtype: np.dtype, squeeze: bool
) -> Callable[[np.ndarray], np.ndarray] | None:
    """A function that makes the output pixels straight from the filter's float result (on the
    GPU: from the readback buffer, with no float copy), when :func:`_finish` would do nothing
    else than quantise; otherwise ``None``."""
    if (
        dtype.kind != "u"
        or settings.range_mode != "clamp"
        or settings.linear
        or (channels in (2, 4) and settings.alpha == "premultiply")
    ):
        return None

    def quantise(y: np.ndarray) -> np.ndarray:
        if y.dtype == np.uint8:  # already quantised (output="rgba8"); y may view the GPU buffer
            return np.array(y[:, :, 0] if squeeze else y)
        if y.dtype == np.float32:
            return _quantise_f32(y, dtype, squeeze)
        return from_float(y, dtype, range_mode="clamp", squeeze=squeeze)

    return quantise


def _filter_output(convert: Callable[[np.ndarray], np.ndarray] | None, dtype: np.dtype) -> str:
    """The filter's output format: ``"rgba8"`` when the output is 8-bit and only needs clamping
    and rounding (``convert``, from :func:`_quantiser`, is set): the GPU's rgba8unorm output
    texture does just that (clamp to [0, 1], round to nearest) in a quarter of the memory of the
    float output texture and readback buffer. ``"rgba32f"`` otherwise."""
    return "rgba8" if convert is not None and dtype == np.uint8 else "rgba32f"


def _filter_input(
    pixels: np.ndarray, settings: FilterSettings, float_dtype: type
) -> tuple[np.ndarray, str]:
    """The array handed to the filter and the GPU input texture's storage format."""
    channels = 1 if pixels.ndim == 2 else int(pixels.shape[2])
    if _uploads_stored(pixels.dtype, channels, settings):
        return (pixels if pixels.ndim == 3 else pixels[:, :, np.newaxis]), "rgba8"
    return _prepare(pixels, settings, float_dtype), "rgba32f"


def _filter(
    x: np.ndarray,
    settings: FilterSettings,
    storage: str = "rgba32f",
    convert: Callable[[np.ndarray], np.ndarray] | None = None,
    output: str = "rgba32f",
) -> tuple[np.ndarray, FilterOutcome]:
    from blurapp.engine import filter_float

    start = time.perf_counter()
    y, timing, ran, reason = filter_float(
        x,
        settings.kernel,
        settings.border,
        settings.strategy,
        settings.tile,
        storage=storage,
        convert=convert,
        output=output,
    )
    wall_ms = (time.perf_counter() - start) * 1e3
    return y, FilterOutcome(
        ran, reason, Timing(timing.passes, timing.timer, timing.pixels, wall_ms)
    )


def filter_pixels(
    pixels: np.ndarray, settings: FilterSettings, dtype: np.dtype | type | None = None
) -> tuple[np.ndarray, FilterOutcome]:
    """Filter one image's pixels as :class:`FilterSettings` says.

    Arguments:
        pixels: H×W or H×W×C (C = 2 or 4: the last channel is straight alpha).
        settings: the filter.
        dtype: the output's pixel type (default: the input's).

    Returns:
        ``(pixels, outcome)``: the filtered image, H×W for an H×W input.
    """
    out_dtype = np.dtype(dtype) if dtype is not None else pixels.dtype
    squeeze = pixels.ndim == 2
    channels = 1 if squeeze else int(pixels.shape[2])
    x, storage = _filter_input(pixels, settings, _float_dtype(settings))
    convert = _quantiser(settings, channels, out_dtype, squeeze)
    y, outcome = _filter(x, settings, storage, convert, _filter_output(convert, out_dtype))
    if convert is not None:
        return y, outcome
    return _finish(y, pixels, settings, out_dtype, squeeze), outcome


def process_file(
    source: Path,
    output: Path,
    fmt: str,
    settings: FilterSettings,
    encode: EncodeSettings,
) -> tuple[ImageData, FilterOutcome]:
    """Read ``source``, filter it and write ``output`` (atomically) in ``fmt``.

    Returns:
        The input image as read, and how the filter ran.
    """
    image = read_image(source, max_pixels=encode.max_pixels)
    pixels, outcome = filter_pixels(image.pixels, settings, output_dtype(image.pixels.dtype, fmt))
    _write(output, fmt, with_pixels(image, pixels), encode)
    return image, outcome


def _write(output: Path, fmt: str, image: ImageData, encode: EncodeSettings) -> None:
    write_image(
        output,
        image,
        fmt=fmt,
        quality=encode.quality,
        compress_level=encode.compress_level,
        lossless=encode.lossless,
        overwrite=encode.overwrite,
    )


# ------------------------------------------------------------------------------ batch


@dataclass(frozen=True)
class Job:
    """One input and the output it becomes."""

    input: Path
    output: Path
    format: str


@dataclass
class FileRecord:
    """What happened to one job; the report's row."""

    input: str
    output: str
    status: str = "pending"  # ok, failed, skipped, cancelled
    width: int | None = None
    height: int | None = None
    channels: int | None = None
    dtype: str | None = None
    strategy: str | None = None
    reason: str | None = None
    timer: str | None = None
    gpu_ms: float | None = None
    filter_ms: float | None = None
    total_ms: float | None = None
    error: str | None = None
    started: float = field(default=0.0, repr=False)

    @property
    def pixels(self) -> int:
        return (self.width or 0) * (self.height or 0)


class MemoryBudget:
    """A counting semaphore in bytes: a stage waits until the images in flight leave room.

    One reservation is always granted when nothing else is held, so an image larger than the
    whole budget still goes through (alone).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        self._cond = threading.Condition()

    def acquire(self, n: int, stop: threading.Event) -> bool:
        """Reserve ``n`` bytes; returns False (reserving nothing) if ``stop`` is set meanwhile."""
        with self._cond:
            while self.used and self.used + n > self.limit:
                if stop.is_set():
                    return False
                self._cond.wait(0.1)
            if stop.is_set():
                return False
            self.used += n
            self.peak = max(self.peak, self.used)
            return True

    def release(self, n: int) -> None:
        with self._cond:
            self.used -= n
            self._cond.notify_all()


@dataclass
class _Item:
    job: Job
    record: FileRecord
    image: ImageData  # pixels kept only until filtered (needed for invisible pixels' colour)
    reserved: int
    x: np.ndarray | None = None
    storage: str = "rgba32f"
    y: np.ndarray | None = None
    final: bool = False  # y is already the output's pixels (quantised by the filter stage)
    outcome: FilterOutcome | None = None


_DONE = object()


class BatchInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped a batch; ``records`` says what was done before."""

    def __init__(self, records: list[FileRecord]) -> None:
        super().__init__("interrupted")
        self.records = records


def _estimate_bytes(
    width: int,
    height: int,
    channels: int,
    itemsize: int,
    float_size: int,
    *,
    stored: bool = False,
    quantised: bool = False,
) -> int:
    """Bytes one image holds at its worst moment in the pipeline.

    Arguments:
        width, height, channels, itemsize: the stored image.
        float_size: bytes of the filter's floats.
        stored: the stored pixels are uploaded as they are (no float input).
        quantised: the filter stage makes the output pixels (no float result is kept).
    """
    samples = width * height * max(channels, 1)
    per_sample = 2 * itemsize  # stored pixels and the output's pixels
    per_sample += itemsize  # the encoder's buffers (the compressed file is at most about this)
    if not stored:
        per_sample += float_size  # the float input
    if not quantised:
        per_sample += 4 + 8  # the float result and from_float's float64 work array
    return samples * per_sample


def run_pipeline(
    jobs: Sequence[Job],
    settings: FilterSettings,
    encode: EncodeSettings,
    *,
    workers: int,
    on_done: Callable[[FileRecord], None] | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    stop: threading.Event | None = None,
) -> list[FileRecord]:
    """Run ``jobs`` with decoding, filtering and encoding overlapped.

    ``workers`` threads decode and as many encode; one thread filters (the GPU queue is one
    queue, and its device and pipelines are made once, by the engine, for the whole run). A
    failed file is recorded and the others go on. Ctrl-C (KeyboardInterrupt in the calling
    thread) or ``stop`` makes every stage stop at its next step; files being written are
    finished or removed, never left partial. Records of unfinished jobs are ``cancelled``.

    Returns:
        One :class:`FileRecord` per job, in the jobs' order.
    """
    stop = stop or threading.Event()
    budget = MemoryBudget(memory_budget)
    records = [FileRecord(str(j.input), str(j.output)) for j in jobs]
    # Bounded hand-overs as well as the byte budget: a stage that runs ahead waits.
    filter_q: queue.Queue[object] = queue.Queue(maxsize=max(1, workers))
    encode_q: queue.Queue[object] = queue.Queue(maxsize=max(1, workers))
    next_job = iter(range(len(jobs)))
    job_lock = threading.Lock()
    done_lock = threading.Lock()
    float_dtype = _float_dtype(settings)
    float_size = np.dtype(float_dtype).itemsize

    def finish_record(record: FileRecord, status: str, error: str | None = None) -> None:
        record.status = status
        record.error = error
        record.total_ms = (time.perf_counter() - record.started) * 1e3
        if on_done is not None:
            with done_lock:
                on_done(record)

    def decoder() -> None:
        while not stop.is_set():
            with job_lock:
                index = next(next_job, None)
            if index is None:
                return
            job, record = jobs[index], records[index]
            record.started = time.perf_counter()
            reserved = 0
            try:
                info = probe_image(job.input)
                record.width, record.height = info.width, info.height
                out_dtype = output_dtype(info.dtype, job.format)
                reserved = _estimate_bytes(
                    info.width,
                    info.height,
                    info.channels,
                    info.dtype.itemsize,
                    float_size,
                    stored=_uploads_stored(info.dtype, info.channels, settings),
                    quantised=_quantiser(settings, info.channels, out_dtype, False) is not None,
                )
                reserved = min(reserved, memory_budget)
                if info.pixels > encode.max_pixels:
                    reserved = 0  # read_image refuses it without decoding
                if not budget.acquire(reserved, stop):
                    return
                image = read_image(job.input, max_pixels=encode.max_pixels)
                record.channels, record.dtype = image.channels, image.pixels.dtype.name
                item = _Item(job, record, image, reserved)
                item.x, item.storage = _filter_input(image.pixels, settings, float_dtype)
                filter_q.put(item)
            except BlurappError as err:
                budget.release(reserved)
                finish_record(record, "failed", str(err))
            except Exception as err:  # a bug or an odd file must not stop the other files
                budget.release(reserved)
                finish_record(record, "failed", f"{type(err).__name__}: {err}")

    def warm_up() -> None:
        # Create the device and compile the pipelines on a tiny image while the first files
        # decode. The plan does not depend on the image size; a failure here (no adapter) is
        # reported by the files themselves.
        if settings.strategy == "cpu":
            return
        try:
            # As an 8-bit RGB file would run: the same pipelines (input and output formats).
            u8 = np.dtype(np.uint8)
            convert = _quantiser(settings, 3, u8, False)
            output = _filter_output(convert, u8)
            _filter(np.zeros((8, 8, 3), np.uint8), settings, "rgba8", convert, output)
        except Exception:  # each file reports the same error on its own
            return

    def filterer() -> None:
        warm_up()
        shape: tuple[int, int] | None = None
        while True:
            item = filter_q.get()
            if item is _DONE:
                return
            assert isinstance(item, _Item)
            if stop.is_set():
                budget.release(item.reserved)
                continue
            try:
                assert item.x is not None
                src = item.image.pixels
                if shape is not None and src.shape[:2] != shape and settings.strategy != "cpu":
                    # The GPU keeps textures per image size; one size at a time bounds memory.
                    from blurapp.gpu.engine import get_filter

                    get_filter().clear()
                shape = src.shape[:2]
                out_dtype = output_dtype(src.dtype, item.job.format)
                channels = 1 if src.ndim == 2 else int(src.shape[2])
                convert = _quantiser(settings, channels, out_dtype, src.ndim == 2)
                output = _filter_output(convert, out_dtype)
                item.y, item.outcome = _filter(item.x, settings, item.storage, convert, output)
                item.final = convert is not None
                item.x = None
                encode_q.put(item)
            except Exception as err:
                budget.release(item.reserved)
                msg = str(err) if isinstance(err, BlurappError) else f"{type(err).__name__}: {err}"
                finish_record(item.record, "failed", msg)

    def encoder() -> None:
        while True:
            item = encode_q.get()
            if item is _DONE:
                return
            assert isinstance(item, _Item)
            try:
                if stop.is_set():
                    continue
                assert item.y is not None and item.outcome is not None
                src = item.image.pixels
                out_dtype = output_dtype(src.dtype, item.job.format)
                if item.final:
                    pixels = item.y
                else:
                    pixels = _finish(item.y, src, settings, out_dtype, src.ndim == 2)
                item.y = None
                _write(item.job.output, item.job.format, with_pixels(item.image, pixels), encode)
                timing = item.outcome.timing
                rec = item.record
                rec.strategy, rec.reason, rec.timer = (
                    item.outcome.strategy,
                    item.outcome.reason,
                    timing.timer,
                )
                rec.filter_ms = timing.total_ms
                rec.gpu_ms = timing.total_ms if timing.timer == "gpu" else None
                finish_record(rec, "ok")
            except Exception as err:
                msg = str(err) if isinstance(err, BlurappError) else f"{type(err).__name__}: {err}"
                finish_record(item.record, "failed", msg)
            finally:
                budget.release(item.reserved)

    decoders = [
        threading.Thread(target=decoder, name=f"blurapp-decode-{i}", daemon=True)
        for i in range(workers)
    ]
    encoders = [
        threading.Thread(target=encoder, name=f"blurapp-encode-{i}", daemon=True)
        for i in range(workers)
    ]
    gpu = threading.Thread(target=filterer, name="blurapp-filter", daemon=True)
    for t in (*decoders, gpu, *encoders):
        t.start()

    def shut_down() -> None:
        for t in decoders:
            t.join()
        filter_q.put(_DONE)
        gpu.join()
        for _ in encoders:
            encode_q.put(_DONE)
        for t in encoders:
            t.join()

    try:
        # Join with a timeout so that the main thread stays responsive to Ctrl-C.
        while any(t.is_alive() for t in decoders):
            for t in decoders:
                t.join(0.1)
        shut_down()
    except BaseException as err:
        stop.set()
        shut_down()
        for record in records:
            if record.status == "pending":
                record.status = "cancelled"
        if isinstance(err, KeyboardInterrupt):
            raise BatchInterrupted(records) from None
        raise
    for record in records:
        if record.status == "pending":  # stopped through ``stop`` without an interrupt
            record.status = "cancelled"
    return records
