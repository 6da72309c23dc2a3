"""Conversions between numpy images (any dtype blurapp filters) and Qt images for display."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtGui import QColor, QImage

if TYPE_CHECKING:
    from blurapp.ui.image_view import DisplayColour


def to_display_uint8(image: np.ndarray) -> np.ndarray:
    """An image as C-contiguous uint8 H×W or H×W×C for display.

    uint16 is scaled by 1/257 and floats are taken as normalised (0..1) and clamped; display
    never changes the stored result, only what is painted.

    Arguments:
        image: H×W or H×W×C array of uint8, uint16, float32 or float64.

    Returns:
        A uint8 array with the same shape.
    """
    if image.dtype == np.uint8:
        out = image
    elif image.dtype == np.uint16:
        out = (image.astype(np.uint32) + 128) // 257
    else:
        # ±inf shown as white and black, NaN as black: nan_to_num's defaults (the float64
        # extremes) would overflow times 255 with a RuntimeWarning (an .npy holding ±inf).
        x = np.nan_to_num(image.astype(np.float64), nan=0.0, posinf=1.0, neginf=0.0)
        out = np.clip(x * 255.0 + 0.5, 0, 255)
    return np.ascontiguousarray(out, dtype=np.uint8)


#: QImage text naming the display conversion a worker applied to a picture
#: (:attr:`blurapp.ui.image_view.DisplayColour.key`): the view does not convert it again.
CONVERTED_KEY = "blurapp-display-colour"

# The bytes of blue, green, red and alpha in a pixel of Format_RGB32 / Format_ARGB32 (one
# 0xAARRGGBB word: B, G, R, A in memory on a little-endian machine).
_BGRA = (0, 1, 2, 3) if sys.byteorder == "little" else (3, 2, 1, 0)


def to_qimage(image: np.ndarray, colour: DisplayColour | None = None) -> QImage:
    """A QImage of its own of a numpy image (grey, grey+alpha, RGB or RGBA).

    ``colour``: the view's conversion from the image's profile to the screen, applied here
    (off the UI thread, the GIL let go: :meth:`DisplayColour.convert_array`) where it can be;
    the picture then carries its key and the view does not convert it again.

    Safe to call from a worker thread: QImage, unlike QPixmap, is not tied to the GUI thread.
    The picture is ``Format_RGB32`` (opaque) or ``Format_ARGB32``, the raster formats a
    ``QPixmap`` takes without converting, and numpy fills it (no Qt call that holds the GIL):
    for a 12 MP photo ``QImage.copy()`` of RGB888 held the GIL 20 ms on the worker and
    ``QPixmap.fromImage`` converted it 30 ms on the UI thread; now 3-4 ms there, none of it
    with the GIL held by the worker (the UI thread's stalls, issue 24).
    """
    data = to_display_uint8(image)
    if data.ndim == 3 and data.shape[2] == 1:
        data = data[:, :, 0]
    converted = ""
    if colour is not None and colour.managed:
        rgb = data
        if data.ndim == 2:  # an RGB profile on grey pixels: the RGB pixels they stand for
            rgb = np.repeat(data[:, :, None], 3, axis=2)
        elif data.shape[2] == 2:
            rgb = data[:, :, [0, 0, 0, 1]]
        done = colour.convert_array(rgb)
        if done is not None:
            data, converted = done, colour.key
    height, width = data.shape[:2]
    alpha = data.ndim == 3 and data.shape[2] in (2, 4)
    out = QImage(
        width, height, QImage.Format.Format_ARGB32 if alpha else QImage.Format.Format_RGB32
    )
    if out.isNull():  # Qt could not allocate it: as Qt would, an empty picture
        return out
    px = np.frombuffer(out.bits(), np.uint8).reshape(height, out.bytesPerLine())
    px = px[:, : width * 4].reshape(height, width, 4)
    b, g, r, a = _BGRA
    if data.ndim == 2 or data.shape[2] == 2:
        grey = data if data.ndim == 2 else data[:, :, 0]
        px[..., r], px[..., g], px[..., b] = grey, grey, grey
    else:
        px[..., r], px[..., g], px[..., b] = data[..., 0], data[..., 1], data[..., 2]
    px[..., a] = data[..., -1] if alpha else 255
    if converted:
        out.setText(CONVERTED_KEY, converted)
    return out


def signed_color(t: float) -> QColor:
    """The signed colour map: blue for -1, white for 0, red for +1 (``t`` is clipped)."""
    t = max(-1.0, min(1.0, float(t)))
    if t >= 0:
        # white -> red (178, 24, 43): ColorBrewer RdBu's end, readable on white and black.
        return QColor(
            round(255 + (178 - 255) * t), round(255 + (24 - 255) * t), round(255 + (43 - 255) * t)
        )
    t = -t
    return QColor(
        round(255 + (33 - 255) * t), round(255 + (102 - 255) * t), round(255 + (172 - 255) * t)
    )


def signed_rgb(t: np.ndarray) -> np.ndarray:
    """:func:`signed_color` of every value of a 2-D array (clipped to ±1), as H×W×3 uint8."""
    t = np.clip(np.nan_to_num(np.asarray(t, dtype=np.float64)), -1.0, 1.0)
    pos = np.array([178, 24, 43], np.float64)
    neg = np.array([33, 102, 172], np.float64)
    end = np.where((t >= 0)[..., None], pos, neg)
    a = np.abs(t)[..., None]
    rgb = 255.0 + (end - 255.0) * a
    return np.ascontiguousarray(np.floor(rgb + 0.5).astype(np.uint8))


def heat_rgb(values: np.ndarray, vmax: float) -> np.ndarray:
    """A magnitude heat-map (black -> red -> yellow -> white) of a 2-D array, as H×W×3 uint8.

    Arguments:
        values: non-negative 2-D array.
        vmax: the value shown white; 0 gives an all-black image.
    """
    t = np.zeros(values.shape, np.float64) if vmax <= 0 else np.clip(values / vmax, 0.0, 1.0)
    r = np.clip(t * 3.0, 0.0, 1.0)
    g = np.clip(t * 3.0 - 1.0, 0.0, 1.0)
    b = np.clip(t * 3.0 - 2.0, 0.0, 1.0)
    return np.ascontiguousarray((np.dstack([r, g, b]) * 255.0 + 0.5).astype(np.uint8))
