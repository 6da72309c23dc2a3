"""The one registry of border modes: how a filter reads pixels that lie outside the image."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from blurapp.core.errors import BorderError

__all__ = ["BORDER_ALIASES", "BORDER_MODES", "Border", "BorderMode"]


class BorderMode(enum.Enum):
    """How an out-of-range index is mapped. The int values are the shader's codes."""

    CLAMP = 0  # aaaa|abcd|dddd   scipy "nearest",   OpenCV BORDER_REPLICATE
    CONSTANT = 1  # VVVV|abcd|VVVV   scipy "constant",  OpenCV BORDER_CONSTANT
    REFLECT = 2  # dcba|abcd|dcba   scipy "reflect",   OpenCV BORDER_REFLECT
    MIRROR = 3  # dcb|abcd|cba     scipy "mirror",    OpenCV BORDER_REFLECT_101
    WRAP = 4  # abcd|abcd|abcd   scipy "grid-wrap", OpenCV BORDER_WRAP


# The names the GUI and CLI offer, in display order; "constant=V" is "zero" with a value.
BORDER_MODES: tuple[str, ...] = ("clamp", "zero", "reflect", "mirror", "wrap")

# Every accepted spelling (lower case) -> mode. "constant" alone means a value of 0.
BORDER_ALIASES: dict[str, BorderMode] = {
    "clamp": BorderMode.CLAMP,
    "nearest": BorderMode.CLAMP,
    "edge": BorderMode.CLAMP,
    "replicate": BorderMode.CLAMP,
    "zero": BorderMode.CONSTANT,
    "constant": BorderMode.CONSTANT,
    "reflect": BorderMode.REFLECT,
    "symmetric": BorderMode.REFLECT,
    "mirror": BorderMode.MIRROR,
    "reflect101": BorderMode.MIRROR,
    "wrap": BorderMode.WRAP,
    "periodic": BorderMode.WRAP,
    "tile": BorderMode.WRAP,
}

#: The largest |V| of constant=V: the GPU reads the border value as a float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)

_VALID_TEXT = ", ".join([*BORDER_MODES, "constant=V"]) + (
    " (aliases: nearest, edge, replicate, constant, symmetric, reflect101, periodic, tile)"
)


@dataclass(frozen=True)
class Border:
    """A border mode plus, for ``CONSTANT``, the value outside the image (normalised units).

    ``Border(BorderMode.CONSTANT)`` is ``zero``; ``value`` must stay 0 for every other mode.
    """

    mode: BorderMode
    value: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.mode, BorderMode):
            raise BorderError(f"border mode must be a BorderMode, got {self.mode!r}")
        try:
            value = float(self.value)
        except (TypeError, ValueError):
            raise BorderError(f"border value must be a number, got {self.value!r}") from None
        if not math.isfinite(value):
            raise BorderError(f"border value must be finite, got {self.value!r}")
        if abs(value) > FLOAT32_MAX:  # the GPU reads it as a float32
            raise BorderError(
                f"border value {value!r} is beyond float32's range (|V| <= {FLOAT32_MAX:.4g})"
            )
        if value != 0.0 and self.mode is not BorderMode.CONSTANT:
            raise BorderError(
                f"border value {value!r} only applies to constant=V, not {self.mode.name.lower()}"
            )
        # + 0.0 turns -0.0 into 0.0 so that "zero" has one spelling.
        object.__setattr__(self, "value", value + 0.0)

    @classmethod
    def parse(cls, text: str | Border | BorderMode) -> Border:
        """Parse a border name as typed by a user.

        Arguments:
            text: any alias of DESIGN.md's table, case-insensitive, or ``constant=V`` with a
                finite V in normalised units; a ``Border`` or ``BorderMode`` passes through.

        Returns:
            The ``Border``.

        Raises:
            BorderError: unknown name or a bad value; the message names the text and lists the
                valid names.
        """
        if isinstance(text, Border):
            return text
        if isinstance(text, BorderMode):
            return cls(text)
        if not isinstance(text, str):
            raise BorderError(f"border mode must be a string, got {text!r}; valid: {_VALID_TEXT}")
        name, sep, raw_value = text.strip().lower().partition("=")
        name = name.strip()
        mode = BORDER_ALIASES.get(name)
        if mode is None:
            raise BorderError(f"unknown border mode {text!r}; valid: {_VALID_TEXT}")
        if not sep:
            return cls(mode)
        if name != "constant":
            raise BorderError(
                f"border mode {text!r} takes no value; only constant=V does (valid: {_VALID_TEXT})"
            )
        try:
            value = float(raw_value.strip())
        except ValueError:
            raise BorderError(
                f"bad value in border mode {text!r}: {raw_value.strip()!r} is not a number "
                f"(write e.g. constant=0.5)"
            ) from None
        if not math.isfinite(value):
            raise BorderError(f"bad value in border mode {text!r}: the value must be finite")
        return cls(mode, value)

    @property
    def name(self) -> str:
        """Canonical name; ``Border.parse(b.name) == b`` for every border."""
        if self.mode is BorderMode.CONSTANT:
            return "zero" if self.value == 0.0 else f"constant={self.value!r}"
        return self.mode.name.lower()

    def __str__(self) -> str:
        return self.name

    def map_indices(self, idx: np.ndarray | int, n: int) -> np.ndarray:
        """Map any integer offsets along an axis of length ``n`` to the pixel they read.

        Reflections repeat, so offsets far outside the image (kernels larger than the image)
        are handled: scipy.ndimage's ``reflect``/``mirror``/``grid-wrap`` semantics.

        Arguments:
            idx: integer array (any shape, any sign) or a single int.
            n: the axis length, at least 1.

        Returns:
            An ``np.intp`` array of ``idx``'s shape with values in ``[0, n)``; for ``CONSTANT``,
            ``-1`` marks an index outside the image (read the border value there).
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"axis length must be at least 1, got {n}")
        idx = np.asarray(idx)
        if idx.dtype.kind not in "iu":
            raise TypeError(f"indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.intp, copy=False)
        mode = self.mode
        if mode is BorderMode.CLAMP:
            return np.clip(idx, 0, n - 1)
        if mode is BorderMode.CONSTANT:
            return np.where((idx >= 0) & (idx < n), idx, -1)
        if mode is BorderMode.WRAP:
            return np.mod(idx, n)
        if mode is BorderMode.REFLECT:
            # Period 2n: abcd dcba abcd ...; the edge pixel is repeated.
            m = np.mod(idx, 2 * n)
            return np.where(m < n, m, 2 * n - 1 - m)
        # MIRROR: period 2n - 2 (the edge pixel is not repeated); one pixel mirrors onto itself.
        if n == 1:
            return np.zeros_like(idx)
        period = 2 * n - 2
        m = np.mod(idx, period)
        return np.where(m < n, m, period - m)
