"""ImageMagick kernel strings (``im:SPEC``): ImageMagick 6's ``-morphology`` kernel syntax, sizes
and weights, anchored for blurapp.

``im:SPEC`` gives the weights ImageMagick itself prints for ``SPEC``
(``convert xc: -define morphology:showKernel=1 -morphology Convolve SPEC null:``), computed the
way ImageMagick 6.9.11 (Q16) computes them in ``magick/morphology.c`` (``AcquireKernelInfo``,
``ParseKernelArray``, ``AcquireKernelBuiltIn``, ``RotateKernelInfo``, ``ScaleKernelInfo``) with
the radius rule of ``GetOptimalKernelWidth1D/2D`` in ``magick/gem.c``: a re-implementation in
numpy, checked against ImageMagick's own output in ``tests/core/fixtures``.

Applied as blurapp applies every kernel: **correlation**, so ``im:X`` filters like
``convert -morphology Correlate X`` (``-morphology Convolve`` rotates the kernel by 180°: use
``--convolve`` for that). ImageMagick's origin (``WxH+X+Y``, or the one a built-in sets, such as
``Comet``'s first tap) lands on blurapp's anchor (rows // 2, cols // 2): the weights are padded
with zeros as needed. ``nan`` (or ``-``) entries, "not part of the kernel" in ImageMagick, weigh
0: the shape kernels (``Disk``, ``Diamond``, ``Plus``, ...) are 0/1 masks of ImageMagick's size.

Supported: user arrays (``WxH[+X+Y]: v,v,v v,v,v``, the old square ``"v,v,v v,v,v v,v,v"``),
``Unity``, ``Gaussian``, ``DoG``, ``LoG``, ``Blur``, ``Comet``, ``Binomial`` (radius <= 8),
``Laplacian:N``, ``Sobel``, ``Roberts``, ``Prewitt``, ``Compass``, ``Kirsch``, ``FreiChen``,
``Diamond``, ``Square``, ``Rectangle``, ``Disk``, ``Octagon``, ``Plus``, ``Cross``, ``Ring``,
``Peaks``, with their angles. Refused with a message: kernel lists (``;``, the ``@``, ``>`` and
``<`` rotation/mirror expansions, ``FreiChen:10``), the hit-and-miss and distance kernels, and
scaling flags (``!``, ``^``, ``%``): ImageMagick's ``-define convolve:scale`` is a separate
setting, not part of the kernel string, and blurapp does not read it (``matrix:...,normalize``
normalises a blurapp matrix). Geometry text ImageMagick would silently read as zeros (a stray
letter, an unparsable weight) is an error here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from blurapp.core.errors import KernelSpecError, readable, readable_text
from blurapp.core.kernel_families import MAX_KERNEL_SIDE, format_number

if TYPE_CHECKING:
    from blurapp.core.filterspec import FilterSpec
    from blurapp.core.kernel import Kernel

__all__ = [
    "ImKernel",
    "anchored_weights",
    "build_im",
    "im_string",
    "magick_argv",
    "near_miss",
    "parse_im",
]

# ImageMagick 6 constants (magick-type.h, image-private.h), Q16 build.
_EPSILON = 1.0e-12
_QUANTUM_SCALE = 1.0 / 65535.0
_2PI = 6.28318530717958647692528676655900576839433879875020
_PI = 3.14159265358979323846264338327950288419716939937510
_SQ2 = 1.41421356237309504880168872420969807856967187537695
_SQ2PI = 2.50662827463100024161235523934010416269302368164062

# ParseGeometry flags (geometry.h).
_XI, _PSI, _RHO, _SIGMA, _CHI = 0x1, 0x2, 0x4, 0x8, 0x10
_XI_NEG, _PSI_NEG, _CHI_NEG = 0x20, 0x40, 0x80

#: ImageMagick's kernel names (option.c's KernelOptions) that blurapp builds, as IM spells them.
SUPPORTED = (
    "Unity", "Gaussian", "DoG", "LoG", "Blur", "Comet", "Binomial", "Laplacian", "Sobel",
    "FreiChen", "Roberts", "Prewitt", "Compass", "Kirsch", "Diamond", "Square", "Rectangle",
    "Disk", "Octagon", "Plus", "Cross", "Ring", "Peaks",
)  # fmt: skip
_NOT_CONVOLUTION = (
    "Edges", "Corners", "Diagonals", "ThinDiagonals", "LineEnds", "LineJunctions", "Ridges",
    "ConvexHull", "ThinSe", "Skeleton", "Chebyshev", "Manhattan", "Octagonal", "Euclidean",
)  # fmt: skip
_NAMES = {name.lower(): name for name in SUPPORTED}
_OTHERS = {name.lower(): name for name in _NOT_CONVOLUTION}

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_WEIGHT = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.I)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def _err(message: str) -> KernelSpecError:
    return KernelSpecError(readable_text(" ".join(f"im: {message}".split("\n"))))


def _q(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


@dataclass(frozen=True)
class ImKernel:
    """A kernel as ImageMagick holds it.

    Attributes:
        values: (rows, cols) float64, NaN where ImageMagick has "not part of the kernel".
        x: ImageMagick's origin column (``+X`` of ``showKernel``'s ``WxH+X+Y``).
        y: ImageMagick's origin row.
        name: ImageMagick's name for it (``"Gaussian"``, ``"User Defined"``).
        canonical: the ``im:`` spec that rebuilds it (``im:Gaussian:0x2``, ``im:3x3: 1,2,1 ...``).
    """

    values: np.ndarray
    x: int
    y: int
    name: str
    canonical: str


# --------------------------------------------------------------------------- ParseGeometry


def _strtod(s: str, i: int) -> tuple[float, int]:
    """C strtod on ``s[i:]`` (decimal forms only): (value, index after it); (0, i) if none."""
    m = _NUMBER.match(s, i)
    return (float(m.group()), m.end()) if m else (0.0, i)


def parse_geometry(text: str) -> tuple[int, list[float]]:
    """ImageMagick's ParseGeometry for kernel arguments: (flags, [rho, sigma, xi, psi, chi]).

    ``"0x2"`` is rho 0, sigma 2; ``"0,1,2"`` rho, sigma, xi; ``"3x3+1+2"`` adds xi and psi.
    Characters ImageMagick gives a meaning outside kernels (``! ^ % @ < >``) and anything it
    does not accept are refused (ImageMagick would silently read the whole geometry as zeros).
    """
    s = "".join(text.split()).replace("×", "x").replace("(", "").replace(")", "")
    flags = 0
    args = [0.0] * 5
    for c in s:
        if c in "@<>":
            raise _err(
                f"{c!r} expands an ImageMagick kernel into a list of rotated or mirrored "
                "kernels; blurapp takes one kernel"
            )
        if c in "!^%":
            raise _err(
                f"{c!r} is a scaling flag, not part of a kernel string (ImageMagick scales with "
                "-define convolve:scale, which blurapp does not read)"
            )
        if c not in "xX-+,0123456789/eE.:":
            raise _err(f"unexpected {c!r} in the kernel arguments {_q(text.strip())}")
    if not s:
        return flags, args
    end = len(s)

    def at(i: int) -> str:
        return s[i] if i < end else "\0"

    p = 0
    _, q = _strtod(s, p)
    if s[:2].lower() == "0x":  # strtol, so "0x2" is 0 then x2, not hexadecimal
        q = 1
    if at(q) in "xX:,/\0":
        value, p2 = _strtod(s, p)
        if s[:2].lower() == "0x":
            value, p2 = 0.0, 1
        if p2 != p:
            flags |= _RHO
            args[0] = value
        p = p2
    q = p
    if at(p) in "xX:,/":
        p += 1
        if at(q) not in "xX:" or at(p) not in "+-":
            value, p2 = _strtod(s, p)
            if p2 != p:
                flags |= _SIGMA
                args[1] = value
            p = p2
    for flag, negative, index in ((_XI, _XI_NEG, 2), (_PSI, _PSI_NEG, 3), (_CHI, _CHI_NEG, 4)):
        if at(p) not in "+-,/:":
            break
        if at(p) in ",/:":
            p += 1
        while at(p) in "+-":
            if at(p) == "-":
                flags ^= negative
            p += 1
        value, p2 = _strtod(s, p)
        if p2 != p:
            flags |= flag
            args[index] = -value if flags & negative else value
        p = p2
    if p != end:
        raise _err(f"cannot read the kernel arguments {_q(text.strip())}")
    if ":" in s:  # ImageMagick's sampling-factor rule (4:2:2 => 2x1), kept for fidelity
        if flags & _SIGMA:
            args[0] *= _reciprocal(args[1])
        args[1] = 1.0
        if flags & _XI and args[2] == 0.0:
            args[1] = 2.0
    if flags & _RHO and not flags & _SIGMA and flags & _XI and flags & _XI_NEG:
        # ImageMagick's negative heights ("30x-20"): the first signed value is the height.
        if not flags & _PSI:
            args[1], args[2] = args[2], 0.0
            flags = (flags | _SIGMA) & ~_XI
        elif not flags & _CHI:
            args[1], args[2] = args[2], args[3]
            flags = (flags | _SIGMA | _XI) & ~_PSI
        else:
            args[1], args[2], args[3] = args[2], args[3], args[4]
            flags = (flags | _SIGMA | _XI | _PSI) & ~_CHI
    return flags, args


def _reciprocal(x: float) -> float:
    """ImageMagick's PerceptibleReciprocal: 1/x, with |x| held at >= 1e-12."""
    sign = -1.0 if x < 0.0 else 1.0
    return 1.0 / x if sign * x >= _EPSILON else sign / _EPSILON


