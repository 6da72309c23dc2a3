"""Transfer curves, for filtering in linear light (``--linear``): sRGB's, and those an image's ICC
profile gives (Display P3's is sRGB's, Adobe RGB's a 2.2 gamma, ProPhoto's 1.8, a camera's a
sampled table).

A :class:`TransferCurve` decodes stored values to linear light and encodes them back; the curves
are odd-symmetric, so that the signed values of a derivative kernel survive the round trip, and
extend beyond 1 by their own formula (a table: by its last slope). :data:`SRGB` is the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SRGB", "ChannelCurves", "TransferCurve", "linear_to_srgb", "srgb_to_linear"]


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


@dataclass(frozen=True)
class TransferCurve:
    """One channel's transfer curve, as an ICC profile states it.

    Either ``kind="parametric"`` with ICC's parametric function ``function`` (0..4) and its
    ``params`` (g, a, b, c, d, e, f as far as the function has them; ICC.1:2010 10.18):

    - 0: Y = X^g
    - 1: Y = (aX + b)^g for X ≥ -b/a, else 0
    - 2: Y = (aX + b)^g + c for X ≥ -b/a, else c
    - 3: Y = (aX + b)^g for X ≥ d, else cX
    - 4: Y = (aX + b)^g + e for X ≥ d, else cX + f

    or ``kind="table"`` with ``table``: Y sampled at evenly spaced X from 0 to 1 (an ICC
    ``curv`` with more than one entry), interpolated linearly and inverted the same way (it
    must be non-decreasing, as ICC requires). ``name`` is for messages.
    """

    kind: str
    function: int = 0
    params: tuple[float, ...] = (1.0,)
    table: tuple[float, ...] = ()
    name: str = field(default="", compare=False)

    @classmethod
    def gamma(cls, g: float, name: str = "") -> TransferCurve:
        return cls("parametric", 0, (float(g),), name=name or f"gamma {g:g}")

    @classmethod
    def parametric(cls, function: int, params: tuple[float, ...], name: str = "") -> TransferCurve:
        counts = {0: 1, 1: 3, 2: 4, 3: 5, 4: 7}
        if function not in counts or len(params) < counts[function]:
            raise ValueError(f"ICC parametric curve {function} with {len(params)} parameters")
        kept = tuple(float(p) for p in params[: counts[function]])
        if function == 0:
            return cls.gamma(kept[0], name)
        return cls("parametric", function, kept, name=name or f"parametric curve {function}")

    @classmethod
    def sampled(cls, values: tuple[float, ...] | np.ndarray, name: str = "") -> TransferCurve:
        table = tuple(float(v) for v in np.asarray(values, np.float64))
        if len(table) < 2 or np.any(np.diff(table) < 0):
            raise ValueError("an ICC curve table needs two or more non-decreasing entries")
        return cls("table", table=table, name=name or f"table of {len(table)}")

    @property
    def is_srgb(self) -> bool:
        """Whether this is sRGB's own curve (then the exact sRGB functions run)."""
        return self == SRGB

    def snapped(self) -> TransferCurve:
        """:data:`SRGB` when this curve is sRGB's within what a profile can store (its
        parameters in s15Fixed16, or a 16-bit table: an sRGB profile's 1024-entry ``curv``),
        else this curve: an sRGB-tagged file then filters exactly as an untagged one."""
        x = np.linspace(0.0, 1.0, 1025)
        if self.kind == "parametric" and self.function not in (3, 4):
            return self
        if float(np.max(np.abs(self._forward(x) - srgb_to_linear(x)))) <= _SRGB_TOLERANCE:
            return SRGB
        return self

    # ------------------------------------------------------------------ evaluation

    def to_linear(self, c: np.ndarray) -> np.ndarray:
        """Stored (encoded) values → linear light, odd-symmetric; keeps ``c``'s dtype."""
        if self.is_srgb:
            return srgb_to_linear(c)
        a = np.abs(np.asarray(c, np.float64))
        return np.copysign(self._forward(a), c).astype(c.dtype, copy=False)

    def from_linear(self, x: np.ndarray) -> np.ndarray:
        """Linear light → stored values, the inverse of :meth:`to_linear`."""
        if self.is_srgb:
            return linear_to_srgb(x)
        a = np.abs(np.asarray(x, np.float64))
        return np.copysign(self._inverse(a), x).astype(x.dtype, copy=False)

    def _forward(self, x: np.ndarray) -> np.ndarray:
        if self.kind == "table":
            return _interp_extended(x, np.linspace(0.0, 1.0, len(self.table)), self.table)
        f, p = self.function, self.params
        g = p[0]
        if f == 0:
            return x**g
        a, b = p[1], p[2]
        if f in (1, 2):
            base = np.maximum(a * x + b, 0.0)
            return base**g + (p[3] if f == 2 else 0.0)
        c, d = p[3], p[4]
        e, off = (p[5], p[6]) if f == 4 else (0.0, 0.0)
        return np.where(x >= d, np.maximum(a * x + b, 0.0) ** g + e, c * x + off)

    def _inverse(self, y: np.ndarray) -> np.ndarray:
        if self.kind == "table":
            return _interp_extended(
                y, np.asarray(self.table), np.linspace(0.0, 1.0, len(self.table))
            )
        f, p = self.function, self.params
        g = p[0]
        if f == 0:
            return y ** (1.0 / g)
        a, b = p[1], p[2]
        if f in (1, 2):
            shift = p[3] if f == 2 else 0.0
            return (np.maximum(y - shift, 0.0) ** (1.0 / g) - b) / a
        c, d = p[3], p[4]
        e, off = (p[5], p[6]) if f == 4 else (0.0, 0.0)
        knee = max(a * d + b, 0.0) ** g + e  # the curve's value where its two pieces meet
        curved = (np.maximum(y - e, 0.0) ** (1.0 / g) - b) / a
        straight = (y - off) / c if c else np.full_like(y, d)
        return np.where(y >= knee, curved, straight)


