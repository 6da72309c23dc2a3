"""GIF through Pillow: still and animated, frames with their durations, loop count and disposal.

A GIF holds at most 256 colours per frame and one transparent one: writing one is lossy (each
frame gets its own palette, made from that frame alone, and alpha becomes on or off at 50 %).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from blurapp.io.codecs.base import Animation, WriteOptions
from blurapp.io.codecs.pillow import PillowCodec

#: The palette index kept for transparent pixels.
_TRANSPARENT = 255


class GifCodec(PillowCodec):
    name = "gif"
    label = "GIF"
    extensions = (".gif",)
    magic = "GIF87a / GIF89a"
    dtypes = ("uint8",)
    channels = (3, 4)
    metadata = frozenset({"timing"})
    lossy = True
    multi_frame = True
    quality_note = "256 colours per frame (a palette per frame): always lossy"
    write_note = (
        "GIF holds 256 colours per frame and alpha on or off: outputs are written with a "
        "palette per frame (lossy)"
    )
    pillow_format = "GIF"

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:6] in (b"GIF87a", b"GIF89a")

    def prepare_frame(self, pixels: np.ndarray) -> Any:
        """One frame quantised to its own palette (median cut on its own colours); with alpha,
        255 colours and one transparent index."""
        from PIL import Image

        rgb = pixels[:, :, :3] if pixels.ndim == 3 else np.repeat(pixels[:, :, None], 3, axis=2)
        has_alpha = pixels.ndim == 3 and pixels.shape[2] == 4
        colours = _TRANSPARENT if has_alpha else 256
        im = Image.fromarray(np.ascontiguousarray(rgb), mode="RGB").quantize(
            colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
        if has_alpha:
            index = np.asarray(im).copy()
            index[pixels[:, :, 3] < 128] = _TRANSPARENT
            palette = im.getpalette() or []
            palette = (palette + [0] * 768)[:768]
            im = Image.fromarray(index, mode="P")
            im.putpalette(palette)
            im.info["transparency"] = _TRANSPARENT
        return im

    def save_arguments(self, options: WriteOptions) -> dict[str, Any]:
        # optimize=False: Pillow's optimiser would merge palettes and crop frames.
        return {"optimize": False}

    def animation_arguments(self, animation: Animation) -> dict[str, Any]:
        kwargs = super().animation_arguments(animation)
        if animation.disposal:
            kwargs["disposal"] = list(animation.disposal)
        return kwargs


CODEC = GifCodec()