# --------------------------------------------------------------------------- kernel sizes


def _size(what: str, value: float) -> int:
    """C's (size_t) cast of a kernel dimension, refusing a negative one (undefined in C) or one
    above MAX_KERNEL_SIDE, before anything is allocated."""
    if not value >= 0:
        raise _err(f"{what}: a kernel size must not be negative, got {value:g}")
    if value >= MAX_KERNEL_SIDE + 1:
        raise _err(f"{what} needs {readable(value)} taps per side, above the limit of "
                   f"{MAX_KERNEL_SIDE} (MAX_KERNEL_SIDE)")  # fmt: skip
    return int(value)


def _sequential_sum(values: np.ndarray) -> float:
    """Sum in index order, like a C loop (numpy's sum is pairwise)."""
    return float(np.add.accumulate(values.ravel())[-1]) if values.size else 0.0


def optimal_width_1d(radius: float, sigma: float, what: str, limit: int = MAX_KERNEL_SIDE) -> int:
    """gem.c's GetOptimalKernelWidth1D: 2*ceil(radius)+1, or grow until the edge tap is < 1/65535.

    Widths above ``limit`` are refused as soon as the search passes it.
    """
    if radius > _EPSILON:
        return _size(what, 2.0 * math.ceil(radius) + 1.0)
    gamma = abs(sigma)
    if gamma <= _EPSILON:
        return 3
    alpha = _reciprocal(2.0 * gamma * gamma)
    beta = _reciprocal(_SQ2PI * gamma)
    table = [math.exp(-float(i * i) * alpha) * beta for i in range(limit // 2 + 3)]
    width = 5
    while True:
        j = (width - 1) // 2
        normalize = 0.0
        for i in range(-j, j + 1):
            normalize += table[abs(i)]
        value = table[j] / normalize
        if value < _QUANTUM_SCALE or value < _EPSILON:
            return width - 2
        width += 2
        if width - 2 > limit:
            _size(what, width - 2)


def optimal_width_2d(radius: float, sigma: float, what: str) -> int:
    """gem.c's GetOptimalKernelWidth2D: as the 1-D rule, with the 2-D normalisation."""
    if radius > _EPSILON:
        return _size(what, 2.0 * math.ceil(radius) + 1.0)
    gamma = abs(sigma)
    if gamma <= _EPSILON:
        return 3
    alpha = _reciprocal(2.0 * gamma * gamma)
    beta = _reciprocal(_2PI * gamma * gamma)
    table: list[float] = []
    width = 5
    while True:
        j = (width - 1) // 2
        table += [math.exp(-float(n) * alpha) * beta for n in range(len(table), 2 * j * j + 1)]
        u = np.arange(-j, j + 1)
        grid = np.asarray(table)[u[:, None] ** 2 + u[None, :] ** 2]
        value = table[j * j] / _sequential_sum(grid)
        if value < _QUANTUM_SCALE or value < _EPSILON:
            return width - 2
        width += 2
        if width - 2 > MAX_KERNEL_SIDE:
            _size(what, width - 2)


def _radial(r: int, a: float, b: float, log: bool = False) -> np.ndarray:
    """exp(-(u²+v²)·a)·b (or (1-R)·exp(-R)·b, R = (u²+v²)·a) on the (2r+1)² grid, with libm's
    exp as ImageMagick calls it, one call per distinct u²+v²."""
    u = np.arange(-r, r + 1)
    k = u[:, None] ** 2 + u[None, :] ** 2
    if log:
        table = [(1 - float(n) * a) * math.exp(-(float(n) * a)) * b for n in range(2 * r * r + 1)]
    else:
        table = [math.exp(-float(n) * a) * b for n in range(2 * r * r + 1)]
    return np.asarray(table, dtype=np.float64)[k]


# --------------------------------------------------------------------------- kernel arithmetic


@dataclass
class _K:
    """ImageMagick's KernelInfo while it is being built (values row-major, NaN = not in it)."""

    values: np.ndarray
    x: int
    y: int
    kind: str
    angle: float = 0.0
    positive: float = 0.0
    negative: float = 0.0


def _meta(k: _K) -> None:
    """CalcKernelMetaData: zero |v| < 1e-12, then the positive and negative sums, in order."""
    v = k.values
    v[np.abs(v) < _EPSILON] = 0.0
    flat = v.ravel()
    k.positive = _sequential_sum(flat[flat >= 0])
    k.negative = _sequential_sum(flat[flat < 0])


def _ranges(k: _K) -> None:
    """The positive and negative sums as ParseKernelArray counts them (NaN left out)."""
    flat = k.values.ravel()
    k.positive = _sequential_sum(flat[flat >= 0])
    k.negative = _sequential_sum(flat[flat < 0])


def _scale(k: _K, factor: float, mode: str) -> None:
    """ScaleKernelInfo with no flag (``""``), NormalizeValue (``"normalize"``) or
    CorrelateNormalizeValue (``"correlate"``: positive part to sum 1, negative to -1)."""
    pos = 1.0
    if mode == "normalize":
        total = abs(k.positive + k.negative)
        pos = total if total >= _EPSILON else k.positive
    if mode == "correlate":
        pos = k.positive if abs(k.positive) >= _EPSILON else 1.0
        neg = -k.negative if abs(k.negative) >= _EPSILON else 1.0
    else:
        neg = pos
    pos, neg = factor / pos, factor / neg
    v = k.values
    ok = ~np.isnan(v)
    v[ok] = np.where(v[ok] >= 0, v[ok] * pos, v[ok] * neg)
    k.positive *= pos
    k.negative *= neg


_NO_ROTATION = {"Gaussian", "DoG", "LoG", "Disk", "Peaks", "Laplacian", "Square", "Diamond",
                "Plus", "Cross"}  # fmt: skip


def _rotate(k: _K, angle: float) -> None:
    """RotateKernelInfo: 45° steps for 3×3, 90° for 1-D and square kernels, 180° for any."""
    angle = math.fmod(angle, 360.0)
    if angle < 0:
        angle += 360.0
    if 337.5 < angle or angle <= 22.5 or k.kind in _NO_ROTATION:
        return
    if k.kind == "Blur":
        if 135.0 < angle <= 225.0:
            return
        if 225.0 < angle <= 315.0:
            angle -= 180
    rows, cols = k.values.shape
    if 22.5 < math.fmod(angle, 90.0) <= 67.5:
        if (rows, cols) != (3, 3):
            raise _err(f"ImageMagick rotates only 3x3 kernels by 45 degrees, not {cols}x{rows}")
        t = k.values.ravel().copy()
        order = [3, 0, 1, 2, 5, 8, 7, 6]  # new[i] = old[order[i]] around the ring 0,1,2,5,8,7,6,3
        ring = [0, 1, 2, 5, 8, 7, 6, 3]
        new = t.copy()
        for dst, src in zip(ring, order, strict=True):
            new[dst] = t[src]
        k.values = new.reshape(3, 3)
        if k.x != 1 or k.y != 1:
            x, y = k.x - 1, k.y - 1
            if x == y:
                x = 0
            elif x == 0:
                x = -y
            elif x == -y:
                y = 0
            elif y == 0:
                y = x
            k.x, k.y = x + 1, y + 1
        angle = math.fmod(angle + 315.0, 360.0)
        k.angle = math.fmod(k.angle + 45.0, 360.0)
    if 45.0 < math.fmod(angle, 180.0) <= 135.0:
        rows, cols = k.values.shape
        if rows == 1 or cols == 1:
            k.values = k.values.reshape(cols, rows).copy()
            k.x, k.y = k.y, k.x
            if k.values.shape[1] == 1:
                angle = math.fmod(angle + 270.0, 360.0)
                k.angle = math.fmod(k.angle + 90.0, 360.0)
            else:
                angle = math.fmod(angle + 90.0, 360.0)
                k.angle = math.fmod(k.angle + 270.0, 360.0)
        elif rows == cols:
            k.values = np.rot90(k.values, -1).copy()  # IM's in-place loop: 90° clockwise
            x, y = 2 * k.x - cols + 1, 2 * k.y - rows + 1
            k.x, k.y = (-y + cols - 1) // 2, (x + rows - 1) // 2
            angle = math.fmod(angle + 270.0, 360.0)
            k.angle = math.fmod(k.angle + 90.0, 360.0)
        else:
            raise _err(f"ImageMagick rotates only square or 1-D kernels by 90 degrees, "
                       f"not {cols}x{rows}")  # fmt: skip
    if 135.0 < angle <= 225.0:
        k.values = k.values[::-1, ::-1].copy()
        rows, cols = k.values.shape
        k.x, k.y = cols - k.x - 1, rows - k.y - 1
        k.angle = math.fmod(k.angle + 180.0, 360.0)


# --------------------------------------------------------------------------- user arrays


def _weights(text: str, count: int | None) -> list[float]:
    tokens = [t for t in re.split(r"[\s,]+", text.strip().strip("'").strip()) if t]
    if count is not None and len(tokens) != count:
        raise _err(f"the kernel needs {count} values, {len(tokens)} given")
    values = []
    for t in tokens:
        if t == "-" or t.lower() in ("nan", "+nan", "-nan"):
            values.append(math.nan)
        elif _WEIGHT.fullmatch(t):
            v = float(t)
            if not math.isfinite(v):
                raise _err(f"kernel value {_q(t)} is not finite")
            values.append(v)
        else:
            raise _err(f"kernel value {_q(t)} is not a number (or nan)")
    return values


def _array(text: str) -> _K:
    """ParseKernelArray: ``WxH[+X+Y]: values`` or the old odd square ``values``."""
    geometry, sep, body = text.partition(":")
    if sep:
        flags, (rho, sigma, xi, psi, _) = parse_geometry(geometry)
        if not flags & _RHO:
            rho = sigma
        rho = max(rho, 1.0)
        if sigma < 1.0:
            sigma = rho
        width = _size(f"{geometry.strip()}:", rho)
        height = _size(f"{geometry.strip()}:", sigma)
        if xi < 0 or psi < 0:
            raise _err(f"the origin of {_q(geometry.strip())} must not be negative")
        x = int(xi) if flags & _XI else (width - 1) // 2
        y = int(psi) if flags & _PSI else (height - 1) // 2
        if x >= width or y >= height:
            raise _err(f"the origin +{x}+{y} is outside the {width}x{height} kernel")
        values = _weights(body, width * height)
    else:
        values = _weights(text, None)
        width = height = int(math.sqrt(len(values) + 1.0))
        if width * height != len(values):
            raise _err(
                f"{len(values)} values: a kernel without WxH: must be a square (9, 25, 49...) "
                "values; write WxH: values for other shapes"
            )
        _size("the kernel", width)
        x = y = (width - 1) // 2
    if all(math.isnan(v) for v in values):
        raise _err("the kernel has no value that is not nan")
    k = _K(np.array(values, dtype=np.float64).reshape(height, width), x, y, "User Defined")
    _ranges(k)
    return k


def _fixed(text: str, kind: str) -> _K:
    k = _array(text)
    k.kind = kind
    return k


def _array_canonical(k: _K) -> str:
    rows, cols = k.values.shape
    origin = "" if (k.x, k.y) == ((cols - 1) // 2, (rows - 1) // 2) else f"+{k.x}+{k.y}"
    text = " ".join(
        ",".join("nan" if math.isnan(v) else format_number(v) for v in row)
        for row in k.values.tolist()
    )
    return f"{cols}x{rows}{origin}: {text}"


# --------------------------------------------------------------------------- built-in kernels


def _gaussians(kind: str, rho: float, sigma: float, xi: float, what: str) -> _K:
    """Gaussian, DoG and LoG: sampled, then positive and negative parts normalised apart."""
    s1, s2 = abs(sigma), abs(xi)
    if rho >= 1.0:
        width = 2 * _size(what, rho) + 1
    else:
        width = optimal_width_2d(rho, s1 if kind != "DoG" or s1 >= s2 else s2, what)
    _size(what, width)
    r = (width - 1) // 2
    v = np.zeros((width, width))
    if kind in ("Gaussian", "DoG"):
        if s1 > _EPSILON:
            v = _radial(r, 1.0 / (2.0 * s1 * s1), 1.0 / (_2PI * s1 * s1))
        else:
            v[r, r] = 1.0
    if kind == "DoG":
        if s2 > _EPSILON:
            v = v - _radial(r, 1.0 / (2.0 * s2 * s2), 1.0 / (_2PI * s2 * s2))
        else:
            v[r, r] -= 1.0
    if kind == "LoG":
        if s1 > _EPSILON:
            b = 1.0 / (_PI * s1 * s1 * s1 * s1)
            v = _radial(r, 1.0 / (2.0 * s1 * s1), b, log=True)
        else:
            v[r, r] = 1.0
    k = _K(np.array(v, dtype=np.float64), r, r, kind)
    _meta(k)
    _scale(k, 1.0, "correlate")
    return k


def _blur(rho: float, sigma: float, xi: float, what: str) -> _K:
    """Blur: a 1-D Gaussian sampled at 3 points per tap (Photoshop's way), normalised."""
    sigma = abs(sigma)
    width = 2 * _size(what, rho) + 1 if rho >= 1.0 else optimal_width_1d(rho, sigma, what)
    _size(what, width)
    values = [0.0] * width
    x = (width - 1) // 2
    if sigma > _EPSILON:
        sigma *= 3
        alpha = 1.0 / (2.0 * sigma * sigma)
        beta = 1.0 / (_SQ2PI * sigma)
        v = (width * 3 - 1) // 2
        for u in range(-v, v + 1):
            values[(u + v) // 3] += math.exp(-float(u * u) * alpha) * beta
    else:
        values[x] = 1.0
    k = _K(np.array([values]), x, 0, "Blur")
    _meta(k)
    _scale(k, 1.0, "correlate")
    _rotate(k, xi)
    return k


def _comet(rho: float, sigma: float, xi: float, what: str) -> _K:
    """Comet: half a 1-D Gaussian (3 samples per tap) starting at the origin, normalised."""
    sigma = abs(sigma)
    if rho < 1.0:
        # Half of a Blur's width: search up to twice the limit before refusing.
        width = (optimal_width_1d(rho, sigma, what, 2 * MAX_KERNEL_SIDE + 1) - 1) // 2 + 1
    else:
        width = _size(what, rho)
    _size(what, width)
    values = [0.0] * width
    if sigma > _EPSILON:
        sigma *= 3
        a = 1.0 / (2.0 * sigma * sigma)
        for u in range(width * 3):
            values[u // 3] += math.exp(-float(u * u) * a)
        positive = 0.0
        for value in values:
            positive += value
    else:
        values[0] = 1.0
        positive = 1.0
    k = _K(np.array([values]), 0, 0, "Comet", positive=positive)
    _scale(k, 1.0, "normalize")
    _rotate(k, xi)
    return k


def _binomial(rho: float, what: str) -> _K:
    width = 3 if rho < 1.0 else 2 * _size(what, rho) + 1
    if width > 17:
        raise _err(f"{what}: ImageMagick's Binomial overflows 64-bit integers above radius 8")
    row = np.array([math.comb(width - 1, i) for i in range(width)], dtype=np.float64)
    r = (width - 1) // 2
    return _K(np.outer(row, row), r, r, "Binomial")


_LAPLACIANS = {
    0: "3: -1,-1,-1  -1,8,-1  -1,-1,-1",
    1: "3: 0,-1,0  -1,4,-1  0,-1,0",
    2: "3: -2,1,-2  1,4,1  -2,1,-2",
    3: "3: 1,-2,1  -2,4,-2  1,-2,1",
    5: "5: -4,-1,0,-1,-4  -1,2,3,2,-1  0,3,4,3,0  -1,2,3,2,-1  -4,-1,0,-1,-4",
    7: "7:-10,-5,-2,-1,-2,-5,-10 -5,0,3,4,3,0,-5 -2,3,6,7,6,3,-2 -1,4,7,8,7,4,-1 "
    "-2,3,6,7,6,3,-2 -5,0,3,4,3,0,-5 -10,-5,-2,-1,-2,-5,-10",
    15: "5: 0,0,-1,0,0  0,-1,-2,-1,0  -1,-2,16,-2,-1  0,-1,-2,-1,0  0,0,-1,0,0",
    19: "9: 0,-1,-1,-2,-2,-2,-1,-1,0  -1,-2,-4,-5,-5,-5,-4,-2,-1  -1,-4,-5,-3,-0,-3,-5,-4,-1 "
    "-2,-5,-3,12,24,12,-3,-5,-2  -2,-5,-0,24,40,24,-0,-5,-2  -2,-5,-3,12,24,12,-3,-5,-2 "
    "-1,-4,-5,-3,-0,-3,-5,-4,-1  -1,-2,-4,-5,-5,-5,-4,-2,-1  0,-1,-1,-2,-2,-2,-1,-1,0",
}
_EDGES = {
    "Sobel": "3: 1,0,-1  2,0,-2  1,0,-1",
    "Roberts": "3: 0,0,0  1,-1,0  0,0,0",
    "Prewitt": "3: 1,0,-1  1,0,-1  1,0,-1",
    "Compass": "3: 1,1,-1  1,-2,-1  1,1,-1",
    "Kirsch": "3: 5,-3,-3  5,0,-3  5,-3,-3",
}
_HALF_SQ2 = 1.0 / 2.0 * _SQ2  # ImageMagick writes (1.0/2.0*MagickSQ2): sqrt(2)/2, not 1/(2 sqrt 2)
_FREICHEN: dict[int, tuple[str, dict[int, float], float]] = {
    0: ("3: 1,0,-1  2,0,-2  1,0,-1", {3: _SQ2, 5: -_SQ2}, 1.0),
    2: ("3: 1,2,0  2,0,-2  0,-2,-1", {1: _SQ2, 3: _SQ2, 5: -_SQ2, 7: -_SQ2}, _HALF_SQ2),
    11: ("3: 1,0,-1  2,0,-2  1,0,-1", {3: _SQ2, 5: -_SQ2}, _HALF_SQ2),
    12: ("3: 1,2,1  0,0,0  1,2,1", {1: _SQ2, 7: _SQ2}, _HALF_SQ2),
    13: ("3: 2,-1,0  -1,0,1  0,1,-2", {0: _SQ2, 8: -_SQ2}, _HALF_SQ2),
    14: ("3: 0,1,-2  -1,0,1  2,-1,0", {2: -_SQ2, 6: _SQ2}, _HALF_SQ2),
    15: ("3: 0,-1,0  1,0,1  0,-1,0", {}, 1.0 / 2.0),
    16: ("3: 1,0,-1  0,0,0  -1,0,1", {}, 1.0 / 2.0),
    17: ("3: 1,-2,1  -2,4,-2  -1,-2,1", {}, 1.0 / 6.0),
    18: ("3: -2,1,-2  1,4,1  -2,1,-2", {}, 1.0 / 6.0),
    19: ("3: 1,1,1  1,1,1  1,1,1", {}, 1.0 / 3.0),
}


def _freichen(rho: float, sigma: float) -> _K:
    kind = int(rho)
    if kind == 10:
        raise _err("FreiChen:10 is a list of 9 kernels; blurapp takes one (FreiChen:11 to :19)")
    base, patch, factor = _FREICHEN.get(11 if kind == 1 else kind, _FREICHEN[0])
    k = _fixed(base, "FreiChen")
    flat = k.values.ravel()
    for i, value in patch.items():
        flat[i] = value
    if patch:
        _meta(k)
    if factor != 1.0 or kind in (2, 11, 1):
        _scale(k, factor, "")
    if abs(sigma) >= _EPSILON:
        _rotate(k, sigma)
    elif rho > 30.0 or rho < -30.0:
        _rotate(k, rho)
    return k


def _shape(kind: str, rho: float, sigma: float, xi: float, what: str) -> _K:
    """The flat shapes: ``sigma`` (default 1) inside, NaN outside, as ImageMagick sizes them."""
    if kind == "Square":
        width = 3 if rho < 1.0 else _size(what, 2 * rho + 1)
    elif kind == "Disk":
        width = 9 if rho < 0.4 else 2 * _size(what, abs(rho)) + 1
    elif kind == "Diamond":
        width = 3 if rho < 1.0 else 2 * _size(what, rho) + 1
    else:  # Octagon, Plus, Cross
        width = 5 if rho < 1.0 else 2 * _size(what, rho) + 1
    _size(what, width)
    r = (width - 1) // 2
    u = np.arange(-r, r + 1)
    uu, vv = np.meshgrid(u, u)
    uu, vv = np.abs(uu), np.abs(vv)
    if kind == "Square":
        inside = np.ones((width, width), dtype=bool)
    elif kind == "Diamond":
        inside = uu + vv <= r
    elif kind == "Octagon":
        inside = uu + vv <= r + r // 2
    elif kind == "Disk":
        inside = uu * uu + vv * vv <= (18 if rho < 0.4 else int(rho * rho))
    elif kind == "Plus":
        inside = (uu == 0) | (vv == 0)
    else:  # Cross
        inside = uu == vv
    return _K(np.where(inside, sigma, np.nan), r, r, kind)


def _ring(kind: str, rho: float, sigma: float, xi: float, what: str) -> _K:
    if max(rho, sigma) < 0:
        raise _err(f"{what}: the radii must not be negative")
    if rho < sigma:
        width = 2 * _size(what, sigma) + 1
        limit1, limit2 = int(rho * rho), int(sigma * sigma)
    else:
        width = 2 * _size(what, rho) + 1
        limit1, limit2 = int(sigma * sigma), int(rho * rho)
    if limit2 <= 0:
        width, limit1, limit2 = 7, 7, 11
    _size(what, width)
    r = (width - 1) // 2
    u = np.arange(-r, r + 1)
    d = u[None, :] ** 2 + u[:, None] ** 2
    scale = 0.0 if kind == "Peaks" else float(int(xi))
    v = np.where((limit1 < d) & (d <= limit2), scale, np.nan)
    if kind == "Peaks":
        v[r, r] = 1.0
    return _K(v, r, r, kind)


def _rectangle(flags: int, rho: float, sigma: float, xi: float, psi: float, what: str) -> _K:
    if not flags & _RHO:
        rho = sigma
    if rho < 1.0:
        rho = 3
    if sigma < 1.0:
        sigma = rho
    if not flags & _XI:
        xi = float((int(rho) - 1) // 2)
    if not flags & _PSI:
        psi = float((int(sigma) - 1) // 2)
    width, height = _size(what, rho), _size(what, sigma)
    if xi < 0 or xi > width or psi < 0 or psi > height:
        raise _err(f"{what}: the origin is outside the {width}x{height} rectangle")
    return _K(np.ones((height, width)), int(xi), int(psi), "Rectangle")


def _named(name: str, geometry: str) -> _K:
    """ParseKernelName and AcquireKernelBuiltIn for one named kernel."""
    flags, (rho, sigma, xi, psi, _) = parse_geometry(geometry)
    what = f"{name}:{''.join(geometry.split())}" if geometry.strip() else name
    if name in ("Square", "Diamond", "Octagon", "Disk", "Plus", "Cross") and not flags & _SIGMA:
        sigma = 1.0
    if name == "Ring" and not flags & _XI:
        xi = 1.0
    if name == "Unity":
        return _K(np.array([[rho if flags & _RHO else 1.0]]), 0, 0, "Unity")
    if name in ("Gaussian", "DoG", "LoG"):
        return _gaussians(name, rho, sigma, xi, what)
    if name == "Blur":
        return _blur(rho, sigma, xi, what)
    if name == "Comet":
        return _comet(rho, sigma, xi, what)
    if name == "Binomial":
        return _binomial(rho, what)
    if name == "Laplacian":
        return _fixed(_LAPLACIANS.get(int(rho), _LAPLACIANS[0]), "Laplacian")
    if name in _EDGES:
        k = _fixed(_EDGES[name], name)
        _rotate(k, rho)
        return k
    if name == "FreiChen":
        return _freichen(rho, sigma)
    if name in ("Square", "Diamond", "Octagon", "Disk", "Plus", "Cross"):
        return _shape(name, rho, sigma, xi, what)
    if name in ("Ring", "Peaks"):
        return _ring(name, rho, sigma, xi, what)
    return _rectangle(flags, rho, sigma, xi, psi, what)


# --------------------------------------------------------------------------- the im: family


def parse_im(text: str) -> ImKernel:
    """An ImageMagick kernel string as ImageMagick holds it (no anchoring, NaN kept).

    Arguments:
        text: what follows ``im:``, e.g. ``"Gaussian:0x2"`` or ``"3x3+0+0: 1,2,1 2,4,2 1,2,1"``.
    Returns:
        An :class:`ImKernel` with ImageMagick's values, origin and name.
    Raises:
        KernelSpecError: one line naming the problem.
    """
    try:
        # Out-of-range arguments (Gaussian:0x1e200) are a spec error, not a warning or traceback.
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            return _parse_im(text)
    except (ArithmeticError, FloatingPointError) as e:
        raise _err(f"{_q(text.strip())}: an argument is too small or too large ({e})") from None


def _parse_im(text: str) -> ImKernel:
    parts = [p for p in text.split(";") if p.strip()]
    if not parts:
        raise _err("empty ImageMagick kernel string (e.g. im:Gaussian:0x2 or im:3x3: 1,2,1 ...)")
    if len(parts) > 1:
        raise _err(f"{_q(text.strip())} is a list of {len(parts)} kernels; blurapp takes one")
    body = parts[0].strip()
    m = _NAME.match(body)
    if m and not _WEIGHT.match(body):
        word = m.group()
        key = word.replace("-", "").replace("_", "").lower()
        if key in _OTHERS:
            raise _err(f"ImageMagick's {_OTHERS[key]} is a hit-and-miss or distance "
                       "kernel, not a convolution kernel")  # fmt: skip
        name = _NAMES.get(key)
        if name is None:
            raise _err(f"unknown ImageMagick kernel {_q(word, 40)} (known: {', '.join(SUPPORTED)}, "
                       "or WxH: values)")  # fmt: skip
        geometry = body[m.end() :].lstrip(" \t\r\n,:")
        k = _named(name, geometry)
        clean = "".join(geometry.split())
        canonical = f"im:{name}:{clean}" if clean else f"im:{name}"
    else:
        k = _array(body)
        canonical = f"im:{_array_canonical(k)}"
    k.values.setflags(write=False)
    return ImKernel(k.values, k.x, k.y, k.kind, canonical)


def _pads(n: int, origin: int) -> tuple[int, int]:
    """Zeros (before, after) that put tap ``origin`` of ``n`` at blurapp's anchor size // 2."""
    lo, hi = min(-origin, 0), max(n - 1 - origin, 0)
    size = hi - lo + 1
    while not (size // 2 >= -lo and size - 1 - size // 2 >= hi):
        size += 1
    before = size // 2 - origin
    return before, size - n - before


def anchored_weights(k: ImKernel) -> np.ndarray:
    """ImageMagick's values as blurapp weights: NaN -> 0, zero-padded so that ImageMagick's
    origin is at (rows // 2, cols // 2). The padding is the least that does it (none for a
    centred odd kernel; ``3x3+0+0`` becomes 5×5 with the values at the bottom right).
    """
    rows, cols = k.values.shape
    top, bottom = _pads(rows, k.y)
    left, right = _pads(cols, k.x)
    if max(rows + top + bottom, cols + left + right) > MAX_KERNEL_SIDE:
        raise _err(
            f"{_q(k.canonical)} needs {cols + left + right}x{rows + top + bottom} taps once its "
            f"origin is centred, above the limit of {MAX_KERNEL_SIDE} per side (MAX_KERNEL_SIDE)"
        )
    w = np.where(np.isnan(k.values), 0.0, k.values)
    return np.pad(w, ((top, bottom), (left, right)))


def build_im(text: str) -> tuple[np.ndarray, str]:
    """``im:`` for :meth:`blurapp.core.kernel.Kernel.parse`: (weights, canonical spec)."""
    k = parse_im(text)
    return anchored_weights(k), k.canonical


# --------------------------------------------------------------------------- blurapp -> IM


def _candidates(rows: int, cols: int) -> list[str]:
    if (rows, cols) != (3, 3):
        return []
    names = [f"Laplacian:{n}" for n in (0, 1, 2, 3)]
    for name in (*_EDGES, "FreiChen"):
        names += [name] + [f"{name}:{a}" for a in range(45, 360, 45)]
    return names


def im_string(kernel: Kernel) -> str:
    """The ImageMagick kernel string of a blurapp kernel, for ``-morphology Correlate``.

    An ``im:`` kernel gives its own string; a kernel equal to an ImageMagick built-in (a 3×3
    edge kernel bit for bit, or an isotropic ``gaussian`` equal to ``Gaussian:RxS`` within
    1e-13 of its largest weight: the same sampled Gaussian, rounded differently) gives that
    name; any other kernel gives a ``WxH[+X+Y]: ...`` array with every weight written exactly
    and blurapp's anchor as the origin.

    Example::

        im_string(Kernel.parse("sobel:x")) == "Sobel:180"
    """
    spec = kernel.spec
    if spec.lower().startswith("im:"):
        return spec[3:]
    w = kernel.weights
    rows, cols = w.shape
    for name in _candidates(rows, cols):
        if np.array_equal(build_im(name)[0], w):
            return name
    if kernel.name == "gaussian" and rows == cols:
        from blurapp.core.kernel_families import spec_params

        _, params = spec_params(spec)
        sigma = params.get("sigma", "")
        if "x" not in sigma.lower():
            candidate = f"Gaussian:{rows // 2}x{sigma}"
            got = build_im(candidate)[0]
            if got.shape == w.shape and np.abs(got - w).max() <= 1e-13 * np.abs(w).max():
                return candidate
    ay, ax = rows // 2, cols // 2
    origin = "" if (ax, ay) == ((cols - 1) // 2, (rows - 1) // 2) else f"+{ax}+{ay}"
    body = " ".join(",".join(format_number(v) for v in row) for row in w.tolist())
    return f"{cols}x{rows}{origin}: {body}"


# --------------------------------------------------------------------------- near misses


def _blurapp_equivalent(text: str, k: ImKernel) -> str | None:
    """The nearest blurapp family spec for an ImageMagick string, where there is one."""
    if k.name in ("Gaussian", "DoG"):
        m = _NAME.match(text.strip())
        geometry = text.strip()[m.end() if m else 0 :].lstrip(" \t\r\n,:").split(";")[0]
        _, (rho, sigma, xi, _, _) = parse_geometry(geometry)
        radius = f",radius={int(rho)}" if rho >= 1 else ""
        if k.name == "Gaussian" and abs(sigma) > 0:
            return f"gaussian:sigma={format_number(abs(sigma))}{radius}"
        if k.name == "DoG" and abs(sigma) > 0 and abs(xi) > 0 and abs(sigma) != abs(xi):
            return f"dog:sigma={format_number(abs(sigma))},{format_number(abs(xi))}"
    if k.name == "User Defined" and not np.isnan(k.values).any():
        rows, cols = k.values.shape
        if (k.x, k.y) == (cols // 2, rows // 2):
            values = ",".join(format_number(v) for v in k.values.ravel().tolist())
            return f"matrix:{cols}x{rows}:{values}"
    return None


def near_miss(error: KernelSpecError, text: str) -> KernelSpecError:
    """``error`` with a "did you mean im:..." hint when ``text`` is a valid ImageMagick string.

    ``Gaussian:0x2`` fails as a blurapp spec (sigma 0) but is ImageMagick's sigma-2 Gaussian:
    the message then ends "; did you mean im:Gaussian:0x2 (ImageMagick) or gaussian:sigma=2?".
    ``unsharp:0x1`` (ImageMagick's -unsharp geometry) gets "unsharp:sigma=1". Otherwise the
    error comes back unchanged.
    """
    text = text.strip()
    family, _, rest = text.partition(":")
    if family.strip().lower() == "unsharp":
        try:
            flags, (_, sigma, amount, _, _) = parse_geometry(rest)
        except KernelSpecError:
            return error
        if flags & _SIGMA and sigma > 0:
            extra = f",amount={format_number(amount)}" if flags & _XI and amount != 1 else ""
            hint = f"unsharp:sigma={format_number(sigma)}{extra}"
            return KernelSpecError(f"{error}; did you mean {hint} (ImageMagick's -unsharp)?")
        return error
    try:
        k = parse_im(text)
    except KernelSpecError:
        return error
    equivalent = _blurapp_equivalent(text, k)
    hint = f"{k.canonical} (ImageMagick)" + (f" or {equivalent}" if equivalent else "")
    return KernelSpecError(f"{error}; did you mean {hint}?")


# blurapp border -> ImageMagick -virtual-pixel (mirror, OpenCV's REFLECT_101, has none).
_VIRTUAL_PIXEL = {"clamp": "Edge", "reflect": "Mirror", "wrap": "Tile"}


def magick_argv(spec: FilterSpec) -> tuple[list[str] | None, str]:
    """The ImageMagick options that filter as ``spec`` does, or ``None`` and why not.

    The kernel is :func:`im_string`'s, applied with ``-morphology Correlate`` (``Convolve`` for
    ``--convolve``), the border as ``-virtual-pixel``, ``--range offset`` as
    ``-define convolve:bias=50%``, linear light as ``-colorspace RGB`` before and ``sRGB``
    after. ImageMagick rounds through its own quantum (16 bits here), so its 8-bit pixels may
    differ from blurapp's by a level; images with alpha are filtered its own way.

    Returns:
        ``(options, note)``: the options between the input and output file names (``None``
        when no ImageMagick options do the same), and a one-line note on what to expect.
    """
    border = spec.border.name
    if spec.border.mode.name == "CONSTANT":
        grey = f"gray({spec.border.value * 100:g}%)"
        where = ["-virtual-pixel", "Background", "-background", grey]
        if not 0.0 <= spec.border.value <= 1.0:
            return None, f"ImageMagick has no border value {spec.border.value:g} outside 0..1"
    elif border in _VIRTUAL_PIXEL:
        where = ["-virtual-pixel", _VIRTUAL_PIXEL[border]]
    else:
        return None, f"ImageMagick has no {border} border (OpenCV's BORDER_REFLECT_101)"
    if spec.range_mode not in ("clamp", "offset"):
        return None, f"ImageMagick has no --range {spec.range_mode}"
    if spec.dtype is not None:
        return None, "the output type is set by ImageMagick's -depth and format instead"
    argv = list(where)
    if spec.linear:
        argv += ["-colorspace", "RGB"]
    if spec.range_mode == "offset":
        argv += ["-define", "convolve:bias=50%"]
    method = "Convolve" if spec.convolve else "Correlate"
    argv += ["-morphology", method, im_string(spec.kernel)]
    if spec.linear:
        argv += ["-colorspace", "sRGB"]
    note = (
        "within a level of blurapp's 8-bit pixels; images with alpha are filtered ImageMagick's way"
    )
    return argv, note
