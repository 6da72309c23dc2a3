"""The immutable Kernel type: float64 correlation weights, the spec string that rebuilds them, JSON.

A kernel is applied as **correlation** (``scipy.ndimage.correlate``, OpenCV ``filter2D``) with
its anchor at ``(rows // 2, cols // 2)``; ``--convolve`` uses :meth:`Kernel.for_convolution`
(``scipy.ndimage.convolve``, even sizes included). Sizes are
written W×H (columns × rows): ``box:7x3`` is 7 wide and 3 tall, i.e. ``weights.shape == (3, 7)``.

Spec grammar (DESIGN.md), names and parameter names case-insensitive, whitespace around tokens
ignored, ``N`` or ``WxH`` wherever a size is given:

=============================  =================================================================
``gaussian:sigma=2``           radius int(4*sigma+0.5) (scipy truncate=4), normalised; the
                               weights are scipy.ndimage's 1-D kernels, outer(g_y, g_x).
                               ``radius=R`` (or ``RXxRY``) or ``truncate=T`` override;
                               ``sigma=2x1`` is sigma_x=2 (horizontal), sigma_y=1
``box:5`` / ``box:7x3``        the mean over W×H (odd or even)
``sobel:x[,size=3|5|7]``       OpenCV getDerivKernels smoothing ⊗ derivative; x is positive
                               where intensity grows to the right, y where it grows downwards
``scharr:x|y``, ``prewitt:x|y`` the 3×3 ones with the same sign convention
``laplacian`` ``sharpen``      [[0,1,0],[1,-4,1],[0,1,0]], [[0,-1,0],[-1,5,-1],[0,-1,0]],
``emboss`` ``identity``        [[-2,-1,0],[-1,1,1],[0,1,2]], the 3×3 delta
``motion:length=9,angle=30``   anti-aliased 1-pixel line through the anchor, degrees CCW from +x
                               on screen (rows grow down), normalised
``disk:radius=4``              anti-aliased disc (area coverage by supersampling), normalised
``log:sigma=1.5``              Laplacian of Gaussian, radius int(4*sigma+0.5), zero sum,
                               negative at the centre (same sign as ``laplacian``); rank <= 3
``bokeh:radius=8``             lens aperture: a regular polygon, ``blades=N`` (>= 3, default 6;
                               0 = round) corners on the circle of radius R, the first at
                               ``rotation=D`` degrees CCW from +x; area coverage, normalised
``unsharp:sigma=2,amount=1``   unsharp mask identity + amount·(identity − gaussian:sigma=S),
                               sums to 1, rank 2
``dog:sigma=1,2``              difference of Gaussians G(S1) − G(S2) on the larger one's grid,
                               zero sum, rank 2; S2 defaults to 1.6·S1 (canonical
                               ``dog:sigma=1,sigma2=2``)
``matrix:3x3:1,2,1,...``       row-major weights; a final ``,normalize`` divides by the sum
``im:SPEC``                    an ImageMagick 6 kernel string (``im:Gaussian:0x2``,
                               ``im:3x3+0+0: 1,2,1 2,4,2 1,2,1``): ImageMagick's radius and
                               weights (``nan`` = 0), its origin padded onto the anchor, so it
                               filters as ``-morphology Correlate``; see
                               :mod:`blurapp.core.im_kernels`. ImageMagick spellings without
                               ``im:`` that fail here get a "did you mean im:..." hint
``@file.json``                 a kernel file (:meth:`Kernel.to_json`, ``blurapp.io.save_kernel``)
=============================  =================================================================

Size limit: no spec may ask for more than ``MAX_KERNEL_SIDE`` = 513 taps per side (radius 256);
``box:1001`` or ``gaussian:sigma=200`` (radius 800) raise :class:`KernelSpecError` before any
memory is allocated. The same limit applies to :meth:`Kernel.from_weights` and JSON files.

Weights float32 cannot hold are refused when beyond its range (|w| > 3.4e38) and are zero taps
when below its normal numbers (|w| < 1.18e-38: set to exactly 0, for the reference and the GPU
alike; :mod:`blurapp.core.nonfinite`).

Every kernel carries its canonical spec: ``Kernel.parse(k.spec)`` gives bit-identical weights
and the same spec. Kernels made from raw weights get an exact ``matrix:WxH:`` spec (each float
written with repr precision). A bad spec raises KernelSpecError with a one-line message.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from blurapp.core.errors import KernelSpecError
from blurapp.core.im_kernels import build_im, near_miss
from blurapp.core.kernel_families import FAMILIES, MAX_KERNEL_SIDE, matrix_spec
from blurapp.core.nonfinite import flush_tiny
from blurapp.core.separability import Separability, analyze

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "KNOWN_FAMILIES",
    "MAX_KERNEL_FILE_BYTES",
    "MAX_KERNEL_SIDE",
    "Kernel",
]

#: ``format`` field of a saved kernel file, and the version this code writes and reads.
FORMAT = "blurapp-kernel"
FORMAT_VERSION = 1

#: The largest kernel file read (a 513×513 kernel of repr floats is under 8 MiB).
MAX_KERNEL_FILE_BYTES = 16 * 2**20

#: The largest magnitude a weight may have: float32's, the GPU's number type.
FLOAT32_MAX = float(np.finfo(np.float32).max)

#: Family names the spec grammar knows (for GUI lists and error messages).
KNOWN_FAMILIES: tuple[str, ...] = tuple(sorted(FAMILIES))


def _one_line(text: str) -> str:
    return " ".join(str(text).split("\n"))


@dataclass(frozen=True, eq=False)
class Kernel:
    """An immutable correlation kernel. Build it with :meth:`parse` or :meth:`from_weights`.

    ``weights`` is a float64, C-contiguous, read-only (rows, cols) array; ``name`` the family
    ("gaussian", "box", "matrix", ...); ``spec`` the canonical spec that rebuilds it exactly.
    Equality compares spec and weights exactly.
    """

    weights: np.ndarray
    name: str
    spec: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", _checked_weights(self.weights))
        if not isinstance(self.name, str) or not self.name.strip():
            raise KernelSpecError(f"kernel name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.spec, str) or not self.spec.strip():
            raise KernelSpecError(f"kernel spec must be a non-empty string, got {self.spec!r}")

    # ----------------------------------------------------------------- geometry

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols)."""
        rows, cols = self.weights.shape
        return (rows, cols)

    @property
    def width(self) -> int:
        """Number of columns."""
        return self.weights.shape[1]

    @property
    def height(self) -> int:
        """Number of rows."""
        return self.weights.shape[0]

    @property
    def anchor(self) -> tuple[int, int]:
        """(row, col) of the tap that lands on the output pixel: (rows // 2, cols // 2)."""
        rows, cols = self.weights.shape
        return (rows // 2, cols // 2)

    @property
    def radius(self) -> tuple[int, int]:
        """Taps above and left of the anchor (rows // 2, cols // 2); below/right may be one less."""
        return self.anchor

    @functools.cached_property
    def separability(self) -> Separability:
        """SVD analysis (rank, singular values, rank-1 factors), computed once."""
        return analyze(self.weights)

    # ----------------------------------------------------------------- construction

    @classmethod
    def parse(cls, spec: str | Kernel | np.ndarray | Sequence[Sequence[float]]) -> Kernel:
        """Build a kernel from a spec string (see the module docstring); a Kernel passes through;
        a 2-D array of weights (numpy, or nested lists) is :meth:`from_weights`.

        Arguments:
            spec: e.g. ``"gaussian:sigma=2"``, ``"box:7x3"``, ``"@blur.json"``,
                ``[[1, 2, 1], [2, 4, 2], [1, 2, 1]]``.
        Returns:
            The kernel, whose ``spec`` is the canonical form of ``spec``.
        Raises:
            KernelSpecError: one line naming the problem and the bad value.
        """
        if isinstance(spec, Kernel):
            return spec
        if isinstance(spec, (np.ndarray, list, tuple)):
            # The Python API's users pass weights as arrays as scipy.ndimage takes them.
            return cls.from_weights(spec)
        if not isinstance(spec, str):
            raise KernelSpecError(
                "a kernel is a spec string (e.g. 'gaussian:sigma=2'), a Kernel or a 2-D array "
                f"of weights, not {type(spec).__name__}"
            )
        text = spec.strip()
        if not text:
            raise KernelSpecError("empty kernel spec (e.g. gaussian:sigma=2)")
        if text.startswith("@"):
            path = text[1:].strip()
            if not path:
                raise KernelSpecError("'@' must be followed by a kernel file name, e.g. @blur.json")
            return cls.load(path)
        family, _, rest = text.partition(":")
        key = family.strip().lower()
        builder = build_im if key == "im" else FAMILIES.get(key)
        if builder is None:
            shown = family.strip()
            if len(shown) > 40:
                shown = shown[:40] + "..."
            unknown = KernelSpecError(
                _one_line(
                    f"unknown kernel family {shown!r} (known: {', '.join(KNOWN_FAMILIES)}, "
                    "@file.json, im:SPEC)"
                )
            )
            raise near_miss(unknown, text)
        try:
            # Overflow, 0/0 and division by zero are a spec out of range, not RuntimeWarnings
            # printed before an error (or a traceback): gaussian:sigma=1e-200.
            with np.errstate(over="raise", invalid="raise", divide="raise"):
                weights, canonical = builder(rest)
        except KernelSpecError as err:
            raise near_miss(err, text) from None  # ImageMagick's Gaussian:0x2 -> im:Gaussian:0x2
        except (ArithmeticError, FloatingPointError) as err:
            shown = text if len(text) <= 60 else text[:57] + "..."
            raise KernelSpecError(
                _one_line(
                    f"{shown}: a parameter is too small or too large to compute the weights ({err})"
                )
            ) from None
        return cls(weights, key, canonical)

    @classmethod
    def from_weights(cls, weights: Any, name: str = "matrix") -> Kernel:
        """A kernel from raw weights (copied), with an exact ``matrix:WxH:...`` spec.

        Arguments:
            weights: a finite 2-D array-like (rows, cols), at most MAX_KERNEL_SIDE per side.
            name: the family name to show (default "matrix").
        """
        w = _checked_weights(weights)
        return cls(w, name, matrix_spec(w))

    def for_convolution(self) -> Kernel:
        """The correlation kernel that convolves with this one, as ``scipy.ndimage.convolve``
        does (``--convolve``).

        The weights are rotated by 180°; on an even side the rotation moves the anchor by one
        tap, so one zero row (or column) goes before the rotated weights to put it back on the
        input pixel that ``scipy.ndimage.convolve`` (and a true convolution) centre on. Zero
        taps are skipped, so the extra row costs nothing and spreads no NaN. An odd-sized
        kernel gives :meth:`flipped`.
        """
        flipped = self.flipped()
        rows, cols = self.shape
        if rows % 2 and cols % 2:
            return flipped
        pad = ((1 - rows % 2, 0), (1 - cols % 2, 0))
        return Kernel.from_weights(np.pad(flipped.weights, pad), name=self.name)

    def flipped(self) -> Kernel:
        """The kernel rotated by 180° (``weights[::-1, ::-1]``), for convolution.

        A symmetric kernel (Gaussian, box, disk, ...) returns itself, keeping its spec;
        otherwise the result has an exact matrix spec and the same name.
        """
        w = self.weights[::-1, ::-1]
        if np.array_equal(w, self.weights):
            return self
        return Kernel.from_weights(w, name=self.name)

    # ----------------------------------------------------------------- JSON

    def to_json(self) -> dict[str, Any]:
        """The saved form: format, version, name, spec, width, height, weights (list of rows)."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "name": self.name,
            "spec": self.spec,
            "width": self.width,
            "height": self.height,
            "weights": self.weights.tolist(),
        }

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Kernel:
        """Read a kernel file (see :meth:`from_json`; ``blurapp.io.save_kernel`` writes them).

        Raises KernelSpecError naming the file when it is missing, unreadable or not a kernel.
        """
        p = Path(path).expanduser()
        try:
            text = _read_kernel_file(p)
        except FileNotFoundError:
            raise KernelSpecError(f"kernel file not found: {str(p)!r}") from None
        except UnicodeDecodeError:
            raise KernelSpecError(f"kernel file {str(p)!r} is not UTF-8 JSON") from None
        except OSError as e:
            raise KernelSpecError(
                f"cannot read kernel file {str(p)!r}: {e.strerror or e}"
            ) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise KernelSpecError(
                f"kernel file {str(p)!r} is not valid JSON (line {e.lineno}: {e.msg})"
            ) from None
        except (ValueError, RecursionError) as e:  # 4301-digit integers, deep nesting
            problem = (
                "nested too deeply"
                if isinstance(e, RecursionError)
                else "a number has too many digits"
                if "digits" in str(e)
                else _one_line(str(e))
            )
            raise KernelSpecError(
                f"kernel file {str(p)!r} is not a blurapp kernel: {problem}"
            ) from None
        return cls.from_json(data, source=str(p))

    @classmethod
    def from_json(cls, data: Any, source: str = "kernel JSON") -> Kernel:
        """A kernel from its saved dict. The stored weights are authoritative.

        When the stored spec is a family spec that rebuilds exactly these weights here, it is
        kept; otherwise (hand-edited weights, or a machine whose exp() differs in the last bit)
        the kernel gets an exact matrix spec, so ``parse(k.spec)`` always reproduces ``k``.

        Arguments:
            data: the dict written by :meth:`to_json`.
            source: where it came from, for error messages.
        """
        where = repr(source) if source != "kernel JSON" else source

        def bad(problem: str) -> KernelSpecError:
            return KernelSpecError(_one_line(f"{where} is not a blurapp kernel: {problem}"))

        if not isinstance(data, dict):
            raise bad(f"expected a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise bad(f"format is {data.get('format')!r}, expected {FORMAT!r}")
        version = data.get("version")
        if version != FORMAT_VERSION or isinstance(version, bool):
            raise bad(f"unsupported version {version!r} (this blurapp reads {FORMAT_VERSION})")
        rows = data.get("weights")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
            raise bad("weights must be a non-empty list of rows")
        width = len(rows[0])
        for r in rows:
            if len(r) != width:
                raise bad(f"weights rows have different lengths ({width} and {len(r)})")
            for v in r:
                if isinstance(v, bool) or not isinstance(v, int | float):
                    raise bad(f"weight {v!r} is not a number")
        for key, expected in (("width", width), ("height", len(rows))):
            if key in data and (data[key] != expected or isinstance(data[key], bool)):
                raise bad(f"{key} is {data[key]!r} but the weights have {expected}")
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            name = "matrix"
        try:
            stored = cls.from_weights(rows, name=name)
        except KernelSpecError as e:
            raise bad(str(e)) from None
        spec = data.get("spec")
        if isinstance(spec, str) and spec.strip() and not spec.strip().startswith("@"):
            try:
                rebuilt = cls.parse(spec)
            except KernelSpecError:
                rebuilt = None
            if rebuilt is not None and _same_bits(rebuilt.weights, stored.weights):
                return cls(rebuilt.weights, name, rebuilt.spec)
        return stored

    # ----------------------------------------------------------------- dunder

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Kernel):
            return NotImplemented
        return self.spec == other.spec and np.array_equal(self.weights, other.weights)

    def __hash__(self) -> int:
        # Equal kernels share a spec, so the spec alone is a valid (and cheap) hash.
        return hash(self.spec)

    def __repr__(self) -> str:
        spec = self.spec if len(self.spec) <= 60 else self.spec[:57] + "..."
        return f"Kernel({spec!r}, {self.width}x{self.height})"


def _read_kernel_file(path: Path) -> str:
    """The text of a kernel file: a regular file of at most MAX_KERNEL_FILE_BYTES.

    ``@/dev/zero``, ``@/dev/urandom`` or a FIFO would be read without end (or block forever):
    only a regular file is opened, and no more than the limit is read even if it grows.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise KernelSpecError(f"kernel file {str(path)!r} is {kind}")
    # O_NONBLOCK: should the file be swapped for a FIFO after the stat, open does not block.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise KernelSpecError(f"kernel file {str(path)!r} is not a regular file")
        data = fh.read(MAX_KERNEL_FILE_BYTES + 1)
    if len(data) > MAX_KERNEL_FILE_BYTES:
        raise KernelSpecError(
            f"kernel file {str(path)!r} is over {MAX_KERNEL_FILE_BYTES // 2**20} MiB "
            f"(the largest kernel, {MAX_KERNEL_SIDE}x{MAX_KERNEL_SIDE}, needs under 8)"
        )
    return data.decode("utf-8")


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _too_large(shape: tuple[int, ...]) -> KernelSpecError:
    rows, cols = shape
    return KernelSpecError(
        f"a {cols}x{rows} kernel is above the limit of {MAX_KERNEL_SIDE} taps per side "
        "(MAX_KERNEL_SIDE)"
    )


def _checked_weights(weights: Any) -> np.ndarray:
    """A private read-only float64 C-contiguous copy, or KernelSpecError naming the problem."""
    try:
        a = np.asarray(weights)
        if a.dtype.kind == "c":
            raise KernelSpecError("kernel weights must be real numbers, got complex values")
        if a.ndim == 2 and max(a.shape) > MAX_KERNEL_SIDE:
            # Before the float64 copy: a broadcast view can be any size without memory.
            raise _too_large(a.shape)
        w = np.array(a, dtype=np.float64, order="C", copy=True)
    except (TypeError, ValueError, OverflowError) as e:
        if isinstance(e, KernelSpecError):
            raise
        raise KernelSpecError(_one_line(f"kernel weights are not a numeric array: {e}")) from None
    if w.ndim != 2:
        raise KernelSpecError(f"kernel weights must be 2-D (rows, cols), got shape {w.shape}")
    rows, cols = w.shape
    if rows == 0 or cols == 0:
        raise KernelSpecError(f"kernel weights are empty (shape {w.shape})")
    if rows > MAX_KERNEL_SIDE or cols > MAX_KERNEL_SIDE:
        raise _too_large(w.shape)
    bad = ~np.isfinite(w)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        raise KernelSpecError(
            f"kernel weight {float(w[r, c])!r} at row {r}, column {c} is not finite"
        )
    # The GPU holds weights as float32: one beyond its range would become inf there while the
    # reference stays finite (DESIGN.md "Numbers": refused, not computed differently).
    big = np.abs(w) > FLOAT32_MAX
    if big.any():
        r, c = (int(i) for i in np.argwhere(big)[0])
        raise KernelSpecError(
            f"kernel weight {float(w[r, c])!r} at row {r}, column {c} is beyond float32's "
            f"range (|w| <= {FLOAT32_MAX:.4g})"
        )
    # ... and one below float32's normal range is a zero tap everywhere: on the GPU it rounds to
    # zero or a subnormal that may be flushed, so the reference must skip it too (DESIGN.md
    # "Numbers"; blurapp.core.nonfinite).
    w = np.ascontiguousarray(flush_tiny(w))
    w.setflags(write=False)
    return w