def _interp_extended(
    x: np.ndarray, xp: np.ndarray, fp: tuple[float, ...] | np.ndarray
) -> np.ndarray:
    """``np.interp``, continued beyond the last sample by the last segment's slope (filtered
    values may overshoot 1 a little: a sharpening kernel)."""
    fp = np.asarray(fp, np.float64)
    xp = np.asarray(xp, np.float64)
    y = np.interp(x, xp, fp)
    dx = xp[-1] - xp[-2]
    slope = (fp[-1] - fp[-2]) / dx if dx else 0.0
    beyond = x > xp[-1]
    if np.any(beyond):
        y = np.where(beyond, fp[-1] + (x - xp[-1]) * slope, y)
    return y


#: How far (in linear light, 0..1) a profile's curve may be from sRGB's and still be taken for it:
#: s15Fixed16 parameters and 16-bit tables are within about 1e-4 of it.
_SRGB_TOLERANCE = 5e-4

#: sRGB's curve (IEC 61966-2-1) as ICC's parametric function 3; evaluated by the exact sRGB
#: functions above.
SRGB = TransferCurve(
    "parametric", 3, (2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045), (), "sRGB"
)


@dataclass(frozen=True)
class ChannelCurves:
    """The transfer curves of an image's colour channels: one per channel (R, G, B), or one for
    all of them (grey, or an RGB profile whose three curves are equal)."""

    curves: tuple[TransferCurve, ...] = (SRGB,)

    @property
    def is_srgb(self) -> bool:
        return all(c.is_srgb for c in self.curves)

    @property
    def name(self) -> str:
        names = dict.fromkeys(c.name for c in self.curves)
        return " / ".join(names)

    def _each(self, values: np.ndarray, encode: bool) -> np.ndarray:
        """``values`` (H×W×C colour channels) through each channel's curve."""
        if len(self.curves) == 1 or values.shape[-1] == 1:
            curve = self.curves[0] if len(self.curves) == 1 else self.curves[1]  # grey: green's
            return curve.from_linear(values) if encode else curve.to_linear(values)
        out = np.empty_like(values)
        for i in range(values.shape[-1]):
            curve = self.curves[min(i, len(self.curves) - 1)]
            out[..., i] = (
                curve.from_linear(values[..., i]) if encode else curve.to_linear(values[..., i])
            )
        return out

    def to_linear(self, values: np.ndarray) -> np.ndarray:
        """Colour channels (last axis) → linear light, each by its own curve."""
        return self._each(values, encode=False)

    def from_linear(self, values: np.ndarray) -> np.ndarray:
        """Linear colour channels → stored values, the inverse of :meth:`to_linear`."""
        return self._each(values, encode=True)
