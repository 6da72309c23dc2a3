"""The kernel families of the spec grammar: argument parsing, canonical specs and weight builders.

Each builder takes the text after ``family:`` and returns ``(weights, canonical_spec)``; the
canonical spec is a fixed point (parsing it gives the same weights, bit for bit, and the same
spec). :mod:`blurapp.core.kernel` wraps the result in a :class:`~blurapp.core.kernel.Kernel`.
:data:`FAMILY_PARAMS` describes each family's parameters (names, kinds, ranges, defaults); the
builders parse with it and write their canonical spec with :func:`format_spec`, and the GUI's
kernel designer builds its form from it and reads specs with :func:`spec_params`.
All weights are float64 and meant for *correlation* (OpenCV ``filter2D``, scipy ``correlate``);
coordinates are x = column (to the right) and y = row (downwards).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from blurapp.core.errors import KernelSpecError, readable, readable_text

#: Largest number of taps per side any spec may ask for (see blurapp.core.kernel's docstring).
MAX_KERNEL_SIDE = 513
#: Largest radius (taps each side of the centre) of a kernel of MAX_KERNEL_SIDE taps.
MAX_RADIUS = MAX_KERNEL_SIDE // 2
#: gaussian and log: radius = int(truncate * sigma + 0.5) with scipy's default truncate.
DEFAULT_TRUNCATE = 4.0

#: Sub-samples per pixel side used to anti-alias ``disk`` and ``motion`` (16×16 = 256 per pixel).
SUPERSAMPLE = 16

Builder = Callable[[str], tuple[np.ndarray, str]]

_SIZE_SEP = re.compile(r"[x×]", re.IGNORECASE)


# --------------------------------------------------------------------------- numbers and specs


def format_number(x: float) -> str:
    """Shortest text that parses back to exactly ``x`` ("2" for 2.0, repr otherwise, "-0" kept)."""
    x = float(x)
    if x == 0.0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    if x.is_integer() and abs(x) < 2.0**53:
        return str(int(x))
    return repr(x)


def _err(message: str) -> KernelSpecError:
    # One line whatever the user typed: values are shown through repr, which escapes newlines.
    return KernelSpecError(readable_text(" ".join(message.split("\n"))))


def _q(text: str, limit: int = 60) -> str:
    """Quote a user value for an error message, cut short if it is very long."""
    if len(text) > limit:
        text = text[:limit] + "..."
    return repr(text)


def _split_args(family: str, text: str) -> tuple[list[str], dict[str, str]]:
    """``"x, size = 5"`` -> (["x"], {"size": "5"}); keys lower-cased, whitespace stripped."""
    positional: list[str] = []
    named: dict[str, str] = {}
    if not text.strip():
        return positional, named
    for raw in text.split(","):
        token = raw.strip()
        if not token:
            raise _err(f"{family}: empty parameter in {_q(text)}")
        if "=" in token:
            key, _, value = token.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not key:
                raise _err(f"{family}: parameter without a name in {_q(token)}")
            if not value:
                raise _err(f"{family}: parameter {key!r} has no value")
            if key in named:
                raise _err(f"{family}: parameter {key!r} given twice")
            named[key] = value
        else:
            positional.append(token)
    return positional, named


def _params(family: str, text: str) -> dict[str, str]:
    """Parse ``text`` into named parameters, as :data:`FAMILY_PARAMS` describes ``family``'s.

    Positional values take the names of the positional parameters, in order; unknown names,
    extra values and repeats are refused. Values are not checked here (the builders do it).
    """
    described = FAMILY_PARAMS[family]
    allowed = tuple(p.name for p in described)
    positional = tuple(p.name for p in described if p.positional)
    pos, named = _split_args(family, text)
    if not allowed and (pos or named):
        raise _err(f"{family} takes no parameters, got {_q(text.strip())}")
    if len(pos) > len(positional):
        raise _err(f"{family}: unexpected value {_q(pos[len(positional)])}")
    for key, value in zip(positional, pos, strict=False):
        if key in named:
            raise _err(f"{family}: parameter {key!r} given twice")
        named[key] = value
    for key in named:
        if key not in allowed:
            raise _err(
                f"unknown parameter {key!r} for {family} (known: {', '.join(allowed) or 'none'})"
            )
    return named


def _number(family: str, key: str, value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise _err(f"{family} {key} must be a number, got {_q(value)}") from None
    if not math.isfinite(x):
        raise _err(f"{family} {key} must be finite, got {_q(value)}")
    return x


def _required_positive(family: str, p: dict[str, str], key: str, example: str) -> float:
    """Parameter ``key`` of ``p``, which must be given and be a number > 0."""
    if key not in p:
        raise _err(f"{family} needs {key}=..., e.g. {example}")
    x = _number(family, key, p[key])
    if x <= 0:
        raise _err(f"{family} {key} must be > 0, got {_q(p[key])}")
    return x


def _integer(family: str, key: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise _err(f"{family} {key} must be an integer, got {_q(value)}") from None


def _pair(value: str) -> list[str]:
    """``"7x3"`` -> ["7", "3"] (W then H); ``"5"`` -> ["5"]."""
    return [p.strip() for p in _SIZE_SEP.split(value)]


def _int_pair(family: str, key: str, value: str, minimum: int) -> tuple[int, int]:
    """A W×H (or single N = N×N) pair of integers >= minimum, as (x, y)."""
    parts = _pair(value)
    if len(parts) > 2:
        raise _err(f"{family} {key} must be N or WxH, got {_q(value)}")
    nums = [_integer(family, key, p) for p in parts]
    if any(n < minimum for n in nums):
        raise _err(f"{family} {key} must be >= {minimum}, got {_q(value)}")
    return (nums[0], nums[-1])


def _positive_pair(family: str, key: str, value: str) -> tuple[float, float]:
    """A single positive number or an XxY pair, as (x, y)."""
    parts = _pair(value)
    if len(parts) > 2:
        raise _err(f"{family} {key} must be a number or XxY, got {_q(value)}")
    nums = [_number(family, key, p) for p in parts]
    if any(n <= 0 for n in nums):
        raise _err(f"{family} {key} must be > 0, got {_q(value)}")
    return (nums[0], nums[-1])


def _check_sides(what: str, width: int, height: int) -> None:
    """Refuse, before any allocation, a kernel wider or taller than MAX_KERNEL_SIDE."""
    if width > MAX_KERNEL_SIDE or height > MAX_KERNEL_SIDE:
        raise _err(
            f"{what} needs a {readable(width)}x{readable(height)} kernel, above the limit of "
            f"{MAX_KERNEL_SIDE} taps per side (MAX_KERNEL_SIDE)"
        )


def _auto_radius(sigma: float) -> int:
    """The radius a sigma gets without radius= or truncate= (scipy's truncate=4)."""
    return int(DEFAULT_TRUNCATE * sigma + 0.5)


def _radius_from_truncate(truncate: float, sigma: float, what: str) -> int:
    r = truncate * sigma + 0.5
    if not math.isfinite(r) or r > 2.0**31:
        # Refuse without converting an enormous float to int (int(inf) would raise).
        raise _err(
            f"{what} needs a kernel of radius {r:.6g}, above the limit of "
            f"{MAX_KERNEL_SIDE} taps per side (MAX_KERNEL_SIDE)"
        )
    return int(r)


def _radii(family: str, p: dict[str, str], sx: float, sy: float) -> tuple[int, int]:
    """Radius (x, y) from ``radius=`` or ``truncate=`` (default 4, scipy's int(t*sigma+0.5))."""
    if "radius" in p and "truncate" in p:
        raise _err(f"{family}: give radius or truncate, not both")
    what = f"{family}:sigma={p['sigma']}"
    if "radius" in p:
        rx, ry = _int_pair(family, "radius", p["radius"], 0)
        what = f"{family} radius={p['radius']}"
    else:
        t = DEFAULT_TRUNCATE
        if "truncate" in p:
            t = _number(family, "truncate", p["truncate"])
            if t <= 0:
                raise _err(f"{family} truncate must be > 0, got {_q(p['truncate'])}")
        rx = _radius_from_truncate(t, sx, what)
        ry = _radius_from_truncate(t, sy, what)
    _check_sides(what, 2 * rx + 1, 2 * ry + 1)
    return rx, ry


def _radius_text(rx: int, ry: int) -> str:
    return str(rx) if rx == ry else f"{rx}x{ry}"


# --------------------------------------------------------------------------- smooth families


def gaussian_1d(sigma: float, radius: int) -> np.ndarray:
    """scipy.ndimage's 1-D Gaussian (``_gaussian_kernel1d`` order 0), computed the same way.

    Arguments:
        sigma: standard deviation in pixels (> 0).
        radius: taps each side of the centre.
    Returns:
        float64 array of length 2*radius+1 that sums to 1.
    """
    sigma2 = sigma * sigma
    x = np.arange(-radius, radius + 1)
    phi = np.exp(-0.5 / sigma2 * x**2)
    return phi / phi.sum()


def build_gaussian(text: str) -> tuple[np.ndarray, str]:
    """``gaussian:sigma=S[xSY][,radius=R[xRY]|,truncate=T]`` — outer(g_y, g_x), normalised."""
    p = _params("gaussian", text)
    if "sigma" not in p:
        raise _err("gaussian needs sigma=..., e.g. gaussian:sigma=2")
    sx, sy = _positive_pair("gaussian", "sigma", p["sigma"])
    rx, ry = _radii("gaussian", p, sx, sy)
    weights = np.outer(gaussian_1d(sy, ry), gaussian_1d(sx, rx))
    sigma = format_number(sx) if sx == sy else f"{format_number(sx)}x{format_number(sy)}"
    auto = (rx, ry) == (_auto_radius(sx), _auto_radius(sy))
    radius = None if auto else _radius_text(rx, ry)
    return weights, format_spec("gaussian", {"sigma": sigma, "radius": radius})


def build_box(text: str) -> tuple[np.ndarray, str]:
    """``box:N`` or ``box:WxH`` — the mean over W columns × H rows (odd or even)."""
    p = _params("box", text)
    if "size" not in p:
        raise _err("box needs a size, e.g. box:5 or box:7x3")
    w, h = _int_pair("box", "size", p["size"], 1)
    _check_sides(f"box:{p['size']}", w, h)
    weights = np.full((h, w), 1.0 / (w * h))
    return weights, format_spec("box", {"size": str(w) if w == h else f"{w}x{h}"})


def build_log(text: str) -> tuple[np.ndarray, str]:
    """``log:sigma=S[,radius=R|,truncate=T]`` — Laplacian of Gaussian, zero sum.

    Sign: this is ∇²G itself, *negative at the centre* (like ``laplacian``'s -4), so a bright
    blob gives a negative response. Scale: the Laplacian of the normalised discrete Gaussian,
    so the response to x² + y² is about 4, as for the continuous operator. The mean is then
    subtracted so the weights sum to 0 (to round-off) despite the truncation.
    """
    p = _params("log", text)
    sigma = _required_positive("log", p, "sigma", "log:sigma=1.5")
    rx, ry = _radii("log", p, sigma, sigma)
    if rx != ry:
        raise _err(f"log radius must be a single number, got {_q(p['radius'])}")
    if rx < 1:
        raise _err(f"log:sigma={p['sigma']} gives radius 0; a LoG needs radius >= 1")
    x = np.arange(-rx, rx + 1, dtype=np.float64)
    r2 = x[:, None] ** 2 + x[None, :] ** 2
    s2 = sigma * sigma
    g = np.exp(-r2 / (2.0 * s2))
    g /= g.sum()
    weights = g * (r2 - 2.0 * s2) / (s2 * s2)
    weights -= weights.mean()
    radius = None if rx == _auto_radius(sigma) else str(rx)
    return weights, format_spec("log", {"sigma": format_number(sigma), "radius": radius})


# --------------------------------------------------------------------------- derivatives


def _direction(family: str, p: dict[str, str]) -> str:
    if "direction" not in p:
        raise _err(f"{family} needs a direction, e.g. {family}:x")
    d = p["direction"].lower()
    if d not in ("x", "y"):
        raise _err(f"{family} direction must be x or y, got {_q(p['direction'])}")
    return d


def sobel_1d(size: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV ``getDerivKernels`` for a first derivative: (smoothing, derivative).

    Smoothing is the binomial row of order size-1; the derivative is the binomial of order
    size-2 differenced, so it grows to the right: size 3 -> [1,2,1], [-1,0,1].
    """
    smooth = np.array([math.comb(size - 1, i) for i in range(size)], dtype=np.float64)
    binom = np.array([math.comb(size - 2, i) for i in range(size - 1)], dtype=np.float64)
    # Written as right minus left so the middle zero is +0.0, not -0.0 (exact JSON/spec text).
    deriv = np.concatenate([[0.0], binom]) - np.concatenate([binom, [0.0]])
    return smooth, deriv


def _oriented(direction: str, kx: np.ndarray) -> np.ndarray:
    """Kernel for an x derivative given as ``kx``; y is its transpose (positive downwards)."""
    return np.ascontiguousarray(kx if direction == "x" else kx.T)


def build_sobel(text: str) -> tuple[np.ndarray, str]:
    """``sobel:x|y[,size=3|5|7]`` — smoothing ⊗ derivative, unnormalised like OpenCV."""
    p = _params("sobel", text)
    d = _direction("sobel", p)
    size = _integer("sobel", "size", p["size"]) if "size" in p else 3
    if size not in (3, 5, 7):
        raise _err(f"sobel size must be 3, 5 or 7, got {_q(p['size'])}")
    smooth, deriv = sobel_1d(size)
    spec = format_spec("sobel", {"direction": d, "size": None if size == 3 else str(size)})
    return _oriented(d, np.outer(smooth, deriv)), spec


def _fixed_derivative(family: str, smooth: list[float]) -> Builder:
    def build(text: str) -> tuple[np.ndarray, str]:
        p = _params(family, text)
        d = _direction(family, p)
        kx = np.outer(np.array(smooth, dtype=np.float64), [-1.0, 0.0, 1.0])
        return _oriented(d, kx), format_spec(family, {"direction": d})

    build.__doc__ = f"``{family}:x|y`` — {smooth} ⊗ [-1, 0, 1]."
    return build


# --------------------------------------------------------------------------- fixed 3×3


_FIXED = {
    "laplacian": [[0, 1, 0], [1, -4, 1], [0, 1, 0]],
    "sharpen": [[0, -1, 0], [-1, 5, -1], [0, -1, 0]],
    "emboss": [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]],
    "identity": [[0, 0, 0], [0, 1, 0], [0, 0, 0]],
}


def _fixed(family: str) -> Builder:
    def build(text: str) -> tuple[np.ndarray, str]:
        _params(family, text)
        return np.array(_FIXED[family], dtype=np.float64), format_spec(family, {})

    build.__doc__ = f"``{family}`` — the usual 3×3 {_FIXED[family]}."
    return build


# --------------------------------------------------------------------------- anti-aliased shapes


def _offsets() -> np.ndarray:
    # Sub-pixel sample centres in (-0.5, 0.5): odd multiples of 1/(2S), never on a pixel edge.
    return (np.arange(SUPERSAMPLE) + 0.5) / SUPERSAMPLE - 0.5


def _coverage(
    rx: int, ry: int, inside: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """Count, per pixel of a (2ry+1)×(2rx+1) grid, the sub-samples (x, y) that are ``inside``.

    One sub-row at a time keeps memory at grid × SUPERSAMPLE even for a 513×513 kernel.
    """
    off = _offsets()
    xs = np.arange(-rx, rx + 1, dtype=np.float64)[None, :, None] + off[None, None, :]
    counts = np.zeros((2 * ry + 1, 2 * rx + 1), dtype=np.int64)
    rows = np.arange(-ry, ry + 1, dtype=np.float64)[:, None, None]
    for dy in off:
        counts += np.count_nonzero(inside(xs, rows + dy), axis=2)
    return counts


def _aperture_radius(family: str, p: dict[str, str]) -> tuple[float, int]:
    """``radius=R`` of a disc or a polygon (R >= 0.5 pixels), and the taps each side of the
    smallest odd grid that holds the circle of radius R: ceil(R - 0.5)."""
    if "radius" not in p:
        raise _err(f"{family} needs radius=..., e.g. {family}:radius=4")
    r = _number(family, "radius", p["radius"])
    if r < 0.5:
        raise _err(f"{family} radius must be >= 0.5, got {_q(p['radius'])}")
    if r > MAX_KERNEL_SIDE:
        raise _err(f"{family} radius={p['radius']} is above the limit of {MAX_KERNEL_SIDE} taps")
    n = max(0, math.ceil(r - 0.5))
    _check_sides(f"{family} radius={p['radius']}", 2 * n + 1, 2 * n + 1)
    return r, n


def build_disk(text: str) -> tuple[np.ndarray, str]:
    """``disk:radius=R`` — a disc of radius R pixels, pixel weight = covered area, normalised.

    Coverage is estimated with SUPERSAMPLE² samples per pixel; the grid is the smallest odd
    square that holds the disc (radius ceil(R - 0.5) taps).
    """
    r, n = _aperture_radius("disk", _params("disk", text))
    r2 = r * r
    counts = _coverage(n, n, lambda x, y: x * x + y * y <= r2)
    return counts / counts.sum(), format_spec("disk", {"radius": format_number(r)})


def _cos_sin(angle: float) -> tuple[float, float]:
    """cos/sin of an angle in degrees, exact at multiples of 90° (so 90° is a pure column)."""
    a = angle % 360.0
    exact = {0.0: (1.0, 0.0), 90.0: (0.0, 1.0), 180.0: (-1.0, 0.0), 270.0: (0.0, -1.0)}
    if a in exact:
        return exact[a]
    t = math.radians(angle)
    return math.cos(t), math.sin(t)


def build_motion(text: str) -> tuple[np.ndarray, str]:
    """``motion:length=L[,angle=A]`` — an anti-aliased line L pixels long, 1 pixel thick.

    The line runs through the anchor at A degrees counter-clockwise from +x as seen on screen
    (rows grow downwards, so 90° points up). Each pixel weighs the area of the L×1 rectangle it
    covers (SUPERSAMPLE² samples), normalised; the grid is the smallest odd box that holds it,
    so ``motion:length=9`` is the 9×1 mean. Any angle but a multiple of 90° is not rank 1.
    """
    p = _params("motion", text)
    if "length" not in p:
        raise _err("motion needs length=..., e.g. motion:length=9,angle=30")
    length = _number("motion", "length", p["length"])
    if length < 1:
        raise _err(f"motion length must be >= 1, got {_q(p['length'])}")
    angle = _number("motion", "angle", p["angle"]) if "angle" in p else 0.0
    c, s = _cos_sin(angle)
    half = length / 2.0
    what = f"motion length={p['length']}"
    if half > MAX_KERNEL_SIDE:
        raise _err(f"{what} is above the limit of {MAX_KERNEL_SIDE} taps per side")
    # Half-extents of the rotated rectangle; a pixel i is touched when i - 0.5 < extent.
    ex = half * abs(c) + 0.5 * abs(s)
    ey = half * abs(s) + 0.5 * abs(c)
    rx = max(0, math.ceil(ex - 0.5 - 1e-9))
    ry = max(0, math.ceil(ey - 0.5 - 1e-9))
    _check_sides(what, 2 * rx + 1, 2 * ry + 1)

    def inside(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        # Screen direction (c, s) is (c, -s) in (column, row) coordinates.
        along = x * c - y * s
        across = x * s + y * c
        return (np.abs(along) <= half) & (np.abs(across) <= 0.5)

    counts = _coverage(rx, ry, inside)
    return counts / counts.sum(), format_spec(
        "motion", {"length": format_number(length), "angle": format_number(angle)}
    )


# --------------------------------------------------------------------------- photo families


def build_bokeh(text: str) -> tuple[np.ndarray, str]:
    """``bokeh:radius=R[,blades=N][,rotation=D]`` — a lens aperture: a regular N-gon, normalised.

    The polygon's corners lie on the circle of radius R pixels, the first at D degrees
    counter-clockwise from +x on screen (as ``motion``'s angle); N = 6 blades by default,
    N >= 3, and ``blades=0`` is the round aperture (``disk``'s weights). Each pixel weighs the
    area it covers (SUPERSAMPLE² samples, like ``disk``), on the smallest odd square that holds
    the circle.
    """
    p = _params("bokeh", text)
    r, n = _aperture_radius("bokeh", p)
    blades = _integer("bokeh", "blades", p["blades"]) if "blades" in p else 6
    if blades != 0 and blades < 3:
        raise _err(f"bokeh blades must be 0 (round) or >= 3, got {_q(p['blades'])}")
    rotation = _number("bokeh", "rotation", p["rotation"]) if "rotation" in p else 0.0
    if blades == 0:
        r2 = r * r

        def inside(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return x * x + y * y <= r2

    else:
        # Inside when the point is within the apothem along every edge's outward normal; the
        # normals sit half a corner step from the corners. Screen y points up: row = -y.
        apothem = r * math.cos(math.pi / blades)
        normals = [_cos_sin(rotation + (k + 0.5) * 360.0 / blades) for k in range(blades)]

        def inside(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            ok = np.ones(np.broadcast_shapes(x.shape, y.shape), dtype=bool)
            for c, s in normals:
                ok &= x * c - y * s <= apothem
            return ok

    counts = _coverage(n, n, inside)
    spec = format_spec(
        "bokeh",
        {
            "radius": format_number(r),
            "blades": None if blades == 6 else str(blades),
            "rotation": None if rotation == 0 else format_number(rotation),
        },
    )
    return counts / counts.sum(), spec


def _identity_like(rows: int, cols: int) -> np.ndarray:
    delta = np.zeros((rows, cols))
    delta[rows // 2, cols // 2] = 1.0
    return delta


def build_unsharp(text: str) -> tuple[np.ndarray, str]:
    """``unsharp:sigma=S[,amount=A]`` — unsharp mask: identity + A·(identity − gaussian(S)).

    The Gaussian is ``gaussian:sigma=S``'s (radius int(4S + 0.5)); A >= 0, default 1. The
    weights sum to 1 (flat areas keep their value) and the kernel has rank 2 (a delta and a
    Gaussian, both outer products), so ``lowrank`` runs it exactly as two separable pairs.
    """
    p = _params("unsharp", text)
    sigma = _required_positive("unsharp", p, "sigma", "unsharp:sigma=2,amount=1")
    amount = _number("unsharp", "amount", p["amount"]) if "amount" in p else 1.0
    if amount < 0:
        raise _err(f"unsharp amount must be >= 0, got {_q(p['amount'])}")
    radius = _radius_from_truncate(DEFAULT_TRUNCATE, sigma, f"unsharp:sigma={p['sigma']}")
    _check_sides(f"unsharp:sigma={p['sigma']}", 2 * radius + 1, 2 * radius + 1)
    g = gaussian_1d(sigma, radius)
    delta = _identity_like(2 * radius + 1, 2 * radius + 1)
    weights = (1.0 + amount) * delta - amount * np.outer(g, g)
    spec = format_spec(
        "unsharp",
        {"sigma": format_number(sigma), "amount": None if amount == 1 else format_number(amount)},
    )
    return weights, spec


#: dog's second sigma when it is left out: Marr and Hildreth's 1.6, the DoG closest to a LoG.
DOG_RATIO = 1.6


def build_dog(text: str) -> tuple[np.ndarray, str]:
    """``dog:sigma=S1,S2`` (or ``dog:S1,S2``, ``dog:sigma=S1,sigma2=S2``) — gaussian(S1) −
    gaussian(S2), both on the grid of the larger one (radius int(4·max(S1, S2) + 0.5)) and each
    normalised there, so the weights sum to 0. S2 defaults to 1.6·S1. Rank 2.
    """
    pos, named = _split_args("dog", text)
    if "sigma" in named and len(pos) > 1:
        raise _err(f"dog: unexpected value {_q(pos[1])} (dog:sigma=S1,S2 takes two sigmas)")
    if "sigma" in named and len(pos) == 1 and "sigma2" not in named:
        # DESIGN.md's dog:sigma=S1,S2: the bare value after a named sigma is the second one.
        text = f"sigma={named['sigma']},sigma2={pos[0]}"
        text += "".join(f",{k}={v}" for k, v in named.items() if k != "sigma")
    p = _params("dog", text)
    s1 = _required_positive("dog", p, "sigma", "dog:sigma=1,2")
    s2 = _number("dog", "sigma2", p["sigma2"]) if "sigma2" in p else DOG_RATIO * s1
    if s2 <= 0:
        raise _err(f"dog sigma2 must be > 0, got {_q(p['sigma2'])}")
    if s1 == s2:
        raise _err(f"dog needs two different sigmas, got {format_number(s1)} twice")
    what = f"dog:sigma={format_number(s1)},{format_number(s2)}"
    radius = _radius_from_truncate(DEFAULT_TRUNCATE, max(s1, s2), what)
    _check_sides(what, 2 * radius + 1, 2 * radius + 1)
    if radius < 1:
        raise _err(f"{what} gives radius 0; a DoG needs radius >= 1")
    g1 = gaussian_1d(s1, radius)
    g2 = gaussian_1d(s2, radius)
    weights = np.outer(g1, g1) - np.outer(g2, g2)
    spec = format_spec(
        "dog",
        {
            "sigma": format_number(s1),
            "sigma2": None if s2 == DOG_RATIO * s1 else format_number(s2),
        },
    )
    return weights, spec


# --------------------------------------------------------------------------- matrix


def parse_matrix(text: str) -> tuple[np.ndarray, str]:
    """``matrix:WxH:w00,w01,...[,normalize]`` — row-major weights; normalize divides by the sum.

    The canonical spec writes each weight with :func:`format_number` (exact round trip).
    """
    size, sep, values = text.partition(":")
    if not sep or not size.strip():
        raise _err("matrix spec must be matrix:WxH:w1,w2,... (e.g. matrix:3x3:1,2,1,2,4,2,1,2,1)")
    w, h = _int_pair("matrix", "size", size, 1)
    _check_sides(f"matrix:{size.strip()}", w, h)
    tokens = [t.strip() for t in values.split(",")]
    normalize = False
    if tokens and tokens[-1].lower() in ("normalize", "normalise"):
        normalize = True
        tokens.pop()
    if tokens == [""]:
        tokens = []
    expected = w * h
    if len(tokens) != expected:
        raise _err(
            f"matrix:{w}x{h} expects {expected} weights ({w} wide x {h} tall), {len(tokens)} given"
        )
    nums = []
    for t in tokens:
        try:
            v = float(t)
        except ValueError:
            raise _err(f"matrix weight {_q(t)} is not a number") from None
        if not math.isfinite(v):
            raise _err(f"matrix weight {_q(t)} is not finite")
        nums.append(v)
    raw = np.array(nums, dtype=np.float64).reshape(h, w)
    weights = raw
    if normalize:
        total = raw.sum()
        if abs(total) <= 1e-12 * np.abs(raw).sum():
            raise _err(f"matrix weights sum to {format_number(total)}: cannot normalize")
        weights = raw / total
    spec = f"matrix:{w}x{h}:" + ",".join(format_number(v) for v in nums)
    if normalize:
        spec += ",normalize"
    return weights, spec


def matrix_spec(weights: np.ndarray) -> str:
    """The exact ``matrix:WxH:...`` spec of a float64 (rows, cols) array."""
    rows, cols = weights.shape
    return f"matrix:{cols}x{rows}:" + ",".join(format_number(v) for v in weights.ravel().tolist())


#: Family name -> builder, in the order a picker shows them (blurs, derivatives, the fixed 3×3,
#: shapes, matrix). ``@file.json`` is handled by blurapp.core.kernel.
FAMILIES: dict[str, Builder] = {
    "gaussian": build_gaussian,
    "box": build_box,
    "sobel": build_sobel,
    "scharr": _fixed_derivative("scharr", [3.0, 10.0, 3.0]),
    "prewitt": _fixed_derivative("prewitt", [1.0, 1.0, 1.0]),
    "laplacian": _fixed("laplacian"),
    "sharpen": _fixed("sharpen"),
    "emboss": _fixed("emboss"),
    "identity": _fixed("identity"),
    "motion": build_motion,
    "disk": build_disk,
    "bokeh": build_bokeh,
    "log": build_log,
    "unsharp": build_unsharp,
    "dog": build_dog,
    "matrix": parse_matrix,
}


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class FamilyParam:
    """One parameter of a kernel family: what the grammar takes and how canonical specs write it.

    Attributes:
        name: its key in a spec (``sigma`` in ``gaussian:sigma=2``).
        kind: ``"number"`` (a finite float), ``"integer"`` or ``"choice"`` (one of ``choices``).
        help: one line saying what it does (the designer's tooltip).
        example: a typical value, as spec text (where the designer starts); ``None``: none.
        default: the value when a spec leaves it out, as spec text; ``None`` when it is required
            or computed from the others (a Gaussian's radius from sigma).
        required: every spec of the family gives it.
        positional: it may be given without its name, in the order of the family's parameters
            (``gaussian:2`` is ``gaussian:sigma=2``).
        bare: canonical specs write the value without ``name=`` (``box:5``, ``sobel:x``).
        pair: it also takes ``XxY`` (x, the columns, first): ``box:7x3``, ``sigma=2x1``.
        minimum: a bound on the value itself: anything below is refused, whatever the other
            parameters (a combination above it can still be: a log whose radius comes out
            0); ``None``: no lower bound.
        exclusive_minimum: ``minimum`` itself is refused too (sigma > 0).
        maximum: the largest valid value when the optional parameters are left out (most
            come from MAX_KERNEL_SIDE; ``sigma=100,radius=3`` is still valid); ``None``: none.
        choices: the valid values of a ``"choice"``.
    """

    name: str
    kind: Literal["number", "integer", "choice"]
    help: str
    example: str | None = None
    default: str | None = None
    required: bool = False
    positional: bool = False
    bare: bool = False
    pair: bool = False
    minimum: float | None = None
    exclusive_minimum: bool = False
    maximum: float | None = None
    choices: tuple[str, ...] = ()


def _sigma(example: str, pair: bool) -> FamilyParam:
    return FamilyParam(
        "sigma", "number", "Standard deviation in pixels; radius = int(4σ + 0.5)",
        example=example, required=True, positional=True, pair=pair,
        minimum=0.0, exclusive_minimum=True, maximum=MAX_RADIUS / DEFAULT_TRUNCATE,
    )  # fmt: skip


def _radius(minimum: int, pair: bool) -> FamilyParam:
    return FamilyParam(
        "radius", "integer", "Taps each side of the centre (default int(4σ + 0.5))",
        pair=pair, minimum=minimum, maximum=MAX_RADIUS,
    )  # fmt: skip


_TRUNCATE = FamilyParam(
    "truncate", "number", "Radius in sigmas: radius = int(truncate·σ + 0.5)",
    default=format_number(DEFAULT_TRUNCATE), minimum=0.0, exclusive_minimum=True,
)  # fmt: skip
_DIRECTION = FamilyParam(
    "direction", "choice", "Derivative along x (grows to the right) or y (grows downwards)",
    example="x", required=True, positional=True, bare=True, choices=("x", "y"),
)  # fmt: skip

_BOX_SIZE = FamilyParam(
    "size", "integer", "Columns x rows averaged (N or WxH)",
    example="5", required=True, positional=True, bare=True, pair=True,
    minimum=1, maximum=MAX_KERNEL_SIDE,
)  # fmt: skip
_SOBEL_SIZE = FamilyParam(
    "size", "choice", "Taps per side (OpenCV's ksize)", default="3", choices=("3", "5", "7")
)
_MOTION_LENGTH = FamilyParam(
    "length", "number", "Length of the motion path in pixels",
    example="9", required=True, positional=True, minimum=1.0, maximum=MAX_KERNEL_SIDE,
)  # fmt: skip
_MOTION_ANGLE = FamilyParam(
    "angle", "number", "Degrees counter-clockwise from +x", example="0", default="0"
)
_DISK_RADIUS = FamilyParam(
    "radius", "number", "Disc radius in pixels",
    example="4", required=True, positional=True, minimum=0.5, maximum=MAX_RADIUS + 0.5,
)  # fmt: skip
_BOKEH_RADIUS = FamilyParam(
    "radius", "number", "Aperture radius in pixels (to the polygon's corners)",
    example="8", required=True, positional=True, minimum=0.5, maximum=MAX_RADIUS + 0.5,
)  # fmt: skip
_BOKEH_BLADES = FamilyParam(
    "blades", "integer", "Aperture blades: the polygon's corners (0: round)",
    example="6", default="6", minimum=0,
)  # fmt: skip
_BOKEH_ROTATION = FamilyParam(
    "rotation", "number", "Degrees counter-clockwise from +x to the first corner",
    example="0", default="0",
)  # fmt: skip
_UNSHARP_SIGMA = FamilyParam(
    "sigma", "number", "Standard deviation of the blur subtracted; radius = int(4σ + 0.5)",
    example="2", required=True, positional=True, minimum=0.0, exclusive_minimum=True,
    maximum=MAX_RADIUS / DEFAULT_TRUNCATE,
)  # fmt: skip
_UNSHARP_AMOUNT = FamilyParam(
    "amount", "number", "Strength: identity + amount·(identity − blur)",
    example="1", default="1", positional=True, minimum=0.0,
)  # fmt: skip
_DOG_SIGMA = FamilyParam(
    "sigma", "number", "Standard deviation of the positive Gaussian",
    example="1", required=True, positional=True, minimum=0.0, exclusive_minimum=True,
    maximum=MAX_RADIUS / (DEFAULT_TRUNCATE * DOG_RATIO),
)  # fmt: skip
_DOG_SIGMA2 = FamilyParam(
    "sigma2", "number", "Standard deviation of the Gaussian subtracted (default 1.6σ)",
    example="1.6", positional=True, minimum=0.0, exclusive_minimum=True,
    maximum=MAX_RADIUS / DEFAULT_TRUNCATE,
)  # fmt: skip

#: Family name -> its parameters, in spec order; the same families, in the same order, as
#: :data:`FAMILIES`. ``matrix`` has its own grammar (size and weights), not parameters.
FAMILY_PARAMS: dict[str, tuple[FamilyParam, ...]] = {
    "gaussian": (_sigma("2", pair=True), _radius(0, pair=True), _TRUNCATE),
    "box": (_BOX_SIZE,),
    "sobel": (_DIRECTION, _SOBEL_SIZE),
    "scharr": (_DIRECTION,),
    "prewitt": (_DIRECTION,),
    "laplacian": (),
    "sharpen": (),
    "emboss": (),
    "identity": (),
    "motion": (_MOTION_LENGTH, _MOTION_ANGLE),
    "disk": (_DISK_RADIUS,),
    "bokeh": (_BOKEH_RADIUS, _BOKEH_BLADES, _BOKEH_ROTATION),
    "log": (_sigma("1.5", pair=False), _radius(1, pair=False), _TRUNCATE),
    "unsharp": (_UNSHARP_SIGMA, _UNSHARP_AMOUNT),
    "dog": (_DOG_SIGMA, _DOG_SIGMA2),
    "matrix": (),
}


def format_spec(family: str, values: Mapping[str, str | None]) -> str:
    """The spec text of ``family`` with ``values``: the one writer of canonical specs.

    Arguments:
        family: a key of :data:`FAMILY_PARAMS` (not ``matrix``: see :func:`matrix_spec`).
        values: parameter name -> value as spec text; a missing or ``None`` value is left out.

    Returns:
        ``family:v1,name2=v2,...`` in the family's parameter order, ``bare`` parameters without
        their name; the family alone when no value is given. Example::

            format_spec("sobel", {"direction": "x", "size": "5"}) == "sobel:x,size=5"

    Raises:
        KeyError: an unknown family, or a name that is not one of its parameters.
    """
    described = FAMILY_PARAMS[family]
    unknown = set(values) - {p.name for p in described}
    if unknown:
        raise KeyError(f"{family} has no parameter {sorted(unknown)[0]!r}")
    parts = [
        value if p.bare else f"{p.name}={value}"
        for p in described
        if (value := values.get(p.name)) is not None
    ]
    return f"{family}:{','.join(parts)}" if parts else family


def spec_params(spec: str) -> tuple[str, dict[str, str]]:
    """Split a spec into its family and named parameters, with the grammar's own parser.

    Positional values get their parameters' names; values are returned as written (stripped),
    not checked: ``Kernel.parse`` does that. A ``matrix`` spec has no parameters (``{}``).

    Example::

        spec_params("Sobel: y, size=5") == ("sobel", {"direction": "y", "size": "5"})

    Raises:
        KernelSpecError: an unknown family, or parameters the family does not take.
    """
    family, _, rest = spec.strip().partition(":")
    family = family.strip().lower()
    if family not in FAMILY_PARAMS:
        raise _err(f"unknown kernel family {_q(family)}")
    if family == "matrix":
        return family, {}
    return family, _params(family, rest)
