"""The work the window hands to its worker thread: the live filter, the strategies comparison and
the border-modes comparison. Plain functions of numpy data; the only Qt they touch is QImage,
which may be built off the GUI thread."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtGui import QImage

from blurapp import engine, pipeline
from blurapp.core.borders import BORDER_MODES, Border, BorderMode
from blurapp.core.errors import BlurappError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.core.strategies import compared_names
from blurapp.core.timing import Timing
from blurapp.ui.convert import heat_rgb, to_qimage

Check = Callable[[], None]
Report = Callable[[object], None]
COMPARED_STRATEGIES = compared_names()
CORNERS = ("top-left", "top-right", "bottom-left", "bottom-right")


@dataclass
class LiveResult:
    spec: FilterSpec  # what decided the pixels (also what "Export CLI" writes)
    image: np.ndarray  # in the input's dtype and shape, exactly what apply would write
    qimage: QImage
    timing: Timing
    strategy: str  # the strategy that ran (auto resolved)
    reason: str


def run_live(
    image: np.ndarray,
    spec: FilterSpec,
    check: Check,
    report: Report,
    image_key: Hashable | None = None,
) -> LiveResult:
    """The window's main result: the pixel pipeline (:func:`blurapp.pipeline.filter_pixels`),
    the same call ``blurapp apply`` makes.

    ``image_key`` names the image's pixels (the window's count of images shown): while it stays
    the same, the GPU keeps the image it already holds instead of receiving it again.
    """
    result = pipeline.filter_pixels(image, spec, input_key=image_key)
    check()
    return LiveResult(
        spec, result.image, to_qimage(result.image), result.timing, result.strategy, result.reason
    )


def _reference_floats(image: np.ndarray, spec: FilterSpec) -> pipeline.Prepared:
    """``image`` prepared as the pipeline prepares it (linear light, premultiplied alpha), in
    float64: what every strategy of a comparison receives."""
    return pipeline.prepare(image, spec.replace(strategy="cpu", tile=None))


def _shown(prepared: pipeline.Prepared, y: np.ndarray, source: np.ndarray | None = None) -> QImage:
    """Filtered floats back to the image's pixels by the pipeline's own last stage."""
    p = prepared
    # For a crop of the image, invisible pixels take their colour from the crop.
    src = p.source if source is None else source
    p = pipeline.Prepared(p.spec, src, p.x, p.storage, p.out_dtype, None, p.output, None)
    filtered = pipeline.Filtered(p, y, False, Timing((), "wall", 0, 0.0), p.spec.strategy, "")
    return to_qimage(pipeline.finish(filtered))


@dataclass
class StrategyRun:
    """One pane of the strategies view: an image with its timing and error, or why not."""

    strategy: str
    qimage: QImage | None = None
    timing: Timing | None = None
    max_error: float | None = None
    why_not: str | None = None
    tile: int | None = None


@dataclass
class StrategiesResult:
    kernel: Kernel
    border: str
    runs: list[StrategyRun] = field(default_factory=list)


def run_strategies(
    image: np.ndarray,
    spec: FilterSpec,
    check: Check,
    report: Report,
    image_key: Hashable | None = None,
) -> StrategiesResult:
    """Run every strategy on ``image`` with ``spec``'s other settings; compare each with the
    float64 reference.

    ``image_key`` names the image's pixels as in :func:`run_live`: the GPU strategies share one
    upload of the float image.

    The maximum error is taken in normalised float units, before conversion to the file's type,
    so it shows the strategy's arithmetic and not the rounding to 8 bits.
    """
    prepared = _reference_floats(image, spec)
    x, kernel, border, tile = prepared.x, spec.effective_kernel, spec.border, spec.tile
    reference = correlate_float(x, kernel, border)
    out = StrategiesResult(kernel, border.name)
    for name in COMPARED_STRATEGIES:
        check()
        reason = engine.why_not(name, kernel)
        if reason:
            out.runs.append(StrategyRun(name, why_not=reason))
            report(out)
            continue
        try:
            result, timing, _ran, _why = engine.filter_float(
                x,
                kernel,
                border,
                name,
                tile if name == "tiled" else None,
                input_key=None if image_key is None else ("run_strategies", image_key),
            )
        except BlurappError as err:
            out.runs.append(StrategyRun(name, why_not=str(err)))
            report(out)
            continue
        err = float(np.max(np.abs(result.astype(np.float64) - reference))) if result.size else 0.0
        out.runs.append(
            StrategyRun(
                name, _shown(prepared, result), timing, err, tile=tile if name == "tiled" else None
            )
        )
        report(out)
    return out


@dataclass
class BorderPane:
    mode: str
    qimage: QImage
    diff: QImage
    max_diff: float


@dataclass
class BordersResult:
    corner: str
    crop: tuple[int, int, int, int]  # x, y, width, height in the image
    reference_mode: str
    panes: list[BorderPane]
    strategy: str


def corner_window(shape: tuple[int, ...], corner: str, size: int) -> tuple[int, int, int, int]:
    """``(y0, x0, h, w)`` of a ``size``-square crop at ``corner`` (smaller for tiny images)."""
    height, width = shape[:2]
    h, w = min(size, height), min(size, width)
    y0 = 0 if corner.startswith("top") else height - h
    x0 = 0 if corner.endswith("left") else width - w
    return y0, x0, h, w


def bordered_crop(
    x: np.ndarray, kernel: Kernel, border: Border, window: tuple[int, int, int, int]
) -> np.ndarray:
    """The crop ``window`` of ``x`` plus the halo the kernel reads, as ``border`` extends it.

    Filtering this array and keeping its interior gives exactly the full image's filtered crop,
    at the cost of the crop alone: wrap and reflect read the far side of the whole image, which
    cutting the crop out first would lose.
    """
    y0, x0, h, w = window
    rows, cols = kernel.shape
    ar, ac = kernel.anchor
    ridx = border.map_indices(np.arange(y0 - ar, y0 + h + rows - 1 - ar), x.shape[0])
    cidx = border.map_indices(np.arange(x0 - ac, x0 + w + cols - 1 - ac), x.shape[1])
    out = x[np.clip(ridx, 0, None)][:, np.clip(cidx, 0, None)]
    if border.mode is BorderMode.CONSTANT:
        outside = (ridx < 0)[:, None] | (cidx < 0)[None, :]
        out = out.copy()
        out[outside] = border.value
    return np.ascontiguousarray(out)


def run_borders(
    image: np.ndarray,
    spec: FilterSpec,
    corner: str,
    crop: int,
    reference_mode: str,
    check: Check,
    report: Report,
) -> BordersResult:
    """Filter a corner crop with each of the five border modes and diff them against one,
    with ``spec``'s kernel, strategy and pixel settings (its own border is the one compared)."""
    prepared = _reference_floats(image, spec)
    x, kernel, strategy = prepared.x, spec.effective_kernel, spec.strategy
    window = corner_window(image.shape, corner, crop)
    y0, x0, h, w = window
    ar, ac = kernel.anchor
    results: dict[str, np.ndarray] = {}
    ran = strategy
    for mode in BORDER_MODES:
        check()
        border = Border.parse(mode)
        padded = bordered_crop(x, kernel, border, window)
        # Any border works here: the interior never reads outside the padded array.
        res, _timing, ran, _why = engine.filter_float(padded, kernel, "clamp", strategy)
        results[mode] = np.asarray(res, dtype=np.float64)[ar : ar + h, ac : ac + w]
    ref = results[reference_mode]
    diffs = {m: np.abs(r - ref).max(axis=2) for m, r in results.items()}
    vmax = max(float(d.max()) for d in diffs.values())
    source = image[y0 : y0 + h, x0 : x0 + w]
    panes = [
        BorderPane(
            mode,
            _shown(prepared, results[mode], source),
            to_qimage(heat_rgb(diffs[mode], vmax)),
            float(diffs[mode].max()),
        )
        for mode in BORDER_MODES
    ]
    return BordersResult(corner, (x0, y0, w, h), reference_mode, panes, ran)
